/**
 * inlineRefusal (instances/inline-placement.ts), table-driven: which model
 * versions may have instances on a frontend thread, from configs parsed as
 * the server parses them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseModelConfigText } from '../../src/repository/config/pbtxt';
import { inlineRefusal, INLINE_MAX_MODEL_BYTES } from '../../src/instances/inline-placement';

const BASE = `name: "m"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 16 ] } ]
`;

const cases: { what: string; extra?: string; text?: string; backend?: string; maxUs?: number; bytes?: number | undefined; refusal: RegExp | undefined }[] = [
  { what: 'a small fixed-shape ONNX model', refusal: undefined },
  { what: 'FIL', backend: 'fil', refusal: undefined },
  { what: 'dynamic batching without a delay', extra: 'dynamic_batching { }', refusal: undefined },
  { what: 'dynamic batching with priorities, no delay', extra: 'dynamic_batching { priority_levels: 2 default_priority_level: 1 }', refusal: undefined },
  { what: 'the flag at 0', maxUs: 0, refusal: /--inline-execution-max-us is 0/ },
  { what: 'python', backend: 'python', refusal: /backend 'python' runs outside/ },
  { what: 'pytorch', backend: 'pytorch', refusal: /backend 'pytorch'/ },
  { what: 'a queue delay', extra: 'dynamic_batching { max_queue_delay_microseconds: 100 }', refusal: /waits for a batch/ },
  { what: 'preserve_ordering', extra: 'dynamic_batching { preserve_ordering: true }', refusal: /preserve_ordering/ },
  { what: 'sequence batching', extra: 'sequence_batching { }', refusal: /sequence batching/ },
  { what: 'decoupled', extra: 'model_transaction_policy { decoupled: true }', refusal: /decoupled/ },
  { what: 'the response cache', extra: 'response_cache { enable: true }', refusal: /response cache/ },
  {
    what: 'a variable dimension',
    refusal: /input 'IN' has a variable dimension/,
    text: BASE.replace('dims: [ 16 ] } ]\noutput', 'dims: [ -1 ] } ]\noutput'),
  },
  { what: 'a BYTES input', refusal: /input 'IN' is BYTES/, text: BASE.replace('TYPE_FP32 dims: [ 16 ] } ]\noutput', 'TYPE_STRING dims: [ 16 ] } ]\noutput') },
  { what: 'a model folder', bytes: undefined, refusal: /folder/ },
  { what: 'a large model file', bytes: INLINE_MAX_MODEL_BYTES + 1, refusal: /over \d+ bytes/ },
];

for (const c of cases) {
  test(`inline placement: ${c.what}`, () => {
    const config = parseModelConfigText(c.text ?? `${BASE}${c.extra ?? ''}\n`, 'config.pbtxt');
    const got = inlineRefusal({ config, backend: c.backend ?? 'onnxruntime', maxUs: c.maxUs ?? 500, modelBytes: 'bytes' in c ? c.bytes : 1000 });
    if (c.refusal === undefined) assert.equal(got, undefined);
    else assert.match(got ?? '(hosted)', c.refusal);
  });
}
