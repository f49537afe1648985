/**
 * What onnxruntime's native library leaves in the temporary folder: an
 * empty `mat-debug-<pid>.log` per process, and `.ses` (a time and an id,
 * written when none is there). Nothing the server writes should outlive it
 * unless asked, so at exit the process removes its own log when it is still
 * empty, and `.ses` when this process's run made it. Registered on the main
 * thread (a worker's 'exit' is the thread's, not the process's); the native
 * library writes under the process's pid whichever thread loads it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function removeOrtLeftoversAtExit(): void {
  const dir = os.tmpdir();
  const ses = path.join(dir, '.ses');
  const sesBefore = fs.existsSync(ses);
  const startMs = Date.now();
  process.once('exit', () => {
    const log = path.join(dir, `mat-debug-${process.pid}.log`);
    try {
      if (fs.statSync(log).size === 0) fs.rmSync(log);
    } catch {
      // not there
    }
    if (sesBefore) return;
    try {
      const st = fs.statSync(ses);
      if (st.mtimeMs >= startMs - 1000 && st.size < 4096) fs.rmSync(ses);
    } catch {
      // not there
    }
  });
}
