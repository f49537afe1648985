/**
 * Helpers for the model-management tests and the churn bench: temporary
 * model repositories copied from model_repository/, repository API calls, a
 * JSON inference on `simple`, and a bounded wait for a condition.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MODEL_REPOSITORY } from './server-process';

/** A fresh temporary repository holding copies of the named example models. */
export function makeRepo(models: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-repo-'));
  for (const m of models) fs.cpSync(path.join(MODEL_REPOSITORY, m), path.join(dir, m), { recursive: true });
  return dir;
}

export interface Answer {
  status: number;
  text: string;
}

export async function post(url: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(url + p, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

export interface IndexEntry {
  name: string;
  version?: string;
  state?: string;
  reason?: string;
}

export async function repoIndex(url: string, headers: Record<string, string> = {}, ready?: boolean): Promise<IndexEntry[]> {
  const a = await post(url, '/v2/repository/index', ready === undefined ? undefined : { ready }, headers);
  if (a.status !== 200) throw new Error(`index: ${a.status} ${a.text}`);
  return JSON.parse(a.text) as IndexEntry[];
}

/** A JSON inference body for `simple`: INPUT0 = 0..15, INPUT1 = 1 (so OUTPUT0 = INPUT0 + 1). */
export const SIMPLE_BODY = JSON.stringify({
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});

/** One inference on `simple` (any version); the status and the model_version answered. */
export async function inferSimple(url: string, model = 'simple'): Promise<{ status: number; version?: string; text: string }> {
  const res = await fetch(`${url}/v2/models/${model}/infer`, { method: 'POST', body: SIMPLE_BODY, headers: { 'Content-Type': 'application/json' } });
  const text = await res.text();
  if (res.status !== 200) return { status: res.status, text };
  const j = JSON.parse(text) as { model_version: string; outputs: { name: string; data: number[] }[] };
  const sum = j.outputs.find((o) => o.name === 'OUTPUT0')?.data;
  if (!sum || sum[3] !== 4) return { status: 599, text: `wrong result: ${text}` };
  return { status: 200, version: j.model_version, text };
}

/** Poll `check` until it returns true, at most `tries` times `everyMs` apart. */
export async function waitFor(what: string, check: () => Promise<boolean>, tries = 120, everyMs = 250): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** Threads of a process (Linux /proc/<pid>/task). */
export function threadCount(pid: number): number {
  return fs.readdirSync(`/proc/${pid}/task`).length;
}
