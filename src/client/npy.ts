/**
 * NumPy's .npy format (version 1.0-3.0), read: the header's dtype, shape
 * and order, and the data's bytes, as `nodetron infer` sends them. Pure.
 */

/** KServe datatype of each little-endian (or byte-order-free) numpy dtype we send as is. */
const DTYPES: Record<string, string> = {
  '|b1': 'BOOL',
  '|u1': 'UINT8',
  '<u2': 'UINT16',
  '<u4': 'UINT32',
  '<u8': 'UINT64',
  '|i1': 'INT8',
  '<i2': 'INT16',
  '<i4': 'INT32',
  '<i8': 'INT64',
  '<f2': 'FP16',
  '<f4': 'FP32',
  '<f8': 'FP64',
};

export interface NpyArray {
  /** The KServe datatype. */
  datatype: string;
  /** numpy's dtype text, for messages. */
  descr: string;
  shape: number[];
  data: Uint8Array;
}

export function readNpy(file: string, bytes: Uint8Array): NpyArray {
  const bad = (why: string): Error => new Error(`${file} is not a .npy file nodetron can send: ${why}`);
  if (bytes.length < 10 || bytes[0] !== 0x93 || String.fromCharCode(...bytes.subarray(1, 6)) !== 'NUMPY') throw bad('it does not start with \\x93NUMPY');
  const major = bytes[6]!;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  const header = Buffer.from(bytes.subarray(start, start + headerLen)).toString('latin1');
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(header)?.[1];
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (descr === undefined || fortran === undefined || shapeText === undefined) throw bad(`its header is not understood: ${header.trim()}`);
  if (fortran === 'True') throw bad('it is in Fortran order; save it with np.ascontiguousarray(a)');
  const datatype = DTYPES[descr.replace(/^=/, '<')];
  if (datatype === undefined) throw bad(`its dtype '${descr}' has no KServe datatype here (big-endian, object or string arrays: convert it first)`);
  const shape = shapeText
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(Number);
  const data = bytes.subarray(start + headerLen);
  const elements = shape.reduce((a, b) => a * b, 1);
  const size = datatype === 'BOOL' || datatype.endsWith('INT8') ? 1 : datatype.endsWith('16') ? 2 : datatype.endsWith('32') ? 4 : 8;
  if (data.length !== elements * size) throw bad(`its data holds ${data.length} bytes, its shape (${shape.join(', ')}) needs ${elements * size}`);
  return { datatype, descr, shape, data };
}
