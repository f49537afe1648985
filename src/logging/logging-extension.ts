/**
 * The logging extension (protocol.md §1.13): the settings JSON and a POST
 * body applied to the live logger, with Triton's texts and codes. The body
 * is validated whole before anything changes, so a bad request changes
 * nothing. Shared by HTTP (`/v2/logging`) and gRPC (LogSettings).
 */
import { ServerError } from '../core/errors';
import type { LogFormat, LogSettings, Logger } from './logger';

export interface LogSettingsJson {
  log_file: string;
  log_info: boolean;
  log_warning: boolean;
  log_error: boolean;
  log_verbose_level: number;
  log_format: LogFormat;
}

export function logSettingsJson(s: LogSettings): LogSettingsJson {
  return {
    log_file: s.file ?? '',
    log_info: s.info,
    log_warning: s.warning,
    log_error: s.error,
    log_verbose_level: s.verbose,
    log_format: s.format,
  };
}

const NON = {
  boolean: 'attempt to access JSON non-boolean as boolean',
  unsigned: 'attempt to access JSON non-unsigned-integer as unsigned integer',
  string: 'attempt to access JSON non-string as string',
} as const;

/**
 * Apply a parsed POST body; JSON null values are ignored. Returns the
 * resulting settings.
 */
export function updateLogSettings(log: Logger, body: unknown): LogSettingsJson {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ServerError('INVALID_ARG', 'log settings request must be a JSON object');
  }
  const b = body as Record<string, unknown>;
  if (b['log_file'] !== undefined && b['log_file'] !== null) {
    throw new ServerError('UNSUPPORTED', 'log file location can not be updated through network protocol');
  }
  const change: Partial<Omit<LogSettings, 'file'>> = {};
  const bool = (key: string, set: (v: boolean) => void): void => {
    const v = b[key];
    if (v === undefined || v === null) return;
    if (typeof v !== 'boolean') throw new ServerError('INTERNAL', NON.boolean);
    set(v);
  };
  bool('log_info', (v) => (change.info = v));
  bool('log_warning', (v) => (change.warning = v));
  bool('log_error', (v) => (change.error = v));
  const level = b['log_verbose_level'];
  if (level !== undefined && level !== null) {
    if (typeof level !== 'number' || !Number.isInteger(level) || level < 0 || level > 0xffffffff) {
      throw new ServerError('INTERNAL', NON.unsigned);
    }
    change.verbose = level;
  }
  const format = b['log_format'];
  if (format !== undefined && format !== null) {
    if (typeof format !== 'string') throw new ServerError('INTERNAL', NON.string);
    // Triton answers a bad format with UNAVAILABLE (503), a quirk kept here.
    if (format !== 'default' && format !== 'ISO8601' && format !== 'json') {
      throw new ServerError('UNAVAILABLE', `invalid argument for --log_format, got: ${format}`);
    }
    change.format = format;
  }
  log.setLevels(change);
  return logSettingsJson(log.settings());
}
