/**
 * Start to ready on a bucket of 10 models vs a local folder of the same
 * (issue 16): `node dist/bench/cloud-start.js [--mb=N] [--rounds=R]`.
 * Ten copies of `simple` (each with an N MiB file beside its model, 0 by
 * default, so the download is more than configs), uploaded to the real
 * s3rver on 127.0.0.1 (test/integration/s3-server.ts); servers started
 * alternately on the local folder, on the bucket with an empty cache
 * (every object downloaded) and on the bucket with the cache of the
 * previous start (a listing, nothing downloaded). Each is timed from spawn
 * until /v2/health/ready answers 200; medians of R rounds.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, startProc } from './bench-procs';
import { S3_KEY_ID, S3_REGION, S3_SECRET, startS3 } from '../test/integration/s3-server';

const ROOT = path.resolve(__dirname, '../..');
const CLI = path.join(ROOT, 'dist/src/cli.js');
const SIMPLE = path.join(ROOT, 'model_repository/simple');
const arg = (name: string, def: number): number => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? def);
const MODELS = 10;
const MB = arg('mb', 0);
const ROUNDS = arg('rounds', 3);

Object.assign(process.env, {
  AWS_ACCESS_KEY_ID: S3_KEY_ID,
  AWS_SECRET_ACCESS_KEY: S3_SECRET,
  AWS_DEFAULT_REGION: S3_REGION,
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_CONFIG_FILE: '/dev/null',
  AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
});

function makeRepo(dir: string): void {
  const config = fs.readFileSync(path.join(SIMPLE, 'config.pbtxt'), 'utf8');
  for (let i = 0; i < MODELS; i++) {
    const name = `simple_${i}`;
    fs.cpSync(SIMPLE, path.join(dir, name), { recursive: true });
    fs.writeFileSync(path.join(dir, name, 'config.pbtxt'), config.replace(/^name: "simple"/m, `name: "${name}"`));
    if (MB > 0) fs.writeFileSync(path.join(dir, name, '1', 'weights.bin'), Buffer.alloc(MB * 1024 * 1024, i));
  }
}

/** Start to ready, and the part of it the mirror took (its log line; 0 for a local folder). */
async function start(repository: string, cacheDir: string): Promise<{ ready: number; mirror: number }> {
  const port = await freePort();
  const proc = await startProc(
    process.execPath,
    [CLI, `--model-repository=${repository}`, `--model-cache-dir=${cacheDir}`, `--http-port=${port}`, '--allow-grpc=false', '--allow-metrics=false'],
    port,
  );
  await proc.stop();
  return { ready: proc.readyMs, mirror: Number(/mirrored into \S+ in (\d+) ms/.exec(proc.output())?.[1] ?? 0) };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-cloud-start-'));
  const local = path.join(tmp, 'local');
  fs.mkdirSync(local);
  makeRepo(local);
  const s3 = await startS3();
  try {
    await s3.createBucket('bench');
    await s3.upload('bench', 'models', local);
    const url = `s3://${s3.hostPort}/bench/models`;
    const rows: Record<string, { ready: number; mirror: number }[]> = { 'local folder': [], 'bucket, empty cache': [], 'bucket, warm cache': [] };
    for (let r = 0; r < ROUNDS; r++) {
      const cache = path.join(tmp, `cache-${r}`);
      rows['local folder'].push(await start(local, cache));
      rows['bucket, empty cache'].push(await start(url, cache));
      rows['bucket, warm cache'].push(await start(url, cache));
    }
    console.log(`${MODELS} models (simple + ${MB} MiB each), s3rver on 127.0.0.1, ${ROUNDS} rounds, ${os.cpus().length} cores`);
    for (const [what, xs] of Object.entries(rows)) {
      const ready = xs.map((x) => x.ready);
      const mirror = xs.map((x) => x.mirror);
      console.log(
        `${what.padEnd(20)} start to ready: median ${median(ready).toFixed(0)} ms (${ready.map((x) => x.toFixed(0)).join(', ')}); ` +
          `of it mirroring: median ${median(mirror)} ms (${mirror.join(', ')})`,
      );
    }
  } finally {
    await s3.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
