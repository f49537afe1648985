#!/usr/bin/env node
/**
 * `nodetron perf` (also `npm run perf -- ...` and `node dist/src/perf/cli.js`):
 * a perf_analyzer-style load tool for this server or any KServe v2 / Triton
 * endpoint. Exit 1 with a message naming the bad option or the failed call.
 */
import fs from 'node:fs';
import { parsePerfOptions, PerfUsageError, PERF_USAGE, type PerfOptions } from './perf-options';
import { openaiCsv, openaiSummaryTable, runOpenAIPerf } from './openai-perf';
import { runPerf } from './perf-runner';
import { summaryTable, toCsv } from './report';

export async function perfMain(argv: string[]): Promise<number> {
  let options;
  try {
    options = parsePerfOptions(argv);
  } catch (err) {
    if (err instanceof PerfUsageError) {
      process.stderr.write(`error: ${err.message} (see nodetron perf --help)\n`);
      return 1;
    }
    throw err;
  }
  if (options.help) {
    process.stdout.write(PERF_USAGE);
    return 0;
  }
  const o = options;
  if (o.serviceKind === 'openai') return openaiMain(o);
  const what = o.requestRate
    ? `request rate ${o.requestRate.start}:${o.requestRate.end}:${o.requestRate.step}`
    : `concurrency ${o.concurrency!.start}:${o.concurrency!.end}:${o.concurrency!.step}`;
  process.stdout.write(
    `*** Measurement Settings ***\n  model ${o.model}${o.version ? ` version ${o.version}` : ''}, ${o.protocol} ${o.url}, batch ${o.batchSize}, ` +
      `${o.protocol === 'http' ? `${o.inputFormat} input / ${o.outputFormat} output tensors, ` : ''}${what}, window ${o.measurementIntervalMs} ms, ` +
      `stability ${o.stabilityPercentage}%${o.percentile ? `, p${o.percentile} latency` : ''}` +
      `${o.windowRequests !== undefined ? `, count windows of ${o.windowRequests} requests` : ''}` +
      `${o.latencyThresholdMs !== undefined ? `, latency threshold ${o.latencyThresholdMs} ms` : ''}\n` +
      o.notes.map((n) => `  note: ${n}\n`).join('') +
      '\n',
  );
  try {
    const { results } = await runPerf(o, (line) => process.stdout.write(line + '\n'));
    process.stdout.write('\n' + summaryTable(results) + '\n');
    if (o.csvFile !== undefined) fs.writeFileSync(o.csvFile, toCsv(results));
    return 0;
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return 1;
  }
}

async function openaiMain(o: PerfOptions): Promise<number> {
  const c = o.concurrency!;
  process.stdout.write(
    `*** Measurement Settings ***\n  model ${o.model}, OpenAI POST ${o.url}/${o.endpoint} streamed, ` +
      `concurrency ${c.start}:${c.end}:${c.step}, ${o.requestCount !== undefined ? `${o.requestCount} requests` : `${o.measurementIntervalMs} ms`} per step, ` +
      `max_tokens ${o.maxTokens ?? "the model's"}\n  output tokens: the server's usage.completion_tokens when it sends it, else SSE content chunks\n` +
      o.notes.map((n) => `  note: ${n}\n`).join('') +
      '\n',
  );
  try {
    const results = await runOpenAIPerf(o, (line) => process.stdout.write(line + '\n'));
    process.stdout.write('\n' + openaiSummaryTable(results) + '\n');
    if (o.csvFile !== undefined) fs.writeFileSync(o.csvFile, openaiCsv(results));
    return results.some((r) => r.requests === 0) ? 1 : 0;
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return 1;
  }
}

if (require.main === module) {
  void perfMain(process.argv.slice(2)).then((code) => process.exit(code));
}
