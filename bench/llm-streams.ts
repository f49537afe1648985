/**
 * The example LLM (`model_repository/tiny_llm`, issue 18 item 4) streaming
 * over `generate_stream` at 1 and 8 concurrent streams: time to first token
 * (from sending the request to the first SSE event), tokens/s in total and
 * per stream, and the server's CPU (server + stub) per token. The real
 * server in explicit mode with only tiny_llm loaded, on a free loopback port;
 * each stream asks for `--tokens` tokens with its own seed; one warm-up
 * stream first; `--reps` rounds per concurrency, medians reported.
 *
 *   node dist/bench/llm-streams.js [--streams=1,8] [--tokens=200] [--reps=3]
 */
import { parseArgs } from 'node:util';
import { MODEL_REPOSITORY, startServer } from '../test/integration/server-process';
import { treeCpuSeconds } from './bench-procs';

const { values: opt } = parseArgs({
  options: { streams: { type: 'string', default: '1,8' }, tokens: { type: 'string', default: '200' }, reps: { type: 'string', default: '3' } },
});
const STREAMS = opt.streams.split(',').map(Number);
const TOKENS = Number(opt.tokens);
const REPS = Number(opt.reps);

interface Stream {
  ttftMs: number;
  totalMs: number;
  events: number;
}

async function stream(url: string, seed: number): Promise<Stream> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v2/models/tiny_llm/generate_stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text_input: 'The server streams', stream: true, parameters: { max_tokens: TOKENS, seed } }),
  });
  if (res.status !== 200 || res.body === null) throw new Error(`generate_stream answered ${res.status}: ${await res.text()}`);
  let ttftMs = 0;
  let events = 0;
  let tail = '';
  for await (const chunk of res.body) {
    const text = tail + Buffer.from(chunk).toString();
    const parts = text.split('\n\n');
    tail = parts.pop()!;
    for (const p of parts) {
      if (!p.startsWith('data: ')) continue;
      if (p.includes('"error"')) throw new Error(`stream error: ${p}`);
      events++;
      if (ttftMs === 0) ttftMs = performance.now() - t0;
    }
  }
  return { ttftMs, totalMs: performance.now() - t0, events };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const server = await startServer([
    `--model-repository=${MODEL_REPOSITORY}`,
    '--model-control-mode=explicit',
    '--load-model=tiny_llm',
    '--allow-metrics=false',
  ]);
  try {
    const pid = server.child.pid!;
    await stream(server.url, 0); // warm-up: the stub's first run
    console.log(`tiny_llm over generate_stream, ${TOKENS} tokens per stream, ${REPS} rounds per row, medians\n`);
    console.log(
      '| streams | time to first token | tokens/s, all streams | tokens/s per stream | server CPU per token (server + stub) |\n|---|---|---|---|---|',
    );
    for (const n of STREAMS) {
      const ttft: number[] = [];
      const total: number[] = [];
      const per: number[] = [];
      const cpu: number[] = [];
      for (let r = 0; r < REPS; r++) {
        const cpu0 = treeCpuSeconds(pid);
        const t0 = performance.now();
        const rs = await Promise.all(Array.from({ length: n }, (_, i) => stream(server.url, 1 + r * n + i)));
        const wallS = (performance.now() - t0) / 1000;
        const tokens = rs.reduce((a, s) => a + s.events, 0);
        if (tokens !== n * TOKENS) throw new Error(`expected ${n * TOKENS} events, got ${tokens}`);
        ttft.push(median(rs.map((s) => s.ttftMs)));
        total.push(tokens / wallS);
        per.push(median(rs.map((s) => s.events / (s.totalMs / 1000))));
        cpu.push(((treeCpuSeconds(pid) - cpu0) * 1e6) / tokens);
      }
      console.log(`| ${n} | ${median(ttft).toFixed(0)} ms | ${median(total).toFixed(0)} | ${median(per).toFixed(0)} | ${median(cpu).toFixed(0)} µs |`);
    }
  } finally {
    await server.stop({ checkArena: false });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
