/**
 * Flat summary of `node --cpu-prof` output: for each .cpuprofile in a folder
 * (one per thread), the share of samples by function (self time), top N.
 * Usage: node dist/bench/cpu-profile-summary.js DIR [top=15]
 */
import fs from 'node:fs';
import path from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

function summarize(file: string, top: number): string {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let total = 0;
  p.samples.forEach((id, i) => {
    const n = byId.get(id)!;
    const dt = p.timeDeltas[i] ?? 0;
    total += dt;
    const f = n.callFrame;
    const label = `${f.functionName || '(anonymous)'} ${f.url ? path.basename(f.url) + ':' + (f.lineNumber + 1) : ''}`.trim();
    self.set(label, (self.get(label) ?? 0) + dt);
  });
  const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
  return [
    `${path.basename(file)}: ${(total / 1e6).toFixed(2)} s sampled`,
    ...rows.map(([l, t]) => `  ${((100 * t) / total).toFixed(1).padStart(5)}%  ${l}`),
  ].join('\n');
}

const dir = process.argv[2] ?? '.';
const top = Number(process.argv[3] ?? 15);
for (const f of fs
  .readdirSync(dir)
  .filter((x) => x.endsWith('.cpuprofile'))
  .sort())
  console.log(summarize(path.join(dir, f), top) + '\n');
