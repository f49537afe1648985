/**
 * `nodetron perf --service-kind openai` (perf_analyzer's and genai-perf's
 * name for it): a closed loop of streamed `/v1/chat/completions` or
 * `/v1/completions` requests at each concurrency of `--concurrency-range`,
 * each step for `--measurement-interval` ms or `--request-count` requests,
 * measured as genai-perf does (openai-stream-math.ts). One request first
 * checks the endpoint, and its error is the message when it fails.
 */
import { buildHttpRequest } from './http-conn';
import { openaiRequestBody, readStreamEvent, stepMetrics, type OpenAIStepResult, type StreamRecord } from './openai-stream-math';
import { rangeSteps, type PerfOptions } from './perf-options';
import { SseConn } from './sse-conn';
import { splitUrl } from './perf-runner';

const ORIGIN = process.hrtime.bigint();
const nowNs = (): number => Number(process.hrtime.bigint() - ORIGIN);

/** The request's bytes, built once for the whole run. */
export function openaiRequestBytes(o: PerfOptions): Buffer {
  const { host, port } = splitUrl(o.url);
  const body = openaiRequestBody({ model: o.model, endpoint: o.endpoint, prompt: o.prompt, maxTokens: o.maxTokens, extra: o.extraInputs });
  return buildHttpRequest(`${host}:${port}`, `/${o.endpoint}`, { 'Content-Type': 'application/json', Accept: 'text/event-stream' }, Buffer.from(body));
}

/** One streamed request on `conn`: when each content chunk came, the usage, or what went wrong. */
async function streamOnce(conn: SseConn, request: Buffer): Promise<StreamRecord> {
  const rec: StreamRecord = { startNs: nowNs(), chunkNs: [], endNs: 0, usageTokens: undefined, error: undefined };
  let done = false;
  try {
    const answer = await conn.send(request, (data, at) => {
      const e = readStreamEvent(data);
      if (e.kind === 'content') rec.chunkNs.push(Number(at - ORIGIN));
      else if (e.kind === 'usage') rec.usageTokens = e.completionTokens;
      else if (e.kind === 'error') rec.error ??= e.message;
      else if (e.kind === 'done') done = true;
    });
    if (answer.status !== 200) rec.error = `HTTP ${answer.status}: ${(answer.text ?? '').slice(0, 500)}`;
    else if (!done) rec.error ??= 'the stream ended without data: [DONE]';
  } catch (err) {
    rec.error = (err as Error).message;
  }
  rec.endNs = nowNs();
  return rec;
}

/** A worker's connection, opened again after the server closed it. */
class Worker {
  private conn: SseConn | undefined;
  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}
  async run(request: Buffer): Promise<StreamRecord> {
    this.conn ??= await SseConn.open(this.host, this.port);
    const r = await streamOnce(this.conn, request);
    if (r.error !== undefined && !r.error.startsWith('HTTP ')) {
      this.conn.close(); // the connection's state is not known any more
      this.conn = undefined;
    }
    return r;
  }
  close(): void {
    this.conn?.close();
  }
}

export async function runOpenAIPerf(o: PerfOptions, log: (line: string) => void = () => undefined): Promise<OpenAIStepResult[]> {
  const { host, port } = splitUrl(o.url);
  const request = openaiRequestBytes(o);
  const workers: Worker[] = [];
  try {
    const probe = new Worker(host, port);
    workers.push(probe);
    const first = await probe.run(request).catch((err: Error) => ({ error: `could not connect to ${host}:${port}: ${err.message}` }));
    if (first.error !== undefined) throw new Error(`first request to POST /${o.endpoint} failed: ${first.error}`);
    const results: OpenAIStepResult[] = [];
    for (const c of rangeSteps(o.concurrency!)) {
      while (workers.length < c) workers.push(new Worker(host, port));
      const records: StreamRecord[] = [];
      const start = nowNs();
      const deadline = start + o.measurementIntervalMs * 1e6;
      let started = 0;
      const more = (): boolean => (o.requestCount !== undefined ? started < o.requestCount : nowNs() < deadline);
      await Promise.all(
        workers.slice(0, c).map(async (w) => {
          while (more()) {
            started++;
            records.push(await w.run(request));
          }
        }),
      );
      const end = records.reduce((m, r) => Math.max(m, r.endNs), start);
      const r = stepMetrics(c, records, (end - start) / 1e9);
      results.push(r);
      log(openaiStepLine(r));
    }
    return results;
  } finally {
    for (const w of workers) w.close();
  }
}

