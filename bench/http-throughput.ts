/**
 * End-to-end HTTP throughput and latency on `simple`, JSON and binary
 * tensors, at concurrency 1, 16 and 64, against the real server started as a
 * child process on a free port. Usage: npm run bench:http [-- seconds]
 */
import { buildInferBody } from '../src/client/kserve-http-client';
import { startServer } from '../test/integration/server-process';
import { runLoad } from './load';

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 5);
  const server = await startServer();
  try {
    const in0 = Array.from({ length: 16 }, (_, i) => i);
    const json = buildInferBody([
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: in0 },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: in0 },
    ]);
    const bytes = new Uint8Array(Int32Array.from(in0).buffer);
    const binary = buildInferBody(
      [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: bytes },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: bytes },
      ],
      { binaryDataOutput: true },
    );
    const rows: string[] = [];
    for (const [label, b] of [
      ['JSON', json],
      ['binary', binary],
    ] as const) {
      for (const concurrency of [1, 16, 64]) {
        const headers: Record<string, string> = { 'Content-Type': 'application/octet-stream' };
        if (b.headerLength !== undefined) headers['Inference-Header-Content-Length'] = String(b.headerLength);
        const r = await runLoad({ url: server.url, path: '/v2/models/simple/infer', body: b.body, headers, concurrency, durationMs: seconds * 1000 });
        rows.push(
          `| simple | ${label} | ${concurrency} | ${r.rps.toFixed(0)} | ${r.p50Ms.toFixed(2)} | ${r.p90Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${r.errors} |`,
        );
        console.log(rows[rows.length - 1]);
      }
    }
    console.log('\n| model | tensors | concurrency | req/s | p50 ms | p90 ms | p99 ms | errors |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
  } finally {
    await server.stop();
  }
}

void main();
