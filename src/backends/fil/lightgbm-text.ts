/**
 * LightGBM's text model format (`model.txt`, Booster.save_model) into a
 * Forest. Follows LightGBM's own prediction (tree.h NumericalDecision,
 * CategoricalDecision): `decision_type` bit 0 marks a categorical split,
 * bit 1 default-left, bits 2-3 the missing type (None, Zero, NaN); a
 * numerical split goes left on `x <= threshold`; a categorical one goes left
 * when the integer category is in its bitset (`cat_boundaries`,
 * `cat_threshold`); a child below zero is leaf ~child. Tree t adds to class
 * t mod num_tree_per_iteration.
 */
import { CATEGORICAL, DEFAULT_LEFT, ForestBuilder, IN_SET_GOES_LEFT, LESS_EQUAL, NAN_AS_ZERO, ZERO_IS_MISSING } from './forest';
import type { Forest, Transform } from './forest';
import { FilModelError } from './fil-model-error';

const MISSING_NONE = 0;
const MISSING_ZERO = 1;

export function forestFromLightGBMText(text: string): Forest {
  const blocks = text.split(/\n(?=Tree=)/);
  const head = keyValues(blocks[0]!);
  if (!blocks[0]!.startsWith('tree')) throw new FilModelError('it does not begin with the line "tree" of a LightGBM text model');
  const numClass = int(head, 'num_class', 'the header');
  const perIteration = int(head, 'num_tree_per_iteration', 'the header');
  const numFeatures = int(head, 'max_feature_idx', 'the header') + 1;
  const objective = head.get('objective') ?? 'regression';
  const average = head.has('average_output');
  const builder = new ForestBuilder();
  for (const block of blocks.slice(1)) {
    const body = block.split(/\nend of trees/)[0]!;
    const kv = keyValues(body);
    const where = `tree ${kv.get('Tree') ?? builder.treeCount}`;
    if (kv.get('is_linear') === '1')
      throw new FilModelError(`${where} is a linear tree (linear_tree=true), which FIL does not evaluate; train without linear_tree`);
    builder.add(treeNodes(kv, where), builder.treeCount % perIteration);
  }
  if (builder.treeCount === 0) throw new FilModelError('it has no trees');
  const numGroups = perIteration;
  const iterations = builder.treeCount / perIteration;
  return builder.build({
    library: 'LightGBM',
    objective,
    numFeatures,
    numGroups,
    numClasses: classesOf(objective, numClass),
    baseMargin: new Float64Array(numGroups),
    divisor: average ? iterations : 1,
    transform: transformOf(objective),
  });
}

function classesOf(objective: string, numClass: number): number {
  const name = objective.split(' ')[0]!;
  if (name === 'multiclass' || name === 'multiclassova') return numClass;
  if (name === 'binary') return 2;
  return 0;
}

/** What LightGBM's predict() applies to the raw score, by objective (objective_function.cpp ConvertOutput). */
export function transformOf(objective: string): Transform {
  const [name, ...args] = objective.split(' ');
  const arg = (key: string, dflt: number): number => {
    const a = args.find((x) => x.startsWith(`${key}:`));
    return a === undefined ? dflt : Number(a.slice(key.length + 1));
  };
  switch (name) {
    case 'binary':
      return { kind: 'sigmoid', alpha: arg('sigmoid', 1) };
    case 'multiclassova':
      return { kind: 'sigmoid', alpha: arg('sigmoid', 1) };
    case 'multiclass':
      return { kind: 'softmax' };
    case 'cross_entropy':
    case 'xentropy':
      return { kind: 'sigmoid', alpha: 1 };
    case 'cross_entropy_lambda':
    case 'xentlambda':
      return { kind: 'log1p_exp' };
    case 'poisson':
    case 'gamma':
    case 'tweedie':
      return { kind: 'exp' };
    default:
      return { kind: 'identity' };
  }
}

