/**
 * Exact 64-bit integers through the real server, as Triton's rapidjson keeps
 * them: INT64/UINT64 JSON `data` over the whole range into the ONNX
 * `identity_types` and back out as JSON; a numeric sequence_id past 2^63
 * over HTTP and gRPC reaching a Python sequence model exactly (its CORRID
 * control, UINT64 and INT64, and request.correlation_id()), with a custom
 * int64 parameter, and both coming back exactly in the response parameters
 * the model sets; the same through a BLS call from another Python model
 * (the stub's frames, both ways); values rapidjson's IsInt64 / IsUint64 refuse, with
 * Triton's texts. Responses are read with the exact parser, since
 * JSON.parse would round what the test checks.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseRequestJson } from '../../src/frontend/http/request-json';
import { createClient, int32Bytes, type GrpcTestClient } from './grpc-test-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer, type ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/int64_models');

let server: ServerProcess;
let client: GrpcTestClient;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-int64-'));
  fs.cpSync(path.join(MODEL_REPOSITORY, 'identity_types'), path.join(repo, 'identity_types'), { recursive: true });
  for (const m of ['corrid_u64', 'bls_corrid']) fs.cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
  // The same model with an INT64 CORRID control (the id's 64 bits, two's complement).
  fs.cpSync(path.join(FIXTURES, 'corrid_u64'), path.join(repo, 'corrid_i64'), { recursive: true });
  const cfg = path.join(repo, 'corrid_i64', 'config.pbtxt');
  fs.writeFileSync(
    cfg,
    fs
      .readFileSync(cfg, 'utf8')
      .replace(/CORRID_OUT" data_type: TYPE_UINT64/, 'CORRID_OUT" data_type: TYPE_INT64')
      .replace(/CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64/, 'CONTROL_SEQUENCE_CORRID data_type: TYPE_INT64'),
  );
  server = await startServer([`--model-repository=${repo}`, '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1']);
  client = createClient(server.grpcPort);
});

after(async () => {
  client.close();
  assert.equal(await server.stop(), 0);
  fs.rmSync(repo, { recursive: true, force: true });
});

interface Answer {
  status: number;
  /** The body parsed exactly: 64-bit integers past 2^53 are bigints. */
  doc: Record<string, unknown>;
  text: string;
}

