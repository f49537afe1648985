/**
 * XGBoost's legacy binary model format (`xgboost.model`, what XGBoost before
 * 2.1 writes for a file name not ending in .json or .ubj), little-endian:
 * an optional "binf" magic, the learner parameters (136 bytes: base_score,
 * num_feature, num_class, ...), the objective and booster names, the gbtree
 * parameters (160 bytes: num_trees, ...), then per tree its parameters (148
 * bytes: num_nodes, ...), its nodes (20 bytes each: parent, left, right,
 * split index with the default-left bit, condition or leaf value) and their
 * statistics (16 bytes each), then tree_info. It has no categorical splits.
 */
import { DEFAULT_LEFT, ForestBuilder } from './forest';
import type { Forest } from './forest';
import { FilModelError } from './fil-model-error';
import { xgboostBaseMargin, xgboostClasses, xgboostTransform } from './xgboost-model';

const LEARNER_PARAM_BYTES = 136;
const GBTREE_PARAM_BYTES = 160;
const TREE_PARAM_BYTES = 148;
const NODE_BYTES = 20;
const STAT_BYTES = 16;

export function forestFromXGBoostBinary(bytes: Uint8Array): Forest {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 0;
  const need = (n: number, what: string): void => {
    if (pos + n > bytes.length) throw new FilModelError(`the file ends inside ${what} (byte ${pos} of ${bytes.length})`);
  };
  const i32 = (at: number): number => view.getInt32(at, true);
  const name = (what: string): string => {
    need(8, what);
    const n = Number(view.getBigUint64(pos, true));
    pos += 8;
    if (n > 256) throw new FilModelError(`${what} is ${n} bytes long; this is not an XGBoost binary model`);
    need(n, what);
    const s = Buffer.from(bytes.buffer, bytes.byteOffset + pos, n).toString('latin1');
    pos += n;
    return s;
  };
  if (bytes.length >= 4 && Buffer.from(bytes.buffer, bytes.byteOffset, 4).toString('latin1') === 'binf') pos = 4;
  need(LEARNER_PARAM_BYTES, 'the learner parameters');
  const baseScore = view.getFloat32(pos, true);
  const numFeature = view.getUint32(pos + 4, true);
  const numClass = i32(pos + 8);
  pos += LEARNER_PARAM_BYTES;
  const objective = name('the objective name');
  const booster = name('the booster name');
  if (booster === 'dart')
    throw new FilModelError('it is a dart booster, whose tree weights this reader does not take from the binary format: save the model as JSON (xgboost.json)');
  if (booster !== 'gbtree') throw new FilModelError(`the booster is '${booster}'; only tree boosters (gbtree, dart) are tree models FIL can serve`);
  need(GBTREE_PARAM_BYTES, 'the gbtree parameters');
  const numTrees = i32(pos);
  const sizeLeafVector = i32(pos + 4 * 4 + 8 + 4);
  pos += GBTREE_PARAM_BYTES;
  if (numTrees < 0 || numTrees > 10_000_000) throw new FilModelError(`it says it has ${numTrees} trees; this is not an XGBoost binary model`);
  if (sizeLeafVector !== 0) throw new FilModelError('its trees have leaf vectors, which this reader does not support: save the model as JSON (xgboost.json)');
  const builder = new ForestBuilder();
  const trees: Parameters<ForestBuilder['add']>[0][] = [];
  for (let t = 0; t < numTrees; t++) {
    need(TREE_PARAM_BYTES, `tree ${t}'s parameters`);
    const numNodes = i32(pos + 4);
    pos += TREE_PARAM_BYTES;
    if (numNodes <= 0) throw new FilModelError(`tree ${t} has ${numNodes} nodes`);
    need(numNodes * (NODE_BYTES + STAT_BYTES), `tree ${t}'s nodes`);
    const feature = new Int32Array(numNodes);
    const value = new Float64Array(numNodes);
    const left = new Int32Array(numNodes);
    const right = new Int32Array(numNodes);
    const flags = new Uint8Array(numNodes);
    for (let i = 0; i < numNodes; i++) {
      const at = pos + i * NODE_BYTES;
      left[i] = i32(at + 4);
      right[i] = i32(at + 8);
      const sindex = view.getUint32(at + 12, true);
      const leaf = left[i] === -1;
      feature[i] = leaf ? -1 : sindex & 0x7fffffff;
      value[i] = view.getFloat32(at + 16, true);
      flags[i] = sindex >>> 31 !== 0 ? DEFAULT_LEFT : 0;
      if (!leaf && (left[i] < 0 || left[i] >= numNodes || right[i] < 0 || right[i] >= numNodes)) {
        throw new FilModelError(`tree ${t}, node ${i}: a child index is out of range`);
      }
    }
    pos += numNodes * (NODE_BYTES + STAT_BYTES);
    trees.push({ feature, value, left, right, flags });
  }
  need(4 * numTrees, 'tree_info');
  trees.forEach((nodes, t) => builder.add(nodes, i32(pos + 4 * t)));
  const numGroups = Math.max(1, numClass);
  return builder.build({
    library: 'XGBoost',
    objective,
    numFeatures: numFeature,
    numGroups,
    numClasses: xgboostClasses(objective, numClass),
    baseMargin: new Float64Array(numGroups).fill(xgboostBaseMargin(objective, baseScore)),
    divisor: 1,
    transform: xgboostTransform(objective),
  });
}
