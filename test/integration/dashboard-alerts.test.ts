/**
 * deploy/grafana/nodetron-dashboard.json and deploy/prometheus/alerts.yaml
 * (issue 33 item 3) against the real server and Debian's promtool: every
 * query of the dashboard parses as PromQL (promtool checks them as
 * recording rules, Grafana's variables filled in), the alert rules pass
 * `promtool check rules`, and every metric either names is on a live
 * scrape of a server serving an ONNX model and a decoupled Python model.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gatedBy, recordSkip } from './needs';
import { MODEL_REPOSITORY, REPO_ROOT, startServer, type ServerProcess } from './server-process';

const DASHBOARD = path.join(REPO_ROOT, 'deploy/grafana/nodetron-dashboard.json');
const ALERTS = path.join(REPO_ROOT, 'deploy/prometheus/alerts.yaml');
const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures');

const hasPromtool = spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;
const { before, after, test } = gatedBy(
  hasPromtool ? false : recordSkip("promtool is not installed (Debian's prometheus package: apt-get install prometheus)"),
);

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: { expr: string; refId: string }[];
}

const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as { uid: string; panels: Panel[]; templating: { list: { name: string }[] } };
const queries = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
const alertText = fs.readFileSync(ALERTS, 'utf8');
const alertExprs = [...alertText.matchAll(/expr: (?:\|\n((?: {10}.*\n)+)|(.*)\n)/g)].map((m) => (m[1] ?? m[2]!).trim());

/** nv_* and nodetron_* names in a query, histogram suffixes taken off where the family is a histogram. */
function metricNames(expr: string, histograms: Set<string>): string[] {
  return [...expr.matchAll(/\b((?:nv|nodetron)_[a-z0-9_]+)/g)].map((m) => {
    const name = m[1]!;
    const base = name.replace(/_(bucket|sum|count)$/, '');
    return base !== name && histograms.has(base) ? base : name;
  });
}

let repo: string;
let server: ServerProcess;
let families = new Map<string, string>();
let scrape = '';

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-dashboard-'));
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), path.join(repo, 'simple'), { recursive: true });
  fs.cpSync(path.join(FIXTURES, 'generate_models/mock_llm'), path.join(repo, 'mock_llm'), { recursive: true });
  server = await startServer([`--model-repository=${repo}`]);
  // The CPU poller's gauges get their first values after a poll: wait (bounded) until every family has series.
  for (let i = 0; i < 50; i++) {
    const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    scrape = text;
    families = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
    if (families.has('nv_cpu_utilization')) break;
    await new Promise((r) => setTimeout(r, 200));
  }
});
after(async () => {
  await server?.stop();
  fs.rmSync(repo, { recursive: true, force: true });
});

test('the dashboard: one Prometheus datasource input, panels with unique ids, a query in each', () => {
  assert.equal(dashboard.uid, 'nodetron');
  assert.deepEqual(
    dashboard.templating.list.map((v) => v.name),
    ['model'],
  );
  const ids = dashboard.panels.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length, 'unique panel ids');
  for (const p of dashboard.panels.filter((x) => x.type !== 'row')) {
    assert.equal(p.datasource?.uid, '${DS_PROMETHEUS}', p.title);
    assert.ok((p.targets ?? []).length > 0, `${p.title} has a query`);
  }
  assert.ok(queries.length >= 15, `${queries.length} queries`);
});

test("every dashboard query parses as PromQL (promtool, Grafana's variables filled in)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-dashboard-rules-'));
  try {
    const rules = queries
      .map(
        (q, i) =>
          `      - record: dashboard:query_${i}\n        expr: ${JSON.stringify(q.expr.replaceAll('$__rate_interval', '1m').replaceAll('$model', '.+'))}\n`,
      )
      .join('');
    const file = path.join(dir, 'dashboard-queries.yaml');
    fs.writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules}`);
    const r = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, new RegExp(`SUCCESS: ${queries.length} rules found`));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the alert rules pass promtool check rules', () => {
  const out = execFileSync('promtool', ['check', 'rules', ALERTS], { encoding: 'utf8' });
  assert.match(out, /SUCCESS: 5 rules found/);
  assert.equal(alertExprs.length, 5, alertExprs.join('\n---\n'));
});

test('every metric the dashboard and the alerts name is on a live scrape', () => {
  const histograms = new Set([...families].filter(([, type]) => type === 'histogram').map(([name]) => name));
  const named = new Set([...queries.map((q) => q.expr), ...alertExprs].flatMap((e) => metricNames(e, histograms)));
  assert.ok(named.size >= 15, [...named].join(', '));
  const missing = [...named].filter((n) => !families.has(n));
  assert.deepEqual(missing, [], `not on /metrics: ${missing.join(', ')}`);
});

test("the server's own families for them: readiness, instances, restarts, threads' CPU", async () => {
  const config = (await (await fetch(`${server.url}/v2/models/simple/config`)).json()) as { instance_group: { count: number }[] };
  const count = config.instance_group.reduce((n, g) => n + g.count, 0);
  assert.match(scrape, /^nodetron_model_ready\{model="simple",version="1"\} 1$/m);
  assert.match(scrape, /^nodetron_model_ready\{model="mock_llm",version="1"\} 1$/m);
  assert.match(scrape, new RegExp(`^nodetron_model_instances\\{model="simple",version="1"\\} ${count}$`, 'm'));
  assert.match(scrape, /^nodetron_instance_restarts_total\{model="mock_llm",version="1"\} 0$/m);
  // The HTTP thread's name, as the server sets it; its CPU is a count of 10 ms ticks.
  assert.match(scrape, /^nodetron_thread_cpu_seconds_total\{thread="nt:http-0"\} \d+(\.\d+)?$/m);
});
