/**
 * --http-header-forward-pattern through the real server and a real Python
 * model that answers its request's parameters (fixtures/python_models/parameter):
 * matching headers arrive as string parameters, case-insensitively unless
 * the pattern starts with (?-i); a reserved name is refused; a pattern that
 * does not compile stops the start with the flag named.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, runToExit, startServer, type ServerProcess } from './server-process';
import { rawExchange } from './raw-http';
import * as grpc from '@grpc/grpc-js';
import { createClient } from './grpc-test-client';

/** BYTES elements of a raw output: 4-byte little-endian length, then the bytes. */
function bytesElements(raw: Buffer): string[] {
  const out: string[] = [];
  for (let at = 0; at < raw.length;) {
    const n = raw.readUInt32LE(at);
    out.push(raw.toString('utf8', at + 4, at + 4 + n));
    at += 4 + n;
  }
  return out;
}

const FIXTURE = path.join(REPO_ROOT, 'test/integration/fixtures/python_models/parameter');
let repo: string;
let server: ServerProcess;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-header-forward-'));
  fs.cpSync(FIXTURE, path.join(repo, 'parameter'), { recursive: true });
  server = await startServer([
    `--model-repository=${repo}`,
    '--http-header-forward-pattern=MY_HEADER.*|sequence_id',
    '--allow-grpc=true',
    '--grpc-port=0',
    '--grpc-header-forward-pattern=my_header.*',
  ]);
});
after(async () => {
  await server?.stop();
  fs.rmSync(repo, { recursive: true, force: true });
});

async function params(
  headers: Record<string, string>,
  parameters: Record<string, unknown> = {},
): Promise<{ status: number; got: Record<string, string>; text: string }> {
  const res = await fetch(`${server.url}/v2/models/parameter/infer`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: [1] }], parameters }),
  });
  const text = await res.text();
  if (res.status !== 200) return { status: res.status, got: {}, text };
  const j = JSON.parse(text) as { outputs: { name: string; data: string[] }[] };
  const keys = j.outputs.find((o) => o.name === 'key')!.data;
  const values = j.outputs.find((o) => o.name === 'value')!.data;
  return { status: 200, got: Object.fromEntries(keys.map((k, i) => [k, values[i]])), text };
}

test('headers that match the pattern (case-insensitively) reach the model as string parameters; the others do not', async () => {
  const r = await params(
    { my_header_1: 'my_value_1', My_Header_2: 'my_value_2', my_header_3: 'This is a "quoted" string with a backslash\\', header_1: 'value_1' },
    { key1: 'value1' },
  );
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.got, {
    key1: 'value1',
    my_header_1: 'my_value_1',
    my_header_2: 'my_value_2',
    my_header_3: 'This is a "quoted" string with a backslash\\',
  });
  // A value's trailing space arrives as sent, as with Triton (fetch would trim it, so a raw request).
  const body = JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: [1] }] });
  const raw = await rawExchange(
    server.port,
    [`POST /v2/models/parameter/infer HTTP/1.1\r\nHost: x\r\nmy_header_9:  spaced value \r\nContent-Length: ${body.length}\r\n\r\n${body}`],
    { answers: 1 },
  );
  const j = JSON.parse(raw.answers[0].body) as { outputs: { name: string; data: string[] }[] };
  assert.deepEqual([j.outputs[0].data, j.outputs[1].data], [['my_header_9'], ['spaced value ']]);
});

test('a header whose name is a reserved parameter is refused with 400', async () => {
  const r = await params({ sequence_id: '7' });
  assert.equal(r.status, 400);
  assert.equal(
    (JSON.parse(r.text) as { error: string }).error,
    "header 'sequence_id' matches the header forward pattern, but 'sequence_id' is a parameter name reserved for Triton usage; rename the header or narrow the pattern",
  );
  assert.equal((await params({})).status, 200);
});

test('(?-i) makes the pattern case-sensitive; a pattern that does not compile stops the start naming the flag', async () => {
  const exited = await runToExit([`--model-repository=${repo}`, '--http-header-forward-pattern=my_header(']);
  assert.notEqual(exited.code, 0);
  assert.match(exited.output, /invalid argument for --http-header-forward-pattern: 'my_header\(' is not a valid regular expression/);
  const strict = await startServer([`--model-repository=${repo}`, '--http-header-forward-pattern=(?-i)MY_HEADER.*']);
  try {
    const res = await fetch(`${strict.url}/v2/models/parameter/infer`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', my_header_1: 'x' },
      body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: [1] }] }),
    });
    const j = (await res.json()) as { outputs: { name: string; data: string[] }[] };
    assert.deepEqual(j.outputs.find((o) => o.name === 'key')!.data, [], 'HTTP header names arrive lower-case: MY_HEADER does not match case-sensitively');
  } finally {
    await strict.stop();
  }
});

test('gRPC: metadata keys that match --grpc-header-forward-pattern reach the model as parameters, on ModelInfer and on a stream', async () => {
  const client = createClient(server.grpcPort);
  try {
    const md = new grpc.Metadata();
    md.set('my_header_1', 'my_value_1');
    md.set('header_1', 'value_1');
    const request = {
      model_name: 'parameter',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1] }],
      raw_input_contents: [Buffer.from(new Float32Array([1]).buffer)],
    };
    const res = await client.call<{ raw_output_contents: Buffer[] }>('ModelInfer', request, md);
    assert.deepEqual(res.raw_output_contents.map(bytesElements), [['my_header_1'], ['my_value_1']]);

    const streamMd = new grpc.Metadata();
    streamMd.set('my_header_2', 'on the stream');
    const stream = client.inference['ModelStreamInfer'](streamMd) as grpc.ClientDuplexStream<
      object,
      { error_message: string; infer_response: { raw_output_contents: Buffer[] } }
    >;
    const got = new Promise<string[][]>((resolve, reject) => {
      stream.once('data', (m) => (m.error_message ? reject(new Error(m.error_message)) : resolve(m.infer_response.raw_output_contents.map(bytesElements))));
      stream.once('error', reject);
    });
    stream.write(request);
    assert.deepEqual(await got, [['my_header_2'], ['on the stream']]);
    stream.end();
  } finally {
    client.close();
  }
});