function keyValues(block: string): Map<string, string> {
  const kv = new Map<string, string>();
  for (const line of block.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) kv.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
    else if (line.trim() !== '') kv.set(line.trim(), '');
  }
  return kv;
}

function int(kv: Map<string, string>, key: string, where: string): number {
  const v = Number(kv.get(key));
  if (!kv.has(key) || !Number.isInteger(v)) throw new FilModelError(`${where} has no integer '${key}'`);
  return v;
}

function list(kv: Map<string, string>, key: string, where: string, length: number): number[] {
  const text = kv.get(key);
  if (text === undefined) throw new FilModelError(`${where} has no '${key}'`);
  const out = text === '' ? [] : text.split(' ').map(Number);
  if (out.length !== length || out.some((v) => Number.isNaN(v))) {
    throw new FilModelError(`${where}: '${key}' has ${out.length} numbers, expected ${length}`);
  }
  return out;
}

/** Internal nodes keep their indexes; leaf k becomes node internal + k. */
function treeNodes(kv: Map<string, string>, where: string): Parameters<ForestBuilder['add']>[0] {
  const leaves = int(kv, 'num_leaves', where);
  const leafValue = list(kv, 'leaf_value', where, leaves);
  const shrinkage = 1; // leaf values in the file are already shrunk
  if (leaves === 1) {
    return { feature: [-1], value: [leafValue[0]! * shrinkage], left: [-1], right: [-1], flags: [0] };
  }
  const internal = leaves - 1;
  const splitFeature = list(kv, 'split_feature', where, internal);
  const threshold = list(kv, 'threshold', where, internal);
  const decision = list(kv, 'decision_type', where, internal);
  const leftChild = list(kv, 'left_child', where, internal);
  const rightChild = list(kv, 'right_child', where, internal);
  const numCat = int(kv, 'num_cat', where);
  const catBoundaries = numCat > 0 ? list(kv, 'cat_boundaries', where, numCat + 1) : [];
  const catThreshold = numCat > 0 ? list(kv, 'cat_threshold', where, catBoundaries[numCat]!) : [];
  const n = internal + leaves;
  const feature = new Int32Array(n).fill(-1);
  const value = new Float64Array(n);
  const left = new Int32Array(n).fill(-1);
  const right = new Int32Array(n).fill(-1);
  const flags = new Uint8Array(n);
  const categories = new Map<number, number[]>();
  const child = (c: number): number => {
    const at = c >= 0 ? c : internal + ~c;
    if (at < 0 || at >= n) throw new FilModelError(`${where}: child ${c} is out of range`);
    return at;
  };
  for (let i = 0; i < internal; i++) {
    const d = decision[i]!;
    feature[i] = splitFeature[i]!;
    left[i] = child(leftChild[i]!);
    right[i] = child(rightChild[i]!);
    const missing = (d >> 2) & 3;
    let f = (d & 2) !== 0 ? DEFAULT_LEFT : 0;
    if ((d & 1) !== 0) {
      f |= CATEGORICAL | IN_SET_GOES_LEFT;
      const c = threshold[i]!;
      const cats: number[] = [];
      for (let w = catBoundaries[c]!; w < catBoundaries[c + 1]!; w++) {
        const word = catThreshold[w]!;
        for (let b = 0; b < 32; b++) if (((word >>> b) & 1) !== 0) cats.push((w - catBoundaries[c]!) * 32 + b);
      }
      categories.set(i, cats);
    } else {
      f |= LESS_EQUAL;
      if (missing === MISSING_NONE || missing === MISSING_ZERO) f |= NAN_AS_ZERO;
      if (missing === MISSING_ZERO) f |= ZERO_IS_MISSING;
      value[i] = threshold[i]!;
    }
    flags[i] = f;
  }
  for (let k = 0; k < leaves; k++) value[internal + k] = leafValue[k]! * shrinkage;
  return { feature, value, left, right, flags, categories };
}
