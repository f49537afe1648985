/**
 * What the ring messages of one request cost to write and read, JSON text
 * against the binary descriptors (src/dataplane/descriptor-codec.ts), for
 * `simple`-sized messages: infer, execute (with a reply address), executed
 * (one delivered response) and response (two outputs). Runs the two codecs
 * interleaved in rounds and prints the median round, ns per message.
 *   node dist/bench/descriptor-cost.js [rounds=15] [iterations per round=50000]
 */
import { decodeDescriptor, encodeDescriptor } from '../src/dataplane/descriptor-codec';
import type { InferRequest } from '../src/core/request';

const t = (name: string, offset: number) => ({ name, datatype: 'INT32' as const, shape: [1, 16], offset, gen: 77, byteSize: 64 });
const req: InferRequest = {
  id: '',
  model: 'simple',
  version: 1,
  latest: true,
  batchSize: 1,
  inputs: [t('INPUT0', 123456), t('INPUT1', 123556)],
  requestedOutputs: null,
  parameters: {},
  arrivalNs: 1796128878073123000,
};
const timings = {
  computeStartNs: 1796128878073123000,
  computeInputEndNs: 1796128878073124000,
  computeInferEndNs: 1796128878073125000,
  computeEndNs: 1796128878073126000,
};
const messages: Record<string, { t: string }> = {
  infer: { t: 'infer', key: 12345, request: req } as { t: string },
  execute: { t: 'execute', batchId: 99, requests: [req], replyTo: [{ port: 1, key: 12345 }] } as { t: string },
  executed: { t: 'executed', batchId: 99, responses: [{ outputs: [], final: true, delivered: true }], timings } as { t: string },
  response: { t: 'response', key: 12345, version: 1, response: { outputs: [t('OUTPUT0', 223456), t('OUTPUT1', 223556)], final: true } } as { t: string },
};

function timeJson(m: object, n: number): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const b = Buffer.from(JSON.stringify(m), 'utf8');
    JSON.parse(b.toString('utf8'));
  }
  return Number(process.hrtime.bigint() - start) / n;
}

function timeBinary(m: { t: string }, n: number): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const b = encodeDescriptor(m)!;
    decodeDescriptor(b, 0, b.length);
  }
  return Number(process.hrtime.bigint() - start) / n;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const rounds = Number(process.argv[2] ?? 15);
const iters = Number(process.argv[3] ?? 50000);
console.log('| message | JSON bytes | descriptor bytes | JSON write+read, ns | descriptor write+read, ns | ratio |');
console.log('|---|---:|---:|---:|---:|---:|');
let sumJ = 0;
let sumB = 0;
for (const [name, m] of Object.entries(messages)) {
  const j: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < rounds; r++) {
    j.push(timeJson(m, iters));
    b.push(timeBinary(m, iters));
  }
  const mj = median(j);
  const mb = median(b);
  sumJ += mj;
  sumB += mb;
  console.log(
    `| ${name} | ${Buffer.byteLength(JSON.stringify(m))} | ${encodeDescriptor(m)!.length} | ${mj.toFixed(0)} | ${mb.toFixed(0)} | ${(mj / mb).toFixed(2)}x |`,
  );
}
console.log(`| **one request's four messages** | | | ${sumJ.toFixed(0)} | ${sumB.toFixed(0)} | ${(sumJ / sumB).toFixed(2)}x |`);
