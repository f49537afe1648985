/**
 * Renders the kustomizations under deploy/ for the manifest tests: with
 * `kubectl kustomize` when kubectl is on the PATH, else with the few
 * kustomize fields our kustomizations use (resources, namespace, images,
 * labels, patches as strategic merges), so the test runs on a machine with
 * no kubectl (CI's). Where both exist the test compares them, which keeps
 * this fallback honest. A kustomization field it does not know is an error,
 * not a silent skip.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export type Obj = Record<string, unknown>;

export interface K8sObject extends Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
}

/** Every document of a YAML file (empty documents dropped). */
export function readYamlDocs(file: string): K8sObject[] {
  return YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'))
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
      return d.toJS() as K8sObject | null;
    })
    .filter((d): d is K8sObject => d !== null);
}

/** kubectl when it is installed and can render (its kustomize is built in). */
export function kubectlVersion(): string | undefined {
  const r = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return undefined;
  return r.stdout.replace(/\s+/g, ' ').trim();
}

export function renderWithKubectl(dir: string): K8sObject[] {
  const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`kubectl kustomize ${dir} exited ${r.status}: ${r.stderr}`);
  return YAML.parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as K8sObject)
    .filter((d) => d !== null);
}

const KNOWN_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'namespace', 'images', 'labels', 'patches']);
/** Kinds that live in no namespace (kustomize's namespace field leaves them alone). */
const CLUSTER_KINDS = new Set(['ClusterServingRuntime', 'Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition']);

interface Kustomization {
  resources?: string[];
  namespace?: string;
  images?: { name: string; newName?: string; newTag?: string }[];
  labels?: { pairs: Record<string, string>; includeSelectors?: boolean; includeTemplates?: boolean }[];
  patches?: { path: string }[];
}

/** What `kubectl kustomize dir` renders, for the fields listed in KNOWN_FIELDS. */
export function renderFallback(dir: string): K8sObject[] {
  const kfile = path.join(dir, 'kustomization.yaml');
  const k = YAML.parse(fs.readFileSync(kfile, 'utf8')) as Kustomization & Obj;
  const unknown = Object.keys(k).filter((f) => !KNOWN_FIELDS.has(f));
  if (unknown.length > 0)
    throw new Error(`${kfile}: the fallback renderer does not know ${unknown.join(', ')}; teach it (test/integration/manifest-render.ts) or install kubectl`);
  let objects: K8sObject[] = [];
  for (const r of k.resources ?? []) {
    const p = path.join(dir, r);
    objects.push(...(fs.statSync(p).isDirectory() ? renderFallback(p) : readYamlDocs(p)));
  }
  for (const l of k.labels ?? []) {
    if (l.includeSelectors || l.includeTemplates) throw new Error(`${kfile}: the fallback renderer adds labels to metadata only`);
    for (const o of objects) o.metadata.labels = { ...(o.metadata.labels ?? {}), ...l.pairs };
  }
  for (const p of k.patches ?? []) {
    for (const patch of readYamlDocs(path.join(dir, p.path))) {
      const i = objects.findIndex((o) => o.kind === patch.kind && o.metadata.name === patch.metadata.name);
      if (i < 0) throw new Error(`${kfile}: patch ${p.path} matches no ${patch.kind} named ${patch.metadata.name}`);
      objects[i] = strategicMerge(objects[i], patch) as K8sObject;
    }
  }
  if (k.namespace !== undefined) {
    objects = objects.map((o) => (CLUSTER_KINDS.has(o.kind) ? o : { ...o, metadata: { ...o.metadata, namespace: k.namespace! } }));
  }
  for (const img of k.images ?? []) {
    for (const o of objects) {
      for (const c of podContainers(o)) {
        const [name, tag] = splitImage(c.image as string);
        if (name !== img.name) continue;
        c.image = `${img.newName ?? name}:${img.newTag ?? tag}`;
      }
    }
  }
  return objects;
}

/** The containers of a Deployment's pod template or of a serving runtime. */
export function podContainers(o: K8sObject): Obj[] {
  const spec = o.spec as Obj | undefined;
  if (o.kind === 'Deployment') return (((spec?.template as Obj).spec as Obj).containers as Obj[]) ?? [];
  if (o.kind === 'ClusterServingRuntime' || o.kind === 'ServingRuntime') return (spec?.containers as Obj[]) ?? [];
  return [];
}

function splitImage(image: string): [string, string] {
  const at = image.lastIndexOf(':');
  return at > image.lastIndexOf('/') ? [image.slice(0, at), image.slice(at + 1)] : [image, 'latest'];
}

/**
 * A strategic merge patch, for what our patches use: maps merge, lists of
 * maps that all carry `name` merge by name (containers, volumes, env), any
 * other list is replaced (args), as Kubernetes' patch strategies say for
 * those fields.
 */
export function strategicMerge(base: unknown, patch: unknown): unknown {
  if (Array.isArray(patch)) {
    const named = (xs: unknown[]): boolean => xs.every((x) => typeof x === 'object' && x !== null && typeof (x as Obj).name === 'string');
    if (!Array.isArray(base) || !named(patch) || !named(base)) return structuredClone(patch);
    const out = base.map((b) => structuredClone(b) as Obj);
    for (const p of patch as Obj[]) {
      const i = out.findIndex((b) => b.name === p.name);
      if (i < 0) out.push(structuredClone(p));
      else out[i] = strategicMerge(out[i], p) as Obj;
    }
    return out;
  }
  if (typeof patch === 'object' && patch !== null) {
    const out: Obj = typeof base === 'object' && base !== null && !Array.isArray(base) ? structuredClone(base as Obj) : {};
    for (const [key, value] of Object.entries(patch as Obj)) out[key] = strategicMerge(out[key], value);
    return out;
  }
  return patch;
}

/** For comparing two renders: lists of named maps sorted by name (kustomize moves a patched entry to the front). */
export function canonical(value: unknown): unknown {
  if (Array.isArray(value)) {
    const xs = value.map(canonical);
    const named = xs.every((x) => typeof x === 'object' && x !== null && typeof (x as Obj).name === 'string');
    return named ? xs.sort((a, b) => String((a as Obj).name).localeCompare(String((b as Obj).name))) : xs;
  }
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value as Obj).map(([k, v]) => [k, canonical(v)]));
  return value;
}
