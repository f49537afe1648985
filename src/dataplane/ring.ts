/**
 * Single-producer single-consumer message rings over SharedArrayBuffers, and a
 * doorbell that several rings share so one consumer thread sleeps on one word.
 *
 * Messages are small: the per-request ones are fixed-layout binary
 * descriptors (descriptor-codec.ts), the rest JSON; tensor bytes live in the
 * arena. A record is a u32 header (payload length | MORE flag) and the payload,
 * padded to 4 bytes. A record that would cross the end of the ring is preceded
 * by a WRAP marker and written at 0. Messages larger than half the ring are cut
 * into MORE-flagged chunks that the reader joins, so any size gets through.
 *
 * Wake-ups (the expensive part, 10-100 µs on this VM). The consumer owns the
 * bell's SLEEPING and ARMED words: before it sleeps it stores SLEEPING = 1,
 * reads SEQ, stores what it read in ARMED, re-checks every ring of the bell,
 * and only if all are empty waits on SEQ (with the value it read); once awake
 * it stores SLEEPING = 0 and drains every ring. A producer stores its tail,
 * then reads SLEEPING; if it is 1 the producer rings: SEQ += 1, notify.
 * Producers never write SLEEPING, so each producer that may be the one the
 * consumer is waiting for rings for itself, and a producer that is preempted
 * or dies while ringing delays at most its own message. All these accesses
 * are seq-cst Atomics, so for any producer either the consumer's re-check
 * sees its tail, or the producer sees SLEEPING = 1 and its SEQ += 1 comes
 * after the consumer read SEQ, so the wait returns at once or is notified:
 * no lost wake-up.
 *
 * One ring per producer per sleep: a writer that already rang (SEQ += 1 and
 * notify, both done) and reads the same ARMED as when it rang skips the
 * ring. Its own wake-up is on its way (the consumer re-arms only with a SEQ
 * past the writer's increment, so ARMED changes), and that wake-up drains
 * every ring; if instead the consumer is re-arming and has not stored ARMED
 * yet, the writer's read of ARMED comes before that store, which comes
 * before the consumer's re-check, after the writer's tail store, so the
 * re-check sees the message. Only its own ring counts, never another
 * producer's, which may be stuck between its SEQ += 1 and its notify. Under
 * load this skips most rings of a busy producer (bench/README.md "A cheaper
 * request", item 2): every notify takes V8's process-wide futex lock. A
 * ring can still be spent on a consumer that is already waking (SLEEPING
 * not yet 0); that notify finds nobody waiting. One wake-up drains all rings
 * of the bell.
 *
 * A producer on an event loop that sends in bursts (the HTTP and gRPC
 * threads: one request per socket read or stream, many per loop turn) can
 * defer its ring to the turn's check phase (RingWriterOptions.deferBell):
 * one wake-up for the burst. Its messages are in the ring before it rings, so a consumer
 * that was awake finds them in its re-check, and one that slept is rung.
 *
 * The safety poll (both modes, every 50 ms, InboxOptions.safetyPollMs): data
 * that sits in the rings through a whole poll period while the consumer
 * sleeps is delivered anyway and counted in the bell's memory
 * (doorbellCounters, ring-format.ts): safetyPollRecoveries every time,
 * missedWakeups too when SEQ had not moved since the consumer parked (no
 * producer rang). Both stay 0 unless something is wrong. Note that V8 guards
 * every Atomics.wait/notify of the process with one mutex: a thread preempted
 * while it holds it delays every wake-up, whoever rings.
 *
 * Event-loop consumers (Inbox.start) wait with Atomics.waitAsync, which does
 * not keep Node's event loop alive: the thread needs another handle (a listen
 * socket, a server) to stay up; the safety poll is an unref'd interval. Blocking
 * consumers (Inbox.drainOrWait) wait with Atomics.wait in poll-period slices.
 *
 * Files: ring-format.ts (shared layout, Doorbell, createRing, counters),
 * ring-writer.ts (producer), ring-inbox.ts (consumer). Import from here.
 */
export { Doorbell, createRing, doorbellCounters, type DoorbellHandle, type RingHandle, type WakeupCounters } from './ring-format';
export { RingWriter, flushBackloggedWriters } from './ring-writer';
export { Inbox, type InboxOptions } from './ring-inbox';
