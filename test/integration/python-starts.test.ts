/**
 * Python model starts that do not depend on luck (issue 13 item 6), through
 * the real server and real Python stubs, each test with its own temporary
 * repository and server:
 *   - config completion (the auto-complete stub) and instance starts share
 *     the --model-load-thread-count slots: every model.py records when its
 *     auto_complete_config and initialize ran, and no more than 2 overlap;
 *   - a stub that does not report alive within stub-timeout-seconds fails
 *     its load with a text that says it timed out and names the settings;
 *   - a model.py whose import (or initialize) fails the first time comes
 *     READY with --model-load-retry-count=1;
 *   - a killed stub makes /v2/health/ready and the model's ready probe say
 *     not ready, with Triton's reason, until its restart is done;
 *   - a model.py is_ready() that says no (False, an exception, a non-bool)
 *     makes the model not ready, inference still works (gRPC), and True or
 *     an async True is ready.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { createClient } from './grpc-test-client';
import { repoIndex, waitFor } from './repo-kit';
import type { IndexEntry } from './repo-kit';
import { startServer, waitForOutput } from './server-process';

const IDENTITY_CONFIG = (name: string): string =>
  `name: "${name}"\nbackend: "python"\n` +
  'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n' +
  'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n';

const EXECUTE = `
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
                for r in requests]
`;

/** A temporary repository and a scratch folder the models read and write (markers, event logs). */
function makeWorkspace(): { repo: string; scratch: string; cleanup: () => void } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-pystarts-'));
  const repo = path.join(root, 'models');
  const scratch = path.join(root, 'scratch');
  fs.mkdirSync(repo);
  fs.mkdirSync(scratch);
  return { repo, scratch, cleanup: () => fs.rmSync(root, { recursive: true, force: true }) };
}

/** An FP32 identity Python model; `body` is the rest of its TritonPythonModel class, `head` goes above it. */
function addModel(repo: string, name: string, body: string, head = ''): void {
  fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
  fs.writeFileSync(path.join(repo, name, 'config.pbtxt'), IDENTITY_CONFIG(name));
  fs.writeFileSync(
    path.join(repo, name, '1', 'model.py'),
    `import os\nimport time\n\nimport triton_python_backend_utils as pb_utils\n${head}\n\nclass TritonPythonModel:\n${body}${EXECUTE}`,
  );
}

async function status(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url);
  return { status: res.status, text: await res.text() };
}

const entry = (index: IndexEntry[], name: string): IndexEntry | undefined => index.find((e) => e.name === name);

/** The most intervals open at one time. */
function mostAtOnce(intervals: [number, number][]): number {
  const edges = intervals
    .flatMap(([a, b]): [number, number][] => [
      [a, 1],
      [b, -1],
    ])
    .sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let open = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (open += d));
  return most;
}

test('config completion and instance starts of 8 models run at most 2 at a time with --model-load-thread-count=2', async () => {
  const w = makeWorkspace();
  const events = path.join(w.scratch, 'events');
  const record = (phase: string): string => `
        with open(${JSON.stringify(events)}, "a") as f:
            f.write("%s ${phase} start %.6f\\n" % (NAME, time.time()))
        time.sleep(0.4)
        with open(${JSON.stringify(events)}, "a") as f:
            f.write("%s ${phase} end %.6f\\n" % (NAME, time.time()))
`;
  const names = Array.from({ length: 8 }, (_, i) => `timed_${i}`);
  for (const name of names) {
    addModel(
      w.repo,
      name,
      `    @staticmethod
    def auto_complete_config(config):${record('complete')}        return config

    def initialize(self, args):${record('init')}`,
      `NAME = ${JSON.stringify(name)}`,
    );
  }
  const server = await startServer([`--model-repository=${w.repo}`, '--model-load-thread-count=2'], 120_000);
  try {
    const index = await repoIndex(server.url);
    assert.deepEqual(
      names.map((n) => entry(index, n)?.state),
      names.map(() => 'READY'),
    );
    const open = new Map<string, number>();
    const intervals: [number, number][] = [];
    for (const line of fs.readFileSync(events, 'utf8').trim().split('\n')) {
      const [name, phase, edge, at] = line.split(' ');
      const key = `${name} ${phase}`;
      if (edge === 'start') open.set(key, Number(at));
      else intervals.push([open.get(key)!, Number(at)]);
    }
    assert.equal(intervals.length, 16, 'one auto_complete_config and one initialize per model');
    const most = mostAtOnce(intervals);
    assert.ok(most <= 2, `at most 2 completions or instance starts at once, saw ${most}`);
  } finally {
    await server.stop();
    w.cleanup();
  }
});

