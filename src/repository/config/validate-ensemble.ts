/**
 * Structural checks of an ensemble config on its own (no composing model
 * configs needed): Triton's ensemble-scheduling validation, with its texts.
 * Data types and shapes across composing models are checked at load time by
 * the ensemble scheduler, which has those configs.
 */
import { ServerError } from '../../core/errors';
import type { ModelConfig } from '../../core/model-config';

interface EnsembleTensor {
  name: string;
  isOutput: boolean;
  ready: boolean;
  prev: EnsembleTensor[];
  next: EnsembleTensor[];
}

interface Step {
  model_name: string;
  input_map: Record<string, string>;
  output_map: Record<string, string>;
}

const invalid = (msg: string): ServerError => new ServerError('INVALID_ARG', msg);

export function validateEnsembleScheduling(config: ModelConfig): void {
  const m = config.name;
  if (config.platform !== 'ensemble') {
    throw invalid(`ensemble scheduling cannot be set for model '${m}' whose platform is not ensemble`);
  }
  if ((config.instance_group ?? []).length !== 0) {
    throw invalid(`instance group should not be specified for ensemble '${m}'`);
  }
  if (config.optimization !== undefined && config.optimization !== null) {
    throw invalid(`optimization should not be specified for ensemble '${m}'`);
  }
  if ((config.model_warmup ?? []).length !== 0) {
    throw invalid(`model_warmup can not be specified for ensemble '${m}'`);
  }
  const steps = (config.ensemble_scheduling?.step ?? []) as Step[];
  if (steps.length === 0) throw invalid(`must specify 'step' for ensemble '${m}'`);

  const tensors = buildGraph(m, steps);

  // Propagate readiness from the ensemble inputs through the steps.
  const queue: EnsembleTensor[] = [];
  for (const input of config.input ?? []) {
    const t = tensors.get(input.name);
    if (t === undefined) throw invalid(`ensemble input '${input.name}' for ensemble ${m}' is not used`);
    t.ready = true;
    queue.push(t);
  }
  while (queue.length > 0) {
    const node = queue.shift() as EnsembleTensor;
    for (const nxt of node.next) {
      if (nxt.ready) continue;
      nxt.ready = nxt.prev.every((p) => p.ready);
      if (nxt.ready) queue.push(nxt);
    }
  }

  const outputs = new Set<string>();
  for (const output of config.output ?? []) {
    const t = tensors.get(output.name);
    if (t === undefined) throw invalid(`ensemble output '${output.name}' for ensemble ${m}' is not used`);
    if (!t.ready) {
      const source = notReadySource(t);
      const detail = source !== t ? `: at least one of its depending tensors, '${source.name}', is not connected` : '';
      throw invalid(`output '${output.name}' for ensemble '${m}' is not written${detail}`);
    }
    outputs.add(output.name);
  }
  for (const t of tensors.values()) {
    if (outputs.has(t.name)) continue;
    if (!t.ready || t.next.length === 0) throw invalid(`ensemble tensor '${t.name}' is unused in ensemble '${m}'`);
  }
}

/** Tensor graph: each step's outputs depend on all of its inputs. */
function buildGraph(m: string, steps: Step[]): Map<string, EnsembleTensor> {
  const tensors = new Map<string, EnsembleTensor>();
  const get = (name: string, isOutput: boolean): EnsembleTensor => {
    let t = tensors.get(name);
    if (t === undefined) {
      t = { name, isOutput, ready: false, prev: [], next: [] };
      tensors.set(name, t);
    }
    return t;
  };
  steps.forEach((step, idx) => {
    const inputMap = step.input_map ?? {};
    const outputMap = step.output_map ?? {};
    if (!step.model_name) throw invalid(`must specify 'model_name' in step ${idx} of ensemble '${m}'`);
    if (Object.keys(inputMap).length === 0) throw invalid(`must specify 'input_map' in step ${idx} of ensemble '${m}'`);
    if (Object.keys(outputMap).length === 0) {
      throw invalid(`must specify 'output_map' in step ${idx} of ensemble '${m}'`);
    }
    const produced: EnsembleTensor[] = [];
    for (const tensorName of Object.values(outputMap)) {
      const existing = tensors.get(tensorName);
      if (existing?.isOutput) {
        throw invalid(`ensemble tensor '${tensorName}' can appear in an output map only once for ensemble '${m}' step ${idx}`);
      }
      const t = existing ?? get(tensorName, true);
      t.isOutput = true;
      produced.push(t);
    }
    // Map keys are unique, so a model input cannot be mapped twice here.
    for (const tensorName of Object.values(inputMap)) {
      const src = get(tensorName, false);
      for (const out of produced) {
        out.prev.push(src);
        src.next.push(out);
      }
    }
  });
  return tensors;
}

/** Follows not-ready producers back to the first tensor nothing writes. */
function notReadySource(t: EnsembleTensor): EnsembleTensor {
  const seen = new Set<string>();
  let last = t;
  let prev: EnsembleTensor[] | undefined = t.prev;
  while (prev !== undefined && prev.length > 0) {
    const nodes: EnsembleTensor[] = prev;
    prev = undefined;
    for (const node of nodes) {
      if (!node.ready && !seen.has(node.name)) {
        seen.add(node.name);
        last = node;
        prev = node.prev;
        break;
      }
    }
  }
  return last;
}
