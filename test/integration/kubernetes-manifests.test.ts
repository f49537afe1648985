/**
 * The manifests under deploy/ without a cluster. Each kustomization (the
 * base, both overlays, the prometheus-adapter rules, the KServe runtime) is
 * rendered (kubectl kustomize when installed, and then compared with the
 * fallback renderer; the fallback alone otherwise: the test output says
 * which) and every object is checked against Kubernetes' schemas
 * (kubernetes-models) or KServe's CRD schemas (ajv, unknown fields too).
 * Then what a fleet relies on, read from the rendered objects: the probes'
 * paths and budgets, the drain fitting the pod's grace period, the security
 * context and the only writable mounts, /dev/shm in memory with a size,
 * scrape annotations, a Service for the three ports, a PDB, and an HPA on
 * the queue signal that the adapter's rule provides.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import YAML from 'yaml';
import { canonical, kubectlVersion, podContainers, renderFallback, renderWithKubectl, type K8sObject, type Obj } from './manifest-render';
import { CrdSchemas, kserveCrdDir, validateKubernetes } from './manifest-schemas';
import { REPO_ROOT } from './server-process';

const DEPLOY = path.join(REPO_ROOT, 'deploy');
const KUSTOMIZATIONS = ['kubernetes/base', 'kubernetes/overlays/dev', 'kubernetes/overlays/production', 'kubernetes/prometheus-adapter', 'kserve'];
const KUBECTL = kubectlVersion();
const CRDS = kserveCrdDir();
/** Compiled on first use, once per kind: KServe's InferenceService schema alone is 2 MB. */
const SCHEMAS = CRDS ? new CrdSchemas(CRDS) : undefined;

/** Rendered objects of one kustomization, by the means this machine has. */
function render(dir: string): K8sObject[] {
  const full = path.join(DEPLOY, dir);
  const fallback = renderFallback(full);
  if (!KUBECTL) return fallback;
  const rendered = renderWithKubectl(full);
  const key = (o: K8sObject): string => `${o.kind}/${o.metadata.name}`;
  const sort = (xs: K8sObject[]): unknown[] => [...xs].sort((a, b) => key(a).localeCompare(key(b))).map(canonical);
  assert.deepEqual(sort(fallback), sort(rendered), `${dir}: the fallback renderer disagrees with kubectl kustomize`);
  return rendered;
}

function one(objs: K8sObject[], kind: string): K8sObject {
  const found = objs.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `expected one ${kind}, got ${found.length}`);
  return found[0];
}

