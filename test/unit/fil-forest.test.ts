import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CATEGORICAL, DEFAULT_LEFT, ForestBuilder, IN_SET_GOES_LEFT, LESS_EQUAL, NAN_AS_ZERO, ZERO_IS_MISSING } from '../../src/backends/fil/forest';
import type { Forest, Transform } from '../../src/backends/fil/forest';
import { finishRows, outputWidth, sumTrees } from '../../src/backends/fil/forest-predict';
import { decodeUbjson } from '../../src/backends/fil/ubjson';
import { sniffModelType, parseXGBoostJson } from '../../src/backends/fil/model-file';
import { transformOf } from '../../src/backends/fil/lightgbm-text';
import { xgboostBaseMargin, xgboostTransform } from '../../src/backends/fil/xgboost-model';
import { float32AtOrBelow, notExpressible, treeEnsembleModel } from '../../src/backends/fil/onnx-tree-ensemble';

/** One split on feature 0 at 1.0 (or categories {1, 3, 40}); the left leaf is 10, the right 20. */
function stump(flags: number, transform: Transform = { kind: 'identity' }): Forest {
  const b = new ForestBuilder();
  b.add({ feature: [0, -1, -1], value: [1, 10, 20], left: [1, -1, -1], right: [2, -1, -1], flags: [flags, 0, 0], categories: new Map([[0, [1, 3, 40]]]) }, 0);
  return b.build({ library: 'test', objective: 'test', numFeatures: 1, numGroups: 1, numClasses: 0, baseMargin: new Float64Array(1), divisor: 1, transform });
}

function leaf(forest: Forest, x: number): number {
  const sums = new Float64Array(1);
  sumTrees(forest, Float32Array.of(x), 1, sums);
  return sums[0]!;
}

const XGB = 0;
const LGB_NAN = LESS_EQUAL;
const LGB_NONE = LESS_EQUAL | NAN_AS_ZERO;
const LGB_ZERO = LESS_EQUAL | NAN_AS_ZERO | ZERO_IS_MISSING;
const DECISIONS: [string, number, number, number][] = [
  ['XGBoost: x < t goes left', XGB, 0.5, 10],
  ['XGBoost: x = t goes right', XGB, 1, 20],
  ['XGBoost: NaN takes default right', XGB, NaN, 20],
  ['XGBoost: NaN takes default left', XGB | DEFAULT_LEFT, NaN, 10],
  ['LightGBM: x = t goes left (<=)', LGB_NAN, 1, 10],
  ['LightGBM missing NaN: NaN takes default right', LGB_NAN, NaN, 20],
  ['LightGBM missing NaN: NaN takes default left', LGB_NAN | DEFAULT_LEFT, NaN, 10],
  ['LightGBM missing None: NaN is 0, 0 <= 1 goes left', LGB_NONE, NaN, 10],
  ['LightGBM missing Zero: 0 takes default right', LGB_ZERO, 0, 20],
  ['LightGBM missing Zero: NaN is 0, takes default right', LGB_ZERO, NaN, 20],
  ['LightGBM missing Zero: 1e-36 is zero', LGB_ZERO | DEFAULT_LEFT, 1e-36, 10],
  ['XGBoost categorical: in the set goes right', CATEGORICAL, 3, 20],
  ['XGBoost categorical: outside the set goes left', CATEGORICAL, 2, 10],
  ["XGBoost categorical: past the set's words goes left", CATEGORICAL, 200, 10],
  ['XGBoost categorical: negative goes left', CATEGORICAL, -1, 10],
  ['XGBoost categorical: NaN takes the default', CATEGORICAL | DEFAULT_LEFT, NaN, 10],
  ['XGBoost categorical: 40 (second word) in the set', CATEGORICAL, 40, 20],
  ['LightGBM categorical: in the set goes left', CATEGORICAL | IN_SET_GOES_LEFT, 1, 10],
  ['LightGBM categorical: 3.7 is category 3', CATEGORICAL | IN_SET_GOES_LEFT, 3.7, 10],
  ['LightGBM categorical: outside the set goes right', CATEGORICAL | IN_SET_GOES_LEFT, 4, 20],
  ['LightGBM categorical: NaN goes right, even default-left', CATEGORICAL | IN_SET_GOES_LEFT | DEFAULT_LEFT, NaN, 20],
  ['LightGBM categorical: negative goes right', CATEGORICAL | IN_SET_GOES_LEFT, -3, 20],
];

for (const [name, flags, x, want] of DECISIONS) {
  test(`split decision: ${name}`, () => assert.equal(leaf(stump(flags), x), want));
}

