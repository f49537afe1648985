/**
 * deploy/Dockerfile kept honest with no Docker engine. The first test reads
 * it: two stages on Node 20, production dependencies only in the image, a
 * non-root numeric USER, Python with numpy, the CLI as the entrypoint with
 * the main isolate's node flag, every COPY source present in the build
 * context and not dropped by .dockerignore, the build stage compiling src/
 * only. The second runs the runtime stage's steps outside Docker, in a temp
 * dir standing for the image's root: its COPYs (the build stage's dist/src
 * is what `tsc -b` built from the same sources and options before npm test),
 * its ENV, its `npm ci --omit=dev` (with --prefer-offline, from the cache
 * the checkout's own npm ci filled), then the ENTRYPOINT with CMD's model
 * repository and free ports, the app and model folders made read-only (and,
 * when root and that user can import numpy, as the image's USER). The
 * server must serve an ONNX and a Python inference, stop with exit 0 on
 * SIGTERM, and leave every file of the app and model folders as it was: the
 * only writes went to TMPDIR and /dev/shm. What the steps outside Docker
 * cannot do (apt-get, useradd, npm cache clean) is named in the output.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MAIN_NODE_FLAG } from '../../src/core/young-generation';
import { copyParts, envPairs, execForm, parseDockerfile, type Stage } from './dockerfile-steps';
import { MODEL_REPOSITORY, REPO_ROOT } from './server-process';

const DOCKERFILE = path.join(REPO_ROOT, 'deploy/Dockerfile');
const { stages } = parseDockerfile(DOCKERFILE);
const build = stages.find((s) => s.name === 'build')!;
const runtime = stages[stages.length - 1];

function steps(stage: Stage, op: string): string[] {
  return stage.steps.filter((s) => s.op === op).map((s) => s.args);
}

function workdir(stage: Stage): string {
  return steps(stage, 'WORKDIR').pop() ?? '/';
}

test('deploy/Dockerfile: multi-stage Node 20, production dependencies, non-root, Python with numpy, the CLI as entrypoint', () => {
  assert.ok(build, 'a stage named build');
  assert.ok(stages.length >= 2);
  for (const s of stages) assert.match(s.from, /^node:20[-.]/, `stage ${s.name} is FROM ${s.from}`);
  const ignored = fs
    .readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  for (const s of stages) {
    for (const c of steps(s, 'COPY').map(copyParts)) {
      if (c.from !== undefined) continue;
      for (const src of c.sources) {
        assert.ok(fs.existsSync(path.join(REPO_ROOT, src)), `COPY ${src}: not in the build context`);
        assert.ok(!ignored.includes(src.split('/')[0]), `COPY ${src}: .dockerignore drops it`);
      }
    }
  }
  // The build stage compiles src/ only, into dist/src, which the runtime stage takes.
  assert.ok(steps(build, 'RUN').includes('npx tsc -p deploy/tsconfig.image.json'));
  const image = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'deploy/tsconfig.image.json'), 'utf8')) as { include: string[] };
  assert.deepEqual(image.include, ['../src/**/*.ts']);
  const fromBuild = steps(runtime, 'COPY')
    .map(copyParts)
    .filter((c) => c.from === 'build');
  assert.deepEqual(
    fromBuild.map((c) => c.sources),
    [[`${workdir(build)}/dist/src`]],
  );

  const runs = steps(runtime, 'RUN').join(' && ');
  assert.match(runs, /apt-get install -y --no-install-recommends python3 python3-numpy/);
  assert.match(runs, /npm ci --omit=dev/);
  assert.doesNotMatch(runs, /npm (install|ci)(?![^&]*--omit=dev)/, 'every npm install in the image omits dev dependencies');
  const user = steps(runtime, 'USER').pop() ?? '';
  assert.match(user, /^[1-9]\d*(:[1-9]\d*)?$/, `USER ${user}: a numeric non-root uid (runAsNonRoot can check it)`);
  assert.deepEqual(execForm(steps(runtime, 'ENTRYPOINT').pop()!), ['node', MAIN_NODE_FLAG, `${workdir(runtime)}/dist/src/cli.js`]);
  assert.deepEqual(execForm(steps(runtime, 'CMD').pop()!), ['--model-repository=/mnt/models']);
  assert.deepEqual(steps(runtime, 'EXPOSE'), ['8000 8001 8002']);
});

