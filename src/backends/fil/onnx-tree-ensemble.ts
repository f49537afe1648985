/**
 * A Forest as an ONNX model of one ai.onnx.ml TreeEnsembleRegressor (X
 * float [N, features] → Y float [N, groups]: the leaf sums plus the base
 * margin), for ONNX Runtime to evaluate large batches (bench/README.md,
 * "FIL": from about 16 rows per call it is 2-3x the TypeScript walk).
 * Exact to the TypeScript walk where the operator can say the same thing:
 * a LightGBM `x <= t` with a double t is `x <= t'` for t' the largest
 * float32 not above t; NaN follows `missing_value_tracks_true` (LightGBM's
 * missing type None reads NaN as 0, whose direction is known per node).
 * Not expressible (undefined, the walk is used): categorical splits,
 * zero-as-missing, averaged (random-forest) outputs.
 */
import { CATEGORICAL, DEFAULT_LEFT, LESS_EQUAL, NAN_AS_ZERO, ZERO_IS_MISSING } from './forest';
import type { Forest } from './forest';
import { ProtoWriter } from './protobuf-writer';

const ATTR_INTS = 7;
const ATTR_FLOATS = 6;
const ATTR_STRINGS = 8;
const ATTR_INT = 2;
const ATTR_STRING = 3;
const TENSOR_FLOAT = 1;

const f32 = new Float32Array(1);
const i32 = new Int32Array(f32.buffer);

/** The largest float32 that is not above `t`. */
export function float32AtOrBelow(t: number): number {
  const f = Math.fround(t);
  if (f <= t || !Number.isFinite(t)) return f;
  f32[0] = f;
  i32[0] = f > 0 ? i32[0]! - 1 : f === 0 ? -2147483647 /* -min subnormal */ : i32[0]! + 1;
  return f32[0]!;
}

/** Why this forest cannot go to the tree-ensemble operator, or undefined when it can. */
export function notExpressible(forest: Forest): string | undefined {
  if (forest.divisor !== 1) return 'its output is an average over trees';
  for (let n = 0; n < forest.flags.length; n++) {
    if (forest.feature[n]! < 0) continue;
    const fl = forest.flags[n]!;
    if ((fl & CATEGORICAL) !== 0) return 'it has categorical splits';
    if ((fl & ZERO_IS_MISSING) !== 0) return 'it reads zeros as missing values';
  }
  return undefined;
}

function attribute(name: string, type: number, fill: (a: ProtoWriter) => void): ProtoWriter {
  const a = new ProtoWriter().string(1, name);
  fill(a);
  return a.int(20, type);
}

function valueInfo(name: string, dims: (number | string)[]): ProtoWriter {
  const shape = new ProtoWriter();
  for (const d of dims) shape.message(1, typeof d === 'number' ? new ProtoWriter().int(1, d) : new ProtoWriter().string(2, d));
  const tensor = new ProtoWriter().int(1, TENSOR_FLOAT).message(2, shape);
  return new ProtoWriter().string(1, name).message(2, new ProtoWriter().message(1, tensor));
}

/** The ONNX model bytes; call only when notExpressible(forest) is undefined. */
export function treeEnsembleModel(forest: Forest): Uint8Array {
  const treeIds: number[] = [];
  const nodeIds: number[] = [];
  const featureIds: number[] = [];
  const values: number[] = [];
  const modes: string[] = [];
  const trueIds: number[] = [];
  const falseIds: number[] = [];
  const tracksTrue: number[] = [];
  const targetTree: number[] = [];
  const targetNode: number[] = [];
  const targetIds: number[] = [];
  const weights: number[] = [];
  const trees = forest.roots.length;
  for (let t = 0; t < trees; t++) {
    const root = forest.roots[t]!;
    const end = t + 1 < trees ? forest.roots[t + 1]! : forest.feature.length;
    for (let n = root; n < end; n++) {
      const leaf = forest.feature[n]! < 0;
      const fl = forest.flags[n]!;
      const v = forest.value[n]!;
      treeIds.push(t);
      nodeIds.push(n - root);
      featureIds.push(leaf ? 0 : forest.feature[n]!);
      trueIds.push(leaf ? 0 : forest.left[n]! - root);
      falseIds.push(leaf ? 0 : forest.right[n]! - root);
      if (leaf) {
        modes.push('LEAF');
        values.push(0);
        tracksTrue.push(0);
        targetTree.push(t);
        targetNode.push(n - root);
        targetIds.push(forest.treeGroup[t]!);
        weights.push(v);
      } else if ((fl & LESS_EQUAL) !== 0) {
        modes.push('BRANCH_LEQ');
        values.push(float32AtOrBelow(v));
        tracksTrue.push((fl & NAN_AS_ZERO) !== 0 ? (0 <= v ? 1 : 0) : (fl & DEFAULT_LEFT) !== 0 ? 1 : 0);
      } else {
        modes.push('BRANCH_LT');
        values.push(v); // XGBoost's conditions are float32 already
        tracksTrue.push((fl & DEFAULT_LEFT) !== 0 ? 1 : 0);
      }
    }
  }
  const ints = (name: string, xs: number[]): ProtoWriter => attribute(name, ATTR_INTS, (a) => a.packedInts(8, xs));
  const floats = (name: string, xs: ArrayLike<number>): ProtoWriter => attribute(name, ATTR_FLOATS, (a) => a.packedFloats(7, xs));
  const node = new ProtoWriter().string(1, 'X').string(2, 'Y').string(3, 'forest').string(4, 'TreeEnsembleRegressor');
  for (const a of [
    attribute('n_targets', ATTR_INT, (w) => w.int(3, forest.numGroups)),
    attribute('aggregate_function', ATTR_STRING, (w) => w.string(4, 'SUM')),
    attribute('post_transform', ATTR_STRING, (w) => w.string(4, 'NONE')),
    floats('base_values', forest.baseMargin),
    ints('nodes_treeids', treeIds),
    ints('nodes_nodeids', nodeIds),
    ints('nodes_featureids', featureIds),
    floats('nodes_values', values),
    attribute('nodes_modes', ATTR_STRINGS, (w) => {
      for (const m of modes) w.string(9, m);
    }),
    ints('nodes_truenodeids', trueIds),
    ints('nodes_falsenodeids', falseIds),
    ints('nodes_missing_value_tracks_true', tracksTrue),
    ints('target_treeids', targetTree),
    ints('target_nodeids', targetNode),
    ints('target_ids', targetIds),
    floats('target_weights', weights),
  ])
    node.message(5, a);
  node.string(7, 'ai.onnx.ml');
  const graph = new ProtoWriter()
    .message(1, node)
    .string(2, 'fil_forest')
    .message(11, valueInfo('X', ['N', forest.numFeatures]))
    .message(12, valueInfo('Y', ['N', forest.numGroups]));
  return new ProtoWriter()
    .int(1, 8)
    .message(8, new ProtoWriter().string(1, '').int(2, 17))
    .message(8, new ProtoWriter().string(1, 'ai.onnx.ml').int(2, 3))
    .string(2, 'nodetron')
    .message(7, graph)
    .finish();
}
