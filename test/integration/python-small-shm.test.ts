/**
 * A small shared-memory mount, as Docker gives a container by default, with
 * a real Python stub: a tmpfs of 24 MiB mounted for the test (root only;
 * skipped, saying why, where mount is refused) and handed to the server as
 * NODETRON_SHM_DIR. The first Python instance warns naming the mount, its
 * size and the fix; a 32 MiB FP32 identity, which fits neither region, takes
 * the slower path through the stub's pipe both ways and comes back byte for
 * byte instead of failing with ENOSPC or a SIGBUS in the stub; and the
 * server still answers afterwards.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, startServer, type ServerProcess } from './server-process';

let server: ServerProcess | undefined;
const mount = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-small-shm-'));
let mounted = false;
let why = '';

before(async () => {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', mount], { stdio: 'pipe' });
    mounted = true;
  } catch (err) {
    why = `cannot mount a tmpfs here (${(err as Error).message.split('\n')[0]})`;
    return;
  }
  process.env.NODETRON_SHM_DIR = mount;
  try {
    server = await startServer([`--model-repository=${path.join(REPO_ROOT, 'test/integration/fixtures/large_models')}`, '--http-max-input-size=134217728']);
  } finally {
    delete process.env.NODETRON_SHM_DIR;
  }
});

after(async () => {
  if (server !== undefined) assert.equal(await server.stop(), 0, server.output().slice(-3000));
  if (mounted) execFileSync('umount', [mount]);
  fs.rmSync(mount, { recursive: true, force: true });
});

function identity(elements: number): Promise<{ status: number; body: Buffer; sent: Buffer; headerLength: number }> {
  const data = Buffer.allocUnsafe(elements * 4);
  for (let i = 0; i < elements; i++) data.writeFloatLE(i % 65_521, i * 4);
  const header = JSON.stringify({
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [elements], parameters: { binary_data_size: data.length } }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
  });
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${server!.url}/v2/models/identity_fp32_py/infer`,
      {
        method: 'POST',
        headers: { 'Inference-Header-Content-Length': String(header.length), 'Content-Type': 'application/octet-stream' },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            body: Buffer.concat(parts),
            sent: data,
            headerLength: Number(res.headers['inference-header-content-length'] ?? 0),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(Buffer.concat([Buffer.from(header), data]));
  });
}

test('the first Python instance warns that the shared memory mount is small, naming it, its size and the fix', (t) => {
  if (!mounted) return t.skip(why);
  const out = server!.output();
  assert.match(
    out,
    new RegExp(`${mount.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is 24\\.0 MiB \\(\\d+\\.\\d MiB free\\): tensors to and from Python models travel through it`),
  );
  assert.match(out, /docker run --shm-size=1g/);
  assert.equal(out.match(/tensors to and from Python models travel through it/g)?.length, 1, 'once, not per instance');
});

test('a tensor larger than the mount goes through the pipe both ways and comes back byte for byte', async (t) => {
  if (!mounted) return t.skip(why);
  const r = await identity(8 * 1024 * 1024); // 32 MiB
  assert.equal(r.status, 200, r.body.subarray(0, 2000).toString());
  assert.ok(r.body.subarray(r.headerLength).equals(r.sent), 'the same bytes');
  const small = await identity(1000);
  assert.equal(small.status, 200);
  assert.ok(small.body.subarray(small.headerLength).equals(small.sent));
  assert.ok(fs.readdirSync(mount).length === 0, 'region files are unlinked as always');
});
