/**
 * Version resolution at enqueue, through the real server (explicit mode,
 * two HTTP threads, `simple`). HTTP threads pick a version from a snapshot
 * that may be a moment old; the main thread's choice at enqueue is the one
 * that counts:
 *
 * - clients asking for `simple` with no version while it moves to a new
 *   version again and again see no failure, slow uploads among them (their
 *   HTTP thread picks the version long before the main thread sees them);
 *   the old version retires as soon as it drained, with no grace period
 *   left to cover a stale pick;
 * - a request whose HTTP thread resolved its version before an unload or a
 *   version change (headers in, `100 Continue` seen, body held back until
 *   the change is done) is decided on the main thread when the body comes: a
 *   named version that is gone is refused with Triton's text, an unnamed one
 *   runs on the version READY then and reports that version.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { SIMPLE_BODY, inferSimple, makeRepo, post, repoIndex } from './repo-kit';
import { startServer } from './server-process';
import type { ServerProcess } from './server-process';

let server: ServerProcess;
let repo: string;
let newest = 1;

before(async () => {
  repo = makeRepo(['simple']);
  server = await startServer([`--model-repository=${repo}`, '--model-control-mode=explicit', '--load-model=simple', '--http-thread-count=2']);
});
after(async () => {
  await server?.stop();
  fs.rmSync(repo, { recursive: true, force: true });
});

/** Add version folder `newest + 1` (the same model file) and load: the version policy (latest 1) moves to it. */
async function moveToNextVersion(): Promise<void> {
  newest++;
  fs.cpSync(path.join(repo, 'simple', '1'), path.join(repo, 'simple', String(newest)), { recursive: true });
  const a = await post(server.url, '/v2/repository/models/simple/load');
  assert.equal(a.status, 200, a.text);
}

interface Held {
  /** Send the body; the answer's status and text. */
  send(): Promise<{ status: number; text: string }>;
}

/**
 * An inference whose headers are in and whose version the HTTP thread has
 * resolved (it answered `100 Continue`, in the same step that ran the route
 * handler), with the body held back until send().
 */
function holdInfer(urlPath: string): Promise<Held> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port: server.port,
      path: urlPath,
      method: 'POST',
      agent: false,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(SIMPLE_BODY), Expect: '100-continue' },
    });
    let continued = false;
    const answer = new Promise<{ status: number; text: string }>((res, rej) => {
      req.on('response', (r) => {
        let text = '';
        r.setEncoding('utf8');
        r.on('data', (d: string) => (text += d));
        r.on('end', () => res({ status: r.statusCode ?? 0, text }));
        if (!continued) reject(new Error(`${urlPath} answered ${r.statusCode} before its body was sent`));
      });
      req.on('error', rej);
    });
    req.on('error', reject);
    req.on('continue', () => {
      continued = true;
      resolve({ send: () => (req.end(SIMPLE_BODY), answer) });
    });
    req.flushHeaders();
  });
}

function outputOk(text: string): boolean {
  const j = JSON.parse(text) as { outputs: { name: string; data: number[] }[] };
  return j.outputs.find((o) => o.name === 'OUTPUT0')?.data[3] === 4;
}

/**
 * One inference on `simple` (no version) whose body follows its headers
 * after `delayMs`, as a slow client's upload does: its HTTP thread resolves
 * the version when the headers are in, the main thread sees it a while later.
 */
function slowInfer(delayMs: number): Promise<{ status: number; version?: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port: server.port,
      path: '/v2/models/simple/infer',
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(SIMPLE_BODY) },
    });
    req.on('response', (r) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (d: string) => (text += d));
      r.on('end', () => {
        if (r.statusCode !== 200) return resolve({ status: r.statusCode ?? 0, text });
        if (!outputOk(text)) return resolve({ status: 599, text: `wrong result: ${text}` });
        resolve({ status: 200, version: (JSON.parse(text) as { model_version: string }).model_version, text });
      });
    });
    req.on('error', reject);
    req.flushHeaders();
    setTimeout(() => req.end(SIMPLE_BODY), delayMs);
  });
}

test('clients asking for simple (no version), fast and slow uploads, see no failure while it moves to a new version, again and again', async () => {
  let running = true;
  let answered = 0;
  const failures: string[] = [];
  const versions = new Set<string>();
  // Slow uploads keep requests between "version resolved on the HTTP thread" and "enqueued on the main thread" at every swap.
  const clients = Array.from({ length: 12 }, async (_, k) => {
    while (running) {
      const r = k % 2 === 0 ? await inferSimple(server.url) : await slowInfer(15);
      answered++;
      if (r.status === 200) versions.add(r.version!);
      else failures.push(`${r.status} ${r.text}`);
    }
  });
  try {
    for (let i = 0; i < 4; i++) {
      await moveToNextVersion();
      // Let traffic reach the new version before the next move.
      const moved = answered;
      while (answered < moved + 20 && failures.length === 0) await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    running = false;
    await Promise.all(clients);
  }
  assert.deepEqual(failures, []);
  assert.ok(versions.has(String(newest)), `served versions ${[...versions].join(',')}`);
  const index = (await repoIndex(server.url)).filter((e) => e.name === 'simple');
  assert.deepEqual(
    index.map((e) => [e.version, e.state]),
    Array.from({ length: newest }, (_, k) => [String(k + 1), k + 1 === newest ? 'READY' : 'UNAVAILABLE']),
  );
});

test('a request that named a version, resolved by its HTTP thread before that version moved on, is refused at enqueue; one that named none runs on the new version', async () => {
  const old = newest;
  const named = await holdInfer(`/v2/models/simple/versions/${old}/infer`);
  const unnamed = await holdInfer('/v2/models/simple/infer');
  await moveToNextVersion(); // answered once the old version is retired

  const refused = await named.send();
  assert.equal(refused.status, 503, refused.text);
  assert.deepEqual(JSON.parse(refused.text), { error: `Request for unknown model: 'simple' version ${old} is not at ready state` });

  const moved = await unnamed.send();
  assert.equal(moved.status, 200, moved.text);
  assert.equal((JSON.parse(moved.text) as { model_version: string }).model_version, String(newest), 'reports the version that ran it');
  assert.ok(outputOk(moved.text), moved.text);
});

test("after an unload, held requests are refused at enqueue with Triton's texts, named or not", async () => {
  const named = await holdInfer(`/v2/models/simple/versions/${newest}/infer`);
  const unnamed = await holdInfer('/v2/models/simple/infer');
  const unload = await post(server.url, '/v2/repository/models/simple/unload');
  assert.equal(unload.status, 200, unload.text);

  const refused = await named.send();
  assert.equal(refused.status, 503, refused.text);
  assert.deepEqual(JSON.parse(refused.text), { error: `Request for unknown model: 'simple' version ${newest} is not at ready state` });
  const none = await unnamed.send();
  assert.equal(none.status, 404, none.text);
  assert.deepEqual(JSON.parse(none.text), { error: "Request for unknown model: 'simple' has no available versions" });

  // And a fresh request, resolved by its HTTP thread from the new snapshot, says the same.
  const fresh = await post(server.url, `/v2/models/simple/versions/${newest}/infer`, JSON.parse(SIMPLE_BODY));
  assert.equal(fresh.status, 503, fresh.text);
  assert.deepEqual(JSON.parse(fresh.text), { error: `Request for unknown model: 'simple' version ${newest} is not at ready state` });
});
