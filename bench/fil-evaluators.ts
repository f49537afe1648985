/**
 * How FIL's trees are evaluated, chosen by measurement (issue 17): nodetron's
 * TypeScript walk over the flat typed arrays (src/backends/fil/forest-predict.ts)
 * against ONNX Runtime's ai.onnx.ml TreeEnsembleRegressor holding the same
 * trees (bench/fil_bench_models.py `onnx` builds it from this forest), in
 * process, at batch 1 to 1,024, on one thread (what one instance thread
 * has) and, for ORT, on all cores. Checks both give the same sums first.
 * Usage: node dist/bench/fil-evaluators.js [seconds=2]
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { DEFAULT_LEFT, LESS_EQUAL } from '../src/backends/fil/forest';
import type { Forest } from '../src/backends/fil/forest';
import { sumTrees } from '../src/backends/fil/forest-predict';
import { readForest } from '../src/backends/fil/model-file';
import { REPO_ROOT } from '../test/integration/server-process';

const SECONDS = Number(process.argv[2] ?? 2);
const SCRIPT = path.join(REPO_ROOT, 'bench/fil_bench_models.py');

/** The forest as TreeEnsembleRegressor attributes (numerical splits only, as the bench model has). */
function onnxAttributes(f: Forest): Record<string, unknown> {
  const a = {
    features: f.numFeatures,
    treeids: [] as number[],
    nodeids: [] as number[],
    featureids: [] as number[],
    values: [] as number[],
    modes: [] as string[],
    trueids: [] as number[],
    falseids: [] as number[],
    missing_true: [] as number[],
    target_treeids: [] as number[],
    target_nodeids: [] as number[],
    target_weights: [] as number[],
  };
  for (let t = 0; t < f.roots.length; t++) {
    const root = f.roots[t]!;
    const end = t + 1 < f.roots.length ? f.roots[t + 1]! : f.feature.length;
    for (let n = root; n < end; n++) {
      const leaf = f.feature[n]! < 0;
      a.treeids.push(t);
      a.nodeids.push(n - root);
      a.featureids.push(leaf ? 0 : f.feature[n]!);
      a.values.push(leaf ? 0 : f.value[n]!);
      a.modes.push(leaf ? 'LEAF' : (f.flags[n]! & LESS_EQUAL) !== 0 ? 'BRANCH_LEQ' : 'BRANCH_LT');
      a.trueids.push(leaf ? 0 : f.left[n]! - root);
      a.falseids.push(leaf ? 0 : f.right[n]! - root);
      a.missing_true.push((f.flags[n]! & DEFAULT_LEFT) !== 0 ? 1 : 0);
      if (leaf) {
        a.target_treeids.push(t);
        a.target_nodeids.push(n - root);
        a.target_weights.push(f.value[n]!);
      }
    }
  }
  return a;
}

function rowsOf(batch: number, features: number): Float32Array {
  const x = new Float32Array(batch * features);
  for (let i = 0; i < x.length; i++) x[i] = Math.sin(i * 12.9898) * 2;
  return x;
}

function rate(fn: () => void, batch: number): number {
  const warm = performance.now() + 300;
  while (performance.now() < warm) fn();
  let calls = 0;
  const t0 = performance.now();
  const end = t0 + SECONDS * 1000;
  while (performance.now() < end) {
    fn();
    calls++;
  }
  return (calls * batch) / ((performance.now() - t0) / 1000);
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-fil-eval-'));
  try {
    if (spawnSync('python3', [SCRIPT, 'lightgbm', dir], { stdio: 'inherit' }).status !== 0) throw new Error('model generation failed');
    const forest = readForest('lgb_bench', path.join(dir, 'lgb_bench/1/model.txt'), 'lightgbm');
    fs.writeFileSync(path.join(dir, 'forest.json'), JSON.stringify(onnxAttributes(forest)));
    if (spawnSync('python3', [SCRIPT, 'onnx', path.join(dir, 'forest.json'), path.join(dir, 'forest.onnx')], { stdio: 'inherit' }).status !== 0)
      throw new Error('onnx export failed');
    const nf = forest.numFeatures;
    const sessions = new Map<number, ort.InferenceSession>();
    for (const threads of [1, os.availableParallelism()]) {
      sessions.set(
        threads,
        await ort.InferenceSession.create(path.join(dir, 'forest.onnx'), {
          intraOpNumThreads: threads,
          interOpNumThreads: 1,
          extra: { 'session.intra_op.allow_spinning': '0' },
        }),
      );
    }
    // Same sums from both (ORT keeps float32 thresholds and sums, so a row whose feature sits on a threshold may differ).
    const check = rowsOf(1024, nf);
    const sums = new Float64Array(1024);
    sumTrees(forest, check, 1024, sums);
    const y = (await sessions.get(1)!.run({ X: new ort.Tensor('float32', check, [1024, nf]) })).Y!.data as Float32Array;
    const worst = sums.reduce((w, s, i) => Math.max(w, Math.abs(s - y[i]!)), 0);
    console.log(`largest |TS - ORT| over 1024 rows: ${worst.toExponential(2)}`);
    const lines: string[] = [];
    for (const batch of [1, 16, 64, 256, 1024]) {
      const x = rowsOf(batch, nf);
      const out = new Float64Array(batch);
      const ts = rate(() => sumTrees(forest, x, batch, out), batch);
      const feeds = { X: new ort.Tensor('float32', x, [batch, nf]) };
      const ortRate = async (threads: number): Promise<number> => {
        const s = sessions.get(threads)!;
        const warm = performance.now() + 300;
        while (performance.now() < warm) await s.run(feeds);
        let calls = 0;
        const t0 = performance.now();
        while (performance.now() < t0 + SECONDS * 1000) {
          await s.run(feeds);
          calls++;
        }
        return (calls * batch) / ((performance.now() - t0) / 1000);
      };
      const o1 = await ortRate(1);
      const oAll = await ortRate(os.availableParallelism());
      lines.push(`| ${batch} | ${ts.toFixed(0)} | ${o1.toFixed(0)} | ${oAll.toFixed(0)} |`);
    }
    console.log(`\nLightGBM binary, ${forest.roots.length} trees, ${nf} features; rows/s, ${SECONDS} s each\n`);
    console.log(`| rows per call | TypeScript, 1 thread | ORT TreeEnsembleRegressor, 1 thread | ORT, ${os.availableParallelism()} threads |`);
    console.log('|---:|---:|---:|---:|');
    for (const l of lines) console.log(l);
    for (const s of sessions.values()) await s.release();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
