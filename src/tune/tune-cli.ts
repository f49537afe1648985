/**
 * `nodetron tune -m MODEL --model-repository DIR` (or `-u HOST:PORT`): the
 * command around tune-runner.ts. It starts or finds the server, shows a
 * progress bar on a terminal (a line per config otherwise), prints the
 * results as a table, CSV or JSON, and writes config.tuned.pbtxt next to
 * the model (config.pbtxt too with --write). Exit 1 with a message naming
 * what is wrong: a bad option, a model it cannot tune and why, a failed load.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ModelConfig } from '../core/model-config';
import { parseModelConfigText } from '../repository/config/pbtxt';
import { formatModelConfigText } from '../repository/config/pbtxt-writer';
import type { Trial } from './tune-objective';
import { score } from './tune-objective';
import { parseTuneOptions, TuneUsageError, TUNE_USAGE, type TuneOptions } from './tune-options';
import { tuneCsv, tunedHeader, tuneJson, tuneTable } from './tune-report';
import { runTune, TuneRefused, type TuneProgress, type TuneResult } from './tune-runner';
import { remoteServer, startServer, type TuneServer } from './tune-server';
import { candidateLabel } from './tune-space';

export interface TuneIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Whether stderr is a terminal (the progress bar) or not (a line per config). */
  tty: boolean;
}

function clock(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** The progress bar (a terminal) or a line per config (anything else), on stderr. */
export function progressFor(io: TuneIo, budgetMs: number): TuneProgress {
  const start = Date.now();
  const bar = (): string => {
    const f = Math.min(1, (Date.now() - start) / budgetMs);
    const n = Math.round(f * 20);
    return `[${'#'.repeat(n)}${'-'.repeat(20 - n)}] ${clock(Date.now() - start)} elapsed, ${clock(budgetMs - (Date.now() - start))} left`;
  };
  const summary = (t: Trial): string => {
    const p = t.points[t.chosen];
    if (t.error !== undefined) return `did not load: ${t.error.split('\n')[0]}`;
    if (p === undefined) return 'no qualifying point';
    return `${score(t).toFixed(1)} infer/s at concurrency ${p.concurrency}, p99 ${(p.p99Us / 1000).toFixed(3)} ms`;
  };
  return {
    start: (total) => io.stderr(`tune: ${total} configs in the coarse grid, then one change at a time around the best\n`),
    point: (i, total, label, conc) => {
      if (io.tty) io.stderr(`\r\x1b[K${bar()} config ${i + 1}/${total}: ${label}, concurrency ${conc}`);
    },
    trial: (t, i, total) => {
      const text = `config ${i + 1}/${total} ${candidateLabel(t.candidate)}: ${summary(t)}`;
      io.stderr(io.tty ? `\r\x1b[K${text}\n` : `tune: ${text}\n`);
    },
    note: (text) => io.stderr(io.tty ? `\r\x1b[K${text}\n` : `tune: ${text}\n`),
  };
}

/** The model's own config.pbtxt, when the repository is a local folder that has one. */
function fileConfig(o: TuneOptions): { config: ModelConfig; file: string } | undefined {
  if (o.repository === undefined || o.repository.includes('://')) return undefined;
  const file = path.join(o.repository, o.model, 'config.pbtxt');
  if (!fs.existsSync(file)) return undefined;
  return { config: parseModelConfigText(fs.readFileSync(file, 'utf8'), file), file };
}

/** config.tuned.pbtxt always; config.pbtxt too with --write when the winner is not the shipped config. Returns the paths written. */
function writeTuned(o: TuneOptions, r: TuneResult, text: string, io: TuneIo): string[] {
  if (o.repository === undefined || o.repository.includes('://')) {
    io.stderr('tune: config.tuned.pbtxt not written: give --model-repository DIR (a local folder) to have it next to the model\n');
    return [];
  }
  const dir = path.join(o.repository, o.model);
  const tuned = path.join(dir, 'config.tuned.pbtxt');
  fs.writeFileSync(tuned, text);
  const written = [tuned];
  if (o.write) {
    const config = path.join(dir, 'config.pbtxt');
    if (r.verdict.shippedIsBest) {
      io.stderr(`tune: --write: ${config} left as it is, the shipped config is best\n`);
    } else {
      const orig = config + '.orig';
      if (fs.existsSync(config) && !fs.existsSync(orig)) {
        fs.copyFileSync(config, orig);
        written.push(orig);
      }
      fs.writeFileSync(config, text);
      written.push(config);
    }
  }
  return written;
}

export async function tuneMain(argv: string[], io: TuneIo): Promise<number> {
  let o: TuneOptions;
  try {
    o = parseTuneOptions(argv);
  } catch (err) {
    if (err instanceof TuneUsageError) {
      io.stderr(`error: ${err.message} (see nodetron tune --help)\n`);
      return 1;
    }
    throw err;
  }
  if (o.help) {
    io.stdout(TUNE_USAGE);
    return 0;
  }
  let own: { config: ModelConfig; file: string } | undefined;
  try {
    own = fileConfig(o);
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 1;
  }
  let server: TuneServer;
  try {
    server = o.url !== undefined ? await remoteServer(o.url) : await startServer(o.repository!, o.serverArgs);
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 1;
  }
  const interrupted = (): void => {
    io.stderr('\ntune: interrupted; stopping\n');
    void server.stop().then(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    const r = await runTune(o, server, own?.config, progressFor(io, o.budgetMinutes * 60_000));
    const text = tunedHeader(r, new Date()) + formatModelConfigText(r.tunedConfig);
    const written = writeTuned(o, r, text, io);
    if (o.format === 'json') io.stdout(tuneJson(r, text, written));
    else if (o.format === 'csv') io.stdout(tuneCsv(r));
    else io.stdout('\n' + tuneTable(r) + written.map((f) => `Wrote ${f}\n`).join(''));
    return 0;
  } catch (err) {
    io.stderr(`error: ${err instanceof TuneRefused ? 'tune cannot tune this model: ' : ''}${(err as Error).message}\n`);
    return 1;
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    if (o.url !== undefined) {
      // Back to the repository's config (the tuned one, after --write).
      await server
        .load(o.model, undefined)
        .catch((err: Error) => io.stderr(`tune: reloading '${o.model}' with its repository config failed: ${err.message}\n`));
    }
    await server.stop();
  }
}