/** The value of `--flag=value` in a container's args. */
function flag(args: string[], name: string): string | undefined {
  return args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

test('renderer and schemas this run uses', (t) => {
  t.diagnostic(
    KUBECTL
      ? `rendering with kubectl kustomize (${KUBECTL}), checked against the fallback renderer`
      : 'kubectl not found: rendering with the fallback renderer only',
  );
  t.diagnostic(
    CRDS
      ? `KServe CRD schemas from ${CRDS}`
      : "KServe CRD schemas not found beside the checkout (../shared/reference/kserve): checking the fields known from KServe's API docs only",
  );
  assert.ok(true);
});

for (const dir of KUSTOMIZATIONS) {
  test(`${dir}: every object passes its schema`, () => {
    const objs = render(dir);
    assert.ok(objs.length > 0, `${dir} rendered nothing`);
    const problems: string[] = [];
    for (const o of objs) {
      const where = `${o.kind}/${o.metadata.name}`;
      if (o.apiVersion.startsWith('serving.kserve.io/')) {
        if (SCHEMAS) problems.push(...SCHEMAS.validate(o).map((p) => `${where}: ${p}`));
      } else {
        const err = validateKubernetes(o);
        if (err) problems.push(`${where}: ${err}`);
      }
    }
    assert.deepEqual(problems, []);
  });
}

for (const dir of ['kubernetes/base', 'kubernetes/overlays/dev', 'kubernetes/overlays/production']) {
  test(`${dir}: the Deployment is one a fleet can roll and scale`, () => {
    const objs = render(dir);
    const dep = one(objs, 'Deployment');
    const spec = dep.spec as Obj;
    const pod = (spec.template as Obj).spec as Obj;
    const [c] = podContainers(dep);
    const args = c.args as string[];
    assert.equal(flag(args, 'model-repository'), '/mnt/models');

    // Probes: startup covers model load on ready, then readiness on ready and liveness on live.
    const probe = (name: string): { httpGet: { path: string; port: string }; periodSeconds: number; failureThreshold: number } => c[name] as never;
    assert.equal(probe('startupProbe').httpGet.path, '/v2/health/ready');
    assert.equal(probe('readinessProbe').httpGet.path, '/v2/health/ready');
    assert.equal(probe('livenessProbe').httpGet.path, '/v2/health/live');
    const startupBudget = probe('startupProbe').periodSeconds * probe('startupProbe').failureThreshold;
    assert.ok(startupBudget >= 300, `the startup probe allows ${startupBudget} s of model load; at least 300 s`);
    const ports = new Map((c.ports as { name: string; containerPort: number }[]).map((p) => [p.name, p.containerPort]));
    assert.deepEqual(
      [...ports],
      [
        ['http', 8000],
        ['grpc', 8001],
        ['metrics', 8002],
      ],
    );
    assert.equal(flag(args, 'http-port'), '8000');
    assert.equal(flag(args, 'grpc-port'), '8001');
    assert.equal(flag(args, 'metrics-port'), '8002');
    for (const p of ['startupProbe', 'readinessProbe', 'livenessProbe'])
      assert.ok(ports.has(probe(p).httpGet.port), `${p} names port ${probe(p).httpGet.port}`);

    // The drain: readiness drops within one period, and the server's stop ends before the kubelet's SIGKILL.
    const exitTimeout = Number(flag(args, 'exit-timeout-secs'));
    assert.ok(
      exitTimeout > probe('readinessProbe').periodSeconds * probe('readinessProbe').failureThreshold,
      `--exit-timeout-secs=${exitTimeout} must outlast the readiness probe noticing the 503`,
    );
    assert.ok(
      (pod.terminationGracePeriodSeconds as number) > exitTimeout,
      `terminationGracePeriodSeconds ${String(pod.terminationGracePeriodSeconds)} must exceed --exit-timeout-secs=${exitTimeout}`,
    );
    const rolling = (spec.strategy as { rollingUpdate: { maxUnavailable: number } }).rollingUpdate;
    assert.equal(rolling.maxUnavailable, 0, 'a rollout must not take a replica away before its successor is ready');

    // Security: non-root, read-only root, no escalation; writable mounts are /dev/shm and /tmp only.
    const podSec = pod.securityContext as Obj;
    const sec = c.securityContext as Obj;
    assert.equal(podSec.runAsNonRoot, true);
    assert.ok((podSec.runAsUser as number) > 0);
    assert.equal(sec.readOnlyRootFilesystem, true);
    assert.equal(sec.allowPrivilegeEscalation, false);
    assert.deepEqual((sec.capabilities as Obj).drop, ['ALL']);
    const volumes = new Map((pod.volumes as Obj[]).map((v) => [v.name as string, v]));
    const mounts = c.volumeMounts as { name: string; mountPath: string; readOnly?: boolean }[];
    const writable = mounts
      .filter((m) => !m.readOnly)
      .map((m) => m.mountPath)
      .sort();
    assert.deepEqual(writable, ['/dev/shm', '/tmp']);
    const shm = volumes.get(mounts.find((m) => m.mountPath === '/dev/shm')!.name)!.emptyDir as { medium: string; sizeLimit: string };
    assert.equal(shm.medium, 'Memory');
    assert.match(shm.sizeLimit, /^\d+(Mi|Gi)$/);
    assert.ok(mounts.find((m) => m.mountPath === '/mnt/models')?.readOnly, 'the model volume is mounted read-only');

    const res = c.resources as { requests: Obj; limits: Obj };
    assert.ok(res.requests.cpu && res.requests.memory && res.limits.memory, 'cpu and memory requests and a memory limit');
    const ann = (spec.template as { metadata: { annotations: Record<string, string> } }).metadata.annotations;
    assert.deepEqual([ann['prometheus.io/scrape'], ann['prometheus.io/port'], ann['prometheus.io/path']], ['true', '8002', '/metrics']);

    // Service, PDB and HPA select these pods.
    const labels = (spec.template as { metadata: { labels: Record<string, string> } }).metadata.labels;
    const selects = (sel: Record<string, string>): boolean => Object.entries(sel).every(([k, v]) => labels[k] === v);
    const svc = one(objs, 'Service').spec as { selector: Record<string, string>; ports: { name: string; targetPort: string }[] };
    assert.ok(selects(svc.selector));
    assert.deepEqual(
      svc.ports.map((p) => p.targetPort),
      ['http', 'grpc', 'metrics'],
    );
    const pdb = one(objs, 'PodDisruptionBudget').spec as { selector: { matchLabels: Record<string, string> }; maxUnavailable: number };
    assert.ok(selects(pdb.selector.matchLabels));
    assert.equal(pdb.maxUnavailable, 1);
    const hpa = one(objs, 'HorizontalPodAutoscaler').spec as {
      scaleTargetRef: { kind: string; name: string };
      minReplicas: number;
      maxReplicas: number;
      metrics: { type: string; pods?: { metric: { name: string } } }[];
    };
    assert.deepEqual(hpa.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: dep.metadata.name });
    assert.ok(hpa.minReplicas >= 1 && hpa.maxReplicas > hpa.minReplicas);
    assert.deepEqual(
      hpa.metrics.map((m) => [m.type, m.pods?.metric.name]),
      [['Pods', 'nv_inference_pending_request_count']],
      'the HPA scales on the queue, not on CPU',
    );
  });
}

