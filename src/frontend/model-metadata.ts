/**
 * Model metadata JSON (`GET /v2/models/<m>[/versions/<v>]`, protocol.md §1.6):
 * name, versions (strings), platform (config platform, else backend), and the
 * inputs/outputs in config order with protocol datatypes and the config dims,
 * prefixed by -1 for batching models.
 */
import { configTypeToDataType } from '../core/datatypes';
import type { ModelConfig } from '../core/model-config';

interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

/** `versions`: the version from the URL, or every READY version ascending, as decimal strings. */
export function modelMetadataJson(config: ModelConfig, versions: string[]): string {
  const batched = (config.max_batch_size ?? 0) > 0;
  const tensor = (t: { name: string; data_type: string; dims: number[] }): TensorMetadata => ({
    name: t.name,
    datatype: configTypeToDataType(t.data_type),
    shape: batched ? [-1, ...(t.dims ?? [])] : [...(t.dims ?? [])],
  });
  return JSON.stringify({
    name: config.name,
    versions,
    platform: config.platform !== undefined && config.platform !== '' ? config.platform : (config.backend ?? ''),
    inputs: (config.input ?? []).map(tensor),
    outputs: (config.output ?? []).map(tensor),
  });
}
