/**
 * What the Azure and GCS server tests put in a bucket and ask of the server
 * started on it: three example models (an ONNX model, `simple`; a Python
 * model, `add_vectors`; an ensemble of `simple`, `simple_ensemble`) as
 * object keys and bytes, one inference on each, and the changed model.py
 * that poll mode must pick up.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { MODEL_REPOSITORY } from './server-process';
import { inferSimple, SIMPLE_BODY } from './repo-kit';
import { ServerError } from '../../src/core/errors';

export const CLOUD_MODELS = ['simple', 'add_vectors', 'simple_ensemble'];

/** Every file of the models, as `<model>/<path>` keys. */
export function repositoryObjects(models = CLOUD_MODELS): { key: string; data: Buffer }[] {
  const out: { key: string; data: Buffer }[] = [];
  const walk = (dir: string, rel: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (e.name === '__pycache__') continue;
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full, `${rel}${e.name}/`);
      else out.push({ key: `${rel}${e.name}`, data: fs.readFileSync(full) });
    }
  };
  for (const m of models) walk(path.join(MODEL_REPOSITORY, m), `${m}/`);
  return out;
}

/** add_vectors' model.py, changed to add 100 more: a new object version poll mode must load. */
export function addVectorsPlus100(): Buffer {
  const src = fs.readFileSync(path.join(MODEL_REPOSITORY, 'add_vectors/1/model.py'), 'utf8');
  const changed = src.replace('(a + b).astype(', '(a + b + 100).astype(');
  if (changed === src) throw new Error('add_vectors/1/model.py no longer has the line this test changes');
  return Buffer.from(changed);
}

/** OUTPUT of add_vectors for [1, 2, 3] + [10, 20, 30], or the error text. */
export async function inferAddVectors(url: string): Promise<number[] | string> {
  const body = JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'FP32', shape: [3], data: [1, 2, 3] },
      { name: 'INPUT1', datatype: 'FP32', shape: [3], data: [10, 20, 30] },
    ],
  });
  const res = await fetch(`${url}/v2/models/add_vectors/infer`, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } });
  const text = await res.text();
  if (res.status !== 200) return `${res.status} ${text}`;
  return (JSON.parse(text) as { outputs: { data: number[] }[] }).outputs[0]!.data;
}

/** OUTPUT0 of simple_ensemble for SIMPLE_BODY (2 * INPUT0), or the error text. */
export async function inferEnsemble(url: string): Promise<number[] | string> {
  const res = await fetch(`${url}/v2/models/simple_ensemble/infer`, { method: 'POST', body: SIMPLE_BODY, headers: { 'Content-Type': 'application/json' } });
  const text = await res.text();
  if (res.status !== 200) return `${res.status} ${text}`;
  return (JSON.parse(text) as { outputs: { name: string; data: number[] }[] }).outputs.find((o) => o.name === 'OUTPUT0')!.data;
}

/** The three models answer as the example repository's do. */
export async function allThreeAnswer(url: string): Promise<{ simple: number; addVectors: number[] | string; ensemble: number[] | string }> {
  return {
    simple: (await inferSimple(url)).status,
    addVectors: await inferAddVectors(url),
    ensemble: await inferEnsemble(url),
  };
}

export const ENSEMBLE_OUTPUT = Array.from({ length: 16 }, (_, i) => 2 * i);

/** Runs `fn`, which must throw a ServerError (a store's failure); returns it. */
export async function failure(fn: () => unknown): Promise<ServerError> {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof ServerError, `expected a ServerError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a failure');
}
