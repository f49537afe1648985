/**
 * The gRPC edge's caps, with a real grpc-js client against the real server:
 * --grpc-max-concurrent-streams=2 lets a connection hold two calls at once
 * (a third waits, queued by the client, and runs as soon as one ends), and
 * --grpc-max-connection-idle closes a connection with no call (GOAWAY: the
 * client's channel goes back to IDLE and reconnects for the next call), and
 * past --grpc-max-connections a new connection's calls end UNAVAILABLE,
 * saying why, and it closes, while the open ones are served.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { createClient, int32Bytes, type GrpcTestClient } from './grpc-test-client';
import { MODEL_REPOSITORY, startServer, waitForOutput, type ServerProcess } from './server-process';

let server: ServerProcess;
let capped: ServerProcess;
let client: GrpcTestClient;
const CAP = 5;

before(async () => {
  const repo = [`--model-repository=${MODEL_REPOSITORY}`, '--model-control-mode=explicit', '--load-model=simple', '--allow-grpc=true', '--grpc-port=0'];
  [server, capped] = await Promise.all([
    startServer([...repo, '--grpc-max-concurrent-streams=2', '--grpc-max-connection-idle=1000']),
    startServer([...repo, `--grpc-max-connections=${CAP}`]),
  ]);
  client = createClient(server.grpcPort);
});

after(async () => {
  client.close();
  assert.equal(await server.stop(), 0, server.output().slice(-2000));
  assert.equal(await capped.stop(), 0, capped.output().slice(-2000));
});

const A = Array.from({ length: 16 }, (_, i) => i);
const request = (id: string): object => ({
  model_name: 'simple',
  id,
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
  ],
  raw_input_contents: [int32Bytes(A), int32Bytes(A)],
});

interface Reply {
  error_message: string;
  infer_response?: { id: string };
}

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

/** A TCP connection to `port` that sends nothing: it holds a slot as any client's connection does. */
function hold(port: number): Promise<{ socket: net.Socket; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.resume(); // read what the server sends, so its close is seen
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('error', reject);
  });
}

/** A client on a connection of its own (grpc-js channels otherwise share one per target). */
const ownConnection = (): GrpcTestClient => createClient(capped.grpcPort, undefined, { 'grpc.use_local_subchannel_pool': 1 });

test(`--grpc-max-connections=${CAP}: a connection past the cap is refused UNAVAILABLE and closed; the open ones are served`, async () => {
  const keep = ownConnection();
  const input = request('kept');
  assert.equal(((await keep.call('ModelInfer', input)) as { id: string }).id, 'kept');
  const held = await Promise.all(Array.from({ length: CAP - 1 }, () => hold(capped.grpcPort)));
  await new Promise((r) => setTimeout(r, 200)); // the server has accepted them

  const late = ownConnection();
  const err = await late.call('ServerLive', {}).then(
    () => undefined,
    (e: grpc.ServiceError) => e,
  );
  assert.ok(err !== undefined, 'a call on a connection past the cap is refused');
  assert.equal(err.code, grpc.status.UNAVAILABLE);
  assert.match(err.details, new RegExp(`the server has too many open gRPC connections \\(${CAP}; --grpc-max-connections=${CAP}\\): try again later`));
  late.close();

  // One that sends nothing is closed by the server within about a second.
  const silent = await hold(capped.grpcPort);
  const t0 = performance.now();
  assert.equal(await Promise.race([silent.closed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('open'), 5000))]), 'closed');
  assert.ok(performance.now() - t0 < 3000, `closed after ${Math.round(performance.now() - t0)} ms`);

  // The open connection is served all along, and a freed slot is taken again.
  assert.equal(((await keep.call('ModelInfer', input)) as { id: string }).id, 'kept');
  for (const h of held) h.socket.destroy();
  await Promise.all(held.map((h) => h.closed));
  await new Promise((r) => setTimeout(r, 200));
  const again = ownConnection();
  assert.deepEqual(await again.call('ServerLive', {}), { live: true });
  await waitForOutput(capped, /refused gRPC connections from 127\.0\.0\.1: 5 are open, the most --grpc-max-connections allows/);
  const said = capped
    .output()
    .split('\n')
    .filter((l) => l.includes('refused gRPC connections from')).length;
  assert.equal(said, 1, 'said once per client');
  again.close();
  keep.close();
});
