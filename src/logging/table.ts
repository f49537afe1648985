/**
 * Triton's ASCII tables (protocol.md §7.2) and the startup tables built with
 * them. Column widths follow Triton's "fair share" rule: the width (the
 * terminal's on a TTY, else 80, so a log file reads in an 80-column
 * viewer; Triton uses 500) is split evenly, columns narrower than their
 * share give the rest to the wider ones, and a cell longer than its column
 * wraps at spaces onto extra lines inside the cell (a word longer than the
 * column, a path, is cut). A cell's own line breaks start new lines.
 */
import type { ServerOptions } from '../cli-options';
import { wrapWords } from '../core/text-wrap';
import { SERVER_EXTENSIONS, SERVER_VERSION } from '../server-info';

export interface TableOptions {
  /** Terminal width in columns; default: stdout's width on a TTY, else 500. */
  width?: number;
}

const NON_TTY_WIDTH = 80;

function terminalWidth(): number {
  const out = process.stdout;
  return out.isTTY === true && out.columns > 0 ? out.columns : NON_TTY_WIDTH;
}

/** Width of each column after fair sharing the terminal width. */
function columnWidths(maxLens: number[], width: number): number[] {
  const n = maxLens.length;
  // Each column costs two padding spaces, plus n+1 pipes for the whole row.
  const usable = width - 2 * n - (n + 1);
  const shares = maxLens.map(() => Math.floor(usable / n));
  const byLength = maxLens.map((_, i) => i).sort((a, b) => maxLens[a]! - maxLens[b]! || a - b);
  for (let k = 0; k < n; k++) {
    const col = byLength[k]!;
    if (maxLens[col]! >= shares[col]!) continue;
    const excess = shares[col]! - maxLens[col]!;
    shares[col] = maxLens[col]!;
    if (k === n - 1) break;
    const perColumn = excess / (n - k - 1);
    for (let j = k + 1; j < n; j++) shares[byLength[j]!]! += perColumn;
  }
  return shares.map((s) => Math.max(1, Math.floor(s)));
}

function divider(widths: number[]): string {
  return `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+\n`;
}

function renderRow(cells: string[], widths: number[]): string {
  const wrapped = cells.map((c, i) => wrapWords(c, widths[i]!));
  const height = Math.max(1, ...wrapped.map((w) => w.length));
  let out = '';
  for (let line = 0; line < height; line++) {
    const parts = wrapped.map((w, i) => (w[line] ?? '').padEnd(widths[i]!));
    out += `| ${parts.join(' | ')} |\n`;
  }
  return out;
}

/**
 * The table text, one `\n`-terminated line per row and divider. The logger
 * prints it as a multi-line entry (preamble line, table, empty line).
 */
export function formatTable(header: string[], rows: string[][], opts: TableOptions = {}): string {
  const cellsOf = (row: string[]): string[] => header.map((_, i) => row[i] ?? '');
  const longest = (c: string): number => Math.max(...c.split('\n').map((l) => l.length));
  const maxLens = header.map((h, i) => Math.max(h.length, ...rows.map((r) => longest(r[i] ?? ''))));
  const widths = columnWidths(maxLens, opts.width ?? terminalWidth());
  const div = divider(widths);
  return div + renderRow(header, widths) + div + rows.map((r) => renderRow(cellsOf(r), widths)).join('') + div;
}

export interface ModelTableRow {
  name: string;
  /** Version number, or '-' for a model with no version. */
  version: number | string;
  /** `READY`, `UNAVAILABLE: <Code>: <message>`, `Not loaded: No model version was found`, ... */
  status: string;
}

/** The part of a status the models table shows: its first line (a Python traceback follows in the log). */
export function statusSummary(status: string): string {
  const nl = status.indexOf('\n');
  return nl < 0 ? status : status.slice(0, nl).trimEnd();
}

/** Models table: sorted by model name, then version; one line of reason per model (statusSummary). */
export function modelTable(rows: ModelTableRow[], opts?: TableOptions): string {
  const sorted = [...rows].sort((a, b) => {
    if (a.name !== b.name) return a.name < b.name ? -1 : 1;
    return (Number(a.version) || 0) - (Number(b.version) || 0);
  });
  return formatTable(
    ['Model', 'Version', 'Status'],
    sorted.map((r) => [r.name, String(r.version), statusSummary(r.status)]),
    opts,
  );
}

export interface BackendTableRow {
  name: string;
  path: string;
  /** The backend's cmdline config as JSON, `{}` when none. */
  config: string;
}

export function backendTable(rows: BackendTableRow[], opts?: TableOptions): string {
  return formatTable(
    ['Backend', 'Path', 'Config'],
    rows.map((r) => [r.name, r.path, r.config]),
    opts,
  );
}

/** Repository agents table (nodetron has none, so usually header only). */
export function repositoryAgentTable(rows: { name: string; path: string }[], opts?: TableOptions): string {
  return formatTable(
    ['Repository Agent', 'Path'],
    rows.map((r) => [r.name, r.path]),
    opts,
  );
}

const CONTROL_MODE_NAMES = { none: 'MODE_NONE', poll: 'MODE_POLL', explicit: 'MODE_EXPLICIT' } as const;

export interface OptionsTableInfo {
  version?: string;
  extensions?: readonly string[];
  /** GPUs present; each gets a `cuda_memory_pool_byte_size{<gpu>}` row. */
  gpuIds?: number[];
}

/** The options table rows (§7.2 item 4), in Triton's order. */
export function optionsTableRows(o: ServerOptions, info: OptionsTableInfo = {}): string[][] {
  const rows: string[][] = [
    ['server_id', o.id],
    ['server_version', info.version ?? SERVER_VERSION],
    ['server_extensions', (info.extensions ?? SERVER_EXTENSIONS).join(' ')],
  ];
  o.modelRepositories.forEach((p, i) => rows.push([`model_repository_path[${i}]`, p]));
  rows.push(['model_control_mode', CONTROL_MODE_NAMES[o.modelControlMode]]);
  if (o.modelControlMode === 'explicit') o.loadModels.forEach((m, i) => rows.push([`startup_models_${i}`, m]));
  rows.push(['strict_model_config', o.disableAutoCompleteConfig ? '1' : '0']);
  rows.push(['model_config_name', o.modelConfigName]);
  rows.push(['rate_limit', o.rateLimit === 'execution_count' ? 'EXEC_COUNT' : 'OFF']);
  o.rateLimitResources.forEach((r, i) => {
    rows.push([`rate_limit_resource[${i}]`, `${r.name}:${r.count}${r.device === undefined ? '' : `:${r.device}`}`]);
  });
  rows.push(['pinned_memory_pool_byte_size', String(o.pinnedMemoryPoolByteSize)]);
  for (const gpu of info.gpuIds ?? []) {
    rows.push([`cuda_memory_pool_byte_size{${gpu}}`, String(o.cudaMemoryPoolByteSize[gpu] ?? 67108864)]);
  }
  rows.push(['min_supported_compute_capability', o.minSupportedComputeCapability.toFixed(1)]);
  rows.push(['strict_readiness', o.strictReadiness ? '1' : '0']);
  rows.push(['exit_timeout', String(o.exitTimeoutSecs)]);
  rows.push(['cache_enabled', Object.keys(o.cacheConfig).length > 0 ? '1' : '0']);
  return rows;
}

export function optionsTable(o: ServerOptions, info?: OptionsTableInfo, opts?: TableOptions): string {
  return formatTable(['Option', 'Value'], optionsTableRows(o, info), opts);
}
