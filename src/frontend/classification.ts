/**
 * The classification extension (protocol.md §1.8.9): an output tensor
 * replaced by its top-k classes per batch item, as BYTES strings
 * `"<value>:<index>"` or `"<value>:<index>:<label>"`, sorted by value
 * descending. `<value>` is printed like C's `%f` for floating types and as an
 * integer otherwise. Shape `[batch, c]` for batching models, else `[c]`, with
 * c = min(k, elements per batch item).
 */
import type { DataType } from '../core/datatypes';
import { ELEMENT_SIZE } from '../core/datatypes';
import { ServerError } from '../core/errors';
import { numericView } from '../request/tensor-view';

const MAX_CLASSIFICATION_ELEMENTS = 1_000_000;

export interface ClassifiedOutput {
  shape: number[];
  elements: string[];
}

/** C `%f` (std::to_string) for a double. */
export function formatFixed6(v: number): string {
  if (Number.isNaN(v)) return 'nan';
  if (v === Infinity) return 'inf';
  if (v === -Infinity) return '-inf';
  if (Object.is(v, -0)) return '-0.000000';
  if (Math.abs(v) < 1e21) return v.toFixed(6);
  return `${BigInt(v)}.000000`; // integral at this magnitude; toFixed would switch to exponent form
}

export function classify(
  output: { datatype: DataType; shape: number[]; data: Uint8Array },
  k: number,
  batched: boolean,
  labels: readonly string[] | undefined,
): ClassifiedOutput {
  const { datatype, shape, data } = output;
  const size = ELEMENT_SIZE[datatype];
  if (size === 0 || datatype === 'BOOL' || datatype === 'FP16' || datatype === 'BF16') {
    throw new ServerError('INVALID_ARG', `class result not available for output due to unsupported type '${datatype}'`);
  }
  const batchSize = batched && shape.length > 0 ? shape[0] : 0;
  let perItem = 1;
  for (let d = batchSize === 0 ? 0 : 1; d < shape.length; d++) perItem *= shape[d];
  if (perItem > MAX_CLASSIFICATION_ELEMENTS) throw new ServerError('INVALID_ARG', 'classification output tensor too large');

  const total = Math.floor(data.byteLength / size);
  const values = numericView(datatype, data, total)!;
  const floating = datatype === 'FP32' || datatype === 'FP64';
  const classes = Math.min(k, perItem);
  const elements: string[] = [];
  const order = new Array<number>(perItem);
  for (let item = 0; item < Math.max(1, batchSize); item++) {
    const base = item * perItem;
    // An item whose bytes run past the tensor contributes nothing (as in Triton).
    const count = base + perItem > total ? 0 : perItem;
    order.length = count;
    for (let e = 0; e < count; e++) order[e] = base + e;
    order.sort((a, b) => {
      const va = values[a];
      const vb = values[b];
      return vb > va ? 1 : vb < va ? -1 : 0;
    });
    for (let c = 0; c < Math.min(classes, count); c++) {
      const idx = order[c];
      const v = values[idx];
      const index = idx - base;
      let s = `${floating ? formatFixed6(v as number) : String(v)}:${index}`;
      const label = labels?.[index];
      if (label !== undefined && label !== '') s += `:${label}`;
      elements.push(s);
    }
  }
  return { shape: batchSize > 0 ? [batchSize, classes] : [classes], elements };
}
