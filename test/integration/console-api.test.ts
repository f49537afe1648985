/**
 * The console's server side against the real server, without a browser:
 * its static files (and --http-console to move or drop them), CORS
 * (--http-cors-origin: preflights on KServe routes, Allow-Origin on
 * answers, off by default as in Triton), the OpenAPI documents, and the
 * nodetron status and metrics routes, all under --http-restricted-api.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MODEL_REPOSITORY, startServer } from './server-process';
import type { ServerProcess } from './server-process';

const ORIGIN = 'http://127.0.0.1:5173';
const KEY = { 'admin-key': 'secret' };

describe('console routes, CORS on, statistics restricted', () => {
  let server: ServerProcess;
  before(async () => {
    server = await startServer([`--model-repository=${MODEL_REPOSITORY}`, `--http-cors-origin=${ORIGIN}`, '--http-restricted-api=statistics:admin-key=secret']);
  });
  after(async () => {
    await server.stop();
  });

  test('the console is served from memory with its vendored uPlot, nothing from elsewhere', async () => {
    const redirect = await fetch(`${server.url}/console`, { redirect: 'manual' });
    assert.equal(redirect.status, 302);
    assert.equal(redirect.headers.get('location'), '/console/');
    const page = await fetch(`${server.url}/console/`);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'self'/);
    const html = await page.text();
    assert.match(html, /<script type="module" src="main.js">/);
    assert.doesNotMatch(html, /https?:\/\//, 'no CDN');
    const uplot = await fetch(`${server.url}/console/vendor/uPlot.iife.min.js`);
    assert.equal(uplot.status, 200);
    assert.equal(uplot.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.match(await uplot.text(), /uPlot/);
    const missing = await fetch(`${server.url}/console/nope.js`);
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: 'Not Found' });
    const posted = await fetch(`${server.url}/console/`, { method: 'POST' });
    assert.equal(posted.status, 405);
  });

  test('CORS: a preflight from the allowed origin is answered on a KServe route, before the restricted-API check', async () => {
    const res = await fetch(`${server.url}/v2/models/simple/stats`, {
      method: 'OPTIONS',
      headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'admin-key' },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), ORIGIN);
    assert.equal(res.headers.get('access-control-allow-methods'), 'GET');
    assert.equal(res.headers.get('access-control-allow-headers'), 'admin-key');
    assert.equal(res.headers.get('content-length'), null, 'a 204 has no Content-Length');

    const stranger = await fetch(`${server.url}/v2/models/simple/infer`, {
      method: 'OPTIONS',
      headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' },
    });
    assert.equal(stranger.status, 403);
    assert.equal(stranger.headers.get('access-control-allow-origin'), null);
    assert.deepEqual(await stranger.json(), {
      error: `origin 'http://evil.example' is not allowed to call this server; allowed by --http-cors-origin: ${ORIGIN}`,
    });

    const answer = await fetch(`${server.url}/v2/health/ready`, { headers: { Origin: ORIGIN } });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('access-control-allow-origin'), ORIGIN);
    assert.equal(answer.headers.get('vary'), 'Origin');
    // An error answer carries it too, so the page can read the server's text.
    const refused = await fetch(`${server.url}/v2/models/stats`, { headers: { Origin: ORIGIN } });
    assert.equal(refused.status, 403);
    assert.equal(refused.headers.get('access-control-allow-origin'), ORIGIN);
    const other = await fetch(`${server.url}/v2/health/ready`, { headers: { Origin: 'http://evil.example' } });
    assert.equal(other.headers.get('access-control-allow-origin'), null);
  });

  test("/v2/openapi.json describes the served routes; a model's describes its tensors", async () => {
    const doc = (await (await fetch(`${server.url}/v2/openapi.json`)).json()) as {
      openapi: string;
      paths: Record<string, Record<string, { security?: unknown }>>;
    };
    assert.equal(doc.openapi, '3.1.0');
    assert.ok(doc.paths['/v2/models/{model}/infer'].post !== undefined);
    assert.deepEqual(doc.paths['/v2/models/stats'].get.security, [{ restricted_admin_key: [] }]);
    const simple = (await (await fetch(`${server.url}/v2/models/simple/openapi.json`)).json()) as {
      components: { schemas: Record<string, { properties: Record<string, unknown> }> };
    };
    assert.deepEqual(simple.components.schemas.input0_INPUT0.properties.datatype, { const: 'INT32' });
    // An unknown model: the metadata route's status and words.
    const missing = await fetch(`${server.url}/v2/models/nope/openapi.json`);
    const metadata = await fetch(`${server.url}/v2/models/nope`);
    assert.equal(missing.status, metadata.status);
    assert.deepEqual(await missing.json(), await metadata.json());
  });

  test('status and metrics for the console: restricted as statistics, then answered', async () => {
    const denied = await fetch(`${server.url}/v2/nodetron/status`);
    assert.equal(denied.status, 403);
    assert.deepEqual(await denied.json(), { error: "This API is restricted, expecting header 'admin-key'" });
    const status = (await (await fetch(`${server.url}/v2/nodetron/status`, { headers: KEY })).json()) as {
      model_control_mode: string;
      uptime_s: number;
      options: string[][];
      metrics: { enabled: boolean; summaries: boolean };
      instances: { model: string; version: number; instances: { name: string; restarts: number }[] }[];
    };
    assert.equal(status.model_control_mode, 'none');
    assert.ok(status.uptime_s >= 0);
    assert.deepEqual(status.options[0], ['server_id', 'triton']);
    assert.deepEqual(status.metrics, { enabled: true, summaries: false });
    const simple = status.instances.find((i) => i.model === 'simple');
    assert.deepEqual(
      simple?.instances.map((i) => i.restarts),
      simple?.instances.map(() => 0),
    );
    assert.ok((simple?.instances.length ?? 0) > 0);
    const metrics = await fetch(`${server.url}/v2/nodetron/metrics`, { headers: KEY });
    assert.equal(metrics.status, 200);
    assert.match(metrics.headers.get('content-type') ?? '', /^text\/plain/);
    assert.match(await metrics.text(), /^nv_inference_pending_request_count\{model="simple",version="1"\} 0$/m);
  });
});

describe('defaults: CORS off, console moved or off, metrics off', () => {
  let server: ServerProcess;
  before(async () => {
    server = await startServer([`--model-repository=${MODEL_REPOSITORY}`, '--http-console=/ui', '--allow-metrics=false']);
  });
  after(async () => {
    await server.stop();
  });

  test('no CORS headers and OPTIONS stays 405 without --http-cors-origin', async () => {
    const res = await fetch(`${server.url}/v2/models/simple/infer`, {
      method: 'OPTIONS',
      headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'POST' },
    });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
    const ready = await fetch(`${server.url}/v2/health/ready`, { headers: { Origin: ORIGIN } });
    assert.equal(ready.headers.get('access-control-allow-origin'), null);
  });

  test('--http-console=/ui moves the console; /console is then an unknown path', async () => {
    assert.equal((await fetch(`${server.url}/ui/`)).status, 200);
    assert.equal((await fetch(`${server.url}/console/`)).status, 404);
  });

  test('metrics off: the metrics route says so and what to do', async () => {
    const res = await fetch(`${server.url}/v2/nodetron/metrics`);
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: 'metrics are off (--allow-metrics=false): start the server with --allow-metrics=true to see them here' });
  });
});
