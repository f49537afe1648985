import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseModelConfigText } from '../../src/repository/config/pbtxt';
import { filParameterWarnings, readFilParams } from '../../src/backends/fil/fil-params';
import type { FilParams } from '../../src/backends/fil/fil-params';

function config(params: Record<string, string>, extra = ''): ReturnType<typeof parseModelConfigText> {
  const list = Object.entries(params)
    .map(([k, v]) => `{ key: "${k}" value: { string_value: "${v}" } }`)
    .join(', ');
  return parseModelConfigText(`name: "m"\nbackend: "fil"\n${extra}\nparameters [${list}]`, 'm/config.pbtxt');
}

const READ: [string, Record<string, string>, string, Partial<FilParams>][] = [
  ['defaults', {}, '', { modelType: 'xgboost', outputClass: undefined, predictProba: false, threshold: 0.5 }],
  ['model_type from the file name', {}, 'default_model_filename: "model.txt"', { modelType: 'lightgbm' }],
  ['model_type wins over the file name', { model_type: 'xgboost_json' }, 'default_model_filename: "model.txt"', { modelType: 'xgboost_json' }],
  [
    'classifier with probabilities',
    { model_type: 'xgboost_ubj', output_class: 'true', predict_proba: 'true' },
    '',
    { modelType: 'xgboost_ubj', outputClass: true, predictProba: true },
  ],
  ['threshold', { threshold: '0.3', output_class: 'True' }, '', { threshold: 0.3, outputClass: true }],
  ['1 and 0 are booleans', { output_class: '0', predict_proba: '1' }, '', { outputClass: false, predictProba: true }],
  [
    'GPU-only and CPU tuning values that Triton accepts',
    {
      algo: 'BATCH_TREE_REORG',
      storage_type: 'SPARSE8',
      threads_per_tree: '4',
      blocks_per_sm: '0',
      transfer_threshold: '2',
      use_experimental_optimizations: 'true',
      layout: 'depth_first',
      chunk_size: '4',
      cpu_nthread: '2',
      xgboost_allow_unknown_field: 'false',
    },
    '',
    { modelType: 'xgboost' },
  ],
];

for (const [name, params, extra, want] of READ) {
  test(`readFilParams: ${name}`, () => {
    const got = readFilParams(config(params, extra));
    for (const [k, v] of Object.entries(want)) assert.equal(got[k as keyof FilParams], v, k);
  });
}

const REFUSED: [string, Record<string, string>, string][] = [
  [
    'unknown model_type',
    { model_type: 'catboost' },
    "unable to load model 'm': Unknown model_type 'catboost': expected one of xgboost, xgboost_json, xgboost_ubj, lightgbm, treelite_checkpoint (xgboost: xgboost.model, xgboost_json: xgboost.json, xgboost_ubj: xgboost.ubj, lightgbm: model.txt, treelite_checkpoint: checkpoint.tl)",
  ],
  ['output_class not a boolean', { output_class: 'yes' }, "unable to load model 'm': parameter 'output_class' must be \"true\" or \"false\", got 'yes'"],
  ['threshold not a number', { threshold: 'half' }, "unable to load model 'm': parameter 'threshold' must be a number, got 'half'"],
  [
    "unknown algo (Triton FIL's text)",
    { algo: 'FAST' },
    "unable to load model 'm': Unknown FIL algorithm name: FAST (parameter 'algo' is one of ALGO_AUTO, NAIVE, TREE_REORG, BATCH_TREE_REORG)",
  ],
  [
    "unknown storage_type (Triton FIL's text)",
    { storage_type: 'COMPACT' },
    "unable to load model 'm': Unknown FIL storage type name: COMPACT (parameter 'storage_type' is one of AUTO, DENSE, SPARSE, SPARSE8)",
  ],
  ['threads_per_tree negative', { threads_per_tree: '-1' }, "unable to load model 'm': parameter 'threads_per_tree' must be a non-negative integer, got '-1'"],
  ['chunk_size zero', { chunk_size: '0' }, "unable to load model 'm': parameter 'chunk_size' must be a positive integer, got '0'"],
];

for (const [name, params, message] of REFUSED) {
  test(`readFilParams refuses: ${name}`, () => {
    assert.throws(
      () => readFilParams(config(params)),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, 'INVALID_ARG');
        assert.equal(e.message, message);
        return true;
      },
    );
  });
}

test('filParameterWarnings: one line per GPU-only, CPU-tuning and unknown parameter; none for those that act', () => {
  const got = filParameterWarnings(
    config({
      model_type: 'lightgbm',
      output_class: 'true',
      predict_proba: 'true',
      threshold: '0.4',
      xgboost_allow_unknown_field: 'true',
      storage_type: 'DENSE',
      cpu_nthread: '4',
      colour: 'blue',
    }),
  );
  assert.deepEqual(got, [
    "model 'm': FIL parameter 'storage_type' is ignored: it tunes FIL on a GPU, and nodetron evaluates the trees on the CPU. Remove it, or keep it for a Triton with GPUs.",
    "model 'm': FIL parameter 'cpu_nthread' is ignored: it tunes FIL's own CPU kernels, and nodetron evaluates the trees with its own (one thread per instance: use instance_group count for more).",
    "model 'm': parameter 'colour' is not a FIL parameter and is ignored (FIL's parameters: model_type, output_class, predict_proba, threshold, xgboost_allow_unknown_field, algo, storage_type, threads_per_tree, blocks_per_sm, transfer_threshold, use_experimental_optimizations, layout, chunk_size, cpu_nthread).",
  ]);
});
