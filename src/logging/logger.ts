/**
 * The server logger: pino underneath (child loggers with bound fields, one
 * record per call), written in Triton's line format (line-format.ts) by a
 * synchronous destination, so no line is lost at process.exit.
 *
 * Routing (protocol.md §7.1): INFO and verbose → stdout, WARNING and ERROR →
 * stderr; with a log file everything goes to the file.
 *
 * Source tag: Triton prints `<file>.cc:<line>`; nodetron prints the file and
 * line of the call (`server.ts:152]`, caller-site.ts), unless the (child)
 * logger's `source` binding is a location itself (a Python model's
 * `model.py:12`). A child with `{ site: false }` skips the stack capture
 * (the access log, once per request) and prints its `source` binding. The
 * `model` binding is printed by --log-format=json; the default formats carry
 * it in the message text, as Triton's lines do.
 */
import pino from 'pino';
import { callerSite } from './caller-site';
import { escapeFromEnv, formatLogEntry, type LogFormat, type LogLetter } from './line-format';

export type { LogFormat } from './line-format';

export interface LogSettings {
  verbose: number;
  info: boolean;
  warning: boolean;
  error: boolean;
  format: LogFormat;
  /** Log file path; absent = console. Fixed at creation. */
  file?: string;
}

export type LogStream = 'stdout' | 'stderr' | 'file';

export interface LoggerOptions extends LogSettings {
  /** Test hook: microseconds since the epoch; default the system clock. */
  clock?: () => number;
  /** Test hook: pid printed on each line. */
  pid?: number;
  /** Default: on unless env TRITON_SERVER_ESCAPE_LOG_MESSAGES=0. */
  escape?: boolean;
  /** Test hook: receives each formatted entry instead of stdout/stderr/file. */
  sink?: (text: string, stream: LogStream) => void;
  /** Print the caller's file:line (default true); false prints the `source` binding. */
  sites?: boolean;
}

export interface LogBindings {
  /** Printed where Triton prints file:line. */
  source?: string;
  model?: string;
  requestId?: string;
  /** false: no caller lookup for this logger's lines (hot paths). */
  site?: boolean;
  [key: string]: unknown;
}

export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
  /** Printed as an I line when the verbose level is at least `level`. */
  verbose(level: number, msg: string): void;
  /** Cheap check before building an expensive verbose message. */
  isVerbose(level: number): boolean;
  /** A multi-line INFO entry: preamble line, the preformatted table (see table.ts), empty line. */
  table(text: string): void;
  /** A multi-line INFO entry with a heading on the preamble line, body unescaped. */
  multiline(heading: string, body: string): void;
  child(bindings: LogBindings): Logger;
  /** Each entry of a logger bound to a model (`model` binding) also goes to `tap`, as printed; one tap, shared by all children. */
  tapModelLines(tap: ((model: string, line: string) => void) | undefined): void;
  /** Changes levels/format at run time (the logging extension); shared by all children. */
  setLevels(settings: Partial<Omit<LogSettings, 'file'>>): void;
  settings(): LogSettings;
  flush(): void;
}

const DEFAULT_SOURCE = 'server.ts';
// pino's numeric levels used for our three kinds of record.
const PINO_WARN = 40;
const PINO_ERROR = 50;

