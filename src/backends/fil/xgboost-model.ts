/**
 * An XGBoost model as its JSON schema lays it out (the same document whether
 * it came as JSON text or as UBJSON) into a Forest. Follows XGBoost's own
 * prediction: a split goes left on `x < split_condition`, a missing value
 * (NaN) takes `default_left`, a categorical split sends the categories in
 * its set right; each tree's leaf adds to the group `tree_info` names; the
 * objective's base score is turned into a margin and its transform applied.
 */
import { DEFAULT_LEFT, CATEGORICAL, ForestBuilder } from './forest';
import type { Forest, Transform } from './forest';
import { FilModelError } from './fil-model-error';

type Doc = Record<string, unknown>;

function field(doc: unknown, key: string, where: string): unknown {
  if (doc === null || typeof doc !== 'object' || !(key in (doc as Doc))) throw new FilModelError(`${where} has no '${key}'`);
  return (doc as Doc)[key];
}

function numbers(doc: unknown, key: string, where: string): ArrayLike<number> {
  const v = field(doc, key, where);
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return v as ArrayLike<number>;
  throw new FilModelError(`${where}.${key} is not an array`);
}

function num(v: unknown, what: string): number {
  const n = typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : Number(String(v).replace(/^\[|\]$/g, ''));
  if (!Number.isFinite(n)) throw new FilModelError(`${what} is not a number: ${String(v)}`);
  return n;
}

/** The objectives whose predict() is the sigmoid of the margin, and the base score a logit. */
const LOGISTIC = new Set(['binary:logistic', 'reg:logistic']);
const EXP = new Set(['count:poisson', 'reg:gamma', 'reg:tweedie', 'survival:cox', 'survival:aft']);

export function xgboostTransform(objective: string): Transform {
  if (LOGISTIC.has(objective)) return { kind: 'sigmoid', alpha: 1 };
  if (EXP.has(objective)) return { kind: 'exp' };
  if (objective === 'multi:softprob' || objective === 'multi:softmax') return { kind: 'softmax' };
  if (objective === 'binary:hinge') return { kind: 'hinge' };
  return { kind: 'identity' };
}

/** XGBoost's ProbToMargin of the objective: the base score as the trees' starting margin. */
export function xgboostBaseMargin(objective: string, baseScore: number): number {
  if (LOGISTIC.has(objective) || objective === 'binary:logitraw') return -Math.log(1 / baseScore - 1);
  if (EXP.has(objective)) return Math.log(baseScore);
  return baseScore;
}

export function xgboostClasses(objective: string, numClass: number): number {
  if (objective.startsWith('multi:')) return numClass;
  if (objective.startsWith('binary:')) return 2;
  return 0;
}

export function forestFromXGBoostDocument(doc: unknown): Forest {
  const learner = field(doc, 'learner', 'the model');
  const params = field(learner, 'learner_model_param', 'learner');
  const objective = String(field(field(learner, 'objective', 'learner'), 'name', 'learner.objective'));
  const booster = field(learner, 'gradient_booster', 'learner') as Doc;
  const kind = String(field(booster, 'name', 'learner.gradient_booster'));
  let model: unknown;
  let weights: ArrayLike<number> | undefined;
  if (kind === 'gbtree') model = field(booster, 'model', 'learner.gradient_booster');
  else if (kind === 'dart') {
    model = field(field(booster, 'gbtree', 'learner.gradient_booster'), 'model', 'learner.gradient_booster.gbtree');
    weights = numbers(booster, 'weight_drop', 'learner.gradient_booster');
  } else {
    throw new FilModelError(`the booster is '${kind}'; only tree boosters (gbtree, dart) are tree models FIL can serve`);
  }
  const numFeatures = num(field(params, 'num_feature', 'learner_model_param'), 'num_feature');
  const numClass = num((params as Doc)['num_class'] ?? 0, 'num_class');
  const numTarget = num((params as Doc)['num_target'] ?? 1, 'num_target');
  const numGroups = Math.max(1, numClass, numTarget);
  const baseScore = num(field(params, 'base_score', 'learner_model_param'), 'base_score');
  const trees = field(model, 'trees', 'the gbtree model');
  const treeInfo = numbers(model, 'tree_info', 'the gbtree model');
  if (!Array.isArray(trees)) throw new FilModelError("the gbtree model's trees are not an array");
  const builder = new ForestBuilder();
  trees.forEach((tree, t) => builder.add(treeNodes(tree, `tree ${t}`, weights?.[t] ?? 1), treeInfo[t] ?? 0));
  const margin = xgboostBaseMargin(objective, baseScore);
  return builder.build({
    library: 'XGBoost',
    objective,
    numFeatures,
    numGroups,
    numClasses: xgboostClasses(objective, numClass),
    baseMargin: new Float64Array(numGroups).fill(margin),
    divisor: 1,
    transform: xgboostTransform(objective),
  });
}

function treeNodes(tree: unknown, where: string, weight: number): Parameters<ForestBuilder['add']>[0] {
  const left = numbers(tree, 'left_children', where);
  const right = numbers(tree, 'right_children', where);
  const index = numbers(tree, 'split_indices', where);
  const cond = numbers(tree, 'split_conditions', where);
  const defaultLeft = numbers(tree, 'default_left', where);
  const doc = tree as Doc;
  const splitType = (doc['split_type'] ?? []) as ArrayLike<number>;
  const n = left.length;
  if (right.length !== n || index.length !== n || cond.length !== n || defaultLeft.length !== n) {
    throw new FilModelError(`${where}: its node arrays have different lengths`);
  }
  const feature = new Int32Array(n);
  const value = new Float64Array(n);
  const flags = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const leaf = left[i] === -1;
    feature[i] = leaf ? -1 : index[i];
    // XGBoost keeps float32 conditions and leaves: rounding here keeps its comparisons exact.
    value[i] = Math.fround(leaf ? cond[i] * weight : cond[i]);
    flags[i] = (defaultLeft[i] ? DEFAULT_LEFT : 0) | (!leaf && splitType[i] === 1 ? CATEGORICAL : 0);
    if (!leaf && (left[i] < 0 || left[i] >= n || right[i] < 0 || right[i] >= n)) {
      throw new FilModelError(`${where}, node ${i}: a child index is out of range`);
    }
  }
  const categories = new Map<number, number[]>();
  const catNodes = (doc['categories_nodes'] ?? []) as ArrayLike<number>;
  const segments = (doc['categories_segments'] ?? []) as ArrayLike<number>;
  const sizes = (doc['categories_sizes'] ?? []) as ArrayLike<number>;
  const cats = (doc['categories'] ?? []) as ArrayLike<number>;
  for (let k = 0; k < catNodes.length; k++) {
    const from = Number(segments[k]);
    const list: number[] = [];
    for (let j = 0; j < Number(sizes[k]); j++) list.push(Number(cats[from + j]));
    categories.set(Number(catNodes[k]), list);
  }
  return { feature, value, left, right, flags, categories };
}
