/**
 * Config settings nodetron reads but does not act on, each with why: they
 * load without error (a config written for Triton on a GPU machine should
 * still serve), and the load warns once per setting, naming the model
 * (`nodetron lint` prints the same). Runs on the config as written (before
 * normalisation fills defaults), so only what the author set is named.
 */
import type { ModelConfig } from '../../core/model-config';

type Obj = Record<string, unknown>;

const NO_GPU = "nodetron runs models on the CPU (onnxruntime-node's CPU build), so there is no GPU";
const KEEP = 'Remove it, or keep it for a Triton with GPUs';

function obj(v: unknown): Obj | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
}

function names(list: unknown): string[] {
  return Array.isArray(list) ? list.map((a) => String(obj(a)?.['name'] ?? '')) : [];
}

function ignored(model: string, setting: string, why: string): string {
  return `model '${model}': ${setting} is ignored: ${why}.`;
}

/** One warning per setting the config sets that nodetron ignores. */
export function ignoredSettings(config: ModelConfig): string[] {
  const m = config.name;
  const out: string[] = [];
  const opt = obj(config.optimization);
  if (opt !== undefined) {
    const acc = obj(opt['execution_accelerators']);
    const gpu = names(acc?.['gpu_execution_accelerator']);
    if (gpu.length > 0) {
      out.push(
        ignored(
          m,
          `optimization.execution_accelerators.gpu_execution_accelerator [ ${gpu.join(', ')} ]`,
          `${NO_GPU} accelerator (TensorRT, CUDA) to hand the model to. ${KEEP}`,
        ),
      );
    }
    const cpu = names(acc?.['cpu_execution_accelerator']);
    if (cpu.length > 0) {
      out.push(
        ignored(
          m,
          `optimization.execution_accelerators.cpu_execution_accelerator [ ${cpu.join(', ')} ]`,
          'onnxruntime-node ships only its default CPU execution provider (no OpenVINO). Remove it; the model runs on the default CPU provider',
        ),
      );
    }
    if (obj(opt['cuda']) !== undefined) out.push(ignored(m, 'optimization.cuda', `${NO_GPU} for CUDA graphs or streams. ${KEEP}`));
    for (const k of ['input_pinned_memory', 'output_pinned_memory']) {
      if (obj(opt[k]) !== undefined) out.push(ignored(m, `optimization.${k}`, `${NO_GPU}, so no pinned host memory for copies to it. ${KEEP}`));
    }
    if (opt['priority'] !== undefined && opt['priority'] !== 'PRIORITY_DEFAULT') {
      out.push(ignored(m, `optimization.priority ${String(opt['priority'])}`, `Triton uses it for GPU stream priority, and ${NO_GPU}. ${KEEP}`));
    }
    if (Number(opt['gather_kernel_buffer_threshold'] ?? 0) !== 0) {
      out.push(ignored(m, 'optimization.gather_kernel_buffer_threshold', `it sizes a GPU gather kernel, and ${NO_GPU}. ${KEEP}`));
    }
    if (opt['eager_batching'] === true)
      out.push(ignored(m, 'optimization.eager_batching', 'nodetron does not implement it yet; batches form as the dynamic batcher decides'));
  }
  for (const [i, g] of (config.instance_group ?? []).entries()) {
    const at = `instance_group[${i}]`;
    if ((g.secondary_devices ?? []).length > 0) out.push(ignored(m, `${at}.secondary_devices`, `${NO_GPU} or other device to attach. ${KEEP}`));
    if ((g.host_policy ?? '') !== '')
      out.push(ignored(m, `${at}.host_policy '${g.host_policy}'`, 'nodetron has no host policies (--host-policy); instances run on any core. Remove it'));
    if (g.passive)
      out.push(ignored(m, `${at}.passive`, 'nodetron schedules on every instance; passive instances are not implemented yet. Remove it, or set count instead'));
  }
  if (config.model_repository_agents !== undefined)
    out.push(
      ignored(m, 'model_repository_agents', 'nodetron runs no repository agents (checksum, decryption) yet: the files are loaded as they are. Remove it'),
    );
  if (config.model_operations !== undefined && (config.model_operations.op_library_filename ?? []).length > 0) {
    out.push(
      ignored(
        m,
        'model_operations.op_library_filename',
        'nodetron does not load custom operator libraries yet; a model that needs them fails to load. Remove the custom ops, or serve it from a Python model',
      ),
    );
  }
  if (Object.keys(config.cc_model_filenames ?? {}).length > 0)
    out.push(ignored(m, 'cc_model_filenames', `it picks a file per GPU compute capability, and ${NO_GPU}: default_model_filename is loaded. ${KEEP}`));
  if (Object.keys(config.metric_tags ?? {}).length > 0)
    out.push(ignored(m, 'metric_tags', 'nodetron does not add custom labels to its metrics yet. Remove it'));
  return out;
}
