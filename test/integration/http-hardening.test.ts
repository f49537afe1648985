/**
 * Triton's input hardening through the real server over HTTP, each case
 * with its status and text, and each followed by a request that must still
 * be answered right: JSON nesting (tensor data limited to 100 levels, any
 * depth elsewhere in an inference body, control bodies and config overrides
 * refused past 100), request decompression bounded by --http-max-input-size
 * (a small body that inflates to 256 MiB neither gets through nor leaves the
 * memory behind), the cap on the JSON a response may carry, reserved
 * parameter keys, duplicate output names, out-of-range
 * Inference-Header-Content-Length, model names that try to leave the
 * repository in every API, and shared-memory keys that try to leave
 * /dev/shm.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import zlib from 'node:zlib';
import { infer } from '../../src/client/kserve-http-client';
import { MODEL_REPOSITORY, startServer } from './server-process';
import type { ServerProcess } from './server-process';

let server: ServerProcess;
before(async () => {
  server = await startServer([
    `--model-repository=${MODEL_REPOSITORY}`,
    '--model-control-mode=explicit',
    '--load-model=simple',
    '--load-model=identity_types',
    '--allow-client-shm=true',
  ]);
});
after(async () => {
  assert.equal(await server.stop(), 0, server.output().slice(-3000));
});

const in0 = Array.from({ length: 16 }, (_, i) => i);
const in1 = Array.from({ length: 16 }, () => 2);
const goodBody = JSON.stringify({
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: in0 },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: in1 },
  ],
});

/** The known-good request: `simple` adds and subtracts, right after whatever came before. */
async function assertServes(after: string): Promise<void> {
  const r = await infer(server.url, 'simple', [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: in0 },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: in1 },
  ]);
  assert.equal(r.status, 200, `a good request after ${after}: ${JSON.stringify(r.json)}`);
  const outputs = r.json.outputs as { name: string; data: number[] }[];
  assert.deepEqual(
    outputs.find((o) => o.name === 'OUTPUT0')?.data,
    in0.map((v) => v + 2),
    `sum after ${after}`,
  );
}

/**
 * A request on the raw path as given: fetch's URL parser would resolve
 * `%2E%2E` and `%2E` segments before sending them.
 */
