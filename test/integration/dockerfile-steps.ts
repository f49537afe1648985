/**
 * The instructions of deploy/Dockerfile, read the way Docker reads them
 * (continuation lines joined, comments dropped, stages split at FROM), so
 * the container-image test can run the runtime stage's steps outside
 * Docker and check the rest.
 */
import fs from 'node:fs';

export interface Instruction {
  op: string;
  /** The text after the instruction's name, continuations joined. */
  args: string;
  line: number;
}

export interface Stage {
  from: string;
  name: string;
  steps: Instruction[];
}

export function parseDockerfile(file: string): { args: Map<string, string>; stages: Stage[] } {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let text = lines[i].trim();
    if (text === '' || text.startsWith('#')) continue;
    while (text.endsWith('\\') && i + 1 < lines.length) {
      text = text.slice(0, -1).trimEnd() + ' ' + lines[++i].trim();
    }
    const m = /^([A-Za-z]+)\s+(.*)$/.exec(text);
    if (!m) throw new Error(`${file}:${start + 1}: not an instruction: ${text}`);
    const step = { op: m[1].toUpperCase(), args: m[2], line: start + 1 };
    if (step.op === 'ARG' && stages.length === 0) {
      const [k, v] = step.args.split('=');
      args.set(k, v ?? '');
    } else if (step.op === 'FROM') {
      const f = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(step.args);
      if (!f) throw new Error(`${file}:${step.line}: FROM ${step.args}`);
      const from = f[1].replace(/\$\{(\w+)\}/g, (_, k: string) => args.get(k) ?? '');
      stages.push({ from, name: f[2] ?? String(stages.length), steps: [] });
    } else {
      if (stages.length === 0) throw new Error(`${file}:${step.line}: ${step.op} before FROM`);
      stages[stages.length - 1].steps.push(step);
    }
  }
  return { args, stages };
}

/** COPY's parts: `--from=stage`, the sources and the destination. */
export function copyParts(args: string): { from?: string; sources: string[]; dest: string } {
  const words = args.split(/\s+/);
  const from = words[0].startsWith('--from=') ? words.shift()!.slice('--from='.length) : undefined;
  const dest = words.pop()!;
  return { ...(from !== undefined ? { from } : {}), sources: words, dest };
}

/** ENV's pairs, either form (`ENV K=V K2=V2` or `ENV K V`). */
export function envPairs(args: string): [string, string][] {
  if (!args.includes('=')) {
    const [k, ...v] = args.split(/\s+/);
    return [[k, v.join(' ')]];
  }
  return args.split(/\s+/).map((kv) => {
    const at = kv.indexOf('=');
    return [kv.slice(0, at), kv.slice(at + 1)];
  });
}

/** An exec-form instruction's array (ENTRYPOINT, CMD). */
export function execForm(args: string): string[] {
  const v = JSON.parse(args) as unknown;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`not the exec form: ${args}`);
  return v;
}
