import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MAIN_NODE_FLAG, WORKER_YOUNG_GENERATION_MB, userSizesYoungGeneration, workerResourceLimits } from '../../src/core/young-generation';

const ROOT = path.join(__dirname, '../../..');

test("userSizesYoungGeneration / workerResourceLimits: node flags or NODE_OPTIONS that size the semi-spaces are the user's; ours is not", () => {
  const table: [execArgv: string[], nodeOptions: string, theirs: boolean][] = [
    [[], '', false],
    [[MAIN_NODE_FLAG], '', false],
    [['--max-old-space-size=4096'], '--enable-source-maps', false],
    [['--max-semi-space-size=16'], '', true],
    [['--min-semi-space-size=4'], '', true],
    [['--semi-space-growth-factor=2'], '', true],
    [['--max_semi_space_size=8'], '', true],
    [[], '--max-old-space-size=512 --max-semi-space-size=32', true],
    [[], `${MAIN_NODE_FLAG} --require=/x/soak-trace-gc.js`, false],
  ];
  for (const [argv, opts, theirs] of table) {
    const why = `${argv.join(' ')} | ${opts}`;
    assert.equal(userSizesYoungGeneration(argv, opts), theirs, why);
    assert.deepEqual(workerResourceLimits(argv, opts), theirs ? {} : { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB }, why);
  }
});

test("the executable's shebang, scripts/start.js and `npm start` pass MAIN_NODE_FLAG to node", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  assert.match(pkg.scripts.start, new RegExp(`node ${MAIN_NODE_FLAG} scripts/start\\.js`));
  for (const file of ['src/cli.ts', 'scripts/start.js', 'dist/src/cli.js']) {
    assert.equal(fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n')[0], `#!/usr/bin/env -S node ${MAIN_NODE_FLAG}`, file);
  }
});

// A guard against a node upgrade that stops honouring either limit: a fresh
// process whose scavenges keep 200k objects alive grows its new space to
// 32 MB in the main isolate and in a worker by default; held as the server
// holds them, both stay at 8 MB (4 MB semi-spaces) or below (V8 may shrink it).
test('held as the server holds them, the main isolate and a worker keep an 8 MB new space under survival pressure', () => {
  const file = path.join(os.tmpdir(), `young-generation-${process.pid}.js`);
  fs.writeFileSync(
    file,
    `
    const v8 = require('node:v8');
    const { Worker, isMainThread, parentPort } = require('node:worker_threads');
    const churn = () => { let keep = []; for (let i = 0; i < 2e6; i++) { keep.push({ i, s: 'x' + i }); if (keep.length > 200000) keep = []; }
      return v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 1048576; };
    if (!isMainThread) parentPort.postMessage(churn());
    else {
      const limits = process.argv[2] === 'held' ? require(${JSON.stringify(path.join(ROOT, 'dist/src/core/young-generation.js'))}).workerResourceLimits() : {};
      const main = churn();
      new Worker(__filename, { resourceLimits: limits }).once('message', (worker) => console.log(JSON.stringify({ main, worker })));
    }`,
  );
  try {
    const run = (flags: string[], mode: string): { main: number; worker: number } =>
      JSON.parse(execFileSync(process.execPath, [...flags, file, mode], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } })) as {
        main: number;
        worker: number;
      };
    const grown = run([], 'default');
    const held = run([MAIN_NODE_FLAG], 'held');
    assert.ok(grown.main >= 16 && grown.worker >= 16, `by default new space grows: ${JSON.stringify(grown)}`);
    assert.ok(held.main <= 8 && held.worker <= 8, `held, new space stays at 8 MB or less: ${JSON.stringify(held)}`);
  } finally {
    fs.rmSync(file, { force: true });
  }
});
