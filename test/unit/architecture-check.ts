/**
 * The import check behind architecture.test.ts: reads the layer and package
 * tables of ARCHITECTURE.md, the imports of every file under src/, and says
 * which imports the tables forbid and which files import each other in a
 * cycle. Pure functions over text, so the test can also feed it small
 * made-up trees. Not a test file itself.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface Layer {
  name: string;
  /** Folders end with '/'; anything else is one file. Paths relative to the repository root. */
  places: string[];
  mayImport: Set<string>;
}

export interface PackageRule {
  name: string;
  places: string[];
}

export interface ImportEdge {
  from: string;
  /** A repository-relative file for a relative import, else the package name. */
  to: string;
  relative: boolean;
}

/** The rows of the markdown table between `<!-- NAME:begin -->` and `<!-- NAME:end -->`. */
export function tableRows(markdown: string, name: string): string[][] {
  const begin = markdown.indexOf(`<!-- ${name}:begin -->`);
  const end = markdown.indexOf(`<!-- ${name}:end -->`);
  if (begin < 0 || end < begin) throw new Error(`ARCHITECTURE.md has no '${name}' table (<!-- ${name}:begin/end --> markers)`);
  return markdown
    .slice(begin, end)
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .slice(2) // header and separator
    .map((l) =>
      l
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
}

function codeSpans(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
}

export function parseLayers(markdown: string): Layer[] {
  return tableRows(markdown, 'layers').map(([name, place, may]) => ({
    name,
    places: codeSpans(place),
    mayImport: new Set([name, ...may.split(/\s+/).filter(Boolean)]),
  }));
}

export function parsePackages(markdown: string): PackageRule[] {
  return tableRows(markdown, 'packages').map(([name, place]) => ({ name: codeSpans(name)[0], places: codeSpans(place) }));
}

function inPlace(file: string, place: string): boolean {
  return place.endsWith('/') ? file.startsWith(place) : file === place;
}

export function layerOf(layers: Layer[], file: string): Layer | undefined {
  return layers.find((l) => l.places.some((p) => inPlace(file, p)));
}

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm;

/** The imports of one file's text; relative ones resolved against `exists`. */
export function importsOf(file: string, text: string, exists: (f: string) => boolean): ImportEdge[] {
  const out: ImportEdge[] = [];
  const seen = new Set<string>();
  for (const m of text.matchAll(SPECIFIER)) {
    const spec = m[1];
    if (seen.has(spec)) continue;
    seen.add(spec);
    if (spec.startsWith('node:')) continue;
    if (spec.startsWith('.')) {
      const base = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.js$/, '');
      const to = [`${base}.ts`, `${base}/index.ts`].find(exists) ?? `${base}.ts`;
      out.push({ from: file, to, relative: true });
    } else {
      const parts = spec.split('/');
      out.push({ from: file, to: spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0], relative: false });
    }
  }
  return out;
}

/** Every import the tables forbid, as one line each. */
export function violations(layers: Layer[], packages: PackageRule[], files: string[], edges: ImportEdge[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    if (!layerOf(layers, f)) out.push(`${f} is in no layer of ARCHITECTURE.md: add it to a row's place`);
  }
  for (const e of edges) {
    if (e.relative) {
      const a = layerOf(layers, e.from);
      const b = layerOf(layers, e.to);
      if (!a || !b) continue;
      if (!a.mayImport.has(b.name)) {
        out.push(`${e.from} (layer ${a.name}) imports ${e.to} (layer ${b.name}); layer ${a.name} may import only: ${[...a.mayImport].join(', ')}`);
      }
    } else {
      const rule = packages.find((p) => p.name === e.to);
      if (rule && !rule.places.some((p) => inPlace(e.from, p))) {
        out.push(`${e.from} imports ${e.to}, which only ${rule.places.join(' ')} may import`);
      }
    }
  }
  return out;
}

/** Groups of files that import each other in a loop (Tarjan's strongly connected components). */
export function cycles(files: string[], edges: ImportEdge[]): string[][] {
  const next = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const e of edges) if (e.relative && next.has(e.to)) next.get(e.from)?.push(e.to);
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || (next.get(v) ?? []).includes(v)) found.push(group.sort());
    }
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return found;
}

/** The TypeScript files under `dir` of the repository at `root`, repository-relative with '/'. */
export function sourceFiles(root: string, dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const d of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = `${rel}/${d.name}`;
      if (d.isDirectory()) walk(r);
      else if (d.name.endsWith('.ts') && !d.name.endsWith('.d.ts')) out.push(r);
    }
  };
  walk(dir);
  return out.sort();
}
