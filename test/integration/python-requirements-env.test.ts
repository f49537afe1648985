/**
 * requirements.txt beside model.py, through the real server, the real venv
 * module and the real pip, installing from a wheelhouse this file writes
 * (make_wheel.py: nt-greeting 1.0 says "hello", 2.0 says "hi"), so no
 * package index is needed. The base interpreter has no nt_greeting: a model
 * that answers imported it from the environment its file built.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { REPO_ROOT, startServer, waitForOutput, type ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/requirements_env');
const READY_MARKER = 'nodetron-env-ready.json';

let root: string;
let wheels: string;
let cache: string;

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-reqenv-'));
  wheels = path.join(root, 'wheels');
  cache = path.join(root, 'cache');
  execFileSync('python3', [path.join(FIXTURES, 'make_wheel.py'), wheels, '1.0', 'hello']);
  execFileSync('python3', [path.join(FIXTURES, 'make_wheel.py'), wheels, '2.0', 'hi']);
  assert.throws(() => execFileSync('python3', ['-c', 'import nt_greeting'], { stdio: 'ignore' }), 'the base interpreter must lack nt_greeting');
});

after(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

/** A copy of the greet fixture named `name`, with `requirements` as its requirements.txt. */
function greetModel(repo: string, name: string, requirements: string): void {
  const dir = path.join(repo, name);
  fs.cpSync(path.join(FIXTURES, 'greet'), dir, { recursive: true });
  const config = path.join(dir, 'config.pbtxt');
  fs.writeFileSync(config, fs.readFileSync(config, 'utf8').replace('name: "greet"', `name: "${name}"`));
  fs.writeFileSync(path.join(dir, 'requirements.txt'), requirements);
}

function serverArgs(repo: string, more: string[] = []): string[] {
  return [
    `--model-repository=${repo}`,
    '--allow-metrics=false',
    `--python-env-cache-dir=${cache}`,
    `--python-env-pip-args=--no-index --find-links ${wheels}`,
    ...more,
  ];
}

interface IndexEntry {
  name: string;
  version?: string;
  state?: string;
  reason?: string;
}

