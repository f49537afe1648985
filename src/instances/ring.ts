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
 * Wake-ups (the expensive part, ~30 µs on this VM): the consumer sets the
 * bell's SLEEPING flag, reads SEQ, re-checks every ring, then waits on SEQ.
 * A producer stores its tail, then rings (SEQ += 1, notify) only if it
 * swaps SLEEPING from 1 to 0. Both sides use seq-cst Atomics, so either the
 * producer sees the flag or the consumer sees the tail: no lost wake-up.
 */
export { Doorbell, createRing, type DoorbellHandle, type RingHandle } from './ring-format';
export { RingWriter, flushBackloggedWriters } from './ring-writer';
export { Inbox, type InboxOptions } from './ring-inbox';
