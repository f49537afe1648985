/**
 * The in-memory form of `inference.ModelConfig`: a plain object whose keys are
 * the proto field names (snake_case), as parsed from config.pbtxt and as
 * rendered to JSON for `/config`. Enums are their names (`'TYPE_FP32'`),
 * int64/uint64 fields are JS numbers. Only the fields nodetron reads are typed
 * here; the parser keeps every field the schema (proto/model_config.proto)
 * allows.
 */
export interface ModelTensorReshape {
  shape: number[];
}

export interface ModelInput {
  name: string;
  data_type: string;
  format: string;
  dims: number[];
  reshape?: ModelTensorReshape;
  is_shape_tensor: boolean;
  allow_ragged_batch: boolean;
  optional: boolean;
  is_non_linear_format_io: boolean;
}

export interface ModelOutput {
  name: string;
  data_type: string;
  dims: number[];
  reshape?: ModelTensorReshape;
  label_filename: string;
  is_shape_tensor: boolean;
  is_non_linear_format_io: boolean;
}

export interface ModelInstanceGroup {
  name: string;
  kind: 'KIND_AUTO' | 'KIND_GPU' | 'KIND_CPU' | 'KIND_MODEL';
  count: number;
  gpus: number[];
  secondary_devices: unknown[];
  profile: string[];
  passive: boolean;
  host_policy: string;
  rate_limiter?: { resources: { name: string; global: boolean; count: number }[]; priority: number };
}

export interface ModelQueuePolicy {
  timeout_action: 'REJECT' | 'DELAY';
  default_timeout_microseconds: number;
  allow_timeout_override: boolean;
  max_queue_size: number;
}

export interface ModelDynamicBatching {
  preferred_batch_size: number[];
  max_queue_delay_microseconds: number;
  preserve_ordering: boolean;
  priority_levels: number;
  default_priority_level: number;
  default_queue_policy?: ModelQueuePolicy;
  priority_queue_policy: Record<string, ModelQueuePolicy>;
}

export interface ModelVersionPolicy {
  latest?: { num_versions: number };
  all?: Record<string, never>;
  specific?: { versions: number[] };
}

export interface ModelConfig {
  name: string;
  platform: string;
  backend: string;
  runtime: string;
  version_policy: ModelVersionPolicy;
  max_batch_size: number;
  input: ModelInput[];
  output: ModelOutput[];
  batch_input: unknown[];
  batch_output: unknown[];
  optimization?: Record<string, unknown>;
  dynamic_batching?: ModelDynamicBatching;
  sequence_batching?: Record<string, unknown>;
  ensemble_scheduling?: {
    step: { model_name: string; model_version: number; input_map: Record<string, string>; output_map: Record<string, string> }[];
    /** Triton 2.63+: most requests in flight per step, over all requests of the ensemble; 0 = no limit. */
    max_inflight_requests?: number;
  };
  instance_group: ModelInstanceGroup[];
  default_model_filename: string;
  cc_model_filenames: Record<string, string>;
  metric_tags: Record<string, string>;
  parameters: Record<string, { string_value: string }>;
  model_warmup: unknown[];
  model_operations?: { op_library_filename: string[] };
  model_transaction_policy?: { decoupled: boolean };
  model_repository_agents?: unknown;
  response_cache?: { enable: boolean };
  model_metrics?: unknown;
  [field: string]: unknown;
}
