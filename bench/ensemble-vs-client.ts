/**
 * `simple_ensemble` (two steps of `simple` inside the server) against the
 * same pipeline driven from the client: two HTTP calls to `simple`, the
 * second fed with the first's OUTPUT0/OUTPUT1. Same server start, same
 * closed-loop client (keep-alive node:http, JSON tensors), concurrency 1 and
 * 16, side by side; every answer is checked (OUTPUT0 = 2*INPUT0, OUTPUT1 =
 * 2*INPUT1). A "request" below is one full pipeline. Usage:
 *   node dist/bench/ensemble-vs-client.js [seconds=5]
 */
import http from 'node:http';
import { MODEL_REPOSITORY, startServer } from '../test/integration/server-process';

const IN0 = Array.from({ length: 16 }, (_, i) => i);
const IN1 = Array.from({ length: 16 }, (_, i) => 3 * i + 1);

type Post = (path: string, body: string) => Promise<{ status: number; json: { outputs?: { name: string; data: number[] }[] } }>;

function poster(url: string, concurrency: number): { post: Post; close: () => void } {
  const u = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const post: Post = (path, body) =>
    new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: u.hostname,
          port: u.port,
          path,
          method: 'POST',
          agent,
          headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString()) as never }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return { post, close: () => agent.destroy() };
}

function body(a: number[], b: number[]): string {
  return JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: a },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: b },
    ],
  });
}

function outputs(r: Awaited<ReturnType<Post>>, what: string): [number[], number[]] {
  if (r.status !== 200) throw new Error(`${what}: HTTP ${r.status} ${JSON.stringify(r.json)}`);
  const o = r.json.outputs ?? [];
  return [o.find((t) => t.name === 'OUTPUT0')!.data, o.find((t) => t.name === 'OUTPUT1')!.data];
}

function check([o0, o1]: [number[], number[]]): void {
  for (let i = 0; i < 16; i++) {
    if (o0[i] !== 2 * IN0[i]! || o1[i] !== 2 * IN1[i]!) throw new Error(`wrong answer: ${JSON.stringify([o0, o1])}`);
  }
}

const pipelines: Record<string, (post: Post) => Promise<void>> = {
  'simple_ensemble (in server)': async (post) => {
    check(outputs(await post('/v2/models/simple_ensemble/infer', body(IN0, IN1)), 'simple_ensemble'));
  },
  'client: simple → simple': async (post) => {
    const [sum, diff] = outputs(await post('/v2/models/simple/infer', body(IN0, IN1)), 'simple step 1');
    check(outputs(await post('/v2/models/simple/infer', body(sum, diff)), 'simple step 2'));
  },
};

interface Row {
  pipeline: string;
  concurrency: number;
  rps: number;
  p50: number;
  p99: number;
  n: number;
}

async function measure(url: string, name: string, concurrency: number, seconds: number): Promise<Row> {
  const { post, close } = poster(url, concurrency);
  const run = pipelines[name]!;
  const loop = async (until: number, lat: number[] | null): Promise<void> => {
    while (Date.now() < until) {
      const t0 = performance.now();
      await run(post);
      lat?.push(performance.now() - t0);
    }
  };
  const warm = Date.now() + 500;
  await Promise.all(Array.from({ length: concurrency }, () => loop(warm, null)));
  const lat: number[] = [];
  const t0 = performance.now();
  const end = Date.now() + seconds * 1000;
  await Promise.all(Array.from({ length: concurrency }, () => loop(end, lat)));
  const elapsed = (performance.now() - t0) / 1000;
  close();
  lat.sort((a, b) => a - b);
  const q = (p: number): number => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? 0;
  return { pipeline: name, concurrency, rps: lat.length / elapsed, p50: q(0.5), p99: q(0.99), n: lat.length };
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 5);
  const server = await startServer([
    `--model-repository=${MODEL_REPOSITORY}`,
    '--model-control-mode=explicit',
    '--load-model=simple',
    '--load-model=simple_ensemble',
  ]);
  const rows: Row[] = [];
  try {
    for (const concurrency of [1, 16]) {
      for (const name of Object.keys(pipelines)) {
        const r = await measure(server.url, name, concurrency, seconds);
        rows.push(r);
        console.log(`${r.pipeline} c=${concurrency}: ${r.rps.toFixed(0)} pipelines/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms (${r.n})`);
      }
    }
  } finally {
    await server.stop();
  }
  console.log('\n| pipeline | concurrency | pipelines/s | p50 ms | p99 ms |\n|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.pipeline} | ${r.concurrency} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} |`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
