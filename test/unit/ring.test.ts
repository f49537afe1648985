import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { Doorbell, Inbox, RingWriter, createRing, doorbellCounters, type RingHandle } from '../../src/dataplane/ring';
import { D_ARMED, D_SEQ, D_SLEEPING } from '../../src/dataplane/ring-format';
import { ServerError } from '../../src/core/errors';

const ECHO_WORKER = path.join(__dirname, 'fixtures', 'ring-echo-worker.js');

function collect(inbox: Inbox, h: RingHandle): unknown[] {
  const got: unknown[] = [];
  inbox.add(h, (m) => got.push(m));
  return got;
}

/** An event-loop inbox on a fresh doorbell with one ring, once its loop has parked (SLEEPING is 1). */
async function parkedInbox(): Promise<{ bell: Doorbell; h: RingHandle; inbox: Inbox; got: unknown[]; words: Int32Array }> {
  const bell = Doorbell.create();
  const h = createRing(bell.handle, 1024);
  const inbox = new Inbox(bell.handle);
  const got = collect(inbox, h);
  inbox.start();
  const words = new Int32Array(bell.handle.sab);
  await until(() => Atomics.load(words, D_SLEEPING) === 1, 'the loop to park');
  return { bell, h, inbox, got, words };
}

/** A ring echo worker (fixtures/ring-echo-worker.ts) on its own doorbell, with a ring each way. */
function startEcho(mode: string, capacity = 4096) {
  const mainBell = Doorbell.create();
  const workerBell = Doorbell.create();
  const toWorker = createRing(workerBell.handle, capacity);
  const toMain = createRing(mainBell.handle, capacity);
  const worker = new Worker(ECHO_WORKER, { workerData: { mode, bell: workerBell.handle, toWorker, toMain } });
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  return { mainBell, workerBell, toMain, worker, exited, out: RingWriter.attach(toWorker) };
}

function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const poll = (): void => {
      if (cond()) resolve();
      else if (Date.now() > deadline) reject(new Error(`timed out waiting for ${what}`));
      else setTimeout(poll, 1);
    };
    poll();
  });
}

test('messages arrive in send order with their JSON values intact', () => {
  const bell = Doorbell.create();
  const h = createRing(bell.handle, 4096);
  const w = RingWriter.attach(h);
  const inbox = new Inbox(bell.handle);
  const got = collect(inbox, h);
  const sent: unknown[] = [
    { t: 'note', key: 1, request: { id: 'é✓ 🚀', inputs: [{ shape: [1, 3], offset: 128 }] } },
    [1, 'two', null, true],
    'a string',
    42,
    null,
    {},
  ];
  for (const m of sent) w.send(m);
  assert.equal(inbox.drain(), sent.length);
  assert.deepEqual(got, sent);
  assert.equal(inbox.drain(), 0);
});

test('wraparound: many messages of varied sizes through a small ring keep order', () => {
  const bell = Doorbell.create();
  const h = createRing(bell.handle, 512);
  const w = RingWriter.attach(h);
  const inbox = new Inbox(bell.handle);
  const got = collect(inbox, h);
  for (let i = 0; i < 2000; i++) {
    w.send({ i, pad: 'x'.repeat(i % 97) });
    if (i % 3 === 0) inbox.drain();
  }
  inbox.drain();
  w.flush();
  inbox.drain();
  assert.equal(got.length, 2000);
  got.forEach((m, i) => assert.deepEqual(m, { i, pad: 'x'.repeat(i % 97) }));
});

test('a full ring queues messages in order and flushes them as space frees', async () => {
  const bell = Doorbell.create();
  const h = createRing(bell.handle, 1024);
  const w = RingWriter.attach(h);
  const inbox = new Inbox(bell.handle);
  const got = collect(inbox, h);
  for (let i = 0; i < 100; i++) w.send({ i, pad: 'y'.repeat(50) });
  assert.ok(w.pending > 0, 'expected an overflow backlog');
  inbox.drain();
  // The writer retries on its own (setImmediate / timer) as the reader frees space.
  await until(() => {
    inbox.drain();
    return got.length === 100;
  }, 'all 100 messages');
  assert.equal(w.pending, 0);
  got.forEach((m, i) => assert.equal((m as { i: number }).i, i));
});

test('messages larger than the ring are chunked and joined', async () => {
  const bell = Doorbell.create();
  const h = createRing(bell.handle, 1024);
  const w = RingWriter.attach(h);
  const inbox = new Inbox(bell.handle);
  const got = collect(inbox, h);
  const big = { data: Array.from({ length: 3000 }, (_, i) => `é${i}`) }; // ~25 KB, multi-byte chars
  w.send({ before: true });
  w.send(big);
  w.send({ after: true });
  await until(() => {
    inbox.drain();
    return got.length === 3;
  }, 'the chunked message');
  assert.deepEqual(got, [{ before: true }, big, { after: true }]);
});

