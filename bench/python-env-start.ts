/**
 * How long a Python model with a requirements.txt takes to serve, built and
 * reused: `node dist/bench/python-env-start.js [warm starts=3] [-- server flags...]`.
 * Copies model_repository/readable_numbers (humanize from its
 * requirements.txt) into a temporary repository, then starts the server
 * with a fresh --python-env-cache-dir (the first build: venv + pip with the
 * machine's pip configuration) and `warm starts` more times on the same
 * cache, reporting for each the seconds from spawn until the model is READY
 * and answers, and how many of those the server was already serving.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, stopChild } from './bench-procs';

const ROOT = path.resolve(__dirname, '../..');
const CLI = path.join(ROOT, 'dist/src/cli.js');

interface Entry {
  name: string;
  state?: string;
  reason?: string;
}

async function oneStart(repo: string, cache: string, flags: string[]): Promise<{ serving: number; ready: number }> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [CLI, `--model-repository=${repo}`, `--http-port=${port}`, '--allow-grpc=false', '--allow-metrics=false', `--python-env-cache-dir=${cache}`, ...flags],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  try {
    let serving = 0;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}:\n${out.slice(-4000)}`);
      if (performance.now() - t0 > 600_000) throw new Error(`not READY within 600 s:\n${out.slice(-4000)}`);
      if (/Started HTTPService/.test(out)) {
        if (serving === 0) serving = (performance.now() - t0) / 1000;
        const index = (await (await fetch(`http://127.0.0.1:${port}/v2/repository/index`, { method: 'POST' })).json()) as Entry[];
        const e = index.find((x) => x.name === 'readable_numbers');
        if (e?.state === 'UNAVAILABLE') throw new Error(`the model failed: ${e.reason}`);
        if (e?.state === 'READY') break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    const r = await fetch(`http://127.0.0.1:${port}/v2/models/readable_numbers/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'NUMBER', datatype: 'INT64', shape: [1], data: [1200000] }] }),
    });
    if (r.status !== 200) throw new Error(`infer answered ${r.status}: ${await r.text()}`);
    return { serving, ready: (performance.now() - t0) / 1000 };
  } finally {
    await stopChild(child);
  }
}

async function main(): Promise<void> {
  const dash = process.argv.indexOf('--');
  const args = dash < 0 ? process.argv.slice(2) : process.argv.slice(2, dash);
  const flags = dash < 0 ? [] : process.argv.slice(dash + 1);
  const warm = Number(args[0] ?? 3);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-envstart-'));
  const repo = path.join(tmp, 'repo');
  const cache = path.join(tmp, 'cache');
  fs.cpSync(path.join(ROOT, 'model_repository', 'readable_numbers'), path.join(repo, 'readable_numbers'), { recursive: true });
  try {
    const first = await oneStart(repo, cache, flags);
    console.log(`first build: serving after ${first.serving.toFixed(1)} s, readable_numbers READY and answering after ${first.ready.toFixed(1)} s`);
    for (let i = 0; i < warm; i++) {
      const again = await oneStart(repo, cache, flags);
      console.log(`warm start ${i + 1}: serving after ${again.serving.toFixed(1)} s, READY and answering after ${again.ready.toFixed(1)} s`);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
