/**
 * The ring descriptors (src/dataplane/descriptor-codec.ts) carry exactly what
 * JSON carried: each case is decoded from its descriptor and compared with
 * JSON.parse(JSON.stringify(msg)), field by field; malformed descriptors
 * throw; other messages are not descriptors; and a descriptor goes through a
 * real ring (chunked when it is bigger than half the ring).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InferRequest, InferResponse, TensorRef } from '../../src/core/request';
import { decodeDescriptor, encodeDescriptor, isDescriptor } from '../../src/dataplane/descriptor-codec';
import { Doorbell, Inbox, RingWriter, createRing } from '../../src/dataplane/ring';

const tensor = (name: string, over: Partial<TensorRef> = {}): TensorRef => ({
  name,
  datatype: 'INT32',
  shape: [1, 16],
  offset: 123456,
  gen: 4294967295,
  byteSize: 64,
  ...over,
});

const request = (over: Partial<InferRequest> = {}): InferRequest => ({
  id: '',
  model: 'simple',
  version: 1,
  latest: true,
  batchSize: 1,
  inputs: [tensor('INPUT0'), tensor('INPUT1')],
  requestedOutputs: null,
  parameters: {},
  arrivalNs: 1796128878073123000,
  ...over,
});

const response = (over: Partial<InferResponse> = {}): InferResponse => ({ outputs: [tensor('OUTPUT0')], final: true, ...over });

const cases: { what: string; msg: { t: string; [k: string]: unknown } }[] = [
  { what: 'infer, minimal', msg: { t: 'infer', key: 1, request: request() } },
  {
    what: 'infer with every field set: unicode id and names, requested outputs, parameters of each kind, a __proto__ key',
    msg: {
      t: 'infer',
      key: 2 ** 40 + 3,
      request: request({
        id: 'req-é✓😀',
        model: 'módel',
        version: 17,
        latest: false,
        batchSize: 8,
        inputs: [tensor('ÏN', { datatype: 'BYTES', shape: [8, 3, 2 ** 33], offset: 2 ** 35, byteSize: 2 ** 34 + 1 }), tensor('E', { shape: [] })],
        requestedOutputs: ['A', 'bé'],
        client: '127.0.0.1:54321',
        parameters: { sequence_id: 2 ** 52, sequence_start: true, sequence_end: false, priority: 1.5, note: 'x', ['__proto__']: 'p', '': '' },
      }),
    },
  },
  { what: 'infer with no inputs and an empty requested list', msg: { t: 'infer', key: 0, request: request({ inputs: [], requestedOutputs: [] }) } },
  { what: 'execute without reply addresses', msg: { t: 'execute', batchId: 5, requests: [request(), request({ id: 'b' })] } },
  {
    what: 'execute with reply addresses, some null',
    msg: { t: 'execute', batchId: 6, requests: [request(), request()], replyTo: [{ port: 1, key: 99 }, null] },
  },
  { what: 'execute of an empty batch', msg: { t: 'execute', batchId: 7, requests: [], replyTo: [] } },
  { what: 'execute to a Python host, streaming', msg: { t: 'execute', batchId: 9, requests: [request()], stream: true } },
  { what: 'execute to a Python host, not streaming', msg: { t: 'execute', batchId: 10, requests: [request()], stream: false } },
  {
    what: 'executed with an error, a delivered, a skipped (cancelled before it ran) and a non-final response with parameters',
    msg: {
      t: 'executed',
      batchId: 8,
      responses: [
        response({ outputs: [], error: { code: 'INVALID_ARG', message: 'bad «input»' } }),
        response({ outputs: [], delivered: true }),
        response({ outputs: [], error: { code: 'CANCELLED', message: 'cancelled before it ran' }, skipped: true }),
        response({ final: false, parameters: { triton_final_response: false, n: 3, s: 'é' } }),
      ],
      timings: { computeStartNs: 1, computeInputEndNs: 2.5, computeInferEndNs: 1796128878073123000, computeEndNs: 0 },
    },
  },
  {
    what: 'executed with a rescheduled request next to an answered one',
    msg: {
      t: 'executed',
      batchId: 11,
      responses: [response({ outputs: [], rescheduled: true }), response({ outputs: [tensor('A')] })],
      timings: { computeStartNs: 1, computeInputEndNs: 2, computeInferEndNs: 3, computeEndNs: 4 },
    },
  },
  {
    what: 'response with outputs of an unknown datatype name',
    msg: { t: 'response', key: 3, version: 2, response: response({ outputs: [tensor('O', { datatype: 'X9' as never })] }) },
  },
  {
    what: 'response with two outputs and no extras',
    msg: { t: 'response', key: 4, version: 1, response: response({ outputs: [tensor('A'), tensor('B', { datatype: 'FP32' })] }) },
  },
  { what: 'cancel of a request key', msg: { t: 'cancel', key: 7 } },
  { what: 'cancel of a key past 2^32', msg: { t: 'cancel', key: 2 ** 40 + 5 } },
  { what: 'cancel with the whole answer in hand (a stop sequence)', msg: { t: 'cancel', key: 9, answered: true } },
];

for (const c of cases) {
  test(`descriptor round trip equals JSON's: ${c.what}`, () => {
    const bytes = encodeDescriptor(c.msg);
    assert.ok(bytes !== undefined, 'a descriptor is made');
    const copy = Buffer.from(bytes);
    assert.ok(isDescriptor(copy, 0, copy.length));
    const back = decodeDescriptor(copy, 0, copy.length);
    assert.deepEqual(back, JSON.parse(JSON.stringify(c.msg)));
    if (c.what.includes('__proto__')) {
      const p = (back as { request: InferRequest }).request.parameters;
      assert.ok(Object.hasOwn(p, '__proto__'), 'an own property, not the prototype');
      assert.equal(Object.getPrototypeOf(p), Object.prototype);
    }
  });
}

test('malformed descriptors throw a RangeError that says what is wrong', () => {
  const whole = Buffer.from(encodeDescriptor({ t: 'infer', key: 1, request: request() } as { t: string })!);
  for (const cut of [1, 5, 20, whole.length - 1]) {
    assert.throws(() => decodeDescriptor(whole, 0, cut), /descriptor truncated at byte \d+/);
  }
  const longer = Buffer.concat([whole, Buffer.from([0, 0])]);
  assert.throws(() => decodeDescriptor(longer, 0, longer.length), /infer descriptor: 2 bytes left over/);
  assert.throws(() => decodeDescriptor(Buffer.from([9]), 0, 1), /unknown ring descriptor tag 9/);
});

test('bigint parameters (64-bit ids past 2^53, which JSON cannot carry) cross a descriptor exactly, in requests and responses', () => {
  const parameters = { sequence_id: 9223372036854775813n, neg: -9223372036854775808n, n: 1 };
  const roundTrip = (msg: { t: string; [k: string]: unknown }): unknown => {
    const bytes = Buffer.from(encodeDescriptor(msg)!);
    return decodeDescriptor(bytes, 0, bytes.length);
  };
  const infer = { t: 'infer', key: 3, request: request({ parameters }) };
  assert.deepEqual(roundTrip(infer), infer);
  const reply = { t: 'response', key: 4, version: 1, response: response({ parameters }) };
  assert.deepEqual(roundTrip(reply), reply);
});

test('other messages are not descriptors; JSON text is never taken for one', () => {
  for (const t of ['ready', 'stop', 'peers', 'execute_failed', 'init_failed', 'stopped', 'cancel_in_batch']) assert.equal(encodeDescriptor({ t }), undefined);
  const json = Buffer.from(JSON.stringify({ t: 'ready' }));
  assert.equal(isDescriptor(json, 0, json.length), false);
});

test('descriptors through a real ring: in order, small and chunked ones alike', () => {
  const bell = Doorbell.create().handle;
  const ring = createRing(bell, 4096);
  const got: unknown[] = [];
  const inbox = new Inbox(bell);
  inbox.add(ring, (m) => got.push(m));
  const out = RingWriter.attach(ring);
  const big = request({ inputs: Array.from({ length: 60 }, (_, i) => tensor(`INPUT_${i}`)) }); // > half the ring: chunked
  const sent = [
    { t: 'infer', key: 1, request: request() },
    { t: 'ready' },
    { t: 'infer', key: 2, request: big },
    { t: 'response', key: 1, version: 1, response: response() },
  ];
  for (const m of sent) out.send(m);
  for (let i = 0; i < 10 && got.length < sent.length; i++) {
    inbox.drain();
    out.flush();
  }
  assert.deepEqual(got, JSON.parse(JSON.stringify(sent)));
});
