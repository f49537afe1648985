/**
 * The request parsing the peers share with nothing else: what a developer
 * writes first for KServe v2 bodies — JSON.parse of the header, tensors from
 * `data` arrays or, with Inference-Header-Content-Length, views of the binary
 * tail. No validation beyond what a crash would need.
 */
export interface PeerTensor {
  name: string;
  datatype: string;
  shape: number[];
  data: ArrayBufferView | number[];
}

const ARRAYS: Record<
  string,
  { new (b: ArrayBuffer, o: number, n: number): ArrayBufferView; BYTES_PER_ELEMENT: number; from(a: ArrayLike<number>): ArrayBufferView }
> = {
  FP32: Float32Array,
  INT32: Int32Array,
  FP64: Float64Array,
  INT8: Int8Array,
  UINT8: Uint8Array,
};

export interface ParsedBody {
  inputs: PeerTensor[];
  binaryOutput: boolean;
}

export function parseKserveBody(body: Buffer, headerLength: number | undefined): ParsedBody {
  const jsonEnd = headerLength ?? body.length;
  const header = JSON.parse(body.toString('utf8', 0, jsonEnd)) as {
    inputs: { name: string; datatype: string; shape: number[]; data?: number[]; parameters?: { binary_data_size?: number } }[];
    parameters?: { binary_data_output?: boolean };
  };
  let offset = jsonEnd;
  const inputs = header.inputs.map((i) => {
    const Arr = ARRAYS[i.datatype];
    if (Arr === undefined) throw new Error(`datatype ${i.datatype} not handled by the peer`);
    const size = i.parameters?.binary_data_size;
    if (size !== undefined) {
      // Copy into an aligned buffer: the tail offset need not be a multiple of the element size.
      const copy = Buffer.from(body.subarray(offset, offset + size));
      offset += size;
      return { name: i.name, datatype: i.datatype, shape: i.shape, data: new Arr(copy.buffer, copy.byteOffset, size / Arr.BYTES_PER_ELEMENT) };
    }
    return { name: i.name, datatype: i.datatype, shape: i.shape, data: Arr.from((i.data ?? []).flat(Infinity as 1) as number[]) };
  });
  return { inputs, binaryOutput: header.parameters?.binary_data_output === true };
}