function raw(method: string, path: string, body = ''): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.port, method, path, headers: { 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function post(path: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(server.url + path, { method: 'POST', body, headers });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

async function get(path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(server.url + path);
  return { status: res.status, text: await res.text() };
}

/**
 * 256 MiB of spaces (valid JSON padding) after a good request, a
 * thousandfold more than its compressed size. Made before the server starts:
 * compressing it blocks this process for seconds, long enough for the
 * server to close an idle keep-alive socket that fetch would then reuse.
 */
const bomb = zlib.gzipSync(Buffer.concat([Buffer.from(goodBody.slice(0, -1)), Buffer.alloc(256 << 20, 0x20), Buffer.from('}')]));

const error = (message: string): string => JSON.stringify({ error: message });
const nested = (n: number, inner: string): string => '['.repeat(n) + inner + ']'.repeat(n);
const DEPTH = 'JSON nesting depth exceeds maximum allowed limit (100)';

test('JSON nesting: tensor data up to 100 levels, deeper refused; any depth elsewhere in the body is parsed', async () => {
  const withData = (data: string, extra = ''): string =>
    `{${extra}"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,16],"data":${data}},` +
    `{"name":"INPUT1","datatype":"INT32","shape":[1,16],"data":${JSON.stringify(in1)}}]}`;
  const ok100 = await post('/v2/models/simple/infer', withData(nested(100, in0.join(','))));
  assert.equal(ok100.status, 200, ok100.text);
  const deep = await post('/v2/models/simple/infer', withData(nested(101, in0.join(','))));
  assert.deepEqual([deep.status, deep.text], [400, error(DEPTH)]);
  await assertServes('tensor data nested 101 deep');
  // An ignored member nested 200,000 deep: parsed without recursion (Triton's rapidjson is iterative too),
  // by JSON.parse and, with a NaN in it, by the rapidjson-style parser.
  for (const inner of ['1', 'NaN']) {
    const r = await post('/v2/models/simple/infer', withData(JSON.stringify(in0), `"ignored":${nested(200_000, inner)},`));
    assert.equal(r.status, 200, `${inner}: ${r.text.slice(0, 300)}`);
  }
  await assertServes('an ignored member nested 200,000 deep');
});

test('JSON nesting: control bodies and config overrides past 100 levels are refused, not a stack overflow', async () => {
  const cases: [path: string, body: string, status: number, message: string][] = [
    ['/v2/trace/setting', `{"trace_rate":${nested(200_000, '1')}}`, 400, DEPTH],
    ['/v2/models/simple/trace/setting', `{"trace_level":${nested(200_000, '"TIMESTAMPS"')}}`, 400, DEPTH],
    ['/v2/logging', `{"log_info":${nested(101, 'true')}}`, 400, DEPTH],
    ['/v2/repository/index', `{"ready":${nested(101, 'true')}}`, 400, DEPTH],
    ['/v2/systemsharedmemory/region/r/register', `{"key":${nested(101, '"k"')}}`, 400, DEPTH],
    [
      // An invalid config override fails the model's poll, as in Triton (500 "failed to load"), with the reason.
      '/v2/repository/models/simple/load',
      JSON.stringify({ parameters: { config: `{"name":"simple","parameters":{"x":{"string_value":${nested(200_000, '"v"')}}}}` } }),
      500,
      `failed to load 'simple', failed to poll from model repository: Invalid config override: ${DEPTH}`,
    ],
  ];
  for (const [path, body, status, message] of cases) {
    const r = await post(path, body);
    assert.deepEqual([r.status, r.text], [status, error(message)], path);
  }
  await assertServes('deeply nested control bodies');
});

test('decompression is bounded by --http-max-input-size, and refused bombs leave no memory behind', async () => {
  const limit = 64 * 1024 * 1024;
  const tooBig = `decompressed request body size exceeds the maximum allowed value of ${limit} bytes. Use --http-max-input-size to increase the limit.`;
  assert.ok(bomb.length < 512 * 1024, `${bomb.length} compressed bytes`);
  const rss = (): number => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))![1]) * 1024;
  let r = await post('/v2/models/simple/infer', bomb, { 'Content-Encoding': 'gzip' });
  assert.deepEqual([r.status, r.text], [400, error(tooBig)]);
  const before = rss();
  for (let i = 0; i < 10; i++) {
    r = await post('/v2/models/simple/infer', bomb, { 'Content-Encoding': i % 2 === 0 ? 'gzip' : 'deflate' });
    assert.deepEqual([r.status, r.text], [400, error(tooBig)], `bomb ${i}`);
  }
  // Inflating even one bomb whole would take 256 MiB; ten refused ones, kept, would take 640 MiB.
  const grown = rss() - before;
  assert.ok(grown < 256 * 1024 * 1024, `resident memory grew by ${grown} bytes over ten refused bombs`);
  // Within the limit a compressed body is served as before.
  r = await post('/v2/models/simple/infer', zlib.gzipSync(goodBody), { 'Content-Encoding': 'gzip' });
  assert.equal(r.status, 200, r.text);
  r = await post('/v2/models/simple/infer', Buffer.alloc(0), { 'Content-Encoding': 'gzip' });
  assert.deepEqual([r.status, r.text], [400, error('nothing to be decompressed')]);
  await assertServes('decompression bombs');
});

