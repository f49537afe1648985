/**
 * One line of Linux's /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat: the
 * command name (field 2, which may hold spaces and parentheses, so the
 * fields are counted from its last ')') and the CPU used so far (utime +
 * stime, fields 14 and 15, in clock ticks of 10 ms). Pure.
 */

/** USER_HZ on Linux. */
export const TICKS_PER_SECOND = 100;

export interface ProcStat {
  /** The thread's or process's name (15 characters at most). */
  name: string;
  /** utime + stime, in seconds. */
  cpuSeconds: number;
}

export function parseProcStat(line: string): ProcStat {
  const close = line.lastIndexOf(')');
  const fields = line.slice(close + 2).split(' ');
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  return { name: line.slice(line.indexOf('(') + 1, close), cpuSeconds: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND };
}
