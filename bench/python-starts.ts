/**
 * Do many Python models come up every time? `node dist/bench/python-starts.js
 * [models=39] [starts=3] [burners=0] [-- server flags...]`.
 * Writes a temporary repository of `models` Python identity models (each
 * its own config.pbtxt; auto-complete stays on, so each load also starts a
 * short-lived completion stub), starts the server `starts` times with the
 * given flags (default thread count unless a flag says otherwise), and per
 * start reports the seconds until it served and how many versions were
 * READY, with the reasons of those that were not (and, with
 * `-- --log-verbose=1`, the slowest instance stub start). `burners` busy-loop
 * processes (by PID, ended at the end) stand in for a loaded box.
 * Issue 13 item 6: with 39 models, 2 starts in 5 left 10-29 UNAVAILABLE.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, stopChild } from './bench-procs';

const ROOT = path.resolve(__dirname, '../..');
const CLI = path.join(ROOT, 'dist/src/cli.js');

const MODEL_PY = `import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
                for r in requests]
`;

function makeRepo(models: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-pystarts-'));
  for (let i = 0; i < models; i++) {
    const name = `py_${i}`;
    fs.mkdirSync(path.join(dir, name, '1'), { recursive: true });
    fs.writeFileSync(
      path.join(dir, name, 'config.pbtxt'),
      `name: "${name}"\nbackend: "python"\n` +
        'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n' +
        'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n',
    );
    fs.writeFileSync(path.join(dir, name, '1', 'model.py'), MODEL_PY);
  }
  return dir;
}

interface Entry {
  name: string;
  version?: string;
  state?: string;
  reason?: string;
}

interface StartResult {
  seconds: number;
  ready: number;
  total: number;
  notReady: Entry[];
  slowestAliveMs: number | undefined;
}

async function oneStart(repo: string, flags: string[]): Promise<StartResult> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [CLI, `--model-repository=${repo}`, `--http-port=${port}`, '--allow-grpc=false', '--allow-metrics=false', '--exit-on-error=false', ...flags],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  try {
    while (!/Started HTTPService/.test(out)) {
      if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}:\n${out.slice(-4000)}`);
      if (performance.now() - t0 > 600_000) throw new Error(`server did not serve within 600 s:\n${out.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const seconds = (performance.now() - t0) / 1000;
    const res = await fetch(`http://127.0.0.1:${port}/v2/repository/index`, { method: 'POST' });
    const index = (await res.json()) as Entry[];
    const notReady = index.filter((e) => e.state !== 'READY');
    // With --log-verbose=1 each instance stub's start time is logged: the slowest shows the margin to stub-timeout-seconds.
    const alive = [...out.matchAll(/reported alive after (\d+) ms/g)].map((m) => Number(m[1]));
    return { seconds, ready: index.length - notReady.length, total: index.length, notReady, slowestAliveMs: alive.length > 0 ? Math.max(...alive) : undefined };
  } finally {
    await stopChild(child);
  }
}

async function main(): Promise<void> {
  const dash = process.argv.indexOf('--');
  const positional = process.argv.slice(2, dash < 0 ? undefined : dash);
  const flags = dash < 0 ? [] : process.argv.slice(dash + 1);
  const models = Number(positional[0] ?? 39);
  const starts = Number(positional[1] ?? 3);
  const burners = Number(positional[2] ?? 0);
  const repo = makeRepo(models);
  const burn: ChildProcess[] = [];
  for (let i = 0; i < burners; i++) burn.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
  console.log(`${models} Python models, ${starts} starts, ${burners} busy-loop processes, flags: ${flags.join(' ') || '(none)'}, ${os.cpus().length} cores`);
  let allReady = 0;
  try {
    for (let s = 1; s <= starts; s++) {
      const r = await oneStart(repo, flags);
      if (r.ready === r.total) allReady++;
      const alive = r.slowestAliveMs === undefined ? '' : `, slowest instance stub start ${(r.slowestAliveMs / 1000).toFixed(1)} s`;
      console.log(`start ${s}: served after ${r.seconds.toFixed(1)} s, ${r.ready}/${r.total} READY${alive}`);
      for (const e of r.notReady.slice(0, 5)) console.log(`  ${e.name} ${e.version ?? '-'} ${e.state ?? ''}: ${(e.reason ?? '').split('\n')[0]}`);
      if (r.notReady.length > 5) console.log(`  ... and ${r.notReady.length - 5} more`);
    }
  } finally {
    for (const b of burn) b.kill('SIGKILL');
    fs.rmSync(repo, { recursive: true, force: true });
  }
  console.log(`${allReady}/${starts} starts had every model READY`);
  if (allReady !== starts) process.exitCode = 1;
}

void main();
