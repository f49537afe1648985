/**
 * Instance side of the FIL backend, inside an instance worker thread: the
 * forest is read once; `execute` sums the batch's rows' trees (the
 * TypeScript walk below ORT_MIN_ROWS rows or for forests ONNX Runtime's
 * tree-ensemble operator cannot hold exactly, that operator otherwise),
 * reading them straight from the arena (one request) or from one gathered
 * copy (several), then writes each request's rows of output__0 into the arena.
 */
import { nowNs } from '../../core/clock';
import type { InferRequest, InferResponse, TensorRef } from '../../core/request';
import type { Arena } from '../../dataplane/arena';
import type { BackendInstance, ComputeMarks, CreateBackendInstance } from '../backend';
import type { Forest } from './forest';
import { finishRows, sumTrees } from './forest-predict';
import { readFilParams } from './fil-params';
import { FIL_INPUT, FIL_OUTPUT, filPlan } from './fil-plan';
import type { FilPlan } from './fil-plan';
import { readForest } from './model-file';
import { notExpressible } from './onnx-tree-ensemble';
import { ORT_MIN_ROWS, OrtForest } from './ort-forest';

export const createBackendInstance: CreateBackendInstance = async (args) => {
  const params = readFilParams(args.config);
  const forest = readForest(args.config.name, args.modelPath, params.modelType);
  const plan = filPlan(args.config, forest, params, args.modelPath);
  // Large batches go to ONNX Runtime's tree-ensemble operator when it can hold this forest exactly.
  const ort = notExpressible(forest) === undefined ? await OrtForest.create(forest) : undefined;
  return new FilInstance(args.config.name, forest, plan, ort);
};

class FilInstance implements BackendInstance {
  private rowsScratch = new Float32Array(0);
  private sums = new Float64Array(0);
  private out = new Float32Array(0);

  constructor(
    private readonly model: string,
    private readonly forest: Forest,
    private readonly plan: FilPlan,
    private readonly ort: OrtForest | undefined,
  ) {}

  async execute(requests: InferRequest[], arena: Arena, marks?: ComputeMarks): Promise<InferResponse[]> {
    // A request whose rows do not fit the model is answered alone; the rest of the batch runs.
    const refused = requests.map((r) => this.refusal(r));
    const good = requests.filter((_, i) => refused[i] === undefined);
    const inputs = good.map((r) => r.inputs.find((t) => t.name === FIL_INPUT)!);
    const rows = inputs.reduce((n, t) => n + t.shape[0]!, 0);
    const x = this.gather(inputs, rows, arena);
    if (marks) marks.inputEndNs = nowNs();
    const groups = this.forest.numGroups;
    if (this.sums.length < rows * groups) this.sums = new Float64Array(Math.max(rows * groups, 2 * this.sums.length));
    const width = this.plan.mode.width;
    if (this.out.length < rows * width) this.out = new Float32Array(Math.max(rows * width, 2 * this.out.length));
    if (rows > 0) {
      if (this.ort !== undefined && rows >= ORT_MIN_ROWS) {
        try {
          await this.ort.sum(x, rows, this.sums);
        } catch {
          // The walk gives the same sums; a failed run only costs time.
          sumTrees(this.forest, x, rows, this.sums);
        }
      } else {
        sumTrees(this.forest, x, rows, this.sums);
      }
      finishRows(this.forest, this.sums, rows, this.plan.mode, this.out);
    }
    if (marks) marks.inferEndNs = nowNs();
    const answered = this.scatter(good, inputs, arena);
    let k = 0;
    return requests.map((_, i) => refused[i] ?? answered[k++]!);
  }

  async finalize(): Promise<void> {
    await this.ort?.release();
  }

  /** An error response for a request the model cannot take, else undefined. */
  private refusal(r: InferRequest): InferResponse | undefined {
    const t = r.inputs.find((i) => i.name === FIL_INPUT);
    const nf = this.plan.numFeatures;
    let message: string | undefined;
    if (t === undefined) message = `model '${this.model}': the request has no input '${FIL_INPUT}'`;
    // The config may say dims [ -1 ]; the model still takes exactly its feature count per row.
    else if (t.shape.length !== 2 || t.shape[1] !== nf || t.byteSize !== t.shape[0]! * nf * 4) {
      message = `unexpected shape for input '${FIL_INPUT}' for model '${this.model}'. Expected [-1,${nf}] (rows of ${nf} features), got [${t.shape.join(',')}]`;
    }
    return message === undefined ? undefined : { outputs: [], final: true, error: { code: 'INVALID_ARG', message } };
  }

  /** The batch's rows as one Float32Array: a view of the arena for one aligned request, else a copy. */
  private gather(inputs: TensorRef[], rows: number, arena: Arena): Float32Array {
    const bytes = rows * this.plan.numFeatures * 4;
    const only = inputs.length === 1 ? inputs[0]! : undefined;
    if (only !== undefined && only.offset % 4 === 0) {
      const b = arena.bytes(only.offset, only.byteSize);
      return new Float32Array(b.buffer, b.byteOffset, bytes / 4);
    }
    if (this.rowsScratch.byteLength < bytes) this.rowsScratch = new Float32Array(Math.max(bytes / 4, 2 * this.rowsScratch.length));
    const target = new Uint8Array(this.rowsScratch.buffer, 0, bytes);
    let pos = 0;
    for (const t of inputs) {
      target.set(arena.bytes(t.offset, t.byteSize), pos);
      pos += t.byteSize;
    }
    return this.rowsScratch;
  }

  private scatter(requests: InferRequest[], inputs: TensorRef[], arena: Arena): InferResponse[] {
    const width = this.plan.mode.width;
    const outBytes = new Uint8Array(this.out.buffer, this.out.byteOffset, this.out.byteLength);
    const responses: InferResponse[] = [];
    let row = 0;
    try {
      for (const [i, r] of requests.entries()) {
        const n = inputs[i]!.shape[0]!;
        const wanted = r.requestedOutputs === null || r.requestedOutputs.includes(FIL_OUTPUT);
        if (wanted) {
          const byteSize = n * width * 4;
          const { offset, gen } = arena.alloc(byteSize);
          arena.bytes(offset, byteSize).set(outBytes.subarray(row * width * 4, (row + n) * width * 4));
          responses.push({ outputs: [{ name: FIL_OUTPUT, datatype: 'FP32', shape: [n, width], offset, gen, byteSize }], final: true });
        } else {
          responses.push({ outputs: [], final: true });
        }
        row += n;
      }
    } catch (err) {
      for (const resp of responses) for (const o of resp.outputs) arena.free(o);
      throw err;
    }
    return responses;
  }
}
