/**
 * The pure parts of building a requirements.txt environment: how pip's lines
 * are sorted and what a failure names (pip-output.ts), how
 * --python-env-pip-args splits (requirements-env.ts), and the builders' lock
 * (env-lock.ts): one holder, a waiter that sees the work done, a stale lock
 * of a dead process taken over.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { acquireLock } from '../../src/python-backend/env-lock';
import { PipOutput } from '../../src/python-backend/pip-output';
import { splitPipArgs } from '../../src/python-backend/requirements-env';

const LINES: { line: string; level: 'info' | 'verbose'; current?: string }[] = [
  { line: 'Looking in indexes: https://pypi.org/simple, file:///opt/pypi/simple', level: 'info' },
  {
    line: "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError'",
    level: 'verbose',
  },
  { line: 'Collecting humanize>=4 (from -r requirements.txt (line 1))', level: 'info', current: 'humanize>=4' },
  { line: '  Downloading humanize-4.16.0-py3-none-any.whl (128 kB)', level: 'verbose', current: 'humanize>=4' },
  {
    line: 'Processing /opt/pypi/files/tabulate-0.9.0-py3-none-any.whl (from -r r.txt (line 2))',
    level: 'info',
    current: '/opt/pypi/files/tabulate-0.9.0-py3-none-any.whl',
  },
  { line: 'Requirement already satisfied: numpy in /usr/lib/python3/dist-packages (2.4.6)', level: 'info' },
  { line: 'Installing collected packages: tabulate, humanize', level: 'info', current: 'tabulate, humanize' },
  { line: 'Successfully installed humanize-4.16.0 tabulate-0.9.0', level: 'info' },
  { line: '', level: 'verbose' },
];

test('PipOutput: progress lines at info, the rest verbose; the package it is on follows Collecting and Installing', () => {
  const out = new PipOutput();
  for (const c of LINES) {
    assert.equal(out.line(c.line), c.level, c.line);
    if (c.current !== undefined) assert.equal(out.current, c.current, c.line);
  }
});

const FAILURES: { name: string; lines: string[]; current: string | undefined; error: string[] }[] = [
  {
    name: 'no such version: the requirement comes from the ERROR line',
    lines: [
      'Looking in links: /w',
      'ERROR: Could not find a version that satisfies the requirement nt-x==9 (from versions: none)',
      'ERROR: No matching distribution found for nt-x==9',
    ],
    current: 'nt-x==9',
    error: [
      'ERROR: Could not find a version that satisfies the requirement nt-x==9 (from versions: none)',
      'ERROR: No matching distribution found for nt-x==9',
    ],
  },
  {
    name: "a parse error: pip's text, no package",
    lines: ["ERROR: Invalid requirement: 'not a ===req' (from line 2 of /m/requirements.txt)"],
    current: undefined,
    error: ["ERROR: Invalid requirement: 'not a ===req' (from line 2 of /m/requirements.txt)"],
  },
  {
    name: 'a failure while collecting keeps what it was collecting, and drops retry warnings',
    lines: ['Collecting big', 'WARNING: Retrying (Retry(total=0)) after connection broken', 'ERROR: HTTP error 404 while getting https://x/big.whl'],
    current: 'big',
    error: ['ERROR: HTTP error 404 while getting https://x/big.whl'],
  },
  {
    name: 'no ERROR line: the last lines',
    lines: ['a', 'b', 'Traceback (most recent call last):', 'KeyError: 1'],
    current: undefined,
    error: ['a', 'b', 'Traceback (most recent call last):', 'KeyError: 1'],
  },
];

for (const c of FAILURES) {
  test(`PipOutput failure: ${c.name}`, () => {
    const out = new PipOutput();
    for (const l of c.lines) out.line(l);
    assert.equal(out.current, c.current);
    assert.deepEqual(out.errorLines(), c.error);
  });
}

test('PipOutput.lacksPipPython: no pip, or a pip without --python', () => {
  for (const [line, want] of [
    ['/usr/bin/python3: No module named pip', true],
    ['no such option: --python', true],
    ['ERROR: boom', false],
  ] as const) {
    const out = new PipOutput();
    out.line(line);
    assert.equal(out.lacksPipPython(), want, line);
  }
});

const SPLITS: [string, string[]][] = [
  ['', []],
  ['--no-index --find-links /w', ['--no-index', '--find-links', '/w']],
  ['  --index-url   https://m/simple  ', ['--index-url', 'https://m/simple']],
  ['--find-links "/a b/w" --pre', ['--find-links', '/a b/w', '--pre']],
  ["--extra-index-url 'file:///x y'", ['--extra-index-url', 'file:///x y']],
];

for (const [text, want] of SPLITS) {
  test(`splitPipArgs(${JSON.stringify(text)})`, () => assert.deepEqual(splitPipArgs(text), want));
}

test('acquireLock: the second builder waits, and returns without the lock once the work is done', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-envlock-'));
  const file = path.join(dir, 'env.lock');
  let done = false;
  const first = await acquireLock(
    file,
    () => done,
    () => assert.fail('nobody held it'),
  );
  assert.ok(first !== undefined && fs.existsSync(file));
  const waits: string[] = [];
  const second = acquireLock(
    file,
    () => done,
    (owner) => waits.push(owner),
  );
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(waits.length, 1, 'told once that it waits');
  assert.match(waits[0]!, new RegExp(`pid ${process.pid}$`));
  done = true;
  first.release();
  assert.equal(await second, undefined, 'the work was done: no lock to take');
  assert.equal(fs.existsSync(file), false);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('acquireLock: a lock left by a dead process on this host is taken over at once', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-envlock-'));
  const file = path.join(dir, 'env.lock');
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
  fs.writeFileSync(file, JSON.stringify({ host: os.hostname(), pid: Number(dead) }));
  const held = await acquireLock(
    file,
    () => false,
    () => assert.fail('a dead owner is not waited for'),
  );
  assert.ok(held !== undefined);
  assert.equal(JSON.parse(fs.readFileSync(file, 'utf8')).pid, process.pid);
  held.release();
  fs.rmSync(dir, { recursive: true, force: true });
});
