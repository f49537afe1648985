/**
 * The console in a real browser (Debian's chromium, driven by
 * playwright-core) against the real server in explicit mode with the
 * repository API restricted: the page asks for the key the server names and
 * refuses to go on without the right one, the table shows a READY model and
 * a failed one with the server's own reason, unload and load work, the
 * try-it form infers `simple`, the charts move under load, and a page on
 * another origin may call the API only when --http-cors-origin allows it.
 * With CONSOLE_SCREENSHOTS=<dir> it also saves the README's screenshots.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { inferSimple, makeRepo, repoIndex, waitFor } from './repo-kit';
import { startServer, type ServerProcess } from './server-process';
import { recordSkip } from './needs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const skip = fs.existsSync(CHROMIUM) ? false : recordSkip(`no chromium at ${CHROMIUM} (apt-get install chromium, as .ci/run does, or set CHROMIUM_PATH)`);
const KEY = { 'admin-key': 'secret' };
const SHOTS = process.env.CONSOLE_SCREENSHOTS;

/** A page on another origin that calls the server's infer route and writes what happened into #out. */
function corsPage(api: string): string {
  const body = JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
    ],
  });
  return `<!doctype html><p id="out">…</p><script>
fetch(${JSON.stringify(`${api}/v2/models/simple/infer`)}, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: ${JSON.stringify(body)} })
  .then(async (r) => { const j = await r.json(); document.getElementById('out').textContent = 'status ' + r.status + ' OUTPUT0 ' + j.outputs[0].data.join(','); },
        (e) => { document.getElementById('out').textContent = 'refused: ' + e.name; });
</script>`;
}

