/**
 * Names the calling OS thread (Linux: /proc/thread-self/comm, at most 15
 * bytes), so `top -H`, `ps -L` and /proc/<pid>/task/<tid>/comm tell the HTTP
 * threads and the model instances apart. Best effort: elsewhere it does nothing.
 */
import fs from 'node:fs';

export function nameThisThread(name: string): void {
  try {
    fs.writeFileSync('/proc/thread-self/comm', Buffer.from(name, 'utf8').subarray(0, 15));
  } catch {
    // not Linux, or /proc not mounted: names are a convenience only
  }
}
