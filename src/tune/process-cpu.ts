/**
 * CPU seconds a process and its children (Python stubs, torch processes)
 * have used so far, from Linux's /proc: utime + stime of each live process
 * in the tree, in clock ticks of 10 ms. undefined where /proc is not there.
 */
import fs from 'node:fs';
import { parseProcStat } from '../core/proc-stat';

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
  let seconds = 0;
  const todo = [pid];
  const seen = new Set<number>();
  while (todo.length > 0) {
    const p = todo.pop()!;
    if (seen.has(p)) continue;
    seen.add(p);
    try {
      seconds += parseProcStat(fs.readFileSync(`/proc/${p}/stat`, 'utf8')).cpuSeconds;
    } catch {
      continue; // exited meanwhile
    }
    todo.push(...childrenOf(p));
  }
  return seconds;
}