function systemClockMicros(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

interface SyncWriter {
  write(text: string): void;
  flush(): void;
}

/** A synchronous sonic-boom writer (handles EAGAIN on pipes), opened on first use. */
function lazyDestination(dest: number | string): SyncWriter {
  let boom: ReturnType<typeof pino.destination> | undefined;
  const open = (): ReturnType<typeof pino.destination> => {
    if (boom === undefined) {
      boom = pino.destination({ dest, sync: true, append: true, mkdir: typeof dest === 'string' });
      // A closed stdout/stderr must not crash the server.
      boom.on('error', () => undefined);
    }
    return boom;
  };
  return {
    write: (text) => {
      open().write(text);
    },
    flush: () => {
      if (boom !== undefined)
        try {
          boom.flushSync();
        } catch {
          /* nothing pending */
        }
    },
  };
}

interface PinoRecord {
  level: number;
  t: number;
  msg: string;
  source?: string;
  /** The caller's file:line (caller-site.ts). */
  at?: string;
  model?: string;
  heading?: string;
  multiline?: boolean;
}

/** pino destination: each JSON record becomes one Triton-format entry. */
class TritonDestination {
  private readonly stdout: SyncWriter;
  private readonly stderr: SyncWriter;
  private readonly file: SyncWriter | undefined;
  /** Logger.tapModelLines */
  tap: ((model: string, line: string) => void) | undefined;

  constructor(
    private readonly state: LogSettings,
    private readonly pid: number,
    private readonly escape: boolean,
    private readonly sink: LoggerOptions['sink'],
  ) {
    this.stdout = lazyDestination(1);
    this.stderr = lazyDestination(2);
    this.file = state.file !== undefined ? lazyDestination(state.file) : undefined;
  }

  write(json: string): void {
    const rec = JSON.parse(json) as PinoRecord;
    const letter: LogLetter = rec.level >= PINO_ERROR ? 'E' : rec.level >= PINO_WARN ? 'W' : 'I';
    const text = formatLogEntry(
      {
        letter,
        epochMicros: rec.t,
        pid: this.pid,
        source: rec.source?.includes(':') === true ? rec.source : (rec.at ?? rec.source ?? DEFAULT_SOURCE),
        message: rec.msg,
        multiline: rec.multiline,
        heading: rec.heading,
        model: rec.model,
      },
      this.state.format,
      this.escape,
    );
    if (rec.model !== undefined && this.tap !== undefined) this.tap(rec.model, text.trimEnd());
    const stream: LogStream = this.file !== undefined ? 'file' : letter === 'I' ? 'stdout' : 'stderr';
    if (this.sink !== undefined) this.sink(text, stream);
    else (stream === 'file' ? this.file! : stream === 'stdout' ? this.stdout : this.stderr).write(text);
  }

  flush(): void {
    this.stdout.flush();
    this.stderr.flush();
    this.file?.flush();
  }
}

function wrap(p: pino.Logger, state: LogSettings, dest: TritonDestination, sites: boolean): Logger {
  // The caller of the logger method `fn`, looked up only for a line that is emitted.
  const at = (fn: (...args: never[]) => unknown): { at?: string } => (sites ? { at: callerSite(fn) } : {});
  const logger: Logger = {
    info(msg) {
      if (state.info) p.info(at(logger.info), msg);
    },
    warn(msg) {
      if (state.warning) p.warn(at(logger.warn), msg);
    },
    error(msg) {
      if (state.error) p.error(at(logger.error), msg);
    },
    verbose(level, msg) {
      if (state.verbose >= level) p.debug(at(logger.verbose), msg);
    },
    isVerbose: (level) => state.verbose >= level,
    table(text) {
      if (state.info) p.info({ multiline: true, ...at(logger.table) }, text);
    },
    multiline(heading, body) {
      if (state.info) p.info({ multiline: true, heading, ...at(logger.multiline) }, body);
    },
    child: (bindings) => wrap(p.child(bindings), state, dest, sites && bindings.site !== false),
    setLevels: (s) => {
      if (s.verbose !== undefined) state.verbose = s.verbose;
      if (s.info !== undefined) state.info = s.info;
      if (s.warning !== undefined) state.warning = s.warning;
      if (s.error !== undefined) state.error = s.error;
      if (s.format !== undefined) state.format = s.format;
    },
    settings: () => ({ ...state }),
    tapModelLines: (tap) => {
      dest.tap = tap;
    },
    flush: () => dest.flush(),
  };
  return logger;
}

export function createLogger(opts: LoggerOptions): Logger {
  const state: LogSettings = {
    verbose: opts.verbose,
    info: opts.info,
    warning: opts.warning,
    error: opts.error,
    format: opts.format,
  };
  if (opts.file !== undefined) state.file = opts.file;
  const clock = opts.clock ?? systemClockMicros;
  const dest = new TritonDestination(state, opts.pid ?? process.pid, opts.escape ?? escapeFromEnv(), opts.sink);
  // Level filtering is ours (state, changeable at run time), so pino passes everything.
  const p = pino({ level: 'trace', base: null, timestamp: () => `,"t":${clock()}` }, dest);
  return wrap(p, state, dest, opts.sites ?? true);
}
