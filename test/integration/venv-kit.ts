/**
 * A Python virtual environment for the EXECUTION_ENV_PATH tests
 * (python-examples, cloud-s3): `python3 -m venv` that sees python3's
 * packages (numpy), with a marker file that makes its content, and so an
 * archive of it, new to this run. Throws when python3 cannot make one.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export function makeNumpyVenv(venv: string): void {
  execFileSync('python3', ['-m', 'venv', '--system-site-packages', '--without-pip', venv], { stdio: 'pipe', timeout: 60_000 });
  if (!fs.existsSync(path.join(venv, 'bin', 'activate'))) throw new Error('the venv has no bin/activate');
  const py = path.join(venv, 'bin', 'python3');
  try {
    execFileSync(py, ['-c', 'import numpy'], { stdio: 'pipe', timeout: 60_000 });
  } catch {
    // python3 is itself a venv (system site-packages lack numpy): let the new one see the packages python3 sees.
    const sitePkgs = execFileSync('python3', ['-c', 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))']).toString().trim();
    const purelib = execFileSync(py, ['-c', "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).toString().trim();
    fs.writeFileSync(path.join(purelib, 'nodetron_parent_site.pth'), `${sitePkgs}\n`);
  }
  fs.writeFileSync(path.join(venv, 'nodetron-test-marker'), `${process.pid} ${Date.now()}`);
}
