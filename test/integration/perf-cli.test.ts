/**
 * `nodetron perf` against the real server: HTTP (binary and JSON tensors,
 * concurrency sweep with CSV), gRPC, request-rate mode, the server-side split
 * read from the statistics API, and a clear error for an unknown model.
 * Short windows: this checks the tool works, not how fast anything is.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { MODEL_REPOSITORY, REPO_ROOT, startServer, type ServerProcess } from './server-process';

const CLI = path.join(REPO_ROOT, 'dist/src/cli.js');
let server: ServerProcess;
let dir: string;

before(async () => {
  server = await startServer([`--model-repository=${MODEL_REPOSITORY}`, '--allow-grpc=true', '--grpc-port=0']);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-perf-'));
});
after(async () => {
  await server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

function perf(args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [CLI, 'perf', '-p', '200', '-r', '3', ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('HTTP binary sweep writes a CSV with the server split', () => {
  const csv = path.join(dir, 'http.csv');
  const r = perf(['-m', 'simple', '-u', `127.0.0.1:${server.port}`, '--concurrency-range', '1:2:1', '-f', csv]);
  assert.equal(r.code, 0, r.err + r.out);
  assert.match(r.out, /Concurrency: 1, throughput: [\d.]+ infer\/sec/);
  assert.match(r.out, /server: queue \d+ us, compute input \d+ us, infer \d+ us/);
  const lines = fs.readFileSync(csv, 'utf8').trim().split('\n');
  assert.equal(
    lines[0],
    'Concurrency,Inferences/Second,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,Errors,Stable,Knee',
  );
  assert.equal(lines.length, 3);
  for (const [i, line] of lines.slice(1).entries()) {
    const cells = line.split(',');
    assert.equal(cells[0], String(i + 1));
    assert.ok(Number(cells[1]) > 0, line);
    assert.ok(Number(cells[4]) > 0, `compute infer from the statistics API: ${line}`);
    assert.equal(cells[11], '0', `no errors: ${line}`);
  }
});

test('HTTP JSON tensors, batch 4, request-rate mode', () => {
  const r = perf([
    '-m',
    'dense_classifier',
    '-u',
    `127.0.0.1:${server.port}`,
    '-b',
    '4',
    '--input-tensor-format',
    'json',
    '--output-tensor-format',
    'json',
    '--request-rate-range',
    '50',
    '--percentile',
    '95',
  ]);
  assert.equal(r.code, 0, r.err + r.out);
  assert.match(r.out, /Request rate: 50, throughput: [\d.]+ infer\/sec/);
  assert.match(r.out, /\| 50 \| [\d.]+ \|/);
});

test('gRPC with a variable-shape Python model', () => {
  const r = perf(['-m', 'add_vectors', '-i', 'grpc', '-u', `127.0.0.1:${server.grpcPort}`, '--shape', 'INPUT0:8', '--shape', 'INPUT1:8']);
  assert.equal(r.code, 0, r.err + r.out);
  assert.match(r.out, /Concurrency: 1, throughput: [\d.]+ infer\/sec/);
  assert.match(r.out, /errors 0/);
});

test('two loaded versions: the server split is not zero; perf_analyzer flags pasted from a guide run', async () => {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-perf-repo-'));
  const src = path.join(MODEL_REPOSITORY, 'simple');
  fs.mkdirSync(path.join(repo, 'simple'));
  fs.writeFileSync(path.join(repo, 'simple', 'config.pbtxt'), fs.readFileSync(path.join(src, 'config.pbtxt'), 'utf8') + '\nversion_policy: { all { } }\n');
  for (const v of ['1', '2']) fs.cpSync(path.join(src, '1'), path.join(repo, 'simple', v), { recursive: true });
  const two = await startServer([`--model-repository=${repo}`]);
  try {
    const csv = path.join(dir, 'two.csv');
    const r = perf([
      '-m',
      'simple',
      '-u',
      `127.0.0.1:${two.port}`,
      '--async',
      '-v',
      '--measurement-mode=count_windows',
      '--measurement-request-count',
      '20',
      '--latency-threshold',
      '10000',
      '--max-threads',
      '4',
      '--collect-metrics',
      '--shared-memory=none',
      '-a',
      '-t',
      '1',
      '-f',
      csv,
    ]);
    assert.equal(r.code, 0, r.err + r.out);
    assert.match(r.out, /note: --async\/--sync: nodetron perf always sends asynchronously/);
    assert.match(r.out, /note: --max-threads=4: ignored/);
    assert.match(r.out, /^ {2}window 1: \d+ requests in [\d.]+ s, [\d.]+ infer\/sec, avg latency \d+ us, errors 0$/m);
    const cells = fs.readFileSync(csv, 'utf8').trim().split('\n')[1]!.split(',');
    assert.ok(Number(cells[4]) > 0, `compute infer with versions 1 and 2 loaded: ${cells.join(',')}`);
    const shm = perf(['-m', 'simple', '-u', `127.0.0.1:${two.port}`, '--shared-memory=system']);
    assert.equal(shm.code, 1);
    assert.equal(
      shm.err,
      'error: --shared-memory=system: not supported by nodetron perf yet; tensors go in the request ' +
        '(--shared-memory=none, the default) (see nodetron perf --help)\n',
    );
  } finally {
    assert.equal(await two.stop(), 0);
    fs.rmSync(repo, { recursive: true, force: true });
  }
});

test('errors: unknown model (HTTP and gRPC), missing shape, bad option', () => {
  const unknown = perf(['-m', 'nope', '-u', `127.0.0.1:${server.port}`]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.err, /error: GET .*\/v2\/models\/nope: 404/);
  const unknownGrpc = perf(['-m', 'nope', '-i', 'grpc', '-u', `127.0.0.1:${server.grpcPort}`]);
  assert.equal(unknownGrpc.code, 1);
  assert.match(unknownGrpc.err, /error: ModelMetadata: Request for unknown model: 'nope' is not found/);
  const shape = perf(['-m', 'add_vectors', '-u', `127.0.0.1:${server.port}`]);
  assert.equal(shape.code, 1);
  assert.match(shape.err, /input 'INPUT0' has variable dims \[-1\]; give them with --shape INPUT0:/);
  const bad = perf(['-m', 'simple', '--concurrency-range', 'x']);
  assert.equal(bad.code, 1);
  assert.match(bad.err, /--concurrency-range: 'x' is not a positive number/);
});