describe('console in headless chromium', { skip }, () => {
  let server: ServerProcess;
  let repo: string;
  let pages: http.Server;
  let pagePort: number;
  let browser: Browser;
  let page: Page;

  before(async () => {
    repo = makeRepo(['simple']);
    // `broken`: a valid config whose model file is missing, so its load fails with a reason.
    fs.mkdirSync(path.join(repo, 'broken', '1'), { recursive: true });
    fs.writeFileSync(
      path.join(repo, 'broken', 'config.pbtxt'),
      fs.readFileSync(path.join(repo, 'simple', 'config.pbtxt'), 'utf8').replace('name: "simple"', 'name: "broken"'),
    );
    let api = '';
    pages = http.createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end(corsPage(api));
    });
    await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
    pagePort = (pages.address() as AddressInfo).port;
    server = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=simple',
      '--load-model=broken',
      '--exit-on-error=false',
      '--http-restricted-api=model-repository:admin-key=secret',
      `--http-cors-origin=http://127.0.0.1:${pagePort}`,
      '--metrics-config=summary_latencies=true',
    ]);
    api = server.url;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    pages?.close();
    if (repo !== undefined) fs.rmSync(repo, { recursive: true, force: true });
  });

  test('the restricted repository API: the page asks for the named header, a wrong key is asked again, the right one opens the table', async () => {
    await page.goto(`${server.url}/console/`);
    const form = page.locator('#key-form');
    await form.waitFor({ state: 'visible' });
    assert.equal(await page.locator('#key-text').textContent(), "This API is restricted, expecting header 'admin-key': value of admin-key");
    await page.fill('#key-value', 'wrong');
    await page.click('#key-form button');
    await form.waitFor({ state: 'visible' });
    assert.equal(await page.locator('#models tbody tr').count(), 0, 'nothing shown without the key');
    await page.fill('#key-value', 'secret');
    await page.click('#key-form button');
    await page.locator('tr[data-model="simple"][data-state="READY"]').waitFor();
  });

  test("the table shows the READY model and the failed one with the server's reason, whole", async () => {
    const failed = page.locator('tr[data-model="broken"][data-state="UNAVAILABLE"]');
    await failed.waitFor();
    const reason = (await repoIndex(server.url, KEY)).find((e) => e.name === 'broken')?.reason;
    assert.ok(reason !== undefined && reason !== '');
    await failed.locator('summary').click();
    assert.equal(await failed.locator('details pre').textContent(), reason);
    assert.equal(await page.locator('tr[data-model="simple"] td').nth(4).textContent(), 'onnxruntime');
    if (SHOTS !== undefined) await page.screenshot({ path: path.join(SHOTS, 'console-models.png') });
  });

  test('unload and load from the table (explicit mode)', async () => {
    await page.click('button[data-action="unload"][data-model="simple"]');
    await page.locator('tr[data-model="simple"][data-state="UNAVAILABLE"]').waitFor();
    assert.deepEqual(
      (await repoIndex(server.url, KEY)).find((e) => e.name === 'simple'),
      { name: 'simple', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
    );
    await page.click('button[data-action="load"][data-model="simple"]');
    await page.locator('tr[data-model="simple"][data-state="READY"]').waitFor();
    assert.equal((await inferSimple(server.url)).status, 200);
  });

  test('the try-it form infers simple and shows its outputs and the time split', async () => {
    await page.goto(`${server.url}/console/#/models/simple`);
    // Labels are tied to their fields: INPUT0's label finds INPUT0's data, and its shape box its shape.
    assert.equal(await page.getByLabel('INPUT0 INT32').getAttribute('name'), 'INPUT0.data');
    assert.equal(await page.getByLabel('INPUT0 shape').getAttribute('name'), 'INPUT0.shape');
    await page.click('#tryit button[type="submit"]');
    const out0 = page.locator('#tryit-outputs tr[data-output="OUTPUT0"] td');
    await out0.first().waitFor();
    // INPUT0 = INPUT1 = 0..15 by default: OUTPUT0 = their sum, OUTPUT1 = their difference.
    assert.equal(await out0.nth(3).textContent(), Array.from({ length: 16 }, (_, i) => 2 * i).join(', '));
    assert.equal(await out0.nth(2).textContent(), '[1, 16]');
    assert.equal(await page.locator('#tryit-outputs tr[data-output="OUTPUT1"] td').nth(3).textContent(), new Array(16).fill(0).join(', '));
    assert.match(
      (await page.locator('#tryit-split').textContent()) ?? '',
      /^server side \(statistics, 1 request in the interval\): request \d+ µs = queue \d+/,
    );
  });

  test("the model page shows the model's log lines, live", async () => {
    // simple was loaded through the console above: its load lines are in its log.
    const log = page.locator('#model-log');
    await waitFor('the model log', async () => /successfully loaded 'simple'/.test((await log.textContent()) ?? ''), 40, 250);
    assert.doesNotMatch((await log.textContent()) ?? '', /add_vectors/, "only this model's lines");
  });

  test('a chart updates under load: requests/s, batch size and p99 from the live numbers', async () => {
    const drawn = async (): Promise<number> => Number(await page.locator('.now[data-chart="throughput"]').getAttribute('data-points'));
    const before = await drawn();
    let stop = false;
    const load = Array.from({ length: 4 }, async () => {
      while (!stop) await inferSimple(server.url);
    });
    try {
      await waitFor(
        'the charts to show traffic',
        async () => {
          const last = (chart: string): Promise<Record<string, number | null>> =>
            page
              .locator(`.now[data-chart="${chart}"]`)
              .getAttribute('data-last')
              .then((t) => JSON.parse(t ?? '{}') as Record<string, number | null>);
          const [throughput, batch, latency] = await Promise.all([last('throughput'), last('batch'), last('latency')]);
          // Three new points drawn since the load began, the last with the load in it.
          return (await drawn()) >= Math.min(before + 3, 120) && (throughput.requests ?? 0) > 1 && (batch.batch ?? 0) >= 1 && (latency.p99 ?? 0) > 0;
        },
        60,
        250,
      );
    } finally {
      stop = true;
      await Promise.all(load);
    }
    const now = await page.locator('.now[data-chart="throughput"]').textContent();
    assert.match(now ?? '', /^now: success \d+(\.\d+)? · failed 0\.00$/);
    if (SHOTS !== undefined) await page.screenshot({ path: path.join(SHOTS, 'console-model.png'), fullPage: true });
  });

  test('the server view shows the version and the log settings, and changes them', async () => {
    await page.goto(`${server.url}/console/#/server`);
    await page.locator('#log-settings').waitFor();
    assert.match((await page.locator('#server-info').textContent()) ?? '', /version2\.73\.0/);
    await page.fill('#log-settings input[name="log_verbose_level"]', '1');
    await page.click('#log-settings button');
    await waitFor(
      'log_verbose_level 1',
      async () => ((await (await fetch(`${server.url}/v2/logging`)).json()) as { log_verbose_level: number }).log_verbose_level === 1,
      40,
      100,
    );
    await fetch(`${server.url}/v2/logging`, { method: 'POST', body: JSON.stringify({ log_verbose_level: 0 }) });
    if (SHOTS !== undefined) await page.screenshot({ path: path.join(SHOTS, 'console-server.png') });
  });

  test('CORS: a page on the allowed origin calls the API; the same page on another origin is refused by the browser', async () => {
    const other = await browser.newPage();
    try {
      await other.goto(`http://127.0.0.1:${pagePort}/`);
      await waitFor('the allowed page', async () => (await other.locator('#out').textContent()) !== '…', 40, 100);
      assert.equal(await other.locator('#out').textContent(), `status 200 OUTPUT0 ${Array.from({ length: 16 }, (_, i) => i + 1).join(',')}`);
      await other.goto(`http://localhost:${pagePort}/`);
      await waitFor('the refused page', async () => (await other.locator('#out').textContent()) !== '…', 40, 100);
      assert.equal(await other.locator('#out').textContent(), 'refused: TypeError');
    } finally {
      await other.close();
    }
  });
});

describe('console in headless chromium, with --http-auth-token-file', { skip }, () => {
  let server: ServerProcess;
  let repo: string;
  let browser: Browser;

  before(async () => {
    repo = makeRepo(['simple']);
    fs.writeFileSync(path.join(repo, 'tokens.txt'), 'console-token-1\n');
    server = await startServer([`--model-repository=${repo}`, `--http-auth-token-file=${path.join(repo, 'tokens.txt')}`]);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    if (repo !== undefined) fs.rmSync(repo, { recursive: true, force: true });
  });

  test('the page asks for the token the server wants, a wrong one is asked again, the right one opens the table', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}/console/`);
    const form = page.locator('#key-form');
    await form.waitFor({ state: 'visible' });
    assert.equal(
      await page.locator('#key-text').textContent(),
      "missing bearer token: this server requires the header 'Authorization: Bearer <token>' on every request (--http-auth-token-file): the token",
    );
    await page.fill('#key-value', 'wrong');
    await page.click('#key-form button');
    await form.waitFor({ state: 'visible' });
    await page.locator('#key-text', { hasText: 'invalid bearer token' }).waitFor();
    assert.equal(await page.locator('#models tbody tr').count(), 0, 'nothing shown without the token');
    await page.fill('#key-value', 'console-token-1');
    await page.click('#key-form button');
    await page.locator('tr[data-model="simple"][data-state="READY"]').waitFor();
  });
});
