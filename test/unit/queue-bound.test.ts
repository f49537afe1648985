import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InferRequest, InferResponse, Respond } from '../../src/core/request';
import { QueueBound, admitsAnother, queueFullMessage } from '../../src/scheduler/queue-bound';

test('admitsAnother: below the bound yes, at or over it no, 0 = no bound', () => {
  const table: [held: number, limit: number, admits: boolean][] = [
    [0, 1, true],
    [0, 4096, true],
    [4095, 4096, true],
    [4096, 4096, false],
    [5000, 4096, false],
    [1, 1, false],
    [0, 0, true],
    [1_000_000, 0, true],
  ];
  for (const [held, limit, admits] of table) assert.equal(admitsAnother(held, limit), admits, `held ${held}, limit ${limit}`);
});

test("queueFullMessage: Triton's text first (with the request id prefix), then what is full and what to do", () => {
  assert.equal(
    queueFullMessage('r7', 3, 3),
    '[request id: r7] Exceeds maximum queue size: the server holds 3 inference requests, the most ' +
      '--max-queued-requests=3 allows; retry after 1 s, or raise --max-queued-requests',
  );
  assert.match(queueFullMessage('', 2, 2), /^\[request id: <id_unknown>\] Exceeds maximum queue size: /);
});

const request = (id: string): InferRequest => ({
  id,
  model: 'm',
  version: 1,
  latest: true,
  batchSize: 1,
  inputs: [],
  requestedOutputs: null,
  parameters: {},
  arrivalNs: 0,
});

test('QueueBound.route: counts requests until their final response, refuses one over the bound, passes the reply offer on', () => {
  const bound = new QueueBound(2);
  const held: Respond[] = [];
  const route = bound.route((_r, respond) => held.push(respond));
  const answers: InferResponse[] = [];
  const respond: Respond = (r) => answers.push(r);
  respond.replyTo = { port: 3, key: 9 };

  route(request('a'), respond);
  route(request('b'), respond);
  assert.equal(bound.held(), 2);
  assert.deepEqual(held[0]!.replyTo, { port: 3, key: 9 }, 'the direct-path offer reaches the scheduler');

  route(request('c'), respond);
  assert.equal(held.length, 2, 'the third never reached the scheduler');
  assert.deepEqual(answers.pop(), {
    outputs: [],
    final: true,
    error: { code: 'RESOURCE_EXHAUSTED', message: queueFullMessage('c', 2, 2) },
  });

  held[0]!({ outputs: [], final: false }); // a streamed response: still held
  assert.equal(bound.held(), 2);
  held[0]!({ outputs: [], final: true });
  held[0]!({ outputs: [], final: true }); // a second final (never sent by a scheduler) does not count twice
  assert.equal(bound.held(), 1);
  route(request('d'), respond);
  assert.equal(held.length, 3, 'room again after a final response');
  assert.equal(bound.held(), 2);
});

test('QueueBound.route: a route that throws leaves nothing counted; no bound means the route itself', () => {
  const bound = new QueueBound(1);
  const route = bound.route(() => {
    throw new Error('boom');
  });
  assert.throws(() => route(request('a'), () => undefined), /boom/);
  assert.equal(bound.held(), 0);
  const inner = (): void => undefined;
  assert.equal(new QueueBound(0).route(inner), inner);
});
