/**
 * CPU seconds a process and its children (Python stubs, torch processes)
 * have used so far, from Linux's /proc: utime + stime of each live process
 * in the tree, in clock ticks of 10 ms. undefined where /proc is not there.
 */
import fs from 'node:fs';

const TICKS_PER_SECOND = 100;

function ticksOf(pid: number): number {
  // The command name (field 2) may hold spaces and parentheses: count fields from the last ')'.
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state); utime and stime are fields 14 and 15.
  return Number(rest[11]) + Number(rest[12]);
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    try {
      for (const c of fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ')) if (c.trim() !== '') out.push(Number(c));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

export function processTreeCpuSeconds(pid: number): number | undefined {
  if (!fs.existsSync(`/proc/${pid}/stat`)) return undefined;
  let ticks = 0;
  const todo = [pid];
  const seen = new Set<number>();
  while (todo.length > 0) {
    const p = todo.pop()!;
    if (seen.has(p)) continue;
    seen.add(p);
    try {
      ticks += ticksOf(p);
    } catch {
      continue; // exited meanwhile
    }
    todo.push(...childrenOf(p));
  }
  return ticks / TICKS_PER_SECOND;
}
