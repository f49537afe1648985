/**
 * The compute ceiling: onnxruntime-node in this process, no server, the same
 * session options nodetron uses by default (intra-op threads = cores, no
 * spinning), `run()` back to back at a fixed batch for `ms` milliseconds.
 * Returns rows (inferences) per second.
 */
import os from 'node:os';
import * as ort from 'onnxruntime-node';

export interface CeilingRow {
  batch: number;
  rowsPerSec: number;
  msPerRun: number;
}

export async function ortCeiling(
  file: string,
  inputName: string,
  sampleShape: number[],
  type: 'float32' | 'int32',
  batches: number[],
  ms: number,
  extraInputs: string[] = [],
): Promise<CeilingRow[]> {
  const session = await ort.InferenceSession.create(file, {
    intraOpNumThreads: os.availableParallelism(),
    interOpNumThreads: 1,
    extra: { 'session.intra_op.allow_spinning': '0' },
  });
  const rows: CeilingRow[] = [];
  for (const batch of batches) {
    const n = batch * sampleShape.reduce((a, b) => a * b, 1);
    const data = type === 'float32' ? Float32Array.from({ length: n }, () => Math.random()) : Int32Array.from({ length: n }, (_, i) => i % 100);
    const feeds: Record<string, ort.Tensor> = {};
    for (const name of [inputName, ...extraInputs]) feeds[name] = new ort.Tensor(type, data, [batch, ...sampleShape]);
    await session.run(feeds); // warm-up
    let runs = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < ms) {
      await session.run(feeds);
      runs++;
    }
    const secs = (performance.now() - t0) / 1000;
    rows.push({ batch, rowsPerSec: (runs * batch) / secs, msPerRun: (secs * 1000) / runs });
  }
  await session.release();
  return rows;
}
