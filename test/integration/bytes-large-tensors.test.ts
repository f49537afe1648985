/**
 * Large BYTES tensors through the real server and a real Python stub
 * (fixtures/large_models/identity_bytes_py) over the four ways a client
 * sends them: gRPC raw_input_contents, gRPC bytes_contents, the HTTP binary
 * extension and HTTP JSON `data`. 200,000 elements with empty ones,
 * multi-byte UTF-8, NULs and bytes that are not UTF-8 come back exactly;
 * the same bytes asked for as a JSON output come back as the UTF-8 decoding
 * of each element. Malformed serialized BYTES (a length prefix past the
 * end, a cut-off length, an element count that is not the shape's) still
 * get Triton's texts on every path, and the server keeps serving.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { createClient, type GrpcTestClient } from './grpc-test-client';
import { REPO_ROOT, startServer, type ServerProcess } from './server-process';

const MODEL = 'identity_bytes_py';
const R = '[request id: <id_unknown>] ';
const WHAT = `for inference input 'INPUT0' for model '${MODEL}'`;
const N = 200_000;

let server: ServerProcess;
let client: GrpcTestClient;

before(async () => {
  server = await startServer([
    `--model-repository=${path.join(REPO_ROOT, 'test/integration/fixtures/large_models')}`,
    '--allow-grpc=true',
    '--grpc-port=0',
    '--grpc-address=127.0.0.1',
    '--http-max-input-size=268435456',
  ]);
  client = createClient(server.grpcPort);
});

after(async () => {
  client?.close();
  assert.equal(await server.stop(), 0, server.output().slice(-3000));
});

function serialized(elements: readonly Buffer[]): Buffer {
  return Buffer.concat(
    elements.flatMap((e) => {
      const len = Buffer.alloc(4);
      len.writeUInt32LE(e.length);
      return [len, e];
    }),
  );
}

/** Text elements: empty, ASCII, multi-byte UTF-8, NUL, quotes, backslashes, control chars. */
const TEXT = Array.from({ length: N }, (_, i) => {
  switch (i % 7) {
    case 0:
      return '';
    case 1:
      return `élément-${i}`;
    case 2:
      return '🚀識別子';
    case 3:
      return `a\u0000b"c\\d\n\t${i}`;
    case 4:
      return String(i % 10);
    case 5:
      return 'x'.repeat(i % 97);
    default:
      return `\u007f\u2028€${i}`;
  }
});
/** Binary elements: the text ones, and bytes that are no UTF-8 at all. */
const BINARY = TEXT.map((s, i) => (i % 11 === 10 ? Buffer.from([0xff, 0x00, 0x80, i & 0xff, 0xc3]) : Buffer.from(s)));
const BINARY_DATA = serialized(BINARY);

interface HttpAnswer {
  status: number;
  json: Record<string, unknown>;
  binary: Buffer;
}

async function httpInfer(header: object, binary?: Buffer): Promise<HttpAnswer> {
  const head = Buffer.from(JSON.stringify(header));
  const res = await fetch(`${server.url}/v2/models/${MODEL}/infer`, {
    method: 'POST',
    headers:
      binary === undefined
        ? { 'Content-Type': 'application/json' }
        : { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(head.length) },
    body: binary === undefined ? head : Buffer.concat([head, binary]),
  });
  const body = Buffer.from(await res.arrayBuffer());
  const h = res.headers.get('inference-header-content-length');
  const jsonEnd = h === null ? body.length : Number(h);
  return { status: res.status, json: JSON.parse(body.subarray(0, jsonEnd).toString()) as Record<string, unknown>, binary: body.subarray(jsonEnd) };
}

function binaryRequest(shape: number[], data: Buffer, outputBinary = true): object {
  return {
    inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape, parameters: { binary_data_size: data.length } }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: outputBinary } }],
  };
}

interface GrpcOut {
  raw_output_contents: Buffer[];
  outputs: { name: string; datatype: string; shape: string[] }[];
}

function grpcRaw(shape: number[], data: Buffer): Promise<GrpcOut> {
  return client.call<GrpcOut>('ModelInfer', {
    model_name: MODEL,
    inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape }],
    raw_input_contents: [data],
  });
}

function grpcContents(shape: number[], elements: readonly Buffer[]): Promise<GrpcOut> {
  return client.call<GrpcOut>('ModelInfer', {
    model_name: MODEL,
    inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape, contents: { bytes_contents: elements } }],
  });
}

test('gRPC raw_input_contents: 200,000 BYTES elements come back byte for byte', async () => {
  const r = await grpcRaw([N], BINARY_DATA);
  assert.deepEqual(
    r.outputs.map((o) => [o.name, o.datatype, o.shape]),
    [['OUTPUT0', 'BYTES', [String(N)]]],
  );
  assert.ok(Buffer.from(r.raw_output_contents[0]).equals(BINARY_DATA), 'OUTPUT0 is INPUT0, lengths and bytes');
});

