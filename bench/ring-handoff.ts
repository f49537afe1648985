/**
 * Round trip main ↔ worker thread: postMessage vs the SAB rings + doorbell,
 * single messages and bursts, and a 600 KB tensor through the arena vs
 * structured clone.
 *
 * Wake-up latency on the 2-vCPU VM drifts by up to 10× over seconds (the
 * host's idle/wake behaviour), so the cases run interleaved in short slices
 * (A B C ... A B C ...) and the table gives the median slice and the range.
 *
 *   node dist/bench/ring-handoff.js        (about 20 s)
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { Arena, type ArenaHandle } from '../src/dataplane/arena';
import { Doorbell, Inbox, RingWriter, createRing, type DoorbellHandle, type RingHandle } from '../src/dataplane/ring';
import { D_SEQ, D_SLEEPING } from '../src/dataplane/ring-format';

const SLICES = 6;
const SLICE_MS = 300;
const BURST = 32;
const TENSOR_BYTES = 602_112; // [1,3,224,224] FP32
const STALL_MS = 10_000;

type Mode = 'post' | 'ring';

interface WorkerSetup {
  mode: Mode;
  spin: number;
  bell: DoorbellHandle;
  toWorker: RingHandle;
  toMain: RingHandle;
  arena: ArenaHandle;
}

interface Case {
  name: string;
  /** Messages each way per round. */
  perRound: number;
  round(): Promise<void>;
  /** µs per round, one entry per slice. */
  samples: number[];
  /** Ring cases: SEQ of both doorbells summed (how often producers rang). */
  rings?: () => number;
  /** Ring cases: rings counted and rounds run over the timed slices. */
  rang?: { rings: number; rounds: number };
}

if (isMainThread) {
  void main();
} else {
  workerMain(workerData as WorkerSetup);
}

/** Echo worker: postMessage echo, or a ring echo that waits in Inbox.drainOrWait like an instance worker. */
function workerMain(d: WorkerSetup): void {
  const port = parentPort!;
  if (d.mode === 'post') {
    port.on('message', (m: unknown) => {
      if (m === 'stop') port.close();
      else port.postMessage(m);
    });
    return;
  }
  const arena = Arena.attach(d.arena);
  const out = RingWriter.attach(d.toMain);
  const inbox = new Inbox(d.bell, { spin: d.spin });
  let running = true;
  let sink = 0;
  inbox.add(d.toWorker, (m: { stop?: true; offset?: number; byteSize?: number }) => {
    if (m.stop) {
      running = false;
      return;
    }
    // The instance reads the tensor in place (touch both ends of it).
    if (m.offset !== undefined && m.byteSize !== undefined) {
      const v = arena.bytes(m.offset, m.byteSize);
      sink += v[0] + v[v.length - 1];
    }
    out.send(m);
  });
  while (running) inbox.drainOrWait(1000);
  port.postMessage({ sink });
}

/** What the bench is doing, for the watchdog's report if a case stops making progress. */
const progress = { stage: 'start', at: Date.now() };
const rigs: RingRig[] = [];

function watchdog(): void {
  setInterval(() => {
    if (Date.now() - progress.at < STALL_MS) return;
    console.error(`STALLED in "${progress.stage}": ${rigs.map((r) => r.dump()).join(' ')}`);
    process.exit(1);
  }, 1000).unref();
}

