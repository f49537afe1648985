/**
 * python_backend's response-sender rules for a non-decoupled model, through
 * the real server and a real Python stub (fixture `response_sender`, after
 * Triton's qa/python_models/response_sender): the one response a model sends
 * through `request.get_response_sender()` is the request's answer, with or
 * without FINAL, before or after execute() returned; a second response or a
 * second FINAL raises with Triton's texts and leaves the first answer alone;
 * FINAL before any response fails the request with Triton's text.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { REPO_ROOT, startServer, waitForOutput } from './server-process';
import type { ServerProcess } from './server-process';

const FIXTURE = path.join(REPO_ROOT, 'test/integration/fixtures/python_models/response_sender');
const MORE_THAN_ONE = 'Unable to send response. Non-decoupled model cannot send more than one response.';
const FINAL_FIRST = 'Unable to send response. Non-decoupled model cannot send complete final before sending a response.';
const CLOSED = 'Unable to send response. Response sender has been closed.';

let server: ServerProcess;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-sender-'));
  fs.cpSync(FIXTURE, path.join(repo, 'response_sender'), { recursive: true });
  server = await startServer([`--model-repository=${repo}`]);
});

after(async () => {
  assert.equal(await server.stop(), 0);
  fs.rmSync(repo, { recursive: true, force: true });
});

const run = (c: number) => infer(server.url, 'response_sender', [{ name: 'CASE', datatype: 'INT32', shape: [1], data: [c] }]);

function index(r: Awaited<ReturnType<typeof run>>): number {
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const outs = r.json.outputs as { name: string; data: number[] }[];
  assert.deepEqual(
    outs.map((o) => o.name),
    ['INDEX'],
  );
  return outs[0]!.data[0]!;
}

const answered = [
  { c: 0, what: 'a response returned from execute', want: 0 },
  { c: 1, what: 'one response sent, then a flags-only FINAL', want: 1000 },
  { c: 2, what: 'one response sent with FINAL', want: 1000 },
  { c: 3, what: 'one response sent and never FINAL', want: 1000 },
  { c: 4, what: 'two responses sent: the second raises', want: 1000 },
  { c: 5, what: 'one response sent with FINAL and one returned: the return raises', want: 1000 },
  { c: 7, what: 'one response sent from a thread after execute returned', want: 2000 },
  { c: 8, what: 'a second response and a second FINAL after FINAL, both caught', want: 1000 },
];

for (const { c, what, want } of answered) {
  test(`non-decoupled, ${what}: the client gets that one response`, async () => {
    assert.equal(index(await run(c)), want);
  });
}

test("the error of a second response is the batch error in the log, with Triton's text, and answers nobody", async () => {
  const out = await waitForOutput(server, /cannot send more than one response[\s\S]*cannot send more than one response/);
  const failed = out.split('\n').filter((l) => l.includes("Failed to process the request(s) for model 'response_sender_0_0'"));
  assert.equal(failed.length, 2, `cases 4 and 5 each log one batch error:\n${failed.join('\n')}`);
  for (const l of failed) assert.ok(l.includes(`TritonModelException: ${MORE_THAN_ONE}`), l);
});

test('after FINAL, a second response raises "more than one" (checked first, as Triton does) and a second FINAL "closed"', async () => {
  const out = await waitForOutput(server, /case 8: [\s\S]*case 8: /);
  assert.ok(out.includes(`case 8: ${MORE_THAN_ONE}`), out.slice(-3000));
  assert.ok(out.includes(`case 8: ${CLOSED}`), out.slice(-3000));
  const late = await waitForOutput(server, /case 7: /);
  assert.ok(late.includes(`case 7: ${MORE_THAN_ONE}`), late.slice(-3000));
});

test("FINAL before any response fails the request with Triton's text, and the model keeps serving", async () => {
  const r = await run(6);
  assert.equal(r.status, 500);
  const msg = String(r.json.error);
  assert.ok(msg.startsWith(`Failed to process the request(s) for model 'response_sender_0_0', message: TritonModelException: ${FINAL_FIRST}`), msg);
  assert.equal(index(await run(1)), 1000);
});

test('many requests at once, each answered exactly once', async () => {
  const cases = Array.from({ length: 40 }, (_, i) => answered[i % answered.length]!);
  const rs = await Promise.all(cases.map((k) => run(k.c)));
  rs.forEach((r, i) => assert.equal(index(r), cases[i]!.want, `case ${cases[i]!.c}`));
});
