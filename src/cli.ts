#!/usr/bin/env node
/**
 * The `tritonserver`-compatible executable: parse the command line, then hand
 * the options to the server. Exit status 1 on a command-line error or when
 * the server fails to start, with Triton's stderr texts (protocol.md §4.4).
 */
import fs from 'node:fs';
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
  // `nodetron lint <repository>`: what the server would say about it, without serving (src/lint/).
  if (process.argv[2] === 'lint') {
    const { lintMain } = require('./lint/lint-cli') as typeof import('./lint/lint-cli');
    process.exit(await lintMain(process.argv.slice(3), (text) => fs.writeSync(1, text)));
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
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer(options);
  } catch (err) {
    const { code, message } = toErrorInfo(err);
    fail(`error: creating server: ${CODE_WORDS[code]} - ${message}\n`);
  }
  // SIGINT/SIGTERM: stop accepting, finish in-flight requests, exit 0. A
  // second signal, or the exit timeout, ends the process at once.
  let signalled = false;
  const onSignal = (): void => {
    if (signalled) fail('error: second signal received, exiting immediately\n');
    signalled = true;
    const timer = setTimeout(
      () => fail('error: failed to stop server: Internal - Exit timeout expired. Exiting immediately.\n'),
      options.exitTimeoutSecs * 1000,
    );
    timer.unref();
    server.stop().then(
      () => process.exit(0),
      (err: unknown) => fail(`error: failed to stop server: ${toErrorInfo(err).message}\n`),
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

main().catch((err: unknown) => {
  fail(`error: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
});
