/**
 * What exact 64-bit integers cost the HTTP decode (request-json.ts: JSON.parse
 * unless the body holds an integer literal of 16 or more digits, which then
 * goes through the exact parser): decodeInferRequest per body, in µs, for
 * the bodies a client usually sends (small INT32 and FP32 requests, an FP32
 * body with 17-digit fractions as numpy's tolist() prints them, a large
 * image) and for the ones that take the exact path (INT64 values past 2^53,
 * a numeric sequence_id past 2^53). CPU time of this process per decode.
 *   node dist/bench/json-exact-cost.js [reps=20000]
 */
import { decodeInferRequest } from '../src/frontend/http/infer-request-decode';
import type { DataType } from '../src/core/datatypes';
import type { ValidationPlan } from '../src/request/validation-plan';
import { imageTensorJson } from './json-bodies';

const reps = Number(process.argv[2] ?? 20000);

function plan(datatype: DataType): ValidationPlan {
  return {
    modelName: 'bench',
    maxBatchSize: 8,
    outputs: [],
    requiredInputs: ['INPUT0'],
    decoupled: false,
    inputs: [{ name: 'INPUT0', datatype, dims: [-1], optional: false, isShapeTensor: false }],
  };
}

function body(datatype: DataType, data: string, parameters = ''): Buffer {
  const n = data.split(',').length;
  return Buffer.from(`{"id":"7",${parameters}"inputs":[{"name":"INPUT0","datatype":"${datatype}","shape":[1,${n}],"data":[${data}]}]}`);
}

const seq = (n: number, f: (i: number) => string): string => Array.from({ length: n }, (_, i) => f(i)).join(',');

const CASES: { what: string; datatype: DataType; body: Buffer; reps: number }[] = [
  {
    what: 'INT32 × 16',
    datatype: 'INT32',
    body: body(
      'INT32',
      seq(16, (i) => String(i * 7)),
    ),
    reps,
  },
  {
    what: 'FP32 × 16, 4 decimals',
    datatype: 'FP32',
    body: body(
      'FP32',
      seq(16, (i) => (i / 7).toFixed(4)),
    ),
    reps,
  },
  {
    what: 'FP32 × 16, 17-digit fractions',
    datatype: 'FP32',
    body: body(
      'FP32',
      seq(16, (i) => String(Math.fround(i / 7 + 0.1))),
    ),
    reps,
  },
  {
    what: 'INT64 × 16, < 2^53',
    datatype: 'INT64',
    body: body(
      'INT64',
      seq(16, (i) => String(i * 1000003)),
    ),
    reps,
  },
  {
    what: 'INT64 × 16, sequence_id 42',
    datatype: 'INT64',
    body: body(
      'INT64',
      seq(16, (i) => String(i)),
      '"parameters":{"sequence_id":42,"sequence_start":true},',
    ),
    reps,
  },
  { what: 'FP32 × 150528 (ResNet image)', datatype: 'FP32', body: Buffer.from(imageTensorJson(3).toString('utf8').replace('"input"', '"INPUT0"')), reps: 40 },
  // The exact path:
  {
    what: 'INT64 × 16, > 2^53 (exact path)',
    datatype: 'INT64',
    body: body(
      'INT64',
      seq(16, (i) => String(9007199254740993n + BigInt(i))),
    ),
    reps,
  },
  {
    what: 'INT64 × 16, sequence_id 2^63+5 (exact path)',
    datatype: 'INT64',
    body: body(
      'INT64',
      seq(16, (i) => String(i)),
      '"parameters":{"sequence_id":9223372036854775813,"sequence_start":true},',
    ),
    reps,
  },
];

console.log(`| body | bytes | CPU µs per decode (median of 5 rounds of ${reps}; the image 40) |`);
console.log('|---|---|---|');
for (const c of CASES) {
  const p = plan(c.datatype);
  const rounds: number[] = [];
  for (let r = 0; r < 6; r++) {
    const s = process.cpuUsage(); // CPU time, not wall: the bench machine is shared
    for (let i = 0; i < c.reps; i++) decodeInferRequest(c.body, undefined, p, 1 << 28);
    const d = process.cpuUsage(s);
    const us = (d.user + d.system) / c.reps;
    if (r > 0) rounds.push(us); // the first round warms the JIT
  }
  rounds.sort((a, b) => a - b);
  console.log(`| ${c.what} | ${c.body.length} | ${rounds[2]!.toFixed(2)} |`);
}
