/**
 * The gRPC edge's caps, with a real grpc-js client against the real server:
 * --grpc-max-concurrent-streams=2 lets a connection hold two calls at once
 * (a third waits, queued by the client, and runs as soon as one ends), and
 * --grpc-max-connection-idle closes a connection with no call (GOAWAY: the
 * client's channel goes back to IDLE and reconnects for the next call).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { createClient, int32Bytes, type GrpcTestClient } from './grpc-test-client';
import { MODEL_REPOSITORY, startServer, type ServerProcess } from './server-process';

let server: ServerProcess;
let client: GrpcTestClient;

before(async () => {
  server = await startServer([`--model-repository=${MODEL_REPOSITORY}`, '--model-control-mode=explicit', '--load-model=simple',
    '--allow-grpc=true', '--grpc-port=0', '--grpc-max-concurrent-streams=2', '--grpc-max-connection-idle=1000']);
  client = createClient(server.grpcPort);
});

after(async () => {
  client.close();
  assert.equal(await server.stop(), 0, server.output().slice(-2000));
});

const A = Array.from({ length: 16 }, (_, i) => i);
const request = (id: string): object => ({
  model_name: 'simple', id,
  inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
  raw_input_contents: [int32Bytes(A), int32Bytes(A)],
});

interface Reply { error_message: string; infer_response?: { id: string } }

function open(): { s: grpc.ClientDuplexStream<object, Reply>; replies: Reply[]; ended: Promise<void> } {
  const s = client.inference.ModelStreamInfer() as grpc.ClientDuplexStream<object, Reply>;
  const replies: Reply[] = [];
  s.on('data', (r: Reply) => replies.push(r));
  const ended = new Promise<void>((resolve) => {
    s.on('end', resolve);
    s.on('error', () => resolve());
  });
  return { s, replies, ended };
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return cond();
}

test('--grpc-max-concurrent-streams=2: a third call on the connection waits until one of two open ones ends', async () => {
  const a = open();
  const b = open();
  a.s.write(request('a'));
  b.s.write(request('b'));
  assert.ok(await until(() => a.replies.length === 1 && b.replies.length === 1, 10_000), 'the two open streams are answered');
  const c = open();
  c.s.write(request('c'));
  assert.equal(await until(() => c.replies.length > 0, 700), false, 'a third stream is not served while two are open');
  a.s.end();
  await a.ended;
  assert.ok(await until(() => c.replies.length === 1, 10_000), 'it runs once one of them ends');
  assert.equal(c.replies[0]!.infer_response?.id, 'c');
  b.s.end();
  c.s.end();
  await Promise.all([b.ended, c.ended]);
});

test('--grpc-max-connection-idle=1000: an idle connection is closed, and the next call reconnects', async () => {
  const ch = client.inference.getChannel();
  await client.call('ServerLive', {});
  assert.equal(ch.getConnectivityState(false), grpc.connectivityState.READY);
  assert.ok(await until(() => ch.getConnectivityState(false) === grpc.connectivityState.IDLE, 5000), 'the server closed the idle connection');
  assert.deepEqual(await client.call('ServerLive', {}), { live: true });
});