const f1 = (n: number): string => n.toFixed(1);
const f2 = (n: number): string => n.toFixed(2);

export function openaiStepLine(r: OpenAIStepResult): string {
  return (
    `Concurrency: ${r.concurrency}, ${r.requests} requests in ${r.seconds.toFixed(2)} s: ${f2(r.requestsPerSec)} req/s, ` +
    `${f1(r.outputTokensPerSec)} output tokens/s (${r.tokenSource === 'usage' ? 'usage.completion_tokens' : 'SSE content chunks'}), ` +
    `time to first token avg ${f2(r.ttftMs.avg)} ms p50 ${f2(r.ttftMs.p50)} p90 ${f2(r.ttftMs.p90)} p99 ${f2(r.ttftMs.p99)}, ` +
    `inter-token latency avg ${f2(r.itlMs.avg)} ms p50 ${f2(r.itlMs.p50)} p90 ${f2(r.itlMs.p90)} p99 ${f2(r.itlMs.p99)}, ` +
    `errors ${r.errors}${r.firstError === undefined ? '' : ` (first: ${r.firstError})`}`
  );
}

/** The summary, one row per concurrency. */
export function openaiSummaryTable(results: readonly OpenAIStepResult[]): string {
  const lines = [
    '| conc | req/s | output tok/s | TTFT avg ms | TTFT p50 | TTFT p90 | TTFT p99 | ITL avg ms | ITL p50 | ITL p90 | ITL p99 | latency p99 ms | tokens/req | errors |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    lines.push(
      `| ${r.concurrency} | ${f2(r.requestsPerSec)} | ${f1(r.outputTokensPerSec)} | ${f2(r.ttftMs.avg)} | ${f2(r.ttftMs.p50)} | ${f2(r.ttftMs.p90)} | ${f2(r.ttftMs.p99)} | ` +
        `${f2(r.itlMs.avg)} | ${f2(r.itlMs.p50)} | ${f2(r.itlMs.p90)} | ${f2(r.itlMs.p99)} | ${f1(r.latencyMs.p99)} | ${f1(r.outputTokensPerRequest)} | ${r.errors} |`,
    );
  }
  const src = results[0]?.tokenSource;
  lines.push(
    src === 'chunks'
      ? '(output tokens: SSE content chunks; the server sent no usage)'
      : "(output tokens: the server's usage.completion_tokens, counted with the model's tokenizer; ITL is per content chunk)",
  );
  return lines.join('\n');
}

/** -f: genai-perf's metric names as columns, times in ms. */
export function openaiCsv(results: readonly OpenAIStepResult[]): string {
  const head = [
    'Concurrency',
    'Request Throughput (per sec)',
    'Output Token Throughput (per sec)',
    'Time To First Token avg (ms)',
    'Time To First Token p50 (ms)',
    'Time To First Token p90 (ms)',
    'Time To First Token p99 (ms)',
    'Inter Token Latency avg (ms)',
    'Inter Token Latency p50 (ms)',
    'Inter Token Latency p90 (ms)',
    'Inter Token Latency p99 (ms)',
    'Request Latency avg (ms)',
    'Request Latency p99 (ms)',
    'Output Sequence Length avg',
    'Requests',
    'Errors',
    'Token Source',
  ];
  const rows = results.map((r) =>
    [
      r.concurrency,
      f2(r.requestsPerSec),
      f2(r.outputTokensPerSec),
      f2(r.ttftMs.avg),
      f2(r.ttftMs.p50),
      f2(r.ttftMs.p90),
      f2(r.ttftMs.p99),
      f2(r.itlMs.avg),
      f2(r.itlMs.p50),
      f2(r.itlMs.p90),
      f2(r.itlMs.p99),
      f2(r.latencyMs.avg),
      f2(r.latencyMs.p99),
      f2(r.outputTokensPerRequest),
      r.requests,
      r.errors,
      r.tokenSource,
    ].join(','),
  );
  return [head.join(','), ...rows].join('\n') + '\n';
}
