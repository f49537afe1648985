/**
 * Evaluates a Forest over rows of float32 features: each row walks every
 * tree (rows outer, trees inner: a small forest stays in cache), the leaves
 * are summed per output group, and the FIL output mode turns the sums into
 * what the model answers (the prediction, class probabilities, or the class
 * index). Pure; `fil-instance.ts` runs it inside an instance thread.
 */
import { CATEGORICAL, DEFAULT_LEFT, IN_SET_GOES_LEFT, LESS_EQUAL, NAN_AS_ZERO, ZERO_IS_MISSING } from './forest';
import type { Forest } from './forest';

/** LightGBM's kZeroThreshold. */
const ZERO_THRESHOLD = 1e-35;

/** Sums of leaf values, rows × numGroups, into `sums` (divided by the divisor, the base margin added). */
export function sumTrees(forest: Forest, x: Float32Array, rows: number, sums: Float64Array): void {
  const { feature, value, left, right, flags, roots, treeGroup, numFeatures, numGroups, baseMargin, divisor } = forest;
  const trees = roots.length;
  for (let r = 0; r < rows; r++) {
    const base = r * numFeatures;
    const out = r * numGroups;
    for (let g = 0; g < numGroups; g++) sums[out + g] = 0;
    for (let t = 0; t < trees; t++) {
      let n = roots[t]!;
      let f: number;
      while ((f = feature[n]!) >= 0) {
        const fl = flags[n]!;
        let v = x[base + f]!;
        if (fl === DEFAULT_LEFT || fl === 0) {
          // XGBoost's plain numerical split.
          n = v < value[n]! ? left[n]! : v === v ? right[n]! : fl === DEFAULT_LEFT ? left[n]! : right[n]!;
          continue;
        }
        if ((fl & CATEGORICAL) !== 0) {
          n = categoricalGoesLeft(forest, n, v, fl) ? left[n]! : right[n]!;
          continue;
        }
        if (v !== v) {
          if ((fl & NAN_AS_ZERO) === 0) {
            n = (fl & DEFAULT_LEFT) !== 0 ? left[n]! : right[n]!;
            continue;
          }
          v = 0;
        }
        if ((fl & ZERO_IS_MISSING) !== 0 && v >= -ZERO_THRESHOLD && v <= ZERO_THRESHOLD) {
          n = (fl & DEFAULT_LEFT) !== 0 ? left[n]! : right[n]!;
          continue;
        }
        n = ((fl & LESS_EQUAL) !== 0 ? v <= value[n]! : v < value[n]!) ? left[n]! : right[n]!;
      }
      sums[out + treeGroup[t]!] += value[n]!;
    }
    for (let g = 0; g < numGroups; g++) sums[out + g] = sums[out + g]! / divisor + baseMargin[g]!;
  }
}

function categoricalGoesLeft(forest: Forest, n: number, v: number, fl: number): boolean {
  const lightgbm = (fl & IN_SET_GOES_LEFT) !== 0;
  // XGBoost treats NaN as missing (the default child); LightGBM sends it right.
  if (v !== v) return lightgbm ? false : (fl & DEFAULT_LEFT) !== 0;
  const cat = Math.trunc(v);
  const set = forest.value[n]!;
  let inSet = false;
  if (cat >= 0 && cat < 2 ** 31) {
    const word = cat >>> 5;
    if (word < forest.catLength[set]!) inSet = ((forest.catWords[forest.catStart[set]! + word]! >>> (cat & 31)) & 1) !== 0;
  }
  return lightgbm ? inSet : !inSet;
}

/** FIL's output modes (config parameters output_class, predict_proba, threshold). */
export interface OutputMode {
  outputClass: boolean;
  predictProba: boolean;
  threshold: number;
  /** Values per row the config's output__0 holds. */
  width: number;
}

/** Columns per row of the answer for this forest and mode. */
export function outputWidth(forest: Forest, mode: Omit<OutputMode, 'width'>): number {
  if (mode.outputClass && !mode.predictProba) return 1;
  if (mode.outputClass && mode.predictProba && forest.numGroups === 1) return 2;
  return forest.numGroups;
}

/** The model's prediction per row (transform applied), written as `mode.width` float32 values per row. */
export function finishRows(forest: Forest, sums: Float64Array, rows: number, mode: OutputMode, out: Float32Array): void {
  const k = forest.numGroups;
  const t = forest.transform;
  for (let r = 0; r < rows; r++) {
    const s = r * k;
    const o = r * mode.width;
    if (t.kind === 'softmax') {
      let max = -Infinity;
      for (let g = 0; g < k; g++) max = Math.max(max, sums[s + g]!);
      let total = 0;
      for (let g = 0; g < k; g++) {
        const e = Math.exp(sums[s + g]! - max);
        sums[s + g] = e;
        total += e;
      }
      for (let g = 0; g < k; g++) sums[s + g] = sums[s + g]! / total;
    } else {
      for (let g = 0; g < k; g++) sums[s + g] = apply(t, sums[s + g]!);
    }
    if (mode.outputClass && !mode.predictProba) {
      if (k === 1) out[o] = sums[s]! > mode.threshold ? 1 : 0;
      else {
        let best = 0;
        for (let g = 1; g < k; g++) if (sums[s + g]! > sums[s + best]!) best = g;
        out[o] = best;
      }
    } else if (k === 1 && mode.width === 2) {
      out[o] = 1 - sums[s]!;
      out[o + 1] = sums[s]!;
    } else {
      for (let g = 0; g < k; g++) out[o + g] = sums[s + g]!;
    }
  }
}

function apply(t: Forest['transform'], m: number): number {
  switch (t.kind) {
    case 'sigmoid':
      return 1 / (1 + Math.exp(-t.alpha * m));
    case 'exp':
      return Math.exp(m);
    case 'log1p_exp':
      return Math.log1p(Math.exp(m));
    case 'hinge':
      return m > 0 ? 1 : 0;
    default:
      return m;
  }
}