test('a response whose JSON would pass 256 MiB is refused with the output, the model and the binary alternative', async () => {
  // identity_types echoes 13 inputs; INPUT_BOOL carries 56M elements, whose JSON (`true,` each) would take 280 MB.
  const types = ['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BYTES'];
  const size: Record<string, number> = { UINT16: 2, UINT32: 4, UINT64: 8, INT16: 2, INT32: 4, INT64: 8, FP16: 2, FP32: 4, FP64: 8 };
  const elements = 56_000_000;
  const blobs = types.map((t) => {
    if (t === 'BOOL') return Buffer.alloc(elements, 1);
    if (t === 'BYTES') return Buffer.from([1, 0, 0, 0, 0x61]);
    return Buffer.alloc(size[t] ?? 1);
  });
  const header = (binaryBool: boolean): Buffer =>
    Buffer.from(
      JSON.stringify({
        inputs: types.map((t, i) => ({
          name: `INPUT_${t}`,
          datatype: t,
          shape: [1, t === 'BOOL' ? elements : 1],
          parameters: { binary_data_size: blobs[i].length },
        })),
        outputs: types.map((t) => ({ name: `OUTPUT_${t}`, parameters: { binary_data: t === 'FP16' || (binaryBool && t === 'BOOL') } })),
      }),
    );
  const send = (h: Buffer): Promise<{ status: number; text: string; headers: Headers }> =>
    post('/v2/models/identity_types/infer', Buffer.concat([h, ...blobs]), { 'Inference-Header-Content-Length': String(h.length) });
  const refused = await send(header(false));
  assert.deepEqual(
    [refused.status, refused.text],
    [
      400,
      error(
        `the JSON of output 'OUTPUT_BOOL' (${elements} elements) of model 'identity_types' would make the response larger than ` +
          `${256 * 1024 * 1024} bytes, the most an HTTP inference response may carry as JSON (--http-max-json-response-size). Request the output in binary: ` +
          '"parameters":{"binary_data":true} on the output, or "binary_data_output":true in the request parameters (the tritonclient default).',
      ),
    ],
  );
  await assertServes('a refused oversized JSON response');
  // The same outputs with the large one in binary are sent.
  const h = header(true);
  const res = await fetch(`${server.url}/v2/models/identity_types/infer`, {
    method: 'POST',
    body: Buffer.concat([h, ...blobs]),
    headers: { 'Inference-Header-Content-Length': String(h.length) },
  });
  assert.equal(res.status, 200);
  const body = Buffer.from(await res.arrayBuffer());
  const jsonLength = Number(res.headers.get('inference-header-content-length'));
  const json = JSON.parse(body.subarray(0, jsonLength).toString()) as { outputs: { name: string; parameters?: { binary_data_size: number } }[] };
  const boolOut = json.outputs.find((o) => o.name === 'OUTPUT_BOOL');
  assert.equal(boolOut?.parameters?.binary_data_size, elements);
  await assertServes('a large binary response');
});