async function main(): Promise<void> {
  watchdog();
  const same = sameThreadUs(false);
  const sameRinging = sameThreadUs(true);
  const arena = Arena.create({ initialBytes: 16 << 20 });
  const post = await postWorker();
  const ring = await ringRig(arena, 0);
  const spin = await ringRig(arena, 2000);
  const tensor = new Uint8Array(TENSOR_BYTES).fill(3);
  const small = { t: 'response', key: 1, response: { outputs: [], final: true } };
  const cases: Case[] = [
    post.echoCase('postMessage, 1 msg', small, 1),
    post.echoCase(`postMessage, burst of ${BURST}`, small, BURST),
    ring.echoCase('ring + doorbell, 1 msg', small, 1),
    ring.echoCase(`ring + doorbell, burst of ${BURST}`, small, BURST),
    spin.echoCase('ring, worker spins 2000 polls, 1 msg', small, 1),
    post.echoCase('600 KB tensor, postMessage (clone both ways)', tensor, 1),
    ring.tensorCase('600 KB tensor, arena + ring (copy in once)', tensor),
  ];
  for (const c of cases) await runFor(c, SLICE_MS / 2); // warm-up
  for (let s = 0; s < SLICES; s++) {
    for (const c of cases) c.samples.push(await runFor(c, SLICE_MS, true));
  }
  await post.close();
  for (const r of rigs) await r.close();

  console.log('| case | µs per round trip (median) | range over slices | msgs/s each way (median) | bell rings per message |');
  console.log('|---|---:|---:|---:|---:|');
  console.log(`| ring send + drain, same thread (no hand-off) | ${same.toFixed(1)} | | ${fmt(1e6 / same)} | 0 |`);
  console.log(`| same, consumer marked asleep (every send rings, nobody waits) | ${sameRinging.toFixed(1)} | | ${fmt(1e6 / sameRinging)} | 1 |`);
  for (const c of cases) {
    const sorted = [...c.samples].sort((a, b) => a - b);
    const med = sorted[Math.floor(sorted.length / 2)];
    // Both directions: perRound messages each way per round.
    const perMsg = c.rang ? (c.rang.rings / (2 * c.perRound * c.rang.rounds)).toFixed(2) : '';
    console.log(
      `| ${c.name} | ${med.toFixed(1)} | ${sorted[0].toFixed(0)}–${sorted[sorted.length - 1].toFixed(0)} | ` + `${fmt((c.perRound * 1e6) / med)} | ${perMsg} |`,
    );
  }
  for (const r of rigs) {
    if (r.inbox.missedWakeups > 0) console.log(`(${r.inbox.missedWakeups} lost wake-ups made up by the safety poll)`);
  }
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** Runs rounds for about ms; returns µs per round. `timed`: count the bell rings too. */
async function runFor(c: Case, ms: number, timed = false): Promise<number> {
  progress.stage = c.name;
  const rings0 = c.rings?.() ?? 0;
  let rounds = 0;
  const start = performance.now();
  const end = start + ms;
  let now = start;
  while (now < end) {
    await c.round();
    rounds++;
    progress.at = Date.now();
    now = performance.now();
  }
  if (timed && c.rings) {
    c.rang ??= { rings: 0, rounds: 0 };
    c.rang.rings += c.rings() - rings0;
    c.rang.rounds += rounds;
  }
  return ((now - start) * 1000) / rounds;
}

/**
 * The ring's own cost with no thread hand-off: encode, copy in, copy out,
 * decode. µs per message. `ringing`: the bell's SLEEPING word is held at 1,
 * so every send also rings (SEQ += 1, notify with nobody waiting).
 */
function sameThreadUs(ringing: boolean): number {
  const bell = Doorbell.create();
  const sleeping = new Int32Array(bell.handle.sab);
  const h = createRing(bell.handle);
  const w = RingWriter.attach(h);
  const inbox = new Inbox(bell.handle);
  inbox.add(h, () => undefined);
  const msg = { t: 'response', key: 1, response: { outputs: [], final: true } };
  const n = 200_000;
  // Set before each send, so a writer that clears the flag when it rings rings every time too.
  const round = ringing
    ? (): void => {
        Atomics.store(sleeping, D_SLEEPING, 1);
        w.send(msg);
        inbox.drain();
      }
    : (): void => {
        w.send(msg);
        inbox.drain();
      };
  for (let i = 0; i < n / 10; i++) round();
  const start = performance.now();
  for (let i = 0; i < n; i++) round();
  return ((performance.now() - start) * 1000) / n;
}

/** Lets a new worker finish starting before timing, as a long-lived server's threads would have. */
function settle(): Promise<void> {
  return new Promise((r) => setTimeout(r, 200));
}

async function postWorker(): Promise<{ echoCase(name: string, msg: unknown, burst: number): Case; close(): Promise<void> }> {
  const w = new Worker(__filename, { workerData: { mode: 'post' } });
  await new Promise((r) => w.once('online', r));
  await settle();
  let pending = 0;
  let wake: () => void = () => undefined;
  w.on('message', () => {
    if (--pending === 0) wake();
  });
  return {
    echoCase: (name, msg, burst) => ({
      name,
      perRound: burst,
      samples: [],
      round: () =>
        new Promise((resolve) => {
          wake = resolve;
          pending = burst;
          for (let i = 0; i < burst; i++) w.postMessage(msg);
        }),
    }),
    close: async () => {
      w.postMessage('stop');
      await w.terminate();
    },
  };
}

interface RingRig {
  inbox: Inbox;
  echoCase(name: string, msg: unknown, burst: number): Case;
  tensorCase(name: string, tensor: Uint8Array): Case;
  dump(): string;
  close(): Promise<void>;
}

async function ringRig(arena: Arena, spin: number): Promise<RingRig> {
  const mainBell = Doorbell.create();
  const workerBell = Doorbell.create();
  const toWorker = createRing(workerBell.handle);
  const toMain = createRing(mainBell.handle);
  const setup: WorkerSetup = { mode: 'ring', spin, bell: workerBell.handle, toWorker, toMain, arena: arena.handle };
  const worker = new Worker(__filename, { workerData: setup });
  await new Promise((r) => worker.once('online', r));
  await settle();
  const inbox = new Inbox(mainBell.handle);
  let handler: (m: any) => void = () => undefined;
  inbox.add(toMain, (m) => handler(m));
  inbox.start();
  const out = RingWriter.attach(toWorker);
  const seqs = [mainBell, workerBell].map((b) => new Int32Array(b.handle.sab));
  const rings = (): number => seqs.reduce((n, a) => n + Atomics.load(a, D_SEQ), 0);
  const rig: RingRig = {
    inbox,
    echoCase: (name, msg, burst) => ({
      name,
      perRound: burst,
      samples: [],
      rings,
      round: () =>
        new Promise((resolve) => {
          let pending = burst;
          handler = () => {
            if (--pending === 0) resolve();
          };
          for (let i = 0; i < burst; i++) out.send(msg);
        }),
    }),
    // The frontend's path: copy the request bytes into the arena once, send a descriptor, free on reply.
    tensorCase: (name, tensor) => ({
      name,
      perRound: 1,
      samples: [],
      rings,
      round: async () => {
        const { offset, gen } = arena.alloc(tensor.byteLength);
        arena.bytes(offset, tensor.byteLength).set(tensor);
        const reply = await new Promise<{ offset: number; gen: number }>((resolve) => {
          handler = resolve;
          out.send({ offset, gen, byteSize: tensor.byteLength });
        });
        arena.free(reply);
      },
    }),
    dump: () => {
      const words = (sab: SharedArrayBuffer): number[] => [0, 16].map((i) => new Int32Array(sab)[i]);
      return JSON.stringify({
        mainBell: words(mainBell.handle.sab),
        workerBell: words(workerBell.handle.sab),
        toWorker: words(toWorker.sab),
        toMain: words(toMain.sab),
        pending: out.pending,
        missed: inbox.missedWakeups,
      });
    },
    close: async () => {
      progress.stage = 'closing';
      const done = new Promise((r) => worker.once('message', r));
      out.send({ stop: true });
      await done;
      inbox.stop();
      await worker.terminate();
    },
  };
  rigs.push(rig);
  return rig;
}
