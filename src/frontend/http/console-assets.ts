/**
 * The console's static files (`--http-console`, default /console), served
 * by each HTTP thread from memory: the files of `console/` at the package
 * root, read once when the thread starts, and uPlot's two files
 * (`vendor/`). No CDN: everything the page loads comes from this server.
 * The page gets its data from the API routes like any client, so the
 * restricted-API rules apply to what it shows, not to these files.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { urlPath } from './routes';

/** `console/` beside `dist/` (this file runs as dist/src/frontend/http/console-assets.js). */
export const CONSOLE_DIR = path.resolve(__dirname, '../../../../console');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** Headers of every file: nothing loads from elsewhere, nothing frames the page (its buttons unload models). */
const FILE_HEADERS = {
  'Cache-Control': 'no-cache',
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
};

export interface AssetAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer | string;
}

export class ConsoleAssets {
  private constructor(
    readonly base: string,
    private readonly files: ReadonlyMap<string, { type: string; body: Buffer }>,
  ) {}

  /** The files under `dir` (one level of folders) and uPlot's; a missing folder serves nothing, and says so. */
  static load(base: string, dir = CONSOLE_DIR): ConsoleAssets {
    const files = new Map<string, { type: string; body: Buffer }>();
    const add = (name: string, file: string): void => {
      const type = TYPES[path.extname(file)];
      if (type !== undefined) files.set(name, { type, body: readFileSync(file) });
    };
    const walk = (sub: string): void => {
      let entries;
      try {
        entries = readdirSync(path.join(dir, sub), { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        const rel = sub === '' ? e.name : `${sub}/${e.name}`;
        if (e.isFile()) add(rel, path.join(dir, rel));
        else if (e.isDirectory() && sub === '') walk(rel);
      }
    };
    walk('');
    if (files.size > 0) {
      add('vendor/uPlot.iife.min.js', require.resolve('uplot/dist/uPlot.iife.min.js'));
      add('vendor/uPlot.min.css', require.resolve('uplot/dist/uPlot.min.css'));
    }
    return new ConsoleAssets(base, files);
  }

  /** Whether a URL's path is the console's. */
  owns(url: string): boolean {
    const p = urlPath(url);
    return p === this.base || p.startsWith(`${this.base}/`);
  }

  /** The answer to a request for one of `owns`'s URLs. */
  answer(method: string, url: string): AssetAnswer {
    const json = (status: number, error: string): AssetAnswer => ({ status, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ error }) });
    if (method !== 'GET' && method !== 'HEAD') return json(405, 'Method Not Allowed');
    const p = urlPath(url);
    // Relative links in the page need the trailing slash.
    if (p === this.base) return { status: 302, headers: { Location: `${this.base}/` }, body: '' };
    if (this.files.size === 0) {
      return json(404, `the console's files are not installed: expected them in ${CONSOLE_DIR}`);
    }
    const name = p.slice(this.base.length + 1) || 'index.html';
    const file = this.files.get(name);
    if (file === undefined) return json(404, 'Not Found');
    return { status: 200, headers: { 'Content-Type': file.type, ...FILE_HEADERS }, body: file.body };
  }
}