/** POST a JSON body given as text (so its integer literals are exactly what the test wrote). */
async function post(model: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${server.url}/v2/models/${model}/infer`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const text = await res.text();
  const buf = Buffer.from(text);
  return { status: res.status, doc: parseRequestJson(buf, buf.length, true).doc as Record<string, unknown>, text };
}

type Output = { name: string; datatype: string; shape: number[]; data: unknown[] };

function output(a: Answer, name: string): Output {
  const o = (a.doc.outputs as Output[]).find((x) => x.name === name);
  assert.ok(o !== undefined, `${name} in ${a.text}`);
  return o;
}

const INT64_VALUES = ['9007199254740993', '-9223372036854775808', '9223372036854775807', '-1'];
const UINT64_VALUES = ['18446744073709551615', '9007199254740993', '0', '9223372036854775813'];

/** identity_types wants every input: the 64-bit ones as JSON literals, the rest small, FP16 binary after the JSON. */
function identityBody(int64: string[], uint64: string[]): { body: Buffer; headers: Record<string, string> } {
  const n = int64.length;
  const small = (dt: string, v: string): string => `{"name":"INPUT_${dt}","datatype":"${dt}","shape":[1,${n}],"data":[${Array(n).fill(v).join(',')}]}`;
  const inputs = [
    small('BOOL', 'true'),
    small('UINT8', '1'),
    small('UINT16', '1'),
    small('UINT32', '1'),
    `{"name":"INPUT_UINT64","datatype":"UINT64","shape":[1,${uint64.length}],"data":[${uint64.join(',')}]}`,
    small('INT8', '1'),
    small('INT16', '1'),
    small('INT32', '1'),
    `{"name":"INPUT_INT64","datatype":"INT64","shape":[1,${n}],"data":[${int64.join(',')}]}`,
    `{"name":"INPUT_FP16","datatype":"FP16","shape":[1,${n}],"parameters":{"binary_data_size":${2 * n}}}`,
    small('FP32', '1'),
    small('FP64', '1'),
    small('BYTES', '"a"'),
  ];
  const json = `{"inputs":[${inputs.join(',')}],"outputs":[{"name":"OUTPUT_INT64"},{"name":"OUTPUT_UINT64"}]}`;
  const body = Buffer.concat([Buffer.from(json), Buffer.alloc(2 * n)]);
  return { body, headers: { 'inference-header-content-length': String(Buffer.byteLength(json)), 'content-type': 'application/octet-stream' } };
}

test('INT64 and UINT64 JSON data round-trip exactly through identity_types, the whole 64-bit range', async () => {
  const { body, headers } = identityBody(INT64_VALUES, UINT64_VALUES);
  const a = await post('identity_types', body, headers);
  assert.equal(a.status, 200, a.text);
  assert.deepEqual(
    output(a, 'OUTPUT_INT64').data,
    INT64_VALUES.map((v) => BigInt(v)).map((v) => (Number.isSafeInteger(Number(v)) ? Number(v) : v)),
  );
  assert.deepEqual(
    output(a, 'OUTPUT_UINT64').data,
    UINT64_VALUES.map((v) => BigInt(v)).map((v) => (Number.isSafeInteger(Number(v)) ? Number(v) : v)),
  );
  // The literals themselves, as sent.
  assert.ok(a.text.includes(`"data":[${INT64_VALUES.join(',')}]`), a.text);
  assert.ok(a.text.includes(`"data":[${UINT64_VALUES.join(',')}]`), a.text);
});

const SIGNED = "Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer";
const UNSIGNED = "Unable to parse 'data': attempt to access JSON non-unsigned-integer as unsigned-integer";

// [what, INT64 data, UINT64 data, Triton's text]: 500, as Triton's JSON helper errors are INTERNAL (protocol.md §1.2).
const badRows: [string, string[], string[], string][] = [
  ['INT64 1.5', ['1.5'], ['1'], SIGNED],
  ['INT64 2^63', ['9223372036854775808'], ['1'], SIGNED],
  ['INT64 -2^63-1', ['-9223372036854775809'], ['1'], SIGNED],
  ['UINT64 2^64', ['1'], ['18446744073709551616'], UNSIGNED],
  ['UINT64 -1', ['1'], ['-1'], UNSIGNED],
];

for (const [what, int64, uint64, message] of badRows) {
  test(`identity_types refuses ${what} with Triton's text, and the server keeps serving`, async () => {
    const { body, headers } = identityBody(int64, uint64);
    const a = await post('identity_types', body, headers);
    assert.equal(a.status, 500, a.text);
    assert.deepEqual(a.doc, { error: message });
  });
}

const ID = 9223372036854775813n; // 2^63 + 5
const ID_AS_INT64 = BigInt.asIntN(64, ID); // -9223372036854775803: its bits in an int64
const CUSTOM = -9223372036854775807n;

