/**
 * Triton's log line format (protocol.md §7.1), as pure functions of the
 * record, so it can be tested with a fixed clock:
 *
 *   default: I1129 17:05:00.123456 <pid> <source>] "<message>"
 *   ISO8601: 2024-11-29T17:05:00Z I <pid> <source>] "<message>"
 *
 * Timestamps are UTC. `<source>` stands where Triton prints `<file>.cc:<line>`;
 * nodetron prints the logger's source tag followed by `:0` (see logger.ts).
 */

/** 'json' is nodetron's own: one JSON object per line (formatJsonEntry). */
export type LogFormat = 'default' | 'ISO8601' | 'json';
/** I = info and verbose, W = warning, E = error. */
export type LogLetter = 'I' | 'W' | 'E';

export interface LogEntry {
  letter: LogLetter;
  /** Microseconds since the Unix epoch. */
  epochMicros: number;
  pid: number;
  /** Printed as is when it contains ':', else followed by `:0`. */
  source: string;
  message: string;
  /**
   * A multi-line entry (tables, pretty-printed objects): the preamble ends the
   * first line and the message follows unescaped on the next lines.
   */
  multiline?: boolean;
  /** Multi-line entries only: text printed unescaped right after the preamble. */
  heading?: string;
  /** The model the line is about, where the logger has one (json format only). */
  model?: string;
}

const LEVEL_NAMES = { I: 'INFO', W: 'WARNING', E: 'ERROR' } as const;

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

function sourceTag(source: string): string {
  return source.includes(':') ? source : `${source}:0`;
}

/** The text before the message, ending in `] `. */
export function formatPreamble(e: LogEntry, format: LogFormat): string {
  const micros = ((e.epochMicros % 1_000_000) + 1_000_000) % 1_000_000;
  const d = new Date((e.epochMicros - micros) / 1000);
  const hms = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  if (format === 'ISO8601') {
    const date = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
    return `${date}T${hms}Z ${e.letter} ${e.pid} ${sourceTag(e.source)}] `;
  }
  return `${e.letter}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())} ${hms}.${pad(micros, 6)} ` + `${e.pid} ${sourceTag(e.source)}] `;
}

/**
 * The full entry including the trailing newline. Single-line messages are
 * JSON-string escaped unless `escape` is false
 * (TRITON_SERVER_ESCAPE_LOG_MESSAGES=0).
 */
export function formatLogEntry(e: LogEntry, format: LogFormat, escape: boolean): string {
  if (format === 'json') return formatJsonEntry(e);
  const preamble = formatPreamble(e, format);
  if (e.multiline === true) return `${preamble}${e.heading ?? ''}\n${e.message}\n`;
  return `${preamble}${escape ? JSON.stringify(e.message) : e.message}\n`;
}

/**
 * `--log-format=json`: `{"time","level","pid","source","message"[,"model"]}`
 * on one line; time is ISO 8601 UTC with microseconds, a table's heading and
 * rows are the message (newlines escaped by JSON).
 */
export function formatJsonEntry(e: LogEntry): string {
  const micros = ((e.epochMicros % 1_000_000) + 1_000_000) % 1_000_000;
  const iso = new Date((e.epochMicros - micros) / 1000).toISOString().slice(0, 19);
  const message = e.multiline === true ? `${e.heading ?? ''}${e.heading ? '\n' : ''}${e.message}` : e.message;
  const rec: Record<string, string | number> = {
    time: `${iso}.${pad(micros, 6)}Z`,
    level: LEVEL_NAMES[e.letter],
    pid: e.pid,
    source: e.source,
    message,
  };
  if (e.model !== undefined) rec['model'] = e.model;
  return `${JSON.stringify(rec)}\n`;
}

/** Escaping is on unless the environment says exactly `0`. */
export function escapeFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  return env['TRITON_SERVER_ESCAPE_LOG_MESSAGES'] !== '0';
}
