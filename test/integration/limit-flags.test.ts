/**
 * nodetron's two limit flags, on a real server: --http-max-json-response-size
 * refuses an HTTP response whose JSON would pass it (400 naming the output,
 * the bound, the flag and the binary alternative) while binary outputs pass;
 * --exit-quiet-ms is the quiet window of the stop's serve phase (the server
 * still serves past the default 1 s, and says which window ended it).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MODEL_REPOSITORY, startServer } from './server-process';
import type { ServerProcess } from './server-process';

let server: ServerProcess;

before(async () => {
  server = await startServer([
    `--model-repository=${MODEL_REPOSITORY}`,
    '--load-model=simple',
    '--model-control-mode=explicit',
    '--http-max-json-response-size=150',
    '--exit-quiet-ms=3000',
  ]);
});

after(() => {
  if (server.child.exitCode === null) server.child.kill('SIGKILL');
});

const body = (binary: boolean): string =>
  JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
    ],
    ...(binary ? { parameters: { binary_data_output: true } } : {}),
  });

function infer(binary: boolean): Promise<Response> {
  return fetch(`${server.url}/v2/models/simple/infer`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: body(binary) });
}

test('--http-max-json-response-size: a JSON response past it is refused with the output, the bound and the fix; binary outputs pass', async () => {
  const refused = await infer(false);
  assert.equal(refused.status, 400);
  assert.deepEqual(await refused.json(), {
    error:
      "the JSON of output 'OUTPUT0' (16 elements) of model 'simple' would make the response larger than 150 bytes, " +
      'the most an HTTP inference response may carry as JSON (--http-max-json-response-size). Request the output in binary: ' +
      '"parameters":{"binary_data":true} on the output, or "binary_data_output":true in the request parameters (the tritonclient default).',
  });
  const binary = await infer(true);
  assert.equal(binary.status, 200);
  assert.ok(binary.headers.get('inference-header-content-length') !== null, 'outputs came in binary');
});

test('--exit-quiet-ms: an idle server keeps serving through its quiet window after SIGTERM, then says which window ended it and exits 0', async () => {
  const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
  server.child.kill('SIGTERM');
  // Past the default 1 s window, well inside this one: readiness says exiting, inference still answers.
  await new Promise((r) => setTimeout(r, 1500));
  const ready = await fetch(`${server.url}/v2/health/ready`);
  assert.equal(ready.status, 503, 'readiness turned non-200 at the signal');
  const served = await infer(true);
  assert.equal(served.status, 200, 'still serving 1.5 s after the signal');
  assert.equal(await exited, 0, server.output().slice(-3000));
  assert.match(server.output(), /Closing the endpoints: no inference in flight and none received for 3000 ms \(--exit-quiet-ms\)/);
});
