/**
 * A model directory's fingerprint: every file and folder under it with size
 * and modification time. Two equal fingerprints mean "nothing changed", which
 * is how an explicit load decides between a no-op and a reload, and how poll
 * mode notices a changed model (protocol.md §1.10 load semantics).
 */
import fs from 'node:fs';
import path from 'node:path';

/** Deep enough for any sane model layout; stops a symlink loop from running away. */
const MAX_DEPTH = 8;

export function fingerprint(dir: string): string {
  const parts: string[] = [];
  walk(dir, '', 0, parts);
  return parts.join('\n');
}

function walk(dir: string, rel: string, depth: number, out: string[]): void {
  let entries: string[];
  try {
    entries = fs.readdirSync(path.join(dir, rel)).sort();
  } catch {
    out.push(`${rel}:missing`);
    return;
  }
  for (const name of entries) {
    const r = rel === '' ? name : `${rel}/${name}`;
    let st: fs.Stats;
    try {
      st = fs.statSync(path.join(dir, r));
    } catch {
      continue; // vanished while we looked: the next fingerprint differs anyway
    }
    if (st.isDirectory()) {
      out.push(`${r}/`);
      if (depth < MAX_DEPTH) walk(dir, r, depth + 1, out);
    } else {
      out.push(`${r} ${st.size} ${st.mtimeMs}`);
    }
  }
}
