/**
 * Shipped config against the config `nodetron tune` writes, side by side in
 * one run (issue 34): for each model, tune it (the real CLI, `--budget-minutes`
 * each), then on one server in explicit mode load the shipped and the tuned
 * config in turn (the load API's override, as tune does), each measured at
 * the concurrency tune chose for it, alternated for `--rounds` rounds (the
 * order turned each round);
 * medians of req/s, p99 and server CPU per request.
 *
 *   npx tsc -b && node dist/bench/tune-compare.js [--budget-minutes 1.5] [--rounds 3] [--models simple,add_vectors]
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseModelConfigText } from '../src/repository/config/pbtxt';
import { parseTuneOptions } from '../src/tune/tune-options';
import { measurePoint, openMeasurer } from '../src/tune/tune-runner';
import { startServer } from '../src/tune/tune-server';
import type { Point } from '../src/tune/tune-objective';

const ROOT = path.resolve(__dirname, '../..');
const CLI = path.join(ROOT, 'dist/src/cli.js');

/** Extra tune/perf arguments a model needs (variable dims). */
const MODEL_ARGS: Record<string, string[]> = {
  add_vectors: ['--shape', 'INPUT0:16', '--shape', 'INPUT1:16'],
};

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1]! : dflt;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

interface Tuned {
  model: string;
  verdict: string;
  shippedConfig: string;
  tunedConfig: string;
  shippedConcurrency: number;
  tunedConcurrency: number;
  tuneSeconds: number;
}

async function main(): Promise<void> {
  const budget = arg('--budget-minutes', '1.5');
  const rounds = Number(arg('--rounds', '3'));
  const models = arg('--models', 'simple,dense_classifier,add_vectors,fil_lightgbm,fil_xgboost').split(',');
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-tune-bench-'));
  try {
    for (const m of models) fs.cpSync(path.join(ROOT, 'model_repository', m), path.join(repo, m), { recursive: true });
    const tuned: Tuned[] = [];
    for (const m of models) {
      const t0 = Date.now();
      const r = spawnSync(
        process.execPath,
        [CLI, 'tune', '-m', m, '--model-repository', repo, '--budget-minutes', budget, '--format', 'json', ...(MODEL_ARGS[m] ?? [])],
        {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'inherit'],
          maxBuffer: 64 << 20,
        },
      );
      if (r.status !== 0) throw new Error(`tune ${m} failed (${r.status})`);
      const j = JSON.parse(r.stdout) as Record<string, any>;
      const conc = (t: any): number => t.points[t.chosen_point].concurrency as number;
      tuned.push({
        model: m,
        verdict: j.verdict.text,
        shippedConfig: j.shipped.config,
        tunedConfig: j.winner.config,
        shippedConcurrency: conc(j.shipped),
        tunedConcurrency: conc(j.winner),
        tuneSeconds: (Date.now() - t0) / 1000,
      });
    }

    const server = await startServer(repo, []);
    const rows: string[] = [];
    try {
      for (const t of tuned) {
        const configJson = (file: string): string => JSON.stringify(parseModelConfigText(fs.readFileSync(path.join(repo, t.model, file), 'utf8'), file));
        const configs = [
          { name: 'shipped', json: configJson('config.pbtxt'), concurrency: t.shippedConcurrency },
          { name: 'tuned', json: configJson('config.tuned.pbtxt'), concurrency: t.tunedConcurrency },
        ];
        const o = parseTuneOptions(['-m', t.model, '-u', server.address, '-p', '1000', ...(MODEL_ARGS[t.model] ?? [])]);
        await server.load(t.model, configs[0]!.json);
        const maxBatch = Number((await server.config(t.model)).max_batch_size ?? 0);
        const m = await openMeasurer(o, server, maxBatch);
        const points: Point[][] = [[], []];
        try {
          // ABBA: the config measured second in a round ran up to 11% faster in a first run (warmer caches, JIT), so the order turns each round.
          for (let r = 0; r < rounds; r++) {
            for (const i of r % 2 === 0 ? [0, 1] : [1, 0]) {
              const c = configs[i]!;
              await server.load(t.model, c.json);
              points[i]!.push(await measurePoint(o, server, m, c.concurrency));
            }
          }
        } finally {
          m.transport.close();
          m.probe.close();
        }
        const [s, u] = points.map((ps) => ({
          rps: median(ps.map((p) => p.throughput)),
          p99: median(ps.map((p) => p.p99Us / 1000)),
          cpu: median(ps.map((p) => p.cpuUsPerRequest ?? NaN)),
          all: ps.map((p) => p.throughput.toFixed(0)).join('/'),
        }));
        rows.push(
          `| ${t.model} | ${t.shippedConfig} @c=${t.shippedConcurrency} | ${t.tunedConfig} @c=${t.tunedConcurrency} | ` +
            `${s!.rps.toFixed(0)} (${s!.all}) | ${u!.rps.toFixed(0)} (${u!.all}) | ${(u!.rps / s!.rps).toFixed(2)}x | ` +
            `${s!.p99.toFixed(2)} / ${u!.p99.toFixed(2)} | ${s!.cpu.toFixed(0)} / ${u!.cpu.toFixed(0)} | ${t.tuneSeconds.toFixed(0)} s: ${t.verdict} |`,
        );
        console.error(rows[rows.length - 1]);
      }
    } finally {
      await server.stop();
    }
    console.log(
      `\nshipped vs tuned, ${os.availableParallelism()} cores, tune --budget-minutes ${budget} each, ${rounds} rounds in turned order (ABBA) of 1000 ms windows (medians; each round in brackets)\n`,
    );
    console.log(
      '| model | shipped | tuned | shipped req/s | tuned req/s | tuned/shipped | p99 ms shipped / tuned | server CPU us/req shipped / tuned | tune took, verdict |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
