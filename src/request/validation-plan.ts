/**
 * What request validation needs from a model config, compiled once per loaded
 * model version (STYLE.md item 9). A plain object with no functions or Maps:
 * it is posted to the HTTP threads with postMessage (structured clone).
 */
import { configTypeToDataType } from '../core/datatypes';
import type { DataType } from '../core/datatypes';
import type { ModelConfig } from '../core/model-config';

export interface PlanInput {
  name: string;
  /** Protocol datatype string (`TYPE_STRING` → `BYTES`). */
  datatype: DataType | '<invalid>';
  /** Config dims, without the batch dimension; -1 = variable. */
  dims: number[];
  optional: boolean;
  /** Shape tensors keep the request shape: no batch dimension is stripped. */
  isShapeTensor: boolean;
  /** The shape presented to the backend, when the config has `reshape`. */
  reshape?: number[];
}

export interface PlanOutput {
  name: string;
  datatype: DataType | '<invalid>';
  dims: number[];
}

export interface ValidationPlan {
  modelName: string;
  maxBatchSize: number;
  /** In config order. */
  inputs: PlanInput[];
  outputs: PlanOutput[];
  /** Names of the inputs that are not optional, in config order. */
  requiredInputs: string[];
  decoupled: boolean;
}

export function compileValidationPlan(config: ModelConfig): ValidationPlan {
  const inputs: PlanInput[] = (config.input ?? []).map((i) => {
    const p: PlanInput = {
      name: i.name,
      datatype: configTypeToDataType(i.data_type),
      dims: [...(i.dims ?? [])],
      optional: i.optional === true,
      isShapeTensor: i.is_shape_tensor === true,
    };
    if (i.reshape) p.reshape = [...(i.reshape.shape ?? [])];
    return p;
  });
  const outputs: PlanOutput[] = (config.output ?? []).map((o) => ({
    name: o.name,
    datatype: configTypeToDataType(o.data_type),
    dims: [...(o.dims ?? [])],
  }));
  // The sequence batcher supplies control inputs; clients never send them.
  const sb = config.sequence_batching as { control_input?: { name: string }[] } | undefined | null;
  const controls = new Set((sb?.control_input ?? []).map((c) => c.name));
  return {
    modelName: config.name,
    maxBatchSize: config.max_batch_size ?? 0,
    inputs,
    outputs,
    requiredInputs: inputs.filter((i) => !i.optional && !controls.has(i.name)).map((i) => i.name),
    decoupled: config.model_transaction_policy?.decoupled === true,
  };
}

/** The plan's input of that name (linear scan: models have few inputs). */
export function findPlanInput(plan: ValidationPlan, name: string): PlanInput | undefined {
  for (const i of plan.inputs) if (i.name === name) return i;
  return undefined;
}

export function findPlanOutput(plan: ValidationPlan, name: string): PlanOutput | undefined {
  for (const o of plan.outputs) if (o.name === name) return o;
  return undefined;
}