async function index(server: ServerProcess): Promise<IndexEntry[]> {
  return (await (await fetch(`${server.url}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as IndexEntry[];
}

/** Poll the index until `done` says so (bounded); returns the last index. */
async function indexUntil(server: ServerProcess, done: (e: IndexEntry[]) => boolean, timeoutMs = 120_000): Promise<IndexEntry[]> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const e = await index(server);
    if (done(e)) return e;
    if (Date.now() > end) throw new Error(`index never got there: ${JSON.stringify(e)}\n${server.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const stateOf = (e: IndexEntry[], name: string): IndexEntry | undefined => e.find((x) => x.name === name);

async function greet(server: ServerProcess, model: string, who: string): Promise<string> {
  const r = await infer(server.url, model, [{ name: 'NAME', datatype: 'BYTES', shape: [1], data: [who] }]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return (r.json as { outputs: { data: string[] }[] }).outputs[0]!.data[0]!;
}

/** Built environments in the cache: folders with the ready marker. */
function readyEnvironments(): string[] {
  if (!fs.existsSync(cache)) return [];
  return fs.readdirSync(cache).filter((d) => fs.existsSync(path.join(cache, d, READY_MARKER)));
}

test("a model whose requirements.txt names a package the interpreter lacks loads and answers; two models with the same file share one environment; a bad requirement fails only its model, with pip's text", async (t) => {
  const repo = path.join(root, 'repo1');
  greetModel(repo, 'greet', 'nt-greeting==1.0\n');
  greetModel(repo, 'greet_twin', 'nt-greeting==1.0\n');
  greetModel(repo, 'greet_bad', 'nt-greeting-missing==9\n');
  const started = performance.now();
  const server = await startServer(serverArgs(repo));
  try {
    // The start did not wait for the builds: the table says what they are doing.
    assert.match(server.output(), /greet\s+\| -\s+\| LOADING: building environment/);
    const e = await indexUntil(
      server,
      (x) => stateOf(x, 'greet')?.state === 'READY' && stateOf(x, 'greet_twin')?.state === 'READY' && stateOf(x, 'greet_bad')?.state === 'UNAVAILABLE',
    );
    t.diagnostic(`first build, start to READY: ${((performance.now() - started) / 1000).toFixed(1)} s`);
    assert.equal(await greet(server, 'greet', 'Ada'), 'hello, Ada');
    assert.equal(await greet(server, 'greet_twin', 'Bo'), 'hello, Bo');
    const bad = stateOf(e, 'greet_bad')!.reason ?? '';
    assert.match(bad, /failed to build the Python environment for model 'greet_bad'/);
    assert.match(bad, /pip exited with code 1 while installing 'nt-greeting-missing==9'/);
    assert.match(bad, /No matching distribution found for nt-greeting-missing==9/);
    assert.match(bad, /--python-env-pip-args='--no-index --find-links <dir>'/);
    assert.equal(readyEnvironments().length, 1, `one environment for both: ${fs.readdirSync(cache).join(', ')}`);
    assert.match(server.output(), /model 'greet.*' environment: Successfully installed nt-greeting-1.0/);
    assert.equal(await greet(server, 'greet', 'Cy'), 'hello, Cy', 'the server serves on after the failed build');
  } finally {
    assert.equal(await server.stop(), 0, server.output().slice(-3000));
  }

  // The next start finds the environment built: no pip at all.
  const again = performance.now();
  fs.rmSync(path.join(repo, 'greet_bad'), { recursive: true });
  const second = await startServer(serverArgs(repo));
  try {
    await indexUntil(second, (x) => stateOf(x, 'greet')?.state === 'READY' && stateOf(x, 'greet_twin')?.state === 'READY');
    t.diagnostic(`warm start (environment reused), start to READY: ${((performance.now() - again) / 1000).toFixed(1)} s`);
    assert.doesNotMatch(second.output(), /building the Python environment/);
    assert.match(second.output(), /greet\s+\| 1\s+\| READY/, 'the start waited for the model: nothing to build');
    assert.equal(await greet(second, 'greet_twin', 'Di'), 'hello, Di');
  } finally {
    assert.equal(await second.stop(), 0, second.output().slice(-3000));
  }
});

test('a build killed midway leaves nothing trusted: the next start removes the half-built folder and builds it again', async () => {
  const repo = path.join(root, 'repo2');
  greetModel(repo, 'greet_half', 'nt-greeting==1.0\n# the half-built test\n');
  const first = await startServer(serverArgs(repo));
  const line = await waitForOutput(first, /building the Python environment for \S+ in (\S+)"/, 60_000);
  const dir = /in (\S+)"/.exec(line)![1]!;
  first.child.kill('SIGKILL');
  await new Promise((r) => first.child.once('exit', r));
  // The killed server's venv or pip goes on as an orphan: end it (it is ours) before the next start.
  for (const pid of pgrep(dir)) process.kill(pid, 'SIGKILL');
  assert.equal(fs.existsSync(path.join(dir, READY_MARKER)), false, 'the killed build did not finish');
  const existed = fs.existsSync(dir);

  const second = await startServer(serverArgs(repo));
  try {
    await indexUntil(second, (x) => stateOf(x, 'greet_half')?.state === 'READY');
    assert.equal(await greet(second, 'greet_half', 'Ed'), 'hello, Ed');
    assert.ok(fs.existsSync(path.join(dir, READY_MARKER)), 'rebuilt in the same folder');
    if (existed) assert.match(second.output(), /is a build that did not finish: building it again/);
    assert.equal(fs.existsSync(`${dir}.lock`), false, 'the lock is released');
  } finally {
    assert.equal(await second.stop(), 0, second.output().slice(-3000));
  }
});

function pgrep(text: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', text], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l !== '')
      .map(Number);
  } catch {
    return []; // none left
  }
}

test('poll mode: an edited requirements.txt is built beside the old environment while the old version serves, then the model reloads; a steady client sees no failure', async () => {
  const repo = path.join(root, 'repo3');
  greetModel(repo, 'greet_poll', 'nt-greeting==1.0\n# the poll test\n');
  const server = await startServer(serverArgs(repo, ['--model-control-mode=poll', '--repository-poll-secs=1']));
  try {
    await indexUntil(server, (x) => stateOf(x, 'greet_poll')?.state === 'READY');
    let failures = 0;
    let sent = 0;
    let seenHi = false;
    let stop = false;
    const client = (async () => {
      while (!stop) {
        sent++;
        const r = await infer(server.url, 'greet_poll', [{ name: 'NAME', datatype: 'BYTES', shape: [1], data: ['Fy'] }]);
        if (r.status !== 200) failures++;
        else if ((r.json as { outputs: { data: string[] }[] }).outputs[0]!.data[0] === 'hi, Fy') seenHi = true;
        await new Promise((res) => setTimeout(res, 20));
      }
    })();
    const envsBefore = readyEnvironments();
    fs.writeFileSync(path.join(repo, 'greet_poll', 'requirements.txt'), 'nt-greeting==2.0\n# the poll test\n');
    let sawBuilding = false;
    await indexUntil(server, (x) => {
      if (stateOf(x, 'greet_poll')?.reason === 'building environment') sawBuilding = true;
      return seenHi;
    });
    stop = true;
    await client;
    assert.equal(failures, 0, `${failures} of ${sent} requests failed during the swap`);
    assert.ok(sent > 10, `the client was steady (${sent} requests)`);
    assert.ok(sawBuilding || /building the Python environment/.test(server.output()), 'a new environment was built');
    const envsAfter = readyEnvironments();
    for (const d of envsBefore) assert.ok(envsAfter.includes(d), `the old environment ${d} stays`);
    assert.equal(envsAfter.length, envsBefore.length + 1, 'the new one is beside it');
  } finally {
    assert.equal(await server.stop(), 0, server.output().slice(-3000));
  }
});

test("the example readable_numbers gets humanize from its requirements.txt with the machine's own pip configuration, and answers", async () => {
  const repo = path.join(root, 'repo4');
  fs.cpSync(path.join(REPO_ROOT, 'model_repository', 'readable_numbers'), path.join(repo, 'readable_numbers'), { recursive: true });
  // The default cache folder, as `npm start` uses it (npm test's lint step has usually built it already).
  const server = await startServer([`--model-repository=${repo}`, '--allow-metrics=false']);
  try {
    await indexUntil(server, (x) => stateOf(x, 'readable_numbers')?.state === 'READY', 240_000);
    const r = await infer(server.url, 'readable_numbers', [{ name: 'NUMBER', datatype: 'INT64', shape: [3], data: [1_200_000, 3, 42] }]);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const [words, ordinal] = (r.json as { outputs: { data: string[] }[] }).outputs;
    assert.deepEqual(words!.data, ['1.2 million', '3', '42']);
    assert.deepEqual(ordinal!.data, ['1200000th', '3rd', '42nd']);
  } finally {
    assert.equal(await server.stop(), 0, server.output().slice(-3000));
  }
});

test('a build that hangs (an index that never answers) is ended at --python-env-build-timeout-secs: the model fails saying so, the server serves on', async () => {
  const repo = path.join(root, 'repo5');
  greetModel(repo, 'greet_hang', 'nt-greeting==1.0\n# the hanging test\n');
  const held: net.Socket[] = [];
  const silent = net.createServer((s) => held.push(s)); // accepts, never answers
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const port = (silent.address() as net.AddressInfo).port;
  const server = await startServer([
    `--model-repository=${repo}`,
    '--allow-metrics=false',
    `--python-env-cache-dir=${cache}`,
    `--python-env-pip-args=--no-index --find-links http://127.0.0.1:${port}/ --timeout 60`,
    '--python-env-build-timeout-secs=3',
  ]);
  try {
    const started = performance.now();
    const e = await indexUntil(server, (x) => stateOf(x, 'greet_hang')?.state === 'UNAVAILABLE', 60_000);
    const seconds = (performance.now() - started) / 1000;
    assert.ok(seconds < 30, `ended near its limit, not at pip's own timeout (${seconds.toFixed(1)} s)`);
    assert.match(stateOf(e, 'greet_hang')!.reason ?? '', /the build did not finish within 3 s \(--python-env-build-timeout-secs\)/);
    assert.equal((await fetch(`${server.url}/v2/health/live`)).status, 200);
    const dir = /Python environment for \S+ in (\S+)"/.exec(server.output())?.[1];
    assert.ok(dir !== undefined && !fs.existsSync(dir), 'the unfinished folder is removed');
    assert.deepEqual(pgrep(dir), [], 'no pip of the build is left running');
  } finally {
    assert.equal(await server.stop(), 0, server.output().slice(-3000));
    for (const s of held) s.destroy();
    silent.close();
  }
});

test('a stop while an environment builds ends the build at once: exit 0, no pip left, nothing half-built kept', async () => {
  const repo = path.join(root, 'repo6');
  greetModel(repo, 'greet_stop', 'nt-greeting==1.0\n# the stop test\n');
  const held: net.Socket[] = [];
  const silent = net.createServer((s) => held.push(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const port = (silent.address() as net.AddressInfo).port;
  const server = await startServer([
    `--model-repository=${repo}`,
    '--allow-metrics=false',
    `--python-env-cache-dir=${cache}`,
    `--python-env-pip-args=--no-index --find-links http://127.0.0.1:${port}/`,
    '--python-env-build-timeout-secs=0',
  ]);
  try {
    const line = await waitForOutput(server, /building the Python environment for \S+ in (\S+)"/, 30_000);
    const dir = /in (\S+)"/.exec(line)![1]!;
    await waitForOutput(server, /Looking in links/, 30_000); // pip is running
    const stopped = performance.now();
    assert.equal(await server.stop(), 0, server.output().slice(-3000));
    assert.ok(performance.now() - stopped < 15_000, 'the stop did not wait out --exit-timeout-secs');
    assert.match(server.output(), /the server is stopping: the build of the Python environment for model 'greet_stop' was ended/);
    assert.deepEqual(pgrep(dir), [], 'no pip of the build is left running');
    assert.equal(fs.existsSync(dir), false);
    assert.equal(fs.existsSync(`${dir}.lock`), false);
  } finally {
    for (const s of held) s.destroy();
    silent.close();
  }
});
