/**
 * `mkdir -p` for a folder the user names (--model-cache-dir), one level at a
 * time. Node 20's `fs.mkdirSync(dir, { recursive: true })` never returns for
 * a path under /proc (mkdir there answers ENOENT although the parent exists,
 * and node retries the parent for ever, at 100% CPU): the server hung at
 * start instead of saying the folder cannot be made. Here every level that
 * cannot be made throws its own error (ENOENT, EACCES, ENOTDIR, ...).
 */
import fs from 'node:fs';
import path from 'node:path';

export function makeDirs(dir: string): void {
  const abs = path.resolve(dir);
  const { root } = path.parse(abs);
  let at = root;
  for (const part of abs.slice(root.length).split(path.sep)) {
    if (part === '') continue;
    at = path.join(at, part);
    try {
      fs.mkdirSync(at);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (!fs.statSync(at).isDirectory()) throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${at}'`), { code: 'ENOTDIR', path: at });
    }
  }
}