test('two rings share one doorbell; one inbox drains both, each in order', () => {
  const bell = Doorbell.create();
  const h1 = createRing(bell.handle, 4096);
  const h2 = createRing(bell.handle, 4096);
  const w1 = RingWriter.attach(h1);
  const w2 = RingWriter.attach(h2);
  const inbox = new Inbox(bell.handle);
  const got1 = collect(inbox, h1);
  const got2 = collect(inbox, h2);
  for (let i = 0; i < 10; i++) {
    w1.send(i);
    w2.send(-i);
  }
  assert.equal(inbox.drain(), 20);
  assert.deepEqual(got1, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.deepEqual(got2, [0, -1, -2, -3, -4, -5, -6, -7, -8, -9]);
  inbox.remove(h2);
  w2.send('ignored');
  w1.send('kept');
  assert.equal(inbox.drain(), 1);
  assert.deepEqual(got1.at(-1), 'kept');
});

test('drainOrWait returns 0 after the timeout when nothing comes', () => {
  const bell = Doorbell.create();
  const inbox = new Inbox(bell.handle);
  inbox.add(createRing(bell.handle, 1024), () => undefined);
  assert.equal(inbox.drainOrWait(5), 0);
});

test('handles are checked: wrong doorbell, double add, non-serialisable message', () => {
  const bell = Doorbell.create();
  const other = Doorbell.create();
  const h = createRing(other.handle, 1024);
  const inbox = new Inbox(bell.handle);
  assert.throws(
    () => inbox.add(h, () => undefined),
    (e) => e instanceof ServerError && /another doorbell/.test(e.message),
  );
  const mine = createRing(bell.handle, 1024);
  inbox.add(mine, () => undefined);
  assert.throws(
    () => inbox.add(mine, () => undefined),
    (e) => e instanceof ServerError && /already/.test(e.message),
  );
  assert.throws(
    () => RingWriter.attach(mine).send(undefined),
    (e) => e instanceof ServerError && e.code === 'INTERNAL',
  );
  assert.throws(
    () => RingWriter.attach(mine).send({ n: 1n }),
    (e) => e instanceof ServerError && e.code === 'INTERNAL',
  );
  assert.throws(
    () => createRing(bell.handle, 10),
    (e) => e instanceof ServerError,
  );
});

test('a throwing handler goes to onError and later messages still arrive', () => {
  const bell = Doorbell.create();
  const h = createRing(bell.handle, 1024);
  const errors: unknown[] = [];
  const inbox = new Inbox(bell.handle, { onError: (e) => errors.push(e) });
  const got: number[] = [];
  inbox.add(h, (m: number) => {
    if (m === 2) throw new Error('boom');
    got.push(m);
  });
  const w = RingWriter.attach(h);
  for (let i = 1; i <= 3; i++) w.send(i);
  assert.equal(inbox.drain(), 3);
  assert.deepEqual(got, [1, 3]);
  assert.equal(errors.length, 1);
});

test('cross-thread ping-pong: 10k messages round-trip through a worker in order', { timeout: 15_000 }, async () => {
  const { mainBell, toMain, worker, exited, out } = startEcho('echo', 64 * 1024);
  worker.on('error', (e) => assert.fail(e));
  const inbox = new Inbox(mainBell.handle);
  const got: { n: number }[] = [];
  const N = 10_000;
  let next = 0;
  const done = new Promise<void>((resolve) => {
    inbox.add(toMain, (m: { n: number; stop?: boolean }) => {
      if (m.stop === true) return;
      got.push(m);
      if (got.length === N) resolve();
      // Keep up to 8 in flight, so both single hand-offs and bursts happen.
      else if (next < N) out.send({ n: next++ });
    });
  });
  inbox.start();
  for (let i = 0; i < 8; i++) out.send({ n: next++ });
  await done;
  out.send({ stop: true });
  assert.equal(await exited, 0);
  inbox.stop();
  assert.equal(got.length, N);
  got.forEach((m, i) => assert.equal(m.n, i));
});

test('Inbox.stop lets an event-loop thread exit', { timeout: 15_000 }, async () => {
  const { mainBell, toMain, exited, out } = startEcho('inbox-exit');
  const inbox = new Inbox(mainBell.handle);
  const got = collect(inbox, toMain);
  out.send('hello');
  assert.equal(await exited, 0);
  inbox.drain();
  assert.deepEqual(got, [{ got: 'hello' }]);
});

test('a lost wake-up is made up for by the safety poll and counted', { timeout: 15_000 }, async () => {
  const bell = Doorbell.create();
  const h = createRing(bell.handle, 1024);
  const inbox = new Inbox(bell.handle);
  const got = collect(inbox, h);
  inbox.start();
  await new Promise((r) => setTimeout(r, 20)); // let the loop park in waitAsync
  // Simulate the bug the poll guards against: hide the SLEEPING flag so the writer does not ring.
  Atomics.store(new Int32Array(bell.handle.sab), D_SLEEPING, 0);
  RingWriter.attach(h).send('late');
  await until(() => got.length === 1, 'the message through the safety poll');
  inbox.stop();
  assert.deepEqual(got, ['late']);
  assert.equal(inbox.missedWakeups, 1);
  assert.deepEqual(doorbellCounters(bell.handle), { missedWakeups: 1, safetyPollRecoveries: 1 });
});

test('a wait that never returns although the bell was rung counts as a recovery, not a missed wake-up', { timeout: 15_000 }, async () => {
  const { bell, h, inbox, got, words } = await parkedInbox();
  // A producer that stops between SEQ += 1 and notify: hide SLEEPING, send, move SEQ, never notify.
  Atomics.store(words, D_SLEEPING, 0);
  RingWriter.attach(h).send('late');
  Atomics.add(words, D_SEQ, 1);
  await until(() => got.length === 1, 'the message through the safety poll');
  inbox.stop();
  assert.deepEqual(doorbellCounters(bell.handle), { missedWakeups: 0, safetyPollRecoveries: 1 });
});

test(
  'while the consumer sleeps each producer rings once for itself, a second send of one does not, none clears SLEEPING (no claim window)',
  { timeout: 15_000 },
  async () => {
    const bell = Doorbell.create();
    const h1 = createRing(bell.handle, 1024);
    const h2 = createRing(bell.handle, 1024);
    const inbox = new Inbox(bell.handle);
    const got1 = collect(inbox, h1);
    const got2 = collect(inbox, h2);
    inbox.start();
    const words = new Int32Array(bell.handle.sab);
    await until(() => Atomics.load(words, D_SLEEPING) === 1, 'the loop to park');
    const seq = Atomics.load(words, D_SEQ);
    assert.equal(Atomics.load(words, D_ARMED), seq, 'the consumer armed with the SEQ it waits on');
    // All sends run before this thread's loop can wake: each producer rings for
    // itself (another's ring may be stuck before its notify), but only once:
    // its second send finds its own wake-up on its way (ARMED unchanged).
    const w1 = RingWriter.attach(h1);
    const w2 = RingWriter.attach(h2);
    w1.send('one');
    assert.equal(Atomics.load(words, D_SEQ), seq + 1, 'the first producer rang');
    w2.send('two');
    assert.equal(Atomics.load(words, D_SEQ), seq + 2, 'the second rang for itself');
    w1.send('three');
    w2.send('four');
    assert.equal(Atomics.load(words, D_SEQ), seq + 2, 'neither rang twice in one sleep');
    assert.equal(Atomics.load(words, D_SLEEPING), 1, 'SLEEPING belongs to the consumer');
    await until(() => got1.length === 2 && got2.length === 2, 'all four messages');
    assert.deepEqual([...got1, ...got2], ['one', 'three', 'two', 'four']);
    // Asleep again with a new ARMED: each rings again.
    await until(() => Atomics.load(words, D_SLEEPING) === 1 && Atomics.load(words, D_ARMED) === seq + 2, 'the loop to park again');
    w1.send('five');
    assert.equal(Atomics.load(words, D_SEQ), seq + 3, 'a new sleep gets a new ring');
    await until(() => got1.length === 3, 'the fifth message');
    assert.equal(Atomics.load(words, D_SLEEPING), 1, 'the consumer parked again');
    inbox.stop();
    assert.equal(Atomics.load(words, D_SLEEPING), 0);
    assert.deepEqual(doorbellCounters(bell.handle), { missedWakeups: 0, safetyPollRecoveries: 0 });
  },
);

test('deferBell: a burst of sends to a sleeping consumer rings once, in the check phase of the turn that sent them', { timeout: 15_000 }, async () => {
  const { bell, h, inbox, got, words } = await parkedInbox();
  const seq = Atomics.load(words, D_SEQ);
  const w = RingWriter.attach(h, { deferBell: true });
  w.send('a');
  w.send('b');
  w.send('c');
  assert.equal(Atomics.load(words, D_SEQ), seq, 'no ring while the turn still sends');
  await new Promise<void>((r) => setImmediate(r));
  assert.equal(Atomics.load(words, D_SEQ), seq + 1, 'one ring for the three');
  await until(() => got.length === 3, 'the three messages');
  assert.deepEqual(got, ['a', 'b', 'c']);
  inbox.stop();
  assert.deepEqual(doorbellCounters(bell.handle), { missedWakeups: 0, safetyPollRecoveries: 0 });
});

test(
  'sendLazy: a sleeping consumer is rung once when the delay is over, or at once by another send; nothing counts as missed',
  { timeout: 15_000 },
  async () => {
    const { bell, h, inbox, got, words } = await parkedInbox();
    const seq = Atomics.load(words, D_SEQ);
    const w = RingWriter.attach(h, { deferBell: true });
    const sentAt = performance.now();
    w.sendLazy('a', 20);
    w.sendLazy('b', 20);
    assert.equal(Atomics.load(words, D_SEQ), seq, 'no ring as they are sent');
    await until(() => got.length === 2, 'both, after the delay');
    assert.ok(performance.now() - sentAt >= 15, 'not before the delay');
    assert.equal(Atomics.load(words, D_SEQ), seq + 1, 'one ring for the two');
    await until(() => Atomics.load(words, D_SLEEPING) === 1, 'the loop to park again');
    const seq2 = Atomics.load(words, D_SEQ);
    w.sendLazy('c', 5000);
    w.send('d'); // a prompt message takes the lazy one along, and cancels its timer
    await until(() => got.length === 4, "c and d at the turn's end");
    assert.deepEqual(got, ['a', 'b', 'c', 'd']);
    assert.equal(Atomics.load(words, D_SEQ), seq2 + 1);
    inbox.stop();
    assert.deepEqual(doorbellCounters(bell.handle), { missedWakeups: 0, safetyPollRecoveries: 0 });
  },
);

test('drainOrWait: its safety poll delivers a message whose bell was not rung, counted where the main thread reads it', { timeout: 15_000 }, async () => {
  const { mainBell, workerBell, toMain, exited, out } = startEcho('echo');
  const inbox = new Inbox(mainBell.handle);
  const got = collect(inbox, toMain);
  out.send('first');
  await until(() => {
    inbox.drain();
    return got.length === 1;
  }, 'the first echo');
  const words = new Int32Array(workerBell.handle.sab);
  await until(() => Atomics.load(words, D_SLEEPING) === 1, 'the worker to sleep');
  await new Promise((r) => setTimeout(r, 30)); // past its last re-check, into Atomics.wait
  Atomics.store(words, D_SLEEPING, 0); // the writer will not ring
  const sentAt = performance.now();
  out.send('late');
  await until(() => {
    inbox.drain();
    return got.length === 2;
  }, 'the late echo');
  assert.ok(performance.now() - sentAt >= 40, 'delivered by the poll, not by a wake-up');
  assert.deepEqual(doorbellCounters(workerBell.handle), { missedWakeups: 1, safetyPollRecoveries: 1 });
  out.send({ stop: true });
  assert.equal(await exited, 0);
  assert.deepEqual(got.slice(0, 2), ['first', 'late']);
});

test('start() delivers through waitAsync without the safety poll', { timeout: 15_000 }, async () => {
  const bell = Doorbell.create();
  const h = createRing(bell.handle, 1024);
  const inbox = new Inbox(bell.handle);
  const got = collect(inbox, h);
  inbox.start();
  const w = RingWriter.attach(h);
  for (let i = 0; i < 50; i++) {
    w.send(i);
    await until(() => got.length === i + 1, `message ${i}`);
  }
  inbox.stop();
  assert.equal(inbox.missedWakeups, 0);
  assert.equal(inbox.safetyPollRecoveries, 0);
});

test('a closed writer drops its queue, stops retrying and refuses to send', async () => {
  const bell = Doorbell.create();
  const h = createRing(bell.handle, 256);
  const w = RingWriter.attach(h);
  for (let i = 0; i < 20; i++) w.send({ fill: 'x'.repeat(40), i }); // more than the ring holds: the rest queue
  assert.ok(w.pending > 0, 'some messages wait in the JS queue');
  w.close();
  assert.equal(w.pending, 0);
  assert.throws(
    () => w.send({ late: true }),
    (e: unknown) => e instanceof ServerError && e.code === 'INTERNAL' && /the ring was closed/.test(e.message),
  );
  const inbox = new Inbox(bell.handle);
  const got = collect(inbox, h);
  inbox.drain();
  await new Promise((r) => setTimeout(r, 20)); // a retry timer, were one left, would write now
  const before = got.length;
  inbox.drain();
  assert.equal(got.length, before, 'nothing more reaches the ring after close');
  assert.ok(before < 20);
});
