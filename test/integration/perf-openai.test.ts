/**
 * `nodetron perf --service-kind openai` against the real server's
 * --openai-port and the decoupled Python mock LLM
 * (fixtures/openai_models/mock_llm, 2 ms between words): a chat sweep at
 * concurrency 1 and 2 with a fixed request count writes genai-perf's columns
 * to a CSV whose numbers hold together (every request answered, tokens =
 * requests × max_tokens, time to first token and inter-token latency
 * positive and inside the request's latency), completions in a time window,
 * and an unknown model is an error naming it. Small counts: this checks the
 * tool works, not how fast anything is.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { REPO_ROOT, startServer, type ServerProcess } from './server-process';

const CLI = path.join(REPO_ROOT, 'dist/src/cli.js');
let server: ServerProcess;
let repo: string;
let openaiUrl = '';

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-perf-openai-'));
  fs.cpSync(path.join(REPO_ROOT, 'test/integration/fixtures/openai_models/mock_llm'), path.join(repo, 'mock_llm'), { recursive: true });
  fs.appendFileSync(path.join(repo, 'mock_llm', 'config.pbtxt'), 'parameters [ { key: "delay_ms" value: { string_value: "2" } } ]\n');
  server = await startServer([`--model-repository=${repo}`, '--openai-port=0']);
  openaiUrl = `127.0.0.1:${/Started OpenAI-compatible frontend at \S*:(\d+)/.exec(server.output())![1]}`;
});

after(async () => {
  if (server !== undefined) assert.equal(await server.stop(), 0);
  fs.rmSync(repo, { recursive: true, force: true });
});

function perf(args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [CLI, 'perf', '--service-kind', 'openai', ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function csvRows(file: string): Record<string, string>[] {
  const [head, ...rows] = fs.readFileSync(file, 'utf8').trim().split('\n');
  const names = head!.split(',');
  return rows.map((row) => Object.fromEntries(row.split(',').map((v, i) => [names[i], v])));
}

test("chat at concurrency 1 and 2, 6 requests each: TTFT, ITL, tokens = requests × max_tokens, in genai-perf's columns", () => {
  const csv = path.join(repo, 'chat.csv');
  const r = perf([
    '-m',
    'mock_llm',
    '-u',
    openaiUrl,
    '--endpoint',
    'v1/chat/completions',
    '--max-tokens',
    '8',
    '--concurrency-range',
    '1:2:1',
    '--request-count',
    '6',
    '-f',
    csv,
  ]);
  assert.equal(r.code, 0, r.err + r.out);
  assert.match(r.out, /Concurrency: 1, 6 requests in [\d.]+ s: [\d.]+ req\/s, [\d.]+ output tokens\/s \(usage\.completion_tokens\), time to first token avg/);
  assert.match(r.out, /\| conc \| req\/s \| output tok\/s \| TTFT avg ms/);
  const rows = csvRows(csv);
  assert.deepEqual(
    rows.map((x) => x.Concurrency),
    ['1', '2'],
  );
  for (const x of rows) {
    assert.equal(x.Requests, '6');
    assert.equal(x.Errors, '0');
    assert.equal(x['Token Source'], 'usage', 'the server sent usage (stream_options.include_usage)');
    assert.equal(Number(x['Output Sequence Length avg']), 8, 'every request gave max_tokens tokens');
    const rps = Number(x['Request Throughput (per sec)']);
    const tps = Number(x['Output Token Throughput (per sec)']);
    assert.ok(rps > 0 && Math.abs(tps - rps * 8) <= 0.05 * tps, `tokens/s = req/s × 8: ${tps} vs ${rps}`);
    const ttft = Number(x['Time To First Token avg (ms)']);
    const itl = Number(x['Inter Token Latency avg (ms)']);
    const latency = Number(x['Request Latency avg (ms)']);
    assert.ok(ttft > 0 && itl > 0, `TTFT ${ttft} ms, ITL ${itl} ms`);
    assert.ok(ttft + 7 * itl <= latency + 0.05, `the first token and the 7 gaps fit in the request: ${ttft} + 7 × ${itl} vs ${latency}`);
    assert.ok(Number(x['Time To First Token p50 (ms)']) <= Number(x['Time To First Token p99 (ms)']));
  }
});

test('completions for a time window', () => {
  const r = perf(['-m', 'mock_llm', '-u', openaiUrl, '--endpoint', 'v1/completions', '--prompt', 'a b c', '--max-tokens', '4', '-p', '300']);
  assert.equal(r.code, 0, r.err + r.out);
  const m = /Concurrency: 1, (\d+) requests in ([\d.]+) s/.exec(r.out);
  assert.ok(m !== null, r.out);
  assert.ok(Number(m[1]) >= 1 && Number(m[2]) >= 0.3, r.out);
  assert.match(r.out, /errors 0/);
});

test("an unknown model: the first request's error names it, exit 1", () => {
  const r = perf(['-m', 'no_such_llm', '-u', openaiUrl]);
  assert.equal(r.code, 1);
  assert.match(r.err, /error: first request to POST \/v1\/chat\/completions failed: HTTP 404: .*The model 'no_such_llm' does not exist/);
});