for (const [model, corrid] of [
  ['corrid_u64', ID],
  ['corrid_i64', ID_AS_INT64],
] as const) {
  test(`HTTP sequence_id 2^63+5 reaches ${model}'s CORRID and correlation_id() exactly and comes back in the response parameters`, async () => {
    const start = await post(
      model,
      `{"parameters":{"sequence_id":${ID},"sequence_start":true,"custom":${CUSTOM}},"inputs":[{"name":"INPUT","datatype":"INT32","shape":[1,1],"data":[1]}]}`,
    );
    assert.equal(start.status, 200, start.text);
    assert.deepEqual(output(start, 'CORRID_OUT').data, [corrid]);
    assert.deepEqual(output(start, 'CID_OUT').data, [ID]);
    assert.deepEqual(start.doc.parameters, { correlation_id: ID, custom: CUSTOM });
    // The sequence is known by that exact id: the next request (no START) finds it, a neighbour id does not.
    const next = await post(
      model,
      `{"parameters":{"sequence_id":${ID},"sequence_end":true},"inputs":[{"name":"INPUT","datatype":"INT32","shape":[1,1],"data":[2]}]}`,
    );
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(output(next, 'CID_OUT').data, [ID]);
    const other = await post(model, `{"parameters":{"sequence_id":${ID + 1n}},"inputs":[{"name":"INPUT","datatype":"INT32","shape":[1,1],"data":[3]}]}`);
    assert.equal(other.status, 400, other.text);
    assert.deepEqual(other.doc, {
      error: `inference request for sequence ${ID + 1n} to model '${model}' must specify the START flag on the first request of the sequence`,
    });
  });
}

test("gRPC sequence_id: an int64_param is the id's 64 bits (2^63+5 sent as its int64), exact past 2^53 too", async () => {
  const cases: [string, bigint][] = [
    [ID_AS_INT64.toString(), ID],
    ['9007199254740993', 9007199254740993n],
  ];
  for (const [sent, id] of cases) {
    const res = await client.call<{ raw_output_contents: Buffer[]; outputs: { name: string }[]; parameters: Record<string, { int64_param?: string }> }>(
      'ModelInfer',
      {
        model_name: 'corrid_u64',
        inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1] }],
        raw_input_contents: [int32Bytes([7])],
        parameters: {
          sequence_id: { int64_param: sent },
          sequence_start: { bool_param: true },
          sequence_end: { bool_param: true },
          custom: { int64_param: CUSTOM.toString() },
        },
      },
    );
    const raw = new Map(res.outputs.map((o, i) => [o.name, res.raw_output_contents[i]!]));
    assert.equal(raw.get('CORRID_OUT')!.readBigUInt64LE(0), id, sent);
    assert.equal(raw.get('CID_OUT')!.readBigUInt64LE(0), id, sent);
    // Response parameters are int64 on the wire: an id past 2^63 comes back as its int64 bits, as Triton's would.
    assert.equal(res.parameters.correlation_id?.int64_param, BigInt.asIntN(64, id).toString());
    assert.equal(res.parameters.custom?.int64_param, CUSTOM.toString());
  }
});

test('sequence_id refused past uint64 (a double to rapidjson), and the model still serves', async () => {
  const a = await post(
    'corrid_u64',
    '{"parameters":{"sequence_id":18446744073709551616,"sequence_start":true},"inputs":[{"name":"INPUT","datatype":"INT32","shape":[1,1],"data":[1]}]}',
  );
  assert.equal(a.status, 500, a.text);
  assert.deepEqual(a.doc, { error: "Unable to parse 'sequence_id': attempt to access JSON non-string as string" });
  const ok = await post(
    'corrid_u64',
    '{"parameters":{"sequence_id":18446744073709551615,"sequence_start":true,"sequence_end":true},"inputs":[{"name":"INPUT","datatype":"INT32","shape":[1,1],"data":[1]}]}',
  );
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(output(ok, 'CID_OUT').data, [18446744073709551615n]);
});

test('BLS: a Python model calls corrid_u64 with correlation id 2^63+5 and an int64 parameter; both arrive and come back exactly', async () => {
  const a = await post('bls_corrid', '{"inputs":[{"name":"INPUT","datatype":"INT32","shape":[1],"data":[4]}]}');
  assert.equal(a.status, 200, a.text);
  assert.deepEqual(output(a, 'CORRID_OUT').data, [ID]);
  assert.deepEqual(output(a, 'CID_OUT').data, [ID]);
  assert.deepEqual(a.doc.parameters, { correlation_id: ID, custom: CUSTOM });
});
