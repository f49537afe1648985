/**
 * Single-producer single-consumer message rings over SharedArrayBuffers, and a
 * doorbell that several rings share so one consumer thread sleeps on one word.
 *
 * Messages are JSON (small descriptors; tensor bytes live in the arena). A
 * record is a u32 header (payload length | MORE flag) and the UTF-8 payload,
 * padded to 4 bytes. A record that would cross the end of the ring is preceded
 * by a WRAP marker and written at 0. Messages larger than half the ring are cut
 * into MORE-flagged chunks that the reader joins, so any size gets through.
 *
 * Wake-ups (the expensive part, 10-100 µs on this VM): the consumer sets the
 * bell's SLEEPING flag, reads SEQ, re-checks every ring, then waits on SEQ.
 * A producer stores its tail, then rings (SEQ += 1, notify) only if it
 * swaps SLEEPING from 1 to 0. Both sides use seq-cst Atomics, so either the
 * producer sees the flag or the consumer sees the tail: no lost wake-up.
 *
 * Event-loop consumers (Inbox.start) wait with Atomics.waitAsync, which does
 * not keep Node's event loop alive: the thread needs another handle (uWS
 * socket, server) to stay up. A 50 ms unref'd safety poll delivers messages
 * should a wake-up still get lost (seen about once in ~10^5-10^6 waits under
 * load in bench runs, not reproduced in isolation) and counts it in
 * Inbox.missedWakeups.
 *
 * Files: ring-format.ts (shared layout, Doorbell, createRing), ring-writer.ts
 * (producer), ring-inbox.ts (consumer). Import from here.
 */
export { Doorbell, createRing, type DoorbellHandle, type RingHandle } from './ring-format';
export { RingWriter, flushBackloggedWriters } from './ring-writer';
export { Inbox, type InboxOptions } from './ring-inbox';
