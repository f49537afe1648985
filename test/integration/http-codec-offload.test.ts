/**
 * --http-codec-offload-bytes through the real server: one server decodes and
 * encodes large bodies in its HTTP thread's piscina pool (threshold 64 KiB),
 * the other does everything inline (0). The same bytes go to both and must
 * come back the same (status, headers that matter, body byte for byte),
 * errors included; the pool thread is seen by name in /proc (`nt:codec-0`)
 * only on the first server, and only once a large body arrived.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import zlib from 'node:zlib';
import { buildInferBody } from '../../src/client/kserve-http-client';
import { MODEL_REPOSITORY, startServer, type ServerProcess } from './server-process';

const ARGS = [
  `--model-repository=${MODEL_REPOSITORY}`,
  '--model-control-mode=explicit',
  '--load-model=simple',
  '--load-model=image_classifier',
  '--load-model=identity_types',
  '--http-thread-count=1',
];
let pooled: ServerProcess;
let inline: ServerProcess;
before(async () => {
  [pooled, inline] = await Promise.all([startServer([...ARGS, '--http-codec-offload-bytes=65536']), startServer([...ARGS, '--http-codec-offload-bytes=0'])]);
});
after(async () => {
  // The pool thread must neither keep the process alive nor spoil a clean exit.
  assert.deepEqual(await Promise.all([pooled.stop(), inline.stop()]), [0, 0]);
});

interface Answer {
  status: number;
  contentType: string;
  contentEncoding: string;
  headerLength: string;
  body: Buffer;
}

function post(server: ServerProcess, model: string, body: Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${server.url}/v2/models/${model}/infer`,
      { method: 'POST', headers: { ...headers, 'Content-Length': String(body.length) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type']),
            contentEncoding: String(res.headers['content-encoding'] ?? ''),
            headerLength: String(res.headers['inference-header-content-length'] ?? ''),
            body: Buffer.concat(chunks),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Names of the server's threads now (Linux /proc). */
function threadNames(server: ServerProcess): string[] {
  const dir = `/proc/${server.child.pid}/task`;
  return fs.readdirSync(dir).map((tid) => {
    try {
      return fs.readFileSync(`${dir}/${tid}/comm`, 'utf8').trim();
    } catch {
      return '';
    }
  });
}

