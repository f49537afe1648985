/**
 * Nothing the server writes outlives it: onnxruntime's native library leaves
 * `mat-debug-<pid>.log` and `.ses` in the temporary folder of a process that
 * loads it; a server that loaded and ran an ONNX model, then stopped, leaves
 * its temporary folder as it found it. Real server, TMPDIR a fresh folder.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { MODEL_REPOSITORY, startServer } from './server-process';

test('a server that ran an ONNX model leaves no onnxruntime files in its temporary folder', async (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-tmpdir-'));
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  let server;
  try {
    server = await startServer([`--model-repository=${MODEL_REPOSITORY}`, '--model-control-mode=explicit', '--load-model=simple']);
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
  try {
    const r = await infer(server.url, 'simple', [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(1) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(2) },
    ]);
    assert.equal(r.status, 200);
    // The native library writes its log when it first runs; on a loaded machine that can trail the response.
    let during = fs.readdirSync(tmp);
    for (const end = Date.now() + 5000; !during.some((f) => f.startsWith('mat-debug-')) && Date.now() < end;) {
      await new Promise((res) => setTimeout(res, 100));
      during = fs.readdirSync(tmp);
    }
    // Seen once in a full CI run: no file at all. Then there is nothing to remove, and the check below still holds.
    if (!during.some((f) => f.startsWith('mat-debug-'))) t.diagnostic(`onnxruntime wrote no files in ${tmp} this run: ${during.join(', ')}`);
  } finally {
    assert.equal(await server.stop(), 0, server.output().slice(-2000));
  }
  const left = fs.readdirSync(tmp).filter((f) => f === '.ses' || f.startsWith('mat-debug-'));
  fs.rmSync(tmp, { recursive: true, force: true });
  assert.deepEqual(left, []);
});
