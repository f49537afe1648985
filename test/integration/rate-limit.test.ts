/**
 * The instance rate limiter through the real server: two Python models
 * (fixtures/rate_limit_models, two instances each) whose instance groups ask
 * for one unit of the global resource R, under
 * `--rate-limit=execution_count --rate-limit-resource=R:1`. Concurrent
 * requests to both never overlap in execution: each response carries its
 * execution's wall-clock start and end (a correctness check on the
 * intervals, not a timing assertion). rl_high (two instances, priority 1) and
 * rl_low (one, priority 2) share R too: priority weighs executions as
 * Triton's does (executions done × priority), so rl_low runs every few turns
 * while rl_high still has work waiting; a strict priority order would run it
 * only after rl_high's backlog (the order of the executions' start times).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { REPO_ROOT, startServer, type ServerProcess } from './server-process';

const REPO = path.join(REPO_ROOT, 'test/integration/fixtures/rate_limit_models');

let server: ServerProcess;

before(async () => {
  server = await startServer([`--model-repository=${REPO}`, '--rate-limit=execution_count', '--rate-limit-resource=R:1']);
});

after(async () => {
  assert.equal(await server.stop(), 0);
});

test('executions holding the one unit of global resource R never overlap, across models and instances', async () => {
  const calls = Array.from({ length: 8 }, (_, i) => ({ model: i % 2 === 0 ? 'rl_a' : 'rl_b', value: i }));
  const results = await Promise.all(calls.map((c) => infer(server.url, c.model, [{ name: 'INPUT', datatype: 'INT32', shape: [1], data: [c.value] }])));
  const intervals: { start: bigint; end: bigint; who: string }[] = [];
  results.forEach((r, i) => {
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const outputs = r.json.outputs as { name: string; data: (number | string)[] }[];
    assert.deepEqual(outputs.find((o) => o.name === 'OUTPUT')!.data, [calls[i]!.value]);
    const [start, end] = outputs.find((o) => o.name === 'TIMES')!.data.map((v) => BigInt(v));
    intervals.push({ start: start!, end: end!, who: `${calls[i]!.model}#${i}` });
  });
  intervals.sort((x, y) => (x.start < y.start ? -1 : x.start > y.start ? 1 : 0));
  for (let i = 1; i < intervals.length; i++) {
    const prev = intervals[i - 1]!;
    const cur = intervals[i]!;
    assert.ok(cur.start >= prev.end, `${cur.who} started (${cur.start}) before ${prev.who} ended (${prev.end})`);
  }
});

test('priority is a weight across models: rl_low (priority 2) gets turns while rl_high (priority 1) has work waiting', async () => {
  const calls = Array.from({ length: 20 }, (_, i) => ({ model: i % 2 === 0 ? 'rl_high' : 'rl_low', value: 100 + i }));
  const results = await Promise.all(calls.map((c) => infer(server.url, c.model, [{ name: 'INPUT', datatype: 'INT32', shape: [1], data: [c.value] }])));
  const runs = results
    .map((r, i) => {
      assert.equal(r.status, 200, JSON.stringify(r.json));
      const times = (r.json.outputs as { name: string; data: (number | string)[] }[]).find((o) => o.name === 'TIMES')!.data.map((v) => BigInt(v));
      return { start: times[0]!, end: times[1]!, model: calls[i]!.model };
    })
    .sort((x, y) => (x.start < y.start ? -1 : x.start > y.start ? 1 : 0));
  for (let i = 1; i < runs.length; i++) assert.ok(runs[i]!.start >= runs[i - 1]!.end, 'one unit of R: executions never overlap');
  // rl_high has 10 requests for its two instances, so it has work waiting through the first 9 executions.
  const first = runs
    .slice(0, 9)
    .map((r) => (r.model === 'rl_high' ? 'H' : 'L'))
    .join('');
  const low = [...first].filter((c) => c === 'L').length;
  // Weighted: its second turn comes once each rl_high instance has done two
  // (2 × 1 = 1 × 2), its third only after eight of theirs; strict levels give
  // it at most the first turn, equal weights three.
  assert.equal(low, 2, `rl_low ran ${low} of the first 9 executions (${first})`);
});

test('/config shows the instance group rate_limiter', async () => {
  const cfg = (await (await fetch(`${server.url}/v2/models/rl_a/config`)).json()) as { instance_group: { rate_limiter?: unknown }[] };
  assert.deepEqual(cfg.instance_group[0]!.rate_limiter, { resources: [{ name: 'R', global: true, count: 1 }], priority: 1 });
});