/** CPU ticks (10 ms) the pool thread has used so far; 0 when there is none. */
function poolTicks(server: ServerProcess): number {
  const dir = `/proc/${server.child.pid}/task`;
  let ticks = 0;
  for (const tid of fs.readdirSync(dir)) {
    try {
      if (fs.readFileSync(`${dir}/${tid}/comm`, 'utf8').trim() !== 'nt:codec-0') continue;
      const f = fs.readFileSync(`${dir}/${tid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return ticks;
}

const PIXELS = 3 * 224 * 224;
/** A ResNet-50-shaped JSON body (~1 MB): pseudo-random pixel values with 4 decimals. */
function imageJson(seed: number): Buffer {
  let x = (seed * 2654435761) >>> 0;
  const data = Array.from({ length: PIXELS }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return Math.round((x / 2 ** 32) * 1e4) / 1e4;
  });
  return Buffer.from(JSON.stringify({ id: `img-${seed}`, inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data }] }));
}

const SMALL = Buffer.from(
  JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
    ],
  }),
);

async function sameOnBoth(model: string, body: Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  const [a, b] = await Promise.all([post(pooled, model, body, headers), post(inline, model, body, headers)]);
  assert.deepEqual({ ...a, body: a.body.toString('base64') }, { ...b, body: b.body.toString('base64') });
  return a;
}

test('small requests never start the pool thread; the first large body does, on the offloading server only', async () => {
  for (let i = 0; i < 5; i++) assert.equal((await sameOnBoth('simple', SMALL)).status, 200);
  assert.ok(!threadNames(pooled).includes('nt:codec-0'), threadNames(pooled).join(','));
  const big = imageJson(1);
  assert.ok(big.length > 1_000_000, `${big.length} bytes`);
  const a = await sameOnBoth('image_classifier', big);
  assert.equal(a.status, 200, a.body.toString());
  const json = JSON.parse(a.body.toString()) as { id: string; outputs: { shape: number[]; data: number[] }[] };
  assert.equal(json.id, 'img-1');
  assert.deepEqual(json.outputs[0].shape, [1, 1000]);
  assert.ok(Math.abs(json.outputs[0].data.reduce((x, y) => x + y, 0) - 1) < 1e-3);
  assert.ok(threadNames(pooled).includes('nt:codec-0'), threadNames(pooled).join(','));
  assert.ok(!threadNames(inline).includes('nt:codec-0'), threadNames(inline).join(','));
});

test('a malformed large JSON body gets the inline error, text and status', async () => {
  const big = imageJson(2);
  const truncated = big.subarray(0, big.length - 7);
  const t = await sameOnBoth('image_classifier', truncated);
  assert.equal(t.status, 500);
  assert.match(JSON.parse(t.body.toString()).error, /^failed to parse the request JSON buffer: .* at \d+$/);
  // A 400 found only after the whole body is parsed: the input named twice.
  const doc = JSON.parse(big.toString()) as { inputs: unknown[] };
  const twice = Buffer.from(JSON.stringify({ inputs: [doc.inputs[0], doc.inputs[0]] }));
  const d = await sameOnBoth('image_classifier', twice);
  assert.equal(d.status, 400);
  assert.equal(JSON.parse(d.body.toString()).error, "[request id: <id_unknown>] input 'input' already exists in request");
  // And one found by validation after decoding (on the HTTP thread, after the pool).
  const wrongShape = Buffer.from(big.toString().replace('"shape":[1,3,224,224]', '"shape":[1,224,224,3]'));
  const v = await sameOnBoth('image_classifier', wrongShape);
  assert.equal(v.status, 400);
  assert.match(JSON.parse(v.body.toString()).error, /unexpected shape for input 'input' for model 'image_classifier'/);
});

test('a large gzip body (and a gzip response) answer as inline', async () => {
  const big = imageJson(3);
  const gz = zlib.gzipSync(big);
  const ticks = poolTicks(pooled);
  const a = await sameOnBoth('image_classifier', gz, { 'Content-Encoding': 'gzip', 'Accept-Encoding': 'gzip' });
  assert.equal(a.status, 200);
  assert.equal(a.contentEncoding, 'gzip');
  const plain = await post(inline, 'image_classifier', big);
  assert.deepEqual(zlib.gunzipSync(a.body), plain.body);
  const corrupt = Buffer.from(gz);
  corrupt.fill(0x55, 100, 200);
  const c = await sameOnBoth('image_classifier', corrupt, { 'Content-Encoding': 'gzip' });
  assert.equal(c.status, 400);
  assert.match(JSON.parse(c.body.toString()).error, /^failed to decompress the request body: /);
  // A small compressed body that inflates to a large one counts as large too.
  const zeros = zlib.gzipSync(
    Buffer.from(JSON.stringify({ inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data: new Array(PIXELS).fill(0) }] })),
  );
  assert.ok(zeros.length < 8192, `${zeros.length}`);
  assert.equal((await sameOnBoth('image_classifier', zeros, { 'Content-Encoding': 'gzip' })).status, 200);
  assert.ok(poolTicks(pooled) > ticks, 'the pool thread did the inflating and parsing');
});

test('a large JSON response (encoded in the pool) has the bytes of the inline one', async () => {
  const n = 100_000; // FP32 output as JSON: ~2 MB of text
  const fp32 = Float32Array.from({ length: n }, (_, i) => Math.sin(i) * 1000);
  const inputs = ['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BYTES'].map((dt) => ({
    name: `INPUT_${dt}`,
    datatype: dt,
    shape: [1, dt === 'FP32' ? n : 1],
    data:
      dt === 'FP32'
        ? new Uint8Array(fp32.buffer)
        : dt === 'BYTES'
          ? Uint8Array.from([1, 0, 0, 0, 0x61])
          : new Uint8Array({ BOOL: 1, UINT8: 1, INT8: 1, UINT16: 2, INT16: 2, FP16: 2 }[dt] ?? (dt.endsWith('64') ? 8 : 4)),
  }));
  const { body, headerLength } = buildInferBody(inputs, { outputs: [{ name: 'OUTPUT_FP32' }, { name: 'OUTPUT_INT32', binary: true }] });
  assert.ok(headerLength! < 65536, 'the request itself is decoded inline (small JSON header)');
  const ticks = poolTicks(pooled);
  const a = await sameOnBoth('identity_types', body, { 'Inference-Header-Content-Length': String(headerLength) });
  assert.equal(a.status, 200, a.body.toString().slice(0, 300));
  const json = JSON.parse(a.body.subarray(0, Number(a.headerLength)).toString()) as { outputs: { name: string; data?: number[] }[] };
  assert.deepEqual(json.outputs.find((o) => o.name === 'OUTPUT_FP32')!.data, [...fp32]);
  const z = await sameOnBoth('identity_types', body, { 'Inference-Header-Content-Length': String(headerLength), 'Accept-Encoding': 'deflate' });
  assert.equal(z.contentEncoding, 'deflate');
  assert.ok(poolTicks(pooled) > ticks, 'the pool thread did the encoding');
});

test('small and large requests at once: every answer right, the large ones as inline', async () => {
  const bigs = [imageJson(4), imageJson(5)];
  const expected = await Promise.all(bigs.map((b) => post(inline, 'image_classifier', b)));
  const small = Array.from({ length: 60 }, () => post(pooled, 'simple', SMALL));
  const large = bigs.flatMap((b) => [post(pooled, 'image_classifier', b), post(pooled, 'image_classifier', b)]);
  const [smallAnswers, largeAnswers] = await Promise.all([Promise.all(small), Promise.all(large)]);
  for (const s of smallAnswers) {
    assert.equal(s.status, 200);
    const out = (JSON.parse(s.body.toString()) as { outputs: { name: string; data: number[] }[] }).outputs;
    assert.deepEqual(
      out.find((o) => o.name === 'OUTPUT0')!.data,
      Array.from({ length: 16 }, (_, i) => i + 1),
    );
    assert.deepEqual(
      out.find((o) => o.name === 'OUTPUT1')!.data,
      Array.from({ length: 16 }, (_, i) => i - 1),
    );
  }
  largeAnswers.forEach((l, k) => assert.deepEqual(l.body, expected[Math.floor(k / 2)].body, `large ${k}`));
});

test('a client that goes away during a pooled decode leaves the server serving', async () => {
  const big = imageJson(6);
  await new Promise<void>((resolve) => {
    const req = http.request(`${pooled.url}/v2/models/image_classifier/infer`, { method: 'POST', headers: { 'Content-Length': String(big.length) } });
    req.on('error', () => resolve());
    req.end(big, () =>
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 2),
    );
  });
  const a = await post(pooled, 'image_classifier', big);
  assert.equal(a.status, 200);
  assert.equal((await post(pooled, 'simple', SMALL)).status, 200);
});
