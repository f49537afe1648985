/**
 * nodetron's Python backend against a hand-written FastAPI + numpy service
 * (bench/peers/fastapi_add_sub.py): add_sub (FP32 [4] pairs, JSON tensors)
 * at a few concurrencies, and one 64 MiB FP32 tensor through a Python
 * identity model (binary tensors, sequential requests), next to the floor of
 * copying 64 MiB once in Node (Buffer.copy). Usage:
 *   node dist/bench/python-add-sub.js [seconds=5] [reps=10]
 * Needs python3 with numpy, fastapi and uvicorn.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildInferBody } from '../src/client/kserve-http-client';
import { REPO_ROOT, startServer } from '../test/integration/server-process';
import { freePort, startProc } from './bench-procs';
import { runLoad } from './load';

const BIG_BYTES = 64 * 1024 * 1024;

function identityModel(repo: string): void {
  fs.mkdirSync(path.join(repo, 'identity', '1'), { recursive: true });
  fs.writeFileSync(
    path.join(repo, 'identity', 'config.pbtxt'),
    [
      'backend: "python"',
      'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]',
      'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]',
    ].join('\n'),
  );
  fs.writeFileSync(
    path.join(repo, 'identity', '1', 'model.py'),
    [
      'import triton_python_backend_utils as pb_utils',
      'class TritonPythonModel:',
      '    def execute(self, requests):',
      '        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])',
      '                for r in requests]',
    ].join('\n'),
  );
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function bigTensorMs(url: string, reps: number): Promise<number> {
  const data = new Uint8Array(BIG_BYTES);
  new Float32Array(data.buffer).forEach((_, i, a) => (a[i] = i));
  const { body, headerLength } = buildInferBody([{ name: 'INPUT0', datatype: 'FP32', shape: [BIG_BYTES / 4], data }], { binaryDataOutput: true });
  const headers = { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(headerLength) };
  const times: number[] = [];
  for (let i = 0; i < reps + 1; i++) {
    const t0 = performance.now();
    const res = await fetch(`${url}/v2/models/identity/infer`, { method: 'POST', body, headers });
    const got = Buffer.from(await res.arrayBuffer());
    if (res.status !== 200) throw new Error(`identity: ${res.status} ${got.subarray(0, 300).toString()}`);
    if (got.length < BIG_BYTES) throw new Error(`identity: short answer (${got.length} bytes)`);
    if (i > 0) times.push(performance.now() - t0); // the first one warms up (region growth, page faults)
  }
  return median(times);
}

function memcpyFloorMs(reps: number): number {
  const src = Buffer.alloc(BIG_BYTES, 1);
  const dst = Buffer.alloc(BIG_BYTES);
  src.copy(dst);
  const times: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    src.copy(dst);
    times.push(performance.now() - t0);
  }
  return median(times);
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 5);
  const reps = Number(process.argv[3] ?? 10);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-bench-py-'));
  fs.cpSync(path.join(REPO_ROOT, 'test/integration/fixtures/python_models/add_sub'), path.join(tmp, 'add_sub'), { recursive: true });
  identityModel(tmp);
  const a = [1, 2, 3, 4];
  const { body } = buildInferBody([
    { name: 'INPUT0', datatype: 'FP32', shape: [4], data: a },
    { name: 'INPUT1', datatype: 'FP32', shape: [4], data: a },
  ]);
  const rows: string[] = [];
  const measure = async (server: string, url: string): Promise<void> => {
    for (const concurrency of [1, 8, 32]) {
      const r = await runLoad({
        url,
        path: '/v2/models/add_sub/infer',
        body,
        headers: { 'Content-Type': 'application/json' },
        concurrency,
        durationMs: seconds * 1000,
      });
      rows.push(
        `| ${server} | add_sub JSON c=${concurrency} | ${r.rps.toFixed(0)} req/s | p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms | ${r.errors} errors |`,
      );
      console.log(rows[rows.length - 1]);
    }
    rows.push(`| ${server} | identity 64 MiB FP32, binary, sequential | median ${(await bigTensorMs(url, reps)).toFixed(1)} ms | | |`);
    console.log(rows[rows.length - 1]);
  };
  const server = await startServer([`--model-repository=${tmp}`, `--http-max-input-size=${2 * BIG_BYTES}`]);
  try {
    await measure('nodetron', server.url);
  } finally {
    await server.stop();
  }
  const port = await freePort();
  const peer = await startProc('python3', [path.join(REPO_ROOT, 'bench/peers/fastapi_add_sub.py'), String(port)], port);
  try {
    await measure('FastAPI+numpy', `http://127.0.0.1:${port}`);
  } finally {
    await peer.stop();
  }
  rows.push(`| Node Buffer.copy | 64 MiB memcpy floor | median ${memcpyFloorMs(reps).toFixed(1)} ms | | |`);
  fs.rmSync(tmp, { recursive: true, force: true });
  console.log(`\n| server | case | result | latency | errors |\n|---|---|---|---|---|\n${rows.join('\n')}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
