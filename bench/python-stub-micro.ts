/**
 * The Python backend's per-execution cost without HTTP: one add_vectors stub
 * (FP32 [16] + [16]) driven directly through PythonStubInstance.execute, one
 * batch at a time. Prints µs per execution (wall) and CPU µs per execution of
 * the host process and of the stub. Usage:
 *   node dist/bench/python-stub-micro.js [executions=5000] [rounds=3]
 */
import fs from 'node:fs';
import path from 'node:path';
import { Arena } from '../src/dataplane/arena';
import type { Logger } from '../src/logging/logger';
import { PythonStubInstance } from '../src/python-backend/python-stub-instance';
import { parseModelConfigText } from '../src/repository/config/pbtxt';
import type { InferRequest } from '../src/core/request';

const MODEL_DIR = path.resolve(__dirname, '../../bench/models/repo/add_vectors');

function quietLogger(): Logger {
  const noop = (): void => {};
  const l: Record<string, unknown> = {
    info: noop,
    warn: noop,
    verbose: noop,
    table: noop,
    multiline: noop,
    setLevels: noop,
    flush: noop,
    error: (m: string) => console.error(m),
    isVerbose: () => false,
    settings: () => ({}),
  };
  l['child'] = () => l;
  return l as unknown as Logger;
}

/** user + system CPU of a process, µs (from /proc; clock ticks of 10 ms). */
function processCpuUs(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1e6) / 100;
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 5000);
  const rounds = Number(process.argv[3] ?? 3);
  const config = parseModelConfigText(fs.readFileSync(path.join(MODEL_DIR, 'config.pbtxt'), 'utf8'), 'config.pbtxt');
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const inst = await PythonStubInstance.start(
    {
      config,
      modelDir: MODEL_DIR,
      version: 1,
      modelPath: path.join(MODEL_DIR, '1', 'model.py'),
      instanceName: 'add_vectors_0',
      kind: 'KIND_CPU',
      deviceId: 0,
      backendConfig: {},
      instanceCountHint: 1,
    },
    { arena, log: quietLogger() },
  );
  const a = arena.alloc(64);
  const b = arena.alloc(64);
  new Float32Array(arena.bytes(a.offset, 64).buffer, arena.bytes(a.offset, 64).byteOffset, 16).fill(1);
  new Float32Array(arena.bytes(b.offset, 64).buffer, arena.bytes(b.offset, 64).byteOffset, 16).fill(2);
  const req: InferRequest = {
    id: '',
    model: 'add_vectors',
    version: 1,
    latest: false,
    batchSize: 1,
    requestedOutputs: null,
    parameters: {},
    arrivalNs: 0,
    inputs: [
      { name: 'INPUT0', datatype: 'FP32', shape: [16], offset: a.offset, gen: a.gen, byteSize: 64 },
      { name: 'INPUT1', datatype: 'FP32', shape: [16], offset: b.offset, gen: b.gen, byteSize: 64 },
    ],
  };
  const once = async (): Promise<void> => {
    const r = await inst.execute([req]);
    const out = r.responses[0]!;
    if (out.error) throw new Error(out.error.message);
    for (const o of out.outputs) arena.free(o);
  };
  for (let i = 0; i < 500; i++) await once();
  for (let round = 0; round < rounds; round++) {
    const c0 = process.cpuUsage();
    const s0 = processCpuUs(inst.pid);
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await once();
    const wall = Number(process.hrtime.bigint() - t0) / 1e3 / n;
    const c = process.cpuUsage(c0);
    const host = (c.user + c.system) / n;
    const stub = (processCpuUs(inst.pid) - s0) / n;
    console.log(
      `round ${round}: ${wall.toFixed(1)} us/exec wall, cpu host ${host.toFixed(1)} us + stub ${stub.toFixed(1)} us = ${(host + stub).toFixed(1)} us/exec`,
    );
  }
  await inst.stop();
}

void main();
