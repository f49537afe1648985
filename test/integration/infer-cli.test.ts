/**
 * `nodetron infer`, the real command against the real server: a request to
 * a server it starts on --model-repository (add_vectors, JSON literals), to
 * a running one with -u (simple's batch dimension added to a 16-element
 * literal; --json; a .npy file; a file's bytes as a BYTES element through
 * the identity backend), and the failures: the server's error text and
 * exit 1, a .npy of the wrong dtype, an unreachable server.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MODEL_REPOSITORY, REPO_ROOT, startServer, type ServerProcess } from './server-process';

const CLI = path.join(REPO_ROOT, 'dist/src/cli.js');
let tmp: string;
let server: ServerProcess;

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-infer-cli-'));
  fs.mkdirSync(path.join(tmp, 'repo', 'echo_text', '1'), { recursive: true });
  fs.writeFileSync(
    path.join(tmp, 'repo', 'echo_text', 'config.pbtxt'),
    [
      'name: "echo_text"',
      'backend: "identity"',
      'max_batch_size: 0',
      'input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ 1 ] } ]',
      'output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 1 ] } ]',
    ].join('\n'),
  );
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), path.join(tmp, 'repo', 'simple'), { recursive: true });
  server = await startServer([`--model-repository=${path.join(tmp, 'repo')}`]);
});

after(async () => {
  assert.equal(await server.stop(), 0);
  fs.rmSync(tmp, { recursive: true, force: true });
});

function infer(...args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, 'infer', ...args], { encoding: 'utf8', timeout: 90_000 });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** A .npy file (version 1.0) of little-endian values. */
function npy(file: string, descr: string, shape: number[], data: Uint8Array): string {
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  header += ' '.repeat(64 - ((10 + header.length + 1) % 64)) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), data]));
  return file;
}

test('against a server it starts on --model-repository: add_vectors from JSON literals, as a table', () => {
  const r = infer('--model-repository', MODEL_REPOSITORY, '-m', 'add_vectors', '--input', 'INPUT0=[1,2,3,4]', '--input', 'INPUT1=[10,20,30,40]');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^model add_vectors version 1\noutput +datatype +shape +values\nOUTPUT +FP32 +\[4\] +\[11, 22, 33, 44\]\n$/);
});

test('against a running server (-u): the batch dimension is added; --json prints the outputs', () => {
  const a = JSON.stringify(Array.from({ length: 16 }, (_, i) => i));
  const b = JSON.stringify(Array(16).fill(1));
  const table = infer('-u', `127.0.0.1:${server.port}`, '-m', 'simple', '--input', `INPUT0=${a}`, '--input', `INPUT1=${b}`);
  assert.equal(table.status, 0, table.stderr);
  assert.match(table.stdout, /OUTPUT0 +INT32 +\[1,16\] +\[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16\]/);
  const json = infer('-u', server.url, '-m', 'simple', '--input', `INPUT0=${a}`, '--input', `INPUT1=${b}`, '--output', 'OUTPUT1', '--json');
  assert.equal(json.status, 0, json.stderr);
  const parsed = JSON.parse(json.stdout) as { outputs: { name: string; shape: number[]; data: number[] }[] };
  assert.deepEqual(parsed.outputs, [{ name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i - 1) }]);
});

test("a .npy input; a file's bytes as a BYTES element", () => {
  const ints = new Int32Array(16).map((_, i) => 100 + i);
  const f0 = npy(path.join(tmp, 'a.npy'), '<i4', [1, 16], new Uint8Array(ints.buffer));
  const f1 = npy(path.join(tmp, 'b.npy'), '<i4', [16], new Uint8Array(new Int32Array(16).fill(2).buffer));
  const r = infer('-u', server.url, '-m', 'simple', '--input', `INPUT0=@${f0}`, '--input', `INPUT1=@${f1}`);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /OUTPUT0 +INT32 +\[1,16\] +\[102, 103, 104, .*117\]/);
  const text = path.join(tmp, 'note.txt');
  fs.writeFileSync(text, 'héllo from a file');
  const bytes = infer('-u', server.url, '-m', 'echo_text', '--input', `INPUT0=@${text}`);
  assert.equal(bytes.status, 0, bytes.stderr);
  assert.match(bytes.stdout, /OUTPUT0 +BYTES +\[1\] +\["héllo from a file"\]/);
});

test("failures: the server's text and exit 1; a .npy of the wrong dtype; no server", () => {
  const shape = infer('-u', server.url, '-m', 'simple', '--input', 'INPUT0=[1,2,3]', '--input', 'INPUT1=[1,2,3]');
  assert.equal(shape.status, 1);
  assert.match(shape.stderr, /^error: .*unexpected shape for input 'INPUT\d' for model 'simple'/);
  const f = npy(path.join(tmp, 'f.npy'), '<f4', [16], new Uint8Array(64));
  const dtype = infer('-u', server.url, '-m', 'simple', '--input', `INPUT0=@${f}`, '--input', `INPUT1=@${f}`);
  assert.equal(dtype.status, 1);
  assert.match(dtype.stderr, /input 'INPUT0' of model 'simple' is INT32, but .*f\.npy holds FP32 \(numpy <f4\): convert it/);
  const none = infer('-u', '127.0.0.1:9', '-m', 'simple', '--input', 'INPUT0=[1]');
  assert.equal(none.status, 1);
  assert.match(none.stderr, /error: cannot reach the server at http:\/\/127\.0\.0\.1:9/);
  const usage = infer('--input', 'INPUT0=[1]');
  assert.equal(usage.status, 1);
  assert.match(usage.stderr, /error: -m <model> is required \(see nodetron infer --help\)/);
});