/** Output modes over a two-class (numGroups 1) and a three-class forest's margins. */
const MODES: [string, number[], number, Transform, { outputClass: boolean; predictProba: boolean; threshold: number }, number[]][] = [
  ['regression: the margin', [1.5], 1, { kind: 'identity' }, { outputClass: false, predictProba: false, threshold: 0.5 }, [1.5]],
  ['exp objective', [0], 1, { kind: 'exp' }, { outputClass: false, predictProba: false, threshold: 0.5 }, [1]],
  ['binary: probability as the prediction', [0], 1, { kind: 'sigmoid', alpha: 1 }, { outputClass: false, predictProba: false, threshold: 0.5 }, [0.5]],
  ['binary: class by threshold (p > t)', [0], 1, { kind: 'sigmoid', alpha: 1 }, { outputClass: true, predictProba: false, threshold: 0.5 }, [0]],
  ['binary: class by a lower threshold', [0], 1, { kind: 'sigmoid', alpha: 1 }, { outputClass: true, predictProba: false, threshold: 0.4 }, [1]],
  ['binary: both probabilities', [0], 1, { kind: 'sigmoid', alpha: 1 }, { outputClass: true, predictProba: true, threshold: 0.5 }, [0.5, 0.5]],
  ['LightGBM sigmoid:2', [Math.log(3) / 2], 1, { kind: 'sigmoid', alpha: 2 }, { outputClass: false, predictProba: false, threshold: 0.5 }, [0.75]],
  ['multi-class: argmax', [0, 2, 1], 3, { kind: 'softmax' }, { outputClass: true, predictProba: false, threshold: 0.5 }, [1]],
  ['multi-class: softmax', [0, 0, Math.log(2)], 3, { kind: 'softmax' }, { outputClass: true, predictProba: true, threshold: 0.5 }, [0.25, 0.25, 0.5]],
];

for (const [name, margins, groups, transform, mode, want] of MODES) {
  test(`output mode: ${name}`, () => {
    const forest = { ...stump(0, transform), numGroups: groups };
    const width = outputWidth(forest, mode);
    assert.equal(width, want.length);
    const out = new Float32Array(width);
    finishRows(forest, Float64Array.from(margins), 1, { ...mode, width }, out);
    [...out].forEach((v, i) => assert.ok(Math.abs(v - want[i]!) < 1e-6, `${i}: ${v} vs ${want[i]}`));
  });
}

test('base margin and divisor: (sum / divisor) + base', () => {
  const forest = { ...stump(XGB), baseMargin: Float64Array.of(0.5), divisor: 2 };
  assert.equal(leaf(forest, 0), 5.5);
});

const OBJECTIVES: [string, string, string][] = [
  ['xgboost', 'binary:logistic', 'sigmoid'],
  ['xgboost', 'reg:logistic', 'sigmoid'],
  ['xgboost', 'binary:logitraw', 'identity'],
  ['xgboost', 'reg:squarederror', 'identity'],
  ['xgboost', 'count:poisson', 'exp'],
  ['xgboost', 'multi:softprob', 'softmax'],
  ['xgboost', 'binary:hinge', 'hinge'],
  ['lightgbm', 'binary sigmoid:1', 'sigmoid'],
  ['lightgbm', 'multiclass num_class:3', 'softmax'],
  ['lightgbm', 'multiclassova num_class:3 sigmoid:1', 'sigmoid'],
  ['lightgbm', 'regression', 'identity'],
  ['lightgbm', 'poisson', 'exp'],
  ['lightgbm', 'cross_entropy_lambda', 'log1p_exp'],
];
for (const [lib, objective, kind] of OBJECTIVES) {
  test(`${lib} objective '${objective}' → ${kind}`, () => {
    assert.equal((lib === 'xgboost' ? xgboostTransform(objective) : transformOf(objective)).kind, kind);
  });
}

test('XGBoost base score as a margin: logit for logistic, log for exp objectives, as is otherwise', () => {
  assert.ok(Math.abs(xgboostBaseMargin('binary:logistic', 0.5)) < 1e-12);
  assert.ok(Math.abs(xgboostBaseMargin('binary:logistic', 0.75) - Math.log(3)) < 1e-12);
  assert.equal(xgboostBaseMargin('count:poisson', 1), 0);
  assert.equal(xgboostBaseMargin('reg:squarederror', 0.5), 0.5);
});