/** Every file under `dir` with its size and mtime (to see that nothing was written). */
function snapshot(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      const st = fs.lstatSync(p);
      out.push(`${path.relative(dir, p)} ${e.isDirectory() ? 'dir' : st.size} ${st.mtimeMs}`);
      if (e.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out.sort();
}

test('deploy/Dockerfile: the runtime stage, run outside Docker, serves from a read-only layout', { timeout: 240_000 }, async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-image-'));
  fs.chmodSync(root, 0o755);
  const inRoot = (p: string): string => path.join(root, p);
  const env: Record<string, string> = {};
  let cwd = '/';
  let user = '';
  const skipped: string[] = [];
  try {
    for (const step of runtime.steps) {
      if (step.op === 'WORKDIR') {
        cwd = step.args;
        fs.mkdirSync(inRoot(cwd), { recursive: true });
      } else if (step.op === 'ENV') {
        for (const [k, v] of envPairs(step.args)) env[k] = v;
      } else if (step.op === 'COPY') {
        const c = copyParts(step.args);
        for (const src of c.sources) {
          // The build stage's output is the dist/ that tsc -b made from the same sources before npm test.
          const from = c.from === 'build' ? path.join(REPO_ROOT, path.relative(workdir(build), src)) : path.join(REPO_ROOT, src);
          const dest = path.resolve(inRoot(cwd), c.dest.endsWith('/') || c.dest === '.' || c.dest === './' ? path.join(c.dest, path.basename(src)) : c.dest);
          fs.cpSync(from, dest, { recursive: true, filter: (p) => !p.includes('__pycache__') && !p.endsWith('.tsbuildinfo') });
        }
      } else if (step.op === 'RUN') {
        for (const cmd of step.args.split('&&').map((c) => c.trim())) {
          if (/^(apt-get|rm -rf \/var\/lib\/apt|groupadd|useradd)\b/.test(cmd) || cmd === 'npm cache clean --force') {
            skipped.push(cmd);
          } else if (/^(\w+=\S+ )*npm ci --omit=dev\b/.test(cmd)) {
            const t0 = Date.now();
            execSync(`${cmd} --prefer-offline`, { cwd: inRoot(cwd), stdio: 'pipe', env: { ...process.env, ...env } });
            t.diagnostic(`ran \`${cmd} --prefer-offline\` in ${Date.now() - t0} ms`);
          } else {
            assert.fail(`the test does not know how to run \`${cmd}\` (Dockerfile line ${step.line}) outside Docker: teach it`);
          }
        }
      } else if (step.op === 'USER') {
        user = step.args;
      } else if (!['EXPOSE', 'ENTRYPOINT', 'CMD'].includes(step.op)) {
        assert.fail(`the test does not know the Dockerfile's ${step.op} (line ${step.line})`);
      }
    }
    t.diagnostic(`not run outside Docker: ${skipped.map((s) => `\`${s}\``).join(', ')}`);
    assert.equal(spawnSync('python3', ['-c', 'import numpy'], { env: process.env }).status, 0, "python3 with numpy stands in for the image's apt-get install");
    assert.ok(fs.existsSync(inRoot(`${cwd}/node_modules/onnxruntime-node`)), 'npm ci --omit=dev installed the production dependencies');
    assert.ok(!fs.existsSync(inRoot(`${cwd}/node_modules/typescript`)), 'no dev dependency in the image');

    // The volumes: models (read-only), TMPDIR; /dev/shm is the machine's.
    const models = inRoot('mnt/models');
    for (const m of ['simple', 'add_vectors'])
      fs.cpSync(path.join(MODEL_REPOSITORY, m), path.join(models, m), { recursive: true, filter: (p) => !p.includes('__pycache__') });
    const tmp = inRoot(env.TMPDIR ?? '/tmp');
    fs.mkdirSync(tmp, { recursive: true });
    fs.chmodSync(tmp, 0o1777);
    execSync(`chmod -R a-w ${JSON.stringify(inRoot(cwd))} ${JSON.stringify(models)}`);
    const before = [...snapshot(inRoot(cwd)), ...snapshot(models)];

    const [uid, gid] = user.split(':').map(Number);
    const asUser = process.getuid?.() === 0 && spawnSync('python3', ['-c', 'import numpy'], { uid, gid }).status === 0;
    t.diagnostic(
      asUser
        ? `running as the image's USER ${user}`
        : `running as uid ${process.getuid?.()}: ${process.getuid?.() === 0 ? `uid ${uid} cannot import numpy on this machine` : 'not root'}; the app and model folders are read-only all the same, and checked unchanged after`,
    );

    const entry = execForm(runtime.steps.filter((s) => s.op === 'ENTRYPOINT').pop()!.args);
    const cmdArgs = execForm(runtime.steps.filter((s) => s.op === 'CMD').pop()!.args).map((a) => a.replace('=/mnt/models', `=${models}`));
    const argv = [
      ...entry.slice(1).map((a) => (a.startsWith('/') ? inRoot(a) : a)),
      ...cmdArgs,
      '--http-port=0',
      '--http-address=127.0.0.1',
      '--allow-grpc=false',
      '--metrics-port=0',
      '--metrics-address=127.0.0.1',
    ];
    const child = spawn(process.execPath, argv, {
      cwd: inRoot(cwd),
      env: { ...process.env, ...env, TMPDIR: tmp },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(asUser ? { uid, gid } : {}),
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const end = Date.now() + 90_000;
    let port = 0;
    while (!port) {
      port = Number(/Started HTTPService at [^:\s]+:(\d+)/.exec(out)?.[1] ?? 0);
      if (child.exitCode !== null || Date.now() > end) assert.fail(`the server did not start:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const url = `http://127.0.0.1:${port}`;
    assert.equal((await fetch(`${url}/v2/health/ready`)).status, 200);
    const simple = await fetch(`${url}/v2/models/simple/infer`, {
      method: 'POST',
      body: JSON.stringify({
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
        ],
      }),
    });
    const simpleBody = await simple.text();
    assert.equal(simple.status, 200, simpleBody);
    assert.equal((JSON.parse(simpleBody) as { outputs: { name: string; data: number[] }[] }).outputs.find((o) => o.name === 'OUTPUT0')?.data[5], 6);
    const py = await fetch(`${url}/v2/models/add_vectors/infer`, {
      method: 'POST',
      body: JSON.stringify({
        inputs: [
          { name: 'INPUT0', datatype: 'FP32', shape: [3], data: [1, 2, 3] },
          { name: 'INPUT1', datatype: 'FP32', shape: [3], data: [10, 20, 30] },
        ],
      }),
    });
    const pyBody = await py.text();
    assert.equal(py.status, 200, pyBody);
    assert.deepEqual((JSON.parse(pyBody) as { outputs: { data: number[] }[] }).outputs[0].data, [11, 22, 33]);
    child.kill('SIGTERM');
    assert.equal(await exited, 0, out.slice(-3000));

    const after = [...snapshot(inRoot(cwd)), ...snapshot(models)];
    assert.deepEqual(
      after.filter((l) => !before.includes(l)),
      [],
      'the server wrote into the app or model folder',
    );
    assert.deepEqual(
      fs.readdirSync('/dev/shm').filter((f) => f.startsWith(`nodetron_${child.pid}_`)),
      [],
      'no /dev/shm region left',
    );
  } finally {
    execSync(`chmod -R u+w ${JSON.stringify(root)}`);
    fs.rmSync(root, { recursive: true, force: true });
  }
});
