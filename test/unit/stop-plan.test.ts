import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MIN_UNLOAD_MS, secondsLeft, serveVerdict, stopTimeline, unloadDeadline } from '../../src/stop-plan';

/** --exit-quiet-ms's default. */
const QUIET_MS = 1000;

test('stopTimeline: serving ends T less min(5 s, T/2), the endpoints close halfway through that reserve, the deadline is T', () => {
  const table: [timeoutSecs: number, serveEnd: number, closeEnd: number, deadline: number][] = [
    [30, 25_000, 27_500, 30_000],
    [10, 5_000, 7_500, 10_000],
    [6, 3_000, 4_500, 6_000],
    [2, 1_000, 1_500, 2_000],
    [1, 500, 750, 1_000],
    [0, 0, 0, 0],
    [-3, 0, 0, 0],
  ];
  for (const [t, serveEnd, closeEnd, deadline] of table) {
    assert.deepEqual(stopTimeline(1000, t), { serveEnd: 1000 + serveEnd, closeEnd: 1000 + closeEnd, deadline: 1000 + deadline }, `T=${t}`);
  }
});

test('serveVerdict: quiet needs nothing in flight and no arrival for --exit-quiet-ms, from the signal too; the grace ends at serveEnd whatever the traffic', () => {
  const start = 10_000;
  const serveEnd = start + 25_000;
  const table: [nowMs: number, inflight: number, lastArrivalMs: number, verdict: string, why: string][] = [
    [start, 0, 0, 'serve', 'idle, but the signal just came: the balancer may still send'],
    [start + QUIET_MS - 1, 0, 0, 'serve', 'not yet a quiet second since the signal'],
    [start + QUIET_MS, 0, 0, 'quiet', 'idle since before the signal: quiet one second after it'],
    [start + 5_000, 0, start + 4_500, 'serve', 'a request half a second ago'],
    [start + 5_000, 0, start + 4_000, 'quiet', 'the last request a second ago, none in flight'],
    [start + 5_000, 1, start + 1_000, 'serve', 'a request still in flight'],
    [start + 24_999, 3, start + 24_998, 'serve', 'steady traffic: served to the end of the grace period'],
    [serveEnd, 3, serveEnd - 1, 'time', 'the grace period is over'],
    [serveEnd + 1, 0, 0, 'time', 'past it, quiet or not'],
  ];
  for (const [nowMs, inflight, lastArrivalMs, verdict, why] of table) {
    assert.equal(serveVerdict({ nowMs, startMs: start, serveEnd, inflight, lastArrivalMs, quietMs: QUIET_MS }), verdict, why);
  }
});

test('serveVerdict: --exit-quiet-ms sets the quiet window; 0 ends serving as soon as nothing is in flight', () => {
  const start = 10_000;
  const serveEnd = start + 25_000;
  const table: [quietMs: number, nowMs: number, inflight: number, lastArrivalMs: number, verdict: string][] = [
    [5000, start + 4_999, 0, 0, 'serve'],
    [5000, start + 5_000, 0, 0, 'quiet'],
    [5000, start + 8_000, 0, start + 4_000, 'serve'],
    [5000, start + 9_000, 0, start + 4_000, 'quiet'],
    [0, start, 0, 0, 'quiet'],
    [0, start, 1, start, 'serve'],
    [60_000, serveEnd, 0, 0, 'time'],
  ];
  for (const [quietMs, nowMs, inflight, lastArrivalMs, verdict] of table) {
    assert.equal(serveVerdict({ nowMs, startMs: start, serveEnd, inflight, lastArrivalMs, quietMs }), verdict, `quiet ${quietMs} at +${nowMs - start}`);
  }
});

test('unloadDeadline: the stop deadline, but never less than MIN_UNLOAD_MS for the unload', () => {
  const t = stopTimeline(0, 30);
  assert.equal(unloadDeadline(t, 26_000), 30_000);
  assert.equal(unloadDeadline(t, 29_500), 29_500 + MIN_UNLOAD_MS);
  assert.equal(unloadDeadline(stopTimeline(0, 0), 5), 5 + MIN_UNLOAD_MS, '--exit-timeout-secs=0 still unloads idle models cleanly');
});

test("secondsLeft: Triton's countdown, whole seconds rounded up, never below 0", () => {
  const table: [now: number, deadline: number, left: number][] = [
    [0, 30_000, 30],
    [1, 30_000, 30],
    [1_000, 30_000, 29],
    [29_999, 30_000, 1],
    [30_000, 30_000, 0],
    [31_000, 30_000, 0],
  ];
  for (const [now, deadline, left] of table) assert.equal(secondsLeft(now, deadline), left, `${now} → ${deadline}`);
});
