import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cycles, importsOf, parseLayers, parsePackages, sourceFiles, violations, type ImportEdge } from './architecture-check';

const ROOT = path.resolve(__dirname, '../../..');
const DOC = fs.readFileSync(path.join(ROOT, 'ARCHITECTURE.md'), 'utf8');

function readTree(): { files: string[]; edges: ImportEdge[] } {
  const files = sourceFiles(ROOT, 'src');
  const set = new Set(files);
  const edges = files.flatMap((f) => importsOf(f, fs.readFileSync(path.join(ROOT, f), 'utf8'), (x) => set.has(x)));
  return { files, edges };
}

test('every import under src/ goes where ARCHITECTURE.md allows, and every package stays in its home', () => {
  const { files, edges } = readTree();
  assert.ok(files.length > 100, `expected the whole src/ tree, read ${files.length} files`);
  assert.deepEqual(violations(parseLayers(DOC), parsePackages(DOC), files, edges), []);
});

test('no files under src/ import each other in a cycle', () => {
  const { files, edges } = readTree();
  assert.deepEqual(cycles(files, edges), []);
});

test('every relative import under src/ names a file that exists', () => {
  const { files, edges } = readTree();
  const set = new Set(files);
  assert.deepEqual(
    edges.filter((e) => e.relative && !set.has(e.to)).map((e) => `${e.from} -> ${e.to}`),
    [],
  );
});

// The checker itself, on made-up trees: each row must produce exactly the listed complaints.
const LAYERS = `<!-- layers:begin -->
| layer | place | may import |
|---|---|---|
| core | \`src/core/\` | |
| sched | \`src/scheduler/\` | core |
| http | \`src/frontend/http/\` | core sched |
| grpc | \`src/frontend/grpc/\` | core sched |
<!-- layers:end -->
<!-- packages:begin -->
| package | only in |
|---|---|
| \`@grpc/grpc-js\` | \`src/frontend/grpc/\` |
<!-- packages:end -->`;

const CASES: { name: string; tree: Record<string, string>; violations: RegExp[]; cycles: string[][] }[] = [
  {
    name: 'allowed arrows only',
    tree: {
      'src/core/a.ts': '',
      'src/scheduler/s.ts': "import { a } from '../core/a';",
      'src/frontend/http/h.ts': "import type { S } from '../../scheduler/s';\nimport x from 'node:fs';",
    },
    violations: [],
    cycles: [],
  },
  {
    name: 'an upward arrow (scheduler imports a frontend)',
    tree: { 'src/scheduler/s.ts': "export { h } from '../frontend/http/h';", 'src/frontend/http/h.ts': '' },
    violations: [/src\/scheduler\/s\.ts \(layer sched\) imports src\/frontend\/http\/h\.ts \(layer http\)/],
    cycles: [],
  },
  {
    name: 'one frontend imports the other',
    tree: { 'src/frontend/grpc/g.ts': "const h = require('../http/h');", 'src/frontend/http/h.ts': '' },
    violations: [/layer grpc\) imports src\/frontend\/http\/h\.ts \(layer http\)/],
    cycles: [],
  },
  {
    name: 'a package outside its home, a file in no layer',
    tree: { 'src/frontend/http/h.ts': "import * as grpc from '@grpc/grpc-js/build/src';", 'src/stray.ts': '' },
    violations: [/src\/stray\.ts is in no layer/, /src\/frontend\/http\/h\.ts imports @grpc\/grpc-js, which only src\/frontend\/grpc\/ may import/],
    cycles: [],
  },
  {
    name: 'a cycle inside one layer',
    tree: {
      'src/core/a.ts': "import { b } from './b';",
      'src/core/b.ts': "import { c } from './c.js';",
      'src/core/c.ts': "import type { a } from './a';",
    },
    violations: [],
    cycles: [['src/core/a.ts', 'src/core/b.ts', 'src/core/c.ts']],
  },
];

for (const c of CASES) {
  test(`import check: ${c.name}`, () => {
    const files = Object.keys(c.tree).sort();
    const set = new Set(files);
    const edges = files.flatMap((f) => importsOf(f, c.tree[f], (x) => set.has(x)));
    const got = violations(parseLayers(LAYERS), parsePackages(LAYERS), files, edges);
    assert.equal(got.length, c.violations.length, got.join('\n'));
    c.violations.forEach((re, i) => assert.match(got[i], re));
    assert.deepEqual(cycles(files, edges), c.cycles);
  });
}