test('UBJSON: scalars, strings, plain and optimized containers, typed arrays big-endian', () => {
  const bytes = Buffer.concat([
    Buffer.from('{'),
    Buffer.from([0x55, 1]),
    Buffer.from('a'),
    Buffer.from([0x69, 0xff]), // a: int8 -1
    Buffer.from([0x55, 1]),
    Buffer.from('b'),
    Buffer.from('[$d#'),
    Buffer.from([0x55, 2]),
    Buffer.from([0x3f, 0x80, 0, 0, 0x40, 0, 0, 0]), // b: float32 [1, 2]
    Buffer.from([0x55, 1]),
    Buffer.from('c'),
    Buffer.from('[#'),
    Buffer.from([0x55, 2]),
    Buffer.from('T'),
    Buffer.from('SU'),
    Buffer.from([2]),
    Buffer.from('hi'),
    Buffer.from([0x55, 1]),
    Buffer.from('d'),
    Buffer.from('[l'),
    Buffer.from([0, 0, 1, 0]),
    Buffer.from('Z]'),
    Buffer.from([0x55, 1]),
    Buffer.from('e'),
    Buffer.from('[$l#'),
    Buffer.from([0x55, 1]),
    Buffer.from([0xff, 0xff, 0xff, 0xfe]),
    Buffer.from('}'),
  ]);
  const doc = decodeUbjson(bytes) as Record<string, unknown>;
  assert.equal(doc['a'], -1);
  assert.deepEqual([...(doc['b'] as Float32Array)], [1, 2]);
  assert.deepEqual(doc['c'], [true, 'hi']);
  assert.deepEqual(doc['d'], [256, null]);
  assert.deepEqual([...(doc['e'] as Int32Array)], [-2]);
});

test('UBJSON cut short is a model error naming the byte', () => {
  assert.throws(() => decodeUbjson(Buffer.from('[$d#U\u0002\u0000')), /the UBJSON data ends early \(at byte 6, 8 more needed\)/);
});

const SNIFF: [string, Uint8Array, string | undefined][] = [
  ['LightGBM text', Buffer.from('tree\nversion=v4\n'), 'lightgbm'],
  ['XGBoost JSON', Buffer.from('{"learner": {}}'), 'xgboost_json'],
  ['XGBoost UBJSON', Buffer.concat([Buffer.from('{'), Buffer.from([0x55, 7]), Buffer.from('learner')]), 'xgboost_ubj'],
  ['XGBoost legacy binary', Buffer.from('binf\u0000\u0000\u0000?'), 'xgboost'],
  ['anything else', Buffer.from([0, 0, 0, 63, 4, 0]), undefined],
];
for (const [name, head, want] of SNIFF) test(`sniffModelType: ${name}`, () => assert.equal(sniffModelType(head), want));

test('XGBoost JSON with bare NaN and Infinity parses (NaN as null)', () => {
  assert.deepEqual(parseXGBoostJson('{"a": [NaN, 1.5, -Infinity], "b": "NaN"}'), { a: [null, 1.5, -Infinity], b: 'NaN' });
});

const AT_OR_BELOW: [string, number][] = [
  ['a float32 stays', 0.5],
  ['0.1 (rounds up in float32)', 0.1],
  ['-0.1 (rounds down)', -0.1],
  ['1e-35', 1e-35],
  ['0', 0],
  ['a double just above 1', 1 + 2 ** -40],
];
for (const [name, t] of AT_OR_BELOW) {
  test(`float32AtOrBelow(${name}): the largest float32 not above it, so x <= t is the same test for float32 x`, () => {
    const f = float32AtOrBelow(t);
    assert.equal(Math.fround(f), f);
    assert.ok(f <= t);
    const next = new Float32Array(1);
    const bits = new Int32Array(next.buffer);
    next[0] = f;
    bits[0] = f >= 0 ? bits[0]! + 1 : bits[0]! - 1;
    if (f === 0) next[0] = 2 ** -149;
    assert.ok(next[0]! > t, `the next float32 up, ${next[0]}, is above ${t}`);
  });
}

const EXPRESSIBLE: [string, number, number, string | undefined][] = [
  ['XGBoost numerical splits', DEFAULT_LEFT, 1, undefined],
  ['LightGBM missing None', LESS_EQUAL | NAN_AS_ZERO, 1, undefined],
  ['categorical splits', CATEGORICAL, 1, 'it has categorical splits'],
  ['zeros as missing', LESS_EQUAL | NAN_AS_ZERO | ZERO_IS_MISSING, 1, 'it reads zeros as missing values'],
  ['an averaged forest', 0, 3, 'its output is an average over trees'],
];
for (const [name, flags, divisor, want] of EXPRESSIBLE) {
  test(`ONNX Runtime's tree ensemble can hold: ${name} → ${want ?? 'yes'}`, () => {
    assert.equal(notExpressible({ ...stump(flags), divisor }), want);
    if (want === undefined) assert.ok(treeEnsembleModel(stump(flags)).length > 100);
  });
}
