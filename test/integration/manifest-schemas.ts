/**
 * Schema checks for the manifests under deploy/, with no cluster: Kubernetes'
 * own kinds through kubernetes-models (its validators are Kubernetes'
 * OpenAPI schemas), KServe's kinds through the OpenAPI v3 schemas of
 * KServe's CustomResourceDefinitions (../shared/reference/kserve, beside the
 * checkout) compiled with ajv. Kubernetes prunes the fields a structural
 * schema does not name, silently; `unknownFields` reports them, so a
 * misspelt field fails here instead of vanishing on apply.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import { readYamlDocs, type K8sObject, type Obj } from './manifest-render';
import { REPO_ROOT } from './server-process';

/** The module kubernetes-models keeps a kind in: `apps/v1` + Deployment → kubernetes-models/apps/v1/Deployment. */
function modelModule(apiVersion: string, kind: string): string {
  return `kubernetes-models/${apiVersion}/${kind}`;
}

/** Kubernetes' verdict on one object: '' when valid, else the validator's message. */
export function validateKubernetes(o: K8sObject): string {
  let mod: Record<string, new (data: unknown) => { validate(): void }>;
  try {
    mod = require(modelModule(o.apiVersion, o.kind)) as typeof mod;
  } catch {
    return `${o.apiVersion} ${o.kind} is not a kind kubernetes-models knows`;
  }
  try {
    new mod[o.kind](o).validate();
    return '';
  } catch (err) {
    return (err as Error).message;
  }
}

/** The folder of KServe's CRDs: ../shared/reference/kserve beside the checkout (CI), or the shared one of this machine. */
export function kserveCrdDir(): string | undefined {
  for (const d of [path.resolve(REPO_ROOT, '../shared/reference/kserve'), '/work/shared/reference/kserve']) {
    if (fs.existsSync(path.join(d, 'serving.kserve.io_inferenceservices.yaml'))) return d;
  }
  return undefined;
}

/** KServe's CRD schemas in `dir`, each read when an object of its kind is first validated. */
export class CrdSchemas {
  // Kubernetes' formats (int32, date-time, ...) are not checked: validateFormats off; its x- keywords are ignored.
  private readonly ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  private readonly schemas = new Map<string, Obj>();

  constructor(private readonly dir: string) {}

  /** ajv's errors and the unknown fields of one object, as lines; none when it is valid. */
  validate(o: K8sObject): string[] {
    const s = this.schemaOf(o);
    if (typeof s === 'string') return [s];
    // Compiling all of it takes ajv tens of seconds (every PodSpec KServe inlines); the branches of
    // properties this object leaves out cannot fail it, so only the ones it has are compiled.
    const validate = this.ajv.compile(prune(s, o));
    const errs = validate(o) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`);
    return [...errs, ...unknownFields(s, o, '')];
  }

  private schemaOf(o: K8sObject): Obj | string {
    const key = `${o.apiVersion} ${o.kind}`;
    const known = this.schemas.get(key);
    if (known) return known;
    // KServe's files are named <group>_<plural>.yaml; every kind here makes its plural with an s.
    const [group, version] = o.apiVersion.split('/');
    const file = path.join(this.dir, `${group}_${o.kind.toLowerCase()}s.yaml`);
    if (!fs.existsSync(file)) return `no CRD for ${o.kind} in ${this.dir} (looked for ${path.basename(file)})`;
    const [crd] = readYamlDocs(file);
    const v = (crd.spec as { versions: { name: string; schema: { openAPIV3Schema: Obj } }[] }).versions.find((x) => x.name === version);
    if (!v) return `${path.basename(file)} defines no version ${version} of ${o.kind}`;
    this.schemas.set(key, v.schema.openAPIV3Schema);
    return v.schema.openAPIV3Schema;
  }
}

/**
 * `schema` with only the properties `value` has, at every depth (an array's
 * items pruned to the union of its elements): the same verdict on `value`,
 * since a property absent from it is checked by nothing but `required`,
 * which is kept.
 */
export function prune(schema: Obj, value: unknown): Obj {
  const out: Obj = { ...schema };
  if (Array.isArray(value) && schema.items) out.items = prune(schema.items as Obj, union(value));
  else if (typeof value === 'object' && value !== null) {
    const v = value as Obj;
    if (schema.properties) {
      const props = schema.properties as Record<string, Obj>;
      out.properties = Object.fromEntries(
        Object.keys(props)
          .filter((k) => k in v)
          .map((k) => [k, prune(props[k], v[k])]),
      );
    }
    if (typeof schema.additionalProperties === 'object') out.additionalProperties = prune(schema.additionalProperties as Obj, union(Object.values(v)));
  }
  return out;
}

/** One value holding every key any of `values` has (for pruning an array's item schema). */
function union(values: unknown[]): unknown {
  const objs = values.filter((x): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x));
  if (objs.length === 0) {
    const arrays = values.filter(Array.isArray);
    return arrays.length > 0 ? arrays.flat() : values[0];
  }
  const keys = new Set(objs.flatMap((o) => Object.keys(o)));
  return Object.fromEntries([...keys].map((k) => [k, union(objs.filter((o) => k in o).map((o) => o[k]))]));
}

/** Fields of `value` that its structural schema would prune: not in `properties`, no additionalProperties, no preserve-unknown-fields. */
export function unknownFields(schema: Obj, value: unknown, at: string): string[] {
  if (schema['x-kubernetes-preserve-unknown-fields'] === true) return [];
  if (Array.isArray(value)) {
    const items = schema.items as Obj | undefined;
    return items ? value.flatMap((v, i) => unknownFields(items, v, `${at}/${i}`)) : [];
  }
  if (typeof value !== 'object' || value === null) return [];
  const props = schema.properties as Record<string, Obj> | undefined;
  const extra = schema.additionalProperties as Obj | boolean | undefined;
  const out: string[] = [];
  for (const [k, v] of Object.entries(value as Obj)) {
    const sub = props?.[k] ?? (typeof extra === 'object' ? extra : undefined);
    if (sub) out.push(...unknownFields(sub, v, `${at}/${k}`));
    else if (props && extra === undefined && at !== '/metadata') out.push(`${at}/${k} is not in the schema (Kubernetes would drop it)`);
  }
  return out;
}