test("reserved parameter keys and duplicate output names are refused with Triton's texts", async () => {
  const cases: [body: object, message: string][] = [
    [
      { parameters: { triton_enable_empty_final_response: true }, inputs: [] },
      "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.",
    ],
    [{ parameters: { triton_anything: 'x' }, inputs: [] }, "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified."],
    [
      { id: 'r7', ...JSON.parse(goodBody), outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT1' }, { name: 'OUTPUT0' }] },
      "[request id: r7] output 'OUTPUT0' already exists in request",
    ],
    [
      { ...JSON.parse(goodBody), outputs: [{ name: 'OUTPUT1', parameters: { binary_data: true } }, { name: 'OUTPUT1' }] },
      "[request id: <id_unknown>] output 'OUTPUT1' already exists in request",
    ],
  ];
  for (const [body, message] of cases) {
    const r = await post('/v2/models/simple/infer', JSON.stringify(body));
    assert.deepEqual([r.status, r.text], [400, error(message)], JSON.stringify(body).slice(0, 120));
    await assertServes(message);
  }
});

test('Inference-Header-Content-Length out of range or not a number', async () => {
  const len = Buffer.byteLength(goodBody);
  const cases: [value: string, message: string][] = [
    ['-1', `inference header size should be in range (0, ${len}), got: -1`],
    [String(len + 1), `inference header size should be in range (0, ${len}), got: ${len + 1}`],
    ['2147483647', `inference header size should be in range (0, ${len}), got: 2147483647`],
    ['2147483648', 'Unable to parse Inference-Header-Content-Length, got: 2147483648'],
    ['99999999999999999999', 'Unable to parse Inference-Header-Content-Length, got: 99999999999999999999'],
    ['abc', 'Unable to parse Inference-Header-Content-Length, got: abc'],
  ];
  for (const [value, message] of cases) {
    const r = await post('/v2/models/simple/infer', goodBody, { 'Inference-Header-Content-Length': value });
    assert.deepEqual([r.status, r.text], [400, error(message)], `header ${JSON.stringify(value)}`);
  }
  // The whole body as the header is in range.
  const whole = await post('/v2/models/simple/infer', goodBody, { 'Inference-Header-Content-Length': String(len) });
  assert.equal(whole.status, 200, whole.text);
  await assertServes('bad Inference-Header-Content-Length values');
});

test('model names that try to leave the repository are refused by every API', async () => {
  const names: [encoded: string, name: string][] = [
    ['%2E%2E', '..'],
    ['%2E', '.'],
    ['%2Fetc', '/etc'],
    ['..%2F..%2Fetc', '../../etc'],
    ['a%5Cb', 'a\\b'],
    ['simple%00', 'simple\0'],
  ];
  for (const [encoded, name] of names) {
    const refused = error(`invalid model name '${name}', model name must not contain path traversal characters`);
    const calls: [string, Promise<{ status: number; text: string }>][] = [
      ['infer', raw('POST', `/v2/models/${encoded}/infer`, goodBody)],
      ['infer with a version', raw('POST', `/v2/models/${encoded}/versions/1/infer`, goodBody)],
      ['metadata', raw('GET', `/v2/models/${encoded}`)],
      ['ready', raw('GET', `/v2/models/${encoded}/ready`)],
      ['config', raw('GET', `/v2/models/${encoded}/config`)],
      ['stats', raw('GET', `/v2/models/${encoded}/stats`)],
      ['trace setting', raw('GET', `/v2/models/${encoded}/trace/setting`)],
      ['trace update', raw('POST', `/v2/models/${encoded}/trace/setting`, '{"trace_rate":"1"}')],
      ['load', raw('POST', `/v2/repository/models/${encoded}/load`)],
      ['unload', raw('POST', `/v2/repository/models/${encoded}/unload`)],
    ];
    for (const [api, call] of calls) {
      const r = await call;
      assert.deepEqual([r.status, r.text], [400, refused], `${api} of ${JSON.stringify(name)}`);
    }
  }
  // A name that could be a model but is not one is still "unknown".
  const unknown = await get('/v2/models/no_such_model/config');
  assert.deepEqual([unknown.status, unknown.text], [404, error("Request for unknown model: 'no_such_model' is not found")]);
  const index = await post('/v2/repository/index', '{"ready":true}');
  assert.deepEqual((JSON.parse(index.text) as { name: string }[]).map((e) => e.name).sort(), ['identity_types', 'simple']);
  await assertServes('path-traversal model names');
});

test('shared-memory keys that would leave /dev/shm are refused at registration', async () => {
  const cases: [key: string, message: string][] = [
    [
      '/../../etc/hostname',
      "cannot register shared memory region 'r' - invalid shm key '/../../etc/hostname': a key names one object in /dev/shm, so after its leading '/' it must not contain '/', be '.' or '..', or hold a NUL byte",
    ],
    [
      '/..',
      "cannot register shared memory region 'r' - invalid shm key '/..': a key names one object in /dev/shm, so after its leading '/' it must not contain '/', be '.' or '..', or hold a NUL byte",
    ],
    ['//', "cannot register shared memory region 'r' - invalid shm key '//'"],
  ];
  for (const [key, message] of cases) {
    const r = await post('/v2/systemsharedmemory/region/r/register', JSON.stringify({ key, offset: 0, byte_size: 4 }));
    assert.deepEqual([r.status, r.text], [400, error(message)], key);
  }
  assert.deepEqual(await get('/v2/systemsharedmemory/status'), { status: 200, text: '[]' });
  await assertServes('refused shared-memory keys');
});
