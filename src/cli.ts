#!/usr/bin/env -S node --max-semi-space-size=4
/**
 * The `tritonserver`-compatible executable: parse the command line, then hand
 * the options to the server. Exit status 1 on a command-line error or when
 * the server fails to start, with Triton's stderr texts (protocol.md §4.4).
 */
import fs from 'node:fs';
import os from 'node:os';
import { CliError, CliExit, formatCliError, parseServerOptions, type ServerOptions } from './cli-options';
import { CODE_WORDS, toErrorInfo } from './core/errors';

function fail(text: string): never {
  // Synchronous, so the text is out before exit whatever stderr is.
  fs.writeSync(2, text);
  process.exit(1);
}

async function main(): Promise<void> {
  // `nodetron perf ...`: the load tool (src/perf/), not the server.
  if (process.argv[2] === 'perf') {
    const { perfMain } = require('./perf/cli') as typeof import('./perf/cli');
    process.exit(await perfMain(process.argv.slice(3)));
  }
  // `nodetron tune -m <model> ...`: measure candidate configs on a server and write the fastest (src/tune/).
  if (process.argv[2] === 'tune') {
    const { tuneMain } = require('./tune/tune-cli') as typeof import('./tune/tune-cli');
    process.exit(
      await tuneMain(process.argv.slice(3), {
        stdout: (text) => fs.writeSync(1, text),
        stderr: (text) => fs.writeSync(2, text),
        tty: process.stderr.isTTY === true,
      }),
    );
  }
  // `nodetron lint <repository>`: what the server would say about it, without serving (src/lint/).
  if (process.argv[2] === 'lint') {
    const { lintMain } = require('./lint/lint-cli') as typeof import('./lint/lint-cli');
    process.exit(await lintMain(process.argv.slice(3), (text) => fs.writeSync(1, text)));
  }
  // `nodetron infer -m <model> ...`: one request, to a running server or to one started here (src/client/infer-cli.ts).
  if (process.argv[2] === 'infer') {
    const { inferMain } = require('./client/infer-cli') as typeof import('./client/infer-cli');
    process.exit(
      await inferMain(process.argv.slice(3), startForOneRequest, {
        stdout: (text) => fs.writeSync(1, text),
        stderr: (text) => fs.writeSync(2, text),
      }),
    );
  }
  let options: ServerOptions;
  try {
    options = parseServerOptions(process.argv.slice(2));
  } catch (err) {
    if (err instanceof CliExit) {
      fs.writeSync(1, err.text);
      process.exit(0);
    }
    if (err instanceof CliError) fail(formatCliError(err));
    throw err;
  }
  // options.warnings (deprecated and ignored flags) are logged by startServer.

  // Loaded only after the command line is valid: --help and usage errors stay
  // fast and do not load native addons.
  const { startServer } = require('./server') as typeof import('./server');
  (require('./backends/onnxruntime/ort-leftovers') as typeof import('./backends/onnxruntime/ort-leftovers')).removeOrtLeftoversAtExit();
  // SIGINT/SIGTERM: the graceful stop (server-stop.ts): readiness non-200 at
  // once, requests served through the grace period, endpoints closed, models
  // unloaded, exit 0 within --exit-timeout-secs; 1 with Triton's text when
  // the timeout had to cut requests or kill instances. A second signal stops
  // now (endpoints closed, instances killed), exit 1. The process only exits
  // once no thread holds a socket and no instance runs: exiting with a uWS
  // socket or a busy native session still open aborts it (134/139).
  // A signal while the models load is kept, as Triton does: the stop starts
  // once the server is up (a second one ends the start at once).
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let signalled = false;
  const stop = (running: NonNullable<typeof server>): void => {
    // Should a stop hang (a thread stuck in native code), the process still ends.
    setTimeout(
      () => fail('error: failed to stop server: Internal - the stop did not finish. Exiting immediately.\n'),
      (options.exitTimeoutSecs + HARD_EXIT_GRACE_SECS) * 1000,
    ).unref();
    running.stop().then(
      (outcome) => (outcome.clean ? process.exit(0) : fail('error: failed to stop server: Internal - Exit timeout expired. Exiting immediately.\n')),
      (err: unknown) => fail(`error: failed to stop server: ${toErrorInfo(err).message}\n`),
    );
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    server?.log.info(`Signal (${os.constants.signals[signal]}) received.`);
    if (signalled) {
      if (server === undefined) fail('error: second signal received, exiting immediately\n');
      void server.forceStop().finally(() => fail('error: second signal received, exiting immediately\n'));
      return;
    }
    signalled = true;
    if (server !== undefined) stop(server);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    server = await startServer(options);
  } catch (err) {
    const { code, message } = toErrorInfo(err);
    fail(`error: creating server: ${CODE_WORDS[code]} - ${message}\n`);
  }
  if (signalled) stop(server);
}

/** After --exit-timeout-secs, how long a stop that should be over (it kills what is left at the timeout) may still take. */
const HARD_EXIT_GRACE_SECS = 10;

main().catch((err: unknown) => {
  fail(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
});

/** `nodetron infer --model-repository`: a quiet server on free loopback ports with the one model loaded. */
async function startForOneRequest(repository: string, model: string): Promise<{ url: string; stop(): Promise<void> }> {
  const { startServer } = require('./server') as typeof import('./server');
  const options = parseServerOptions([
    `--model-repository=${repository}`,
    '--model-control-mode=explicit',
    `--load-model=${model}`,
    '--http-address=127.0.0.1',
    '--http-port=0',
    '--http-thread-count=1',
    '--allow-grpc=false',
    '--allow-metrics=false',
    '--log-info=false',
    '--log-warning=false',
  ]);
  const server = await startServer(options);
  return {
    url: `http://127.0.0.1:${server.httpPort}`,
    stop: async () => {
      await server.stop();
    },
  };
}