test('a stub that does not report alive within stub-timeout-seconds fails its load with a timeout naming the setting', async () => {
  const w = makeWorkspace();
  // A real interpreter that takes 3 s to start (the interpreter setting of the Python backend).
  const slowPython = path.join(w.scratch, 'slow-python');
  fs.writeFileSync(slowPython, '#!/usr/bin/env python3\nimport os, sys, time\ntime.sleep(3)\nos.execvp("python3", ["python3"] + sys.argv[1:])\n');
  fs.chmodSync(slowPython, 0o755);
  addModel(w.repo, 'slow_start', '');
  const server = await startServer([
    `--model-repository=${w.repo}`,
    '--exit-on-error=false',
    `--backend-config=python,interpreter=${slowPython}`,
    '--backend-config=python,stub-timeout-seconds=1',
  ]);
  try {
    const e = entry(await repoIndex(server.url), 'slow_start');
    assert.equal(e?.state, 'UNAVAILABLE');
    assert.match(
      e?.reason ?? '',
      /^Internal: Timed out after 1 s waiting for the Python stub process of 'slow_start' \(pid \d+\) to start: it did not report alive within stub-timeout-seconds \(1\)\./,
    );
    assert.match(e?.reason ?? '', /--backend-config=python,stub-timeout-seconds=<seconds>/);
    assert.match(e?.reason ?? '', /--model-load-thread-count/);
    assert.equal((await status(`${server.url}/v2/health/live`)).status, 200, 'the server serves on');
  } finally {
    await server.stop();
    w.cleanup();
  }
});

test('a model.py that fails to import, or to initialize, the first time comes READY with --model-load-retry-count=1', async () => {
  const w = makeWorkspace();
  const importMarker = path.join(w.scratch, 'imported-once');
  const initMarker = path.join(w.scratch, 'initialized-once');
  addModel(
    w.repo,
    'flaky_import',
    '',
    `
if not os.path.exists(${JSON.stringify(importMarker)}):
    open(${JSON.stringify(importMarker)}, "w").close()
    raise ImportError("the first import fails on purpose")`,
  );
  addModel(
    w.repo,
    'flaky_init',
    `    def initialize(self, args):
        if not os.path.exists(${JSON.stringify(initMarker)}):
            open(${JSON.stringify(initMarker)}, "w").close()
            raise RuntimeError("the first initialize fails on purpose")
`,
  );
  const server = await startServer([`--model-repository=${w.repo}`, '--model-load-retry-count=1']);
  try {
    const index = await repoIndex(server.url);
    assert.equal(entry(index, 'flaky_import')?.state, 'READY');
    assert.equal(entry(index, 'flaky_init')?.state, 'READY');
    const out = server.output();
    assert.match(out, /retrying load of 'flaky_import' \(1\): ImportError: the first import fails on purpose/);
    assert.match(out, /retrying load of 'flaky_init' version 1 \(1\): Internal: RuntimeError: the first initialize fails on purpose/);
    const r = await infer(server.url, 'flaky_import', [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [1, 2] }]);
    assert.equal(r.status, 200, JSON.stringify(r.json));
  } finally {
    await server.stop();
    w.cleanup();
  }
});

