/**
 * One large FP32 tensor through a Python identity model, the way a client
 * outside the server sends it: `curl` posts a binary-data body (the KServe
 * binary extension) and the round trip is curl's `time_total`; the server
 * process's main thread CPU (/proc/<pid>/task/<pid>/stat) is read around the
 * requests, so the CPU the main thread spends per request shows too.
 *   node dist/bench/python-big-identity.js [mib=64] [reps=8]
 * Prints every round trip (the first, which grows the regions, is dropped),
 * their median, and main-thread CPU ms per request.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, startServer } from '../test/integration/server-process';
import { TICK_US, sampleThreads } from './bench-procs';

/** The tests' Python identity (OUTPUT0 = INPUT0, FP32, any length) and its BYTES twin. */
const REPO = path.join(REPO_ROOT, 'test/integration/fixtures/large_models');

function mainThreadTicks(pid: number): number {
  const t = sampleThreads(pid).get(pid);
  return t === undefined ? 0 : t.userTicks + t.sysTicks;
}

async function main(): Promise<void> {
  const mib = Number(process.argv[2] ?? 64);
  const reps = Number(process.argv[3] ?? 8);
  const bytes = mib * 1024 * 1024;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-big-identity-'));
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [bytes / 4], parameters: { binary_data_size: bytes } }],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    }),
  );
  const data = new Float32Array(bytes / 4);
  for (let i = 0; i < data.length; i++) data[i] = i;
  const bodyFile = path.join(tmp, 'body.bin');
  fs.writeFileSync(bodyFile, Buffer.concat([header, Buffer.from(data.buffer)]));
  const server = await startServer([`--model-repository=${REPO}`, `--http-max-input-size=${2 * bytes}`]);
  const pid = server.child.pid!;
  const times: number[] = [];
  let cpuTicks = 0;
  try {
    for (let i = 0; i < reps + 1; i++) {
      const t0 = mainThreadTicks(pid);
      const out = execFileSync(
        'curl',
        [
          '-s',
          '-o',
          '/dev/null',
          '-w',
          '%{http_code} %{time_total} %{size_download}',
          '-H',
          'Content-Type: application/octet-stream',
          '-H',
          `Inference-Header-Content-Length: ${header.length}`,
          '--data-binary',
          `@${bodyFile}`,
          `${server.url}/v2/models/identity_fp32_py/infer`,
        ],
        { encoding: 'utf8', maxBuffer: 1 << 20 },
      );
      const [code, total, size] = out.trim().split(' ');
      if (code !== '200' || Number(size) < bytes) throw new Error(`identity: HTTP ${code}, ${size} bytes`);
      if (i === 0) continue; // grows the regions, faults the pages in
      cpuTicks += mainThreadTicks(pid) - t0;
      times.push(Number(total) * 1000);
    }
  } finally {
    await server.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const sorted = [...times].sort((a, b) => a - b);
  console.log(`${mib} MiB identity round trips (ms): ${times.map((t) => t.toFixed(0)).join(' ')}`);
  console.log(
    `median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms; main thread ${((cpuTicks * TICK_US) / 1000 / times.length).toFixed(1)} ms CPU per request`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
