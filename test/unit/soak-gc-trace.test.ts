/**
 * The soak's --trace-gc summary (bench/soak-gc-trace.ts): V8's lines as
 * Node 20 prints them, per isolate, other processes' lines left out, a
 * reused isolate address counted as a new isolate.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { summarizeGcTrace } from '../../bench/soak-gc-trace';

const TRACE = [
  'I1201 15:03:06.490498 30333 model-lifecycle.ts:69] "loading: simple:1"',
  '[30333:0x2e5686b0]     1540 ms: Mark-Compact 13.9 (19.7) -> 10.2 (28.7) MB, 81.25 / 0.00 ms  (+ 73.2 ms in 2 steps since start of marking) finalize incremental marking via task; GC in old space requested',
  '[30333:0x7f6b34001000]     3142 ms: Scavenge 13.6 (29.1) -> 10.6 (29.6) MB, 1.62 / 0.01 ms  (average mu = 1.000, current mu = 1.000) allocation failure;',
  '[30333:0x2e5686b0]    50000 ms: Scavenge 16.0 (25.0) -> 14.0 (31.5) MB, 0.40 / 0.00 ms  (average mu = 1.000, current mu = 1.000) allocation failure;',
  '[30333:0x2e5686b0]   106687 ms: Mark-Compact (reduce) 19.0 (21.5) -> 12.1 (20.5) MB, 5.43 / 0.00 ms  (+ 35.0 ms in 32 steps since start of marking) finalize incremental marking via task; GC in old space requested',
  '[4242:0x2e5686b0]   107000 ms: Mark-Compact 99.0 (99.5) -> 98.1 (99.5) MB, 5.43 / 0.00 ms  other process',
  '[30333:0x7f6b34001000]   120000 ms: Scavenge 15.6 (28.6) -> 14.9 (28.6) MB, 0.90 / 0.00 ms  (average mu = 1.000) task;',
].join('\n');

test('trace-gc summary: per isolate of the process, full GCs and committed sizes', () => {
  const s = summarizeGcTrace(TRACE, 30333);
  assert.deepEqual(s, [
    {
      isolate: '0x2e5686b0',
      firstMs: 1540,
      lastMs: 106687,
      scavenges: 1,
      fullGcs: 2,
      firstFullAfterMb: 10.2,
      lastFullAfterMb: 12.1,
      maxCommittedMb: 31.5,
      lastCommittedMb: 20.5,
    },
    {
      isolate: '0x7f6b34001000',
      firstMs: 3142,
      lastMs: 120000,
      scavenges: 2,
      fullGcs: 0,
      firstFullAfterMb: undefined,
      lastFullAfterMb: undefined,
      maxCommittedMb: 29.6,
      lastCommittedMb: 28.6,
    },
  ]);
  assert.deepEqual(summarizeGcTrace(TRACE, 1), []);
});

test('trace-gc summary: an address whose clock goes back is a new isolate', () => {
  const reused = [
    '[30333:0x7f00]      100 ms: Scavenge 7.3 (10.5) -> 6.7 (10.7) MB, 0.5 / 0.0 ms  task;',
    '[30333:0x7f00]      900 ms: Scavenge 7.4 (10.7) -> 6.8 (11.0) MB, 0.5 / 0.0 ms  task;',
    '[30333:0x7f00]      150 ms: Scavenge 7.2 (10.5) -> 6.6 (10.5) MB, 0.5 / 0.0 ms  task;',
  ].join('\n');
  const s = summarizeGcTrace(reused, 30333);
  assert.deepEqual(
    s.map((g) => [g.isolate, g.firstMs, g.lastMs, g.scavenges, g.lastCommittedMb]),
    [
      ['0x7f00', 100, 900, 2, 11],
      ['0x7f00', 150, 150, 1, 10.5],
    ],
  );
});