test('gRPC bytes_contents: 200,000 elements, one per entry, come back as the serialized tensor', async () => {
  const r = await grpcContents([N], BINARY);
  assert.deepEqual(
    r.outputs.map((o) => [o.name, o.shape]),
    [['OUTPUT0', [String(N)]]],
  );
  assert.ok(Buffer.from(r.raw_output_contents[0]).equals(BINARY_DATA), 'OUTPUT0 holds the entries in order, each with its length');
});

test('HTTP binary: 200,000 BYTES elements come back byte for byte', async () => {
  const r = await httpInfer(binaryRequest([N], BINARY_DATA), BINARY_DATA);
  assert.equal(r.status, 200, JSON.stringify(r.json).slice(0, 300));
  assert.ok(r.binary.equals(BINARY_DATA));
});

test('HTTP JSON data: 200,000 strings come back as the same strings', async () => {
  const r = await httpInfer({ inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [N], data: TEXT }] });
  assert.equal(r.status, 200, JSON.stringify(r.json).slice(0, 300));
  const out = (r.json.outputs as { name: string; datatype: string; shape: number[]; data: string[] }[])[0];
  assert.deepEqual([out.name, out.datatype, out.shape], ['OUTPUT0', 'BYTES', [N]]);
  assert.equal(out.data.length, N);
  assert.deepEqual(out.data, TEXT);
});

test('HTTP: binary elements asked for as a JSON output come back as their UTF-8 decoding', async () => {
  const r = await httpInfer(binaryRequest([N], BINARY_DATA, false), BINARY_DATA);
  assert.equal(r.status, 200, JSON.stringify(r.json).slice(0, 300));
  const out = (r.json.outputs as { data: string[] }[])[0];
  assert.deepEqual(
    out.data,
    BINARY.map((b) => b.toString('utf8')),
  );
});

/** Element streams that are not what the shape says, with Triton's text for each. */
const MALFORMED: { name: string; shape: number[]; data: Buffer; message: string }[] = [
  {
    name: 'the last length prefix runs past the end',
    shape: [2],
    data: Buffer.concat([serialized([Buffer.from('a')]), Buffer.from([5, 0, 0, 0, 0x61, 0x62])]),
    message: `${R}expected 2 string elements ${WHAT}, got 1`,
  },
  {
    name: 'a cut-off length prefix',
    shape: [2],
    data: Buffer.concat([serialized([Buffer.from('a')]), Buffer.from([1, 0])]),
    message: `${R}incomplete string length indicator ${WHAT}, expecting 4 bytes but only 2 bytes available. Please make sure the string length indicator is in one buffer.`,
  },
  {
    name: 'fewer elements than the shape',
    shape: [3],
    data: serialized([Buffer.from('a'), Buffer.from('é')]),
    message: `${R}expected 3 string elements ${WHAT}, got 2`,
  },
  {
    name: 'more elements than the shape',
    shape: [1],
    data: serialized([Buffer.from('a'), Buffer.alloc(0)]),
    message: `${R}unexpected number of string elements 2 ${WHAT}, expecting 1`,
  },
];

for (const c of MALFORMED) {
  test(`malformed BYTES, ${c.name}: HTTP binary 400 and gRPC raw INVALID_ARGUMENT with Triton's text`, async () => {
    const h = await httpInfer(binaryRequest(c.shape, c.data), c.data);
    assert.equal(h.status, 400);
    assert.deepEqual(h.json, { error: c.message });
    await assert.rejects(grpcRaw(c.shape, c.data), (err: grpc.ServiceError) => {
      assert.equal(err.code, 3);
      assert.equal(err.details, c.message);
      return true;
    });
  });
}

test("bytes_contents and JSON data whose count is not the shape's get the count texts", async () => {
  await assert.rejects(grpcContents([3], [Buffer.from('a'), Buffer.alloc(0)]), (err: grpc.ServiceError) => {
    assert.equal(err.code, 3);
    assert.equal(err.details, `${R}expected 3 string elements ${WHAT}, got 2`);
    return true;
  });
  await assert.rejects(grpcContents([1], [Buffer.from('a'), Buffer.from('b')]), (err: grpc.ServiceError) => {
    assert.equal(err.details, `${R}unexpected number of string elements 2 ${WHAT}, expecting 1`);
    return true;
  });
  const j = await httpInfer({ inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [3], data: ['a', ['b']] }] });
  assert.equal(j.status, 400);
  assert.deepEqual(j.json, { error: `${R}expected 3 string elements ${WHAT}, got 2` });
  // And the server still serves.
  const ok = await grpcContents([2], [Buffer.from('ok'), Buffer.alloc(0)]);
  assert.ok(Buffer.from(ok.raw_output_contents[0]).equals(serialized([Buffer.from('ok'), Buffer.alloc(0)])));
});