test('a killed stub: health and model ready say not ready with the reason until the restart is done, then ready again', async () => {
  const w = makeWorkspace();
  const started = path.join(w.scratch, 'started');
  const release = path.join(w.scratch, 'release');
  // The restart's initialize waits for the test, so the not-ready window cannot be missed.
  addModel(
    w.repo,
    'restartable',
    `    def initialize(self, args):
        if os.path.exists(${JSON.stringify(started)}):
            for _ in range(1200):
                if os.path.exists(${JSON.stringify(release)}):
                    break
                time.sleep(0.05)
        open(${JSON.stringify(started)}, "w").close()
`,
  );
  const server = await startServer([`--model-repository=${w.repo}`]);
  try {
    const health = `${server.url}/v2/health/ready`;
    const modelReady = `${server.url}/v2/models/restartable/ready`;
    assert.equal((await status(health)).status, 200);
    assert.equal((await status(modelReady)).status, 200);
    const pid = Number(/python stub process for instance restartable_0 started \(pid (\d+)\)/.exec(server.output())?.[1]);
    assert.ok(pid > 0, 'the stub pid is in the log');
    process.kill(pid, 'SIGKILL');
    await waitFor('/v2/health/ready not 200', async () => (await status(health)).status !== 200, 200, 25);
    const probe = await status(modelReady);
    assert.notEqual(probe.status, 200);
    assert.match(probe.text, /Request for unknown model: 'restartable' version 1 is not at ready state: Stub process 'restartable_0' is not healthy\./);
    const e = entry(await repoIndex(server.url), 'restartable');
    assert.equal(e?.state, 'READY', 'the version stays loaded: only its instance is not ready');
    assert.match(e?.reason ?? '', /^Stub process 'restartable_0' is not healthy\. \(process \d+ killed by SIGKILL; restarting it\)$/);
    await waitForOutput(server, /Model 'restartable' version 1 is not ready: Stub process 'restartable_0' is not healthy\./);
    fs.writeFileSync(release, '');
    await waitFor('/v2/health/ready 200 again', async () => (await status(health)).status === 200, 400, 50);
    assert.equal((await status(modelReady)).status, 200);
    assert.equal(entry(await repoIndex(server.url), 'restartable')?.reason, undefined);
    const r = await infer(server.url, 'restartable', [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: [7] }]);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.match(server.output(), /model 'restartable' version 1 is ready again/);
  } finally {
    await server.stop();
    w.cleanup();
  }
});

test('model.py is_ready(): False, an exception or a non-bool is not ready (inference still works), True or an async True is', async () => {
  const w = makeWorkspace();
  const flag = path.join(w.scratch, 'not-ready');
  addModel(
    w.repo,
    'ready_flag',
    `    def is_ready(self):
        return not os.path.exists(${JSON.stringify(flag)})
`,
  );
  addModel(
    w.repo,
    'ready_async',
    `    async def is_ready(self):
        return True
`,
  );
  addModel(
    w.repo,
    'ready_raises',
    `    def is_ready(self):
        raise RuntimeError("backend offline")
`,
  );
  addModel(
    w.repo,
    'ready_nonbool',
    `    def is_ready(self):
        return "yes"
`,
  );
  const server = await startServer([`--model-repository=${w.repo}`, '--allow-grpc=true', '--grpc-port=0']);
  const grpcClient = createClient(server.grpcPort);
  try {
    const ready = (m: string): Promise<{ status: number; text: string }> => status(`${server.url}/v2/models/${m}/ready`);
    assert.equal((await ready('ready_flag')).status, 200);
    assert.equal((await ready('ready_async')).status, 200);
    const raises = await ready('ready_raises');
    assert.notEqual(raises.status, 200);
    assert.match(raises.text, /Model 'ready_raises_0' is not ready \(user-defined check failed\): RuntimeError: backend offline/);
    const nonbool = await ready('ready_nonbool');
    assert.notEqual(nonbool.status, 200);
    assert.match(nonbool.text, /Model 'ready_nonbool_0' is not ready \(user-defined check failed\): is_ready\(\) must return a boolean value, got str/);
    assert.notEqual((await status(`${server.url}/v2/health/ready`)).status, 200, 'strict readiness: a model that is not ready makes the server not ready');
    await assert.rejects(grpcClient.call('ModelReady', { name: 'ready_raises', version: '' }), /user-defined check failed/);
    // Inference is not the readiness check's business (as in Triton): gRPC serves it.
    const res = await grpcClient.call<{ raw_output_contents: Buffer[] }>('ModelInfer', {
      model_name: 'ready_raises',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], contents: { fp32_contents: [1.5, 2.5] } }],
    });
    assert.deepEqual([...new Float32Array(new Uint8Array(res.raw_output_contents[0]!).buffer)], [1.5, 2.5]);

    fs.writeFileSync(flag, '');
    await waitFor('ready_flag not ready', async () => (await ready('ready_flag')).status !== 200, 100, 50);
    assert.match((await ready('ready_flag')).text, /Model 'ready_flag_0' is not ready \(user-defined check failed\): is_ready\(\) returned False/);
    fs.rmSync(flag);
    await waitFor('ready_flag ready again', async () => (await ready('ready_flag')).status === 200, 100, 50);
  } finally {
    grpcClient.close();
    await server.stop();
    w.cleanup();
  }
});
