/**
 * ONNX Runtime's tree-ensemble operator over a Forest, inside a FIL
 * instance thread: one session (one intra-op thread, as the instance has
 * one thread), run for batches of ORT_MIN_ROWS rows or more. Sums come back
 * as float32 [rows, groups]; `fil-instance.ts` applies the output mode.
 */
import { InferenceSession, Tensor } from 'onnxruntime-node';
import type { Forest } from './forest';
import { treeEnsembleModel } from './onnx-tree-ensemble';

/** From this many rows per execution the operator beats the TypeScript walk (bench/README.md, "FIL"). */
export const ORT_MIN_ROWS = 16;

export class OrtForest {
  private constructor(
    private readonly session: InferenceSession,
    private readonly forest: Forest,
  ) {}

  static async create(forest: Forest): Promise<OrtForest> {
    const session = await InferenceSession.create(treeEnsembleModel(forest), {
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      logSeverityLevel: 3,
      extra: { 'session.intra_op.allow_spinning': '0' },
    });
    return new OrtForest(session, forest);
  }

  /** Leaf sums plus base margin of `rows` rows of `x` into `sums` (rows × groups). */
  async sum(x: Float32Array, rows: number, sums: Float64Array): Promise<void> {
    const n = rows * this.forest.numFeatures;
    // onnxruntime-node refuses views of a SharedArrayBuffer: the arena's rows are copied once.
    const own = x.buffer instanceof SharedArrayBuffer ? new Float32Array(x.subarray(0, n)) : x.subarray(0, n);
    const out = await this.session.run({ X: new Tensor('float32', own, [rows, this.forest.numFeatures]) });
    const y = out['Y']!.data as Float32Array;
    for (let i = 0; i < rows * this.forest.numGroups; i++) sums[i] = y[i]!;
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
