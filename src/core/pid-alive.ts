/**
 * Whether a process id names a live process on this host (signal 0: EPERM
 * means it lives but is not ours). For lock and owner files left by a
 * process that may have died (python-backend/env-lock.ts, the cloud
 * mirror's owner file).
 */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
