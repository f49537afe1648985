/**
 * A tree ensemble in flat typed arrays, the one form every FIL model file
 * (XGBoost JSON, UBJSON and legacy binary, LightGBM text) is read into and
 * that `forest-predict.ts` evaluates. Nodes of all trees share one set of
 * arrays; a node's children are absolute indexes into them.
 */

/** Node flags: how a split decides. */
export const DEFAULT_LEFT = 1;
/** Categorical split: `value` indexes catStart/catWords; the feature's integer value is looked up in the bitset. */
export const CATEGORICAL = 2;
/** Numerical split goes left on `x <= threshold` (LightGBM) rather than `x < threshold` (XGBoost). */
export const LESS_EQUAL = 4;
/** LightGBM missing type Zero: |x| <= 1e-35 (and NaN, read as 0) takes the default direction. */
export const ZERO_IS_MISSING = 8;
/** LightGBM missing type None or Zero: NaN is read as 0 before the split is decided. */
export const NAN_AS_ZERO = 16;
/** Categorical split: a category in the set goes left (LightGBM); otherwise it goes right (XGBoost). */
export const IN_SET_GOES_LEFT = 32;

/** How the summed leaf values (one per output group) become the model's prediction. */
export type Transform =
  | { kind: 'identity' }
  | { kind: 'sigmoid'; alpha: number }
  | { kind: 'softmax' }
  | { kind: 'exp' }
  | { kind: 'log1p_exp' }
  /** binary:hinge: 1 when the margin is positive, else 0. */
  | { kind: 'hinge' };

export interface Forest {
  /** 'XGBoost' or 'LightGBM', for messages. */
  library: string;
  /** The objective as the file names it. */
  objective: string;
  numFeatures: number;
  /** Sums per row: 1, or the number of classes of a multi-class model. */
  numGroups: number;
  /** Classes the model predicts: 0 for a regressor, 2 for a binary classifier, else numGroups. */
  numClasses: number;
  feature: Int32Array;
  value: Float64Array;
  left: Int32Array;
  right: Int32Array;
  flags: Uint8Array;
  /** Categorical node sets: words of node i's set are catWords[catStart[value]...]. */
  catStart: Int32Array;
  catLength: Int32Array;
  catWords: Uint32Array;
  roots: Int32Array;
  /** Output group of each tree. */
  treeGroup: Int32Array;
  /** Added to each group's sum before the transform. */
  baseMargin: Float64Array;
  /** Each group's sum is divided by this (random-forest averaging); 1 otherwise. */
  divisor: number;
  transform: Transform;
}

/** One tree as a parser sees it: node-local child indexes, -1 for none. */
export interface TreeNodes {
  /** -1 for a leaf. */
  feature: ArrayLike<number>;
  /** Threshold of a numerical split, leaf value of a leaf; ignored for categorical splits. */
  value: ArrayLike<number>;
  left: ArrayLike<number>;
  right: ArrayLike<number>;
  flags: ArrayLike<number>;
  /** For categorical nodes: the categories in the set (node index → list). */
  categories?: Map<number, number[]>;
}

/** Collects trees into one Forest. */
export class ForestBuilder {
  private readonly trees: { nodes: TreeNodes; group: number }[] = [];

  add(nodes: TreeNodes, group: number): void {
    this.trees.push({ nodes, group });
  }

  get treeCount(): number {
    return this.trees.length;
  }

  build(head: Omit<Forest, 'feature' | 'value' | 'left' | 'right' | 'flags' | 'catStart' | 'catLength' | 'catWords' | 'roots' | 'treeGroup'>): Forest {
    const total = this.trees.reduce((n, t) => n + t.nodes.feature.length, 0);
    const feature = new Int32Array(total);
    const value = new Float64Array(total);
    const left = new Int32Array(total);
    const right = new Int32Array(total);
    const flags = new Uint8Array(total);
    const roots = new Int32Array(this.trees.length);
    const treeGroup = new Int32Array(this.trees.length);
    const catStart: number[] = [];
    const catLength: number[] = [];
    const words: number[] = [];
    let base = 0;
    this.trees.forEach(({ nodes, group }, t) => {
      roots[t] = base;
      treeGroup[t] = group;
      const n = nodes.feature.length;
      for (let i = 0; i < n; i++) {
        const at = base + i;
        feature[at] = nodes.feature[i];
        flags[at] = nodes.flags[i];
        left[at] = nodes.left[i] < 0 ? -1 : base + nodes.left[i];
        right[at] = nodes.right[i] < 0 ? -1 : base + nodes.right[i];
        if (feature[at] >= 0 && (flags[at] & CATEGORICAL) !== 0) {
          const cats = nodes.categories?.get(i) ?? [];
          value[at] = catStart.length;
          catStart.push(words.length);
          const max = cats.reduce((m, c) => Math.max(m, c), -1);
          const count = (max >> 5) + 1;
          catLength.push(max < 0 ? 0 : count);
          const from = words.length;
          if (max >= 0) for (let w = 0; w < count; w++) words.push(0);
          for (const c of cats) words[from + (c >> 5)] = (words[from + (c >> 5)]! | (1 << (c & 31))) >>> 0;
        } else {
          value[at] = nodes.value[i];
        }
      }
      base += n;
    });
    return {
      ...head,
      feature,
      value,
      left,
      right,
      flags,
      roots,
      treeGroup,
      catStart: Int32Array.from(catStart),
      catLength: Int32Array.from(catLength),
      catWords: Uint32Array.from(words),
    };
  }
}
