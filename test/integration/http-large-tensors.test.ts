/**
 * Large binary tensors over HTTP through the real server and a real Python
 * stub (fixtures/large_models/identity_fp32_py): a 64 MiB FP32 identity comes
 * back byte for byte with the right lengths (its output is written to the
 * socket straight from the arena, under backpressure); a client that reads a
 * little and hangs up mid-body does not stop the server from answering the
 * next one; a 200,000-element BYTES tensor (sent to the stub with the host's
 * element index) comes back element for element.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';

let server: ServerProcess;

before(async () => {
  server = await startServer([`--model-repository=${path.join(REPO_ROOT, 'test/integration/fixtures/large_models')}`, '--http-max-input-size=134217728']);
});

after(async () => {
  assert.equal(await server.stop(), 0, server.output().slice(-3000));
});

function body(elements: number): { header: string; data: Buffer; whole: Buffer } {
  const data = Buffer.allocUnsafe(elements * 4);
  for (let i = 0; i < elements; i++) data.writeFloatLE(i % 65_521, i * 4);
  const header = JSON.stringify({
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [elements], parameters: { binary_data_size: data.length } }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
  });
  return { header, data, whole: Buffer.concat([Buffer.from(header), data]) };
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** POSTs the request; `stopAfter` bytes of the response body, then hangs up (the promise then resolves with what came). */
function post(b: { header: string; whole: Buffer }, stopAfter = Infinity, model = 'identity_fp32_py'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${server.url}/v2/models/${model}/infer`,
      {
        method: 'POST',
        headers: { 'Inference-Header-Content-Length': String(b.header.length), 'Content-Type': 'application/octet-stream' },
      },
      (res) => {
        const parts: Buffer[] = [];
        let got = 0;
        res.on('data', (d: Buffer) => {
          parts.push(d);
          got += d.length;
          if (got >= stopAfter) {
            req.destroy();
            resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts) });
          }
        });
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts) }));
      },
    );
    req.on('error', (err) => (stopAfter === Infinity ? reject(err) : undefined));
    req.end(b.whole);
  });
}

test('a 64 MiB FP32 tensor goes through a Python identity and back byte for byte', async () => {
  const b = body(16 * 1024 * 1024);
  const r = await post(b);
  assert.equal(r.status, 200, r.body.subarray(0, 300).toString());
  const headerLength = Number(r.headers['inference-header-content-length']);
  assert.equal(Number(r.headers['content-length']), r.body.length);
  const json = JSON.parse(r.body.subarray(0, headerLength).toString()) as {
    outputs: { name: string; shape: number[]; parameters: { binary_data_size: number } }[];
  };
  assert.deepEqual(
    json.outputs.map((o) => [o.name, o.shape, o.parameters.binary_data_size]),
    [['OUTPUT0', [16 * 1024 * 1024], b.data.length]],
  );
  assert.ok(r.body.subarray(headerLength).equals(b.data), 'OUTPUT0 bytes equal INPUT0 bytes');
});

test('a client that hangs up in the middle of a large response does not disturb the next request', async () => {
  const big = body(8 * 1024 * 1024);
  const partial = await post(big, 1 << 20);
  assert.equal(partial.status, 200);
  assert.ok(partial.body.length < big.whole.length, 'the client stopped reading before the end');
  const small = body(1000);
  for (let i = 0; i < 3; i++) {
    const r = await post(small);
    assert.equal(r.status, 200);
    assert.ok(r.body.subarray(Number(r.headers['inference-header-content-length'])).equals(small.data));
  }
  const again = await post(big);
  assert.ok(again.body.subarray(Number(again.headers['inference-header-content-length'])).equals(big.data));
});

test('a 200,000-element BYTES tensor goes through a Python identity and back element for element', async () => {
  const elements = Array.from({ length: 200_000 }, (_, i) => Buffer.from(i % 7 === 0 ? '' : `élément-${i}\u0000${'x'.repeat(i % 13)}`));
  const data = Buffer.concat(
    elements.flatMap((e) => {
      const len = Buffer.alloc(4);
      len.writeUInt32LE(e.length);
      return [len, e];
    }),
  );
  const header = JSON.stringify({
    inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [elements.length], parameters: { binary_data_size: data.length } }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
  });
  const r = await post({ header, whole: Buffer.concat([Buffer.from(header), data]) }, Infinity, 'identity_bytes_py');
  assert.equal(r.status, 200, r.body.subarray(0, 300).toString());
  const headerLength = Number(r.headers['inference-header-content-length']);
  assert.ok(r.body.subarray(headerLength).equals(data), 'OUTPUT0 is INPUT0, byte for byte (lengths and elements)');
});