test('kubernetes/prometheus-adapter: a rule serves the metric the HPA reads, per pod', () => {
  const cm = one(render('kubernetes/prometheus-adapter'), 'ConfigMap');
  const config = YAML.parse((cm.data as Record<string, string>)['config.yaml']) as {
    rules: {
      seriesQuery: string;
      resources: { overrides: Record<string, { resource: string }> };
      name: { matches: string; as: string };
      metricsQuery: string;
    }[];
  };
  const rule = config.rules.find((r) => r.name.as === 'nv_inference_pending_request_count');
  assert.ok(rule, 'no rule names nv_inference_pending_request_count');
  assert.match(rule.seriesQuery, /^nv_inference_pending_request_count\{/);
  assert.equal(rule.resources.overrides.pod.resource, 'pod');
  assert.equal(rule.resources.overrides.namespace.resource, 'namespace');
  assert.match(rule.metricsQuery, /<<\.Series>>\{<<\.LabelMatchers>>\}/);
  assert.match(rule.metricsQuery, /by \(<<\.GroupBy>>\)/);
});

test("kserve: the runtime follows KServe's Triton conventions and the InferenceService uses it", () => {
  const objs = render('kserve');
  const rt = one(objs, 'ClusterServingRuntime');
  const spec = rt.spec as { protocolVersions: string[]; supportedModelFormats: { name: string }[]; annotations: Record<string, string> };
  const [c] = podContainers(rt);
  const args = c.args as string[];
  assert.equal(c.name, 'kserve-container');
  assert.equal(flag(args, 'model-store'), '/mnt/models');
  assert.equal(flag(args, 'http-port'), '8080');
  assert.equal(flag(args, 'grpc-port'), '9000');
  assert.deepEqual(spec.protocolVersions, ['v2', 'grpc-v2']);
  assert.equal(spec.annotations['prometheus.kserve.io/port'], flag(args, 'metrics-port'));
  assert.equal(spec.annotations['prometheus.kserve.io/path'], '/metrics');
  assert.equal((c.securityContext as Obj).readOnlyRootFilesystem, true);

  const isvc = one(objs, 'InferenceService');
  const model = ((isvc.spec as Obj).predictor as Obj).model as { runtime: string; modelFormat: { name: string }; protocolVersion: string; storageUri: string };
  assert.equal(model.runtime, rt.metadata.name);
  assert.ok(
    spec.supportedModelFormats.some((f) => f.name === model.modelFormat.name),
    `the runtime does not list format ${model.modelFormat.name}`,
  );
  assert.equal(model.protocolVersion, 'v2');
  assert.match(model.storageUri, /^pvc:\/\/[a-z0-9-]+\//);
});
