/** What the server says about itself (protocol.md §0): metadata and the options table. */

/** The Triton release whose behaviour nodetron reproduces. */
export const SERVER_VERSION = '2.73.0';

/** Default server name (`--id`). */
export const SERVER_NAME = 'triton';

/** Extensions reported by `GET /v2` and gRPC ServerMetadata, in Triton's order. */
export const SERVER_EXTENSIONS: readonly string[] = [
  'classification',
  'sequence',
  'model_repository',
  'model_repository(unload_dependents)',
  'schedule_policy',
  'model_configuration',
  'system_shared_memory',
  'cuda_shared_memory',
  'binary_tensor_data',
  'parameters',
  'statistics',
  'trace',
  'logging',
];
