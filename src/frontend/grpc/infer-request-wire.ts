/**
 * ModelInferRequest bytes → the object @grpc/proto-loader would produce with
 * LOADER_OPTIONS (proto-types.ts): every field present with its default,
 * int64/uint64 as decimal strings, `bytes` as views into the message, each
 * InferParameter's set member named by `parameter_choice`, `contents` null
 * when absent. Packed and unpacked repeated scalars are both accepted;
 * unknown fields are skipped. Used as the requestDeserialize of ModelInfer
 * and ModelStreamInfer, in place of protobufjs decode + toObject.
 *
 * One deliberate difference in shape: BYTES `bytes_contents` come as one
 * buffer in the serialized BYTES layout (`contents.bytes_serialized`, with
 * the element count) instead of one Buffer per element, so a 10M-element
 * tensor makes no 10M objects; `bytes_contents` stays empty.
 * Two deliberate differences from protobufjs, both on inputs no client
 * sends: a oneof given twice keeps only the member last on the wire (as
 * protobuf does; protobufjs keeps both), and a map entry without a value
 * yields an empty InferParameter (protobufjs throws).
 * Field numbers: proto/grpc_service.proto.
 */
import type { InferInputTensorMsg, InferParameterMsg, InferRequestedOutputTensorMsg, InferTensorContentsMsg, ModelInferRequestMsg } from './proto-types';
import { writeElementLength } from '../../request/tensor-view';
import { WIRE_FIXED32, WIRE_FIXED64, WIRE_LEN, WIRE_VARINT, WireReader, wrongWireType } from './wire-reader';

/** A request with every field at its default, as proto-loader gives an empty message. */
export function emptyModelInferRequest(): ModelInferRequestMsg {
  return { model_name: '', model_version: '', id: '', parameters: {}, inputs: [], outputs: [], raw_input_contents: [] };
}

/**
 * Decodes into `msg` (a fresh empty request by default) and returns it.
 * Throws on malformed input; the fields read before the bad byte stay in
 * `msg`, so an error can name the model and request id when they came first.
 */
export function decodeModelInferRequestBytes(buf: Buffer, msg: ModelInferRequestMsg = emptyModelInferRequest()): ModelInferRequestMsg {
  const r = new WireReader(buf, 0, buf.length);
  while (r.pos < r.end) {
    const tag = r.uint32();
    const wt = tag & 7;
    switch (tag >>> 3) {
      case 1:
        expectLen('model_name', wt);
        msg.model_name = r.string();
        break;
      case 2:
        expectLen('model_version', wt);
        msg.model_version = r.string();
        break;
      case 3:
        expectLen('id', wt);
        msg.id = r.string();
        break;
      case 4:
        expectLen('parameters', wt);
        readParameterEntry(r, msg.parameters);
        break;
      case 5:
        expectLen('inputs', wt);
        msg.inputs.push(readInput(r));
        break;
      case 6:
        expectLen('outputs', wt);
        msg.outputs.push(readOutput(r));
        break;
      case 7:
        expectLen('raw_input_contents', wt);
        msg.raw_input_contents.push(r.bytes());
        break;
      default:
        r.skip(wt);
    }
  }
  return msg;
}

function expectLen(field: string, wt: number): void {
  if (wt !== WIRE_LEN) throw wrongWireType(field, wt);
}

/** Narrows the reader to a length-delimited sub-message; returns the outer end for leave(). */
function enter(r: WireReader): number {
  const n = r.length();
  const outer = r.end;
  r.end = r.pos + n;
  return outer;
}

function leave(r: WireReader, outer: number): void {
  r.end = outer;
}

function readInput(s: WireReader): InferInputTensorMsg {
  const outer = enter(s);
  const t: InferInputTensorMsg = { name: '', datatype: '', shape: [], parameters: {}, contents: null };
  while (s.pos < s.end) {
    const tag = s.uint32();
    const wt = tag & 7;
    switch (tag >>> 3) {
      case 1:
        expectLen('name', wt);
        t.name = s.string();
        break;
      case 2:
        expectLen('datatype', wt);
        t.datatype = s.string();
        break;
      case 3:
        readRepeated(s, wt, 'shape', WIRE_VARINT, t.shape, s.int64);
        break;
      case 4:
        expectLen('parameters', wt);
        readParameterEntry(s, t.parameters);
        break;
      case 5:
        expectLen('contents', wt);
        t.contents = readContents(s);
        break;
      default:
        s.skip(wt);
    }
  }
  leave(s, outer);
  return t;
}

function readOutput(s: WireReader): InferRequestedOutputTensorMsg {
  const outer = enter(s);
  const o: InferRequestedOutputTensorMsg = { name: '', parameters: {} };
  while (s.pos < s.end) {
    const tag = s.uint32();
    const wt = tag & 7;
    switch (tag >>> 3) {
      case 1:
        expectLen('name', wt);
        o.name = s.string();
        break;
      case 2:
        expectLen('parameters', wt);
        readParameterEntry(s, o.parameters);
        break;
      default:
        s.skip(wt);
    }
  }
  leave(s, outer);
  return o;
}

/** One `map<string, InferParameter>` entry (key = 1, value = 2); a repeated key replaces the earlier one. */
function readParameterEntry(s: WireReader, into: Record<string, InferParameterMsg>): void {
  const outer = enter(s);
  let key = '';
  let value: InferParameterMsg = {};
  while (s.pos < s.end) {
    const tag = s.uint32();
    const wt = tag & 7;
    switch (tag >>> 3) {
      case 1:
        expectLen('key', wt);
        key = s.string();
        break;
      case 2:
        expectLen('value', wt);
        value = readParameter(s);
        break;
      default:
        s.skip(wt);
    }
  }
  into[key] = value;
  leave(s, outer);
}

function readParameter(s: WireReader): InferParameterMsg {
  const outer = enter(s);
  let p: InferParameterMsg = {};
  while (s.pos < s.end) {
    const tag = s.uint32();
    const wt = tag & 7;
    switch (tag >>> 3) {
      case 1:
        if (wt !== WIRE_VARINT) throw wrongWireType('bool_param', wt);
        p = { bool_param: s.bool(), parameter_choice: 'bool_param' };
        break;
      case 2:
        if (wt !== WIRE_VARINT) throw wrongWireType('int64_param', wt);
        p = { int64_param: s.int64(), parameter_choice: 'int64_param' };
        break;
      case 3:
        expectLen('string_param', wt);
        p = { string_param: s.string(), parameter_choice: 'string_param' };
        break;
      case 4:
        if (wt !== WIRE_FIXED64) throw wrongWireType('double_param', wt);
        p = { double_param: s.double(), parameter_choice: 'double_param' };
        break;
      case 5:
        if (wt !== WIRE_VARINT) throw wrongWireType('uint64_param', wt);
        p = { uint64_param: s.uint64(), parameter_choice: 'uint64_param' };
        break;
      default:
        s.skip(wt);
    }
  }
  leave(s, outer);
  return p;
}

/** InferTensorContents.bytes_contents: field 8, length-delimited. */
const BYTES_CONTENTS_TAG = (8 << 3) | WIRE_LEN;

/**
 * InferTensorContents; bytes_contents come back in bytes_serialized, already
 * length-prefixed (proto-types.ts), from a second pass over the message.
 */
function readContents(s: WireReader): InferTensorContentsMsg {
  const outer = enter(s);
  const c: InferTensorContentsMsg = {
    bool_contents: [],
    int_contents: [],
    int64_contents: [],
    uint_contents: [],
    uint64_contents: [],
    fp32_contents: [],
    fp64_contents: [],
    bytes_contents: [],
  };
  const begin = s.pos;
  let bytesTotal = 0;
  let bytesCount = 0;
  while (s.pos < s.end) {
    const tag = s.uint32();
    const wt = tag & 7;
    switch (tag >>> 3) {
      case 1:
        readRepeated(s, wt, 'bool_contents', WIRE_VARINT, c.bool_contents, s.bool);
        break;
      case 2:
        readRepeated(s, wt, 'int_contents', WIRE_VARINT, c.int_contents, s.int32);
        break;
      case 3:
        readRepeated(s, wt, 'int64_contents', WIRE_VARINT, c.int64_contents, s.int64);
        break;
      case 4:
        readRepeated(s, wt, 'uint_contents', WIRE_VARINT, c.uint_contents, s.uint32);
        break;
      case 5:
        readRepeated(s, wt, 'uint64_contents', WIRE_VARINT, c.uint64_contents, s.uint64);
        break;
      case 6:
        readRepeated(s, wt, 'fp32_contents', WIRE_FIXED32, c.fp32_contents, s.float);
        break;
      case 7:
        readRepeated(s, wt, 'fp64_contents', WIRE_FIXED64, c.fp64_contents, s.double);
        break;
      case 8: {
        expectLen('bytes_contents', wt);
        const n = s.length();
        s.pos += n;
        bytesTotal += 4 + n;
        bytesCount++;
        break;
      }
      default:
        s.skip(wt);
    }
  }
  if (bytesCount > 0) c.bytes_serialized = { data: serializeBytesContents(s.buf, begin, s.end, bytesTotal), count: bytesCount };
  leave(s, outer);
  return c;
}

/** Elements up to this many bytes are copied byte by byte; longer ones with one Buffer.copy. */
const SHORT_ELEMENT = 32;

/**
 * The second pass over a contents message whose first pass (readContents)
 * checked its framing and summed its bytes_contents: each element's length
 * and bytes, in wire order, into one buffer of `total` bytes. No object per
 * element; other fields are skipped.
 */
function serializeBytesContents(buf: Buffer, begin: number, end: number, total: number): Uint8Array {
  const out = Buffer.allocUnsafe(total);
  const r = new WireReader(buf, begin, end);
  let p = 0;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag !== BYTES_CONTENTS_TAG) {
      r.skip(tag & 7);
      continue;
    }
    const n = r.length();
    const from = r.pos;
    writeElementLength(out, p, n);
    p += 4;
    if (n <= SHORT_ELEMENT) {
      for (let k = 0; k < n; k++) out[p + k] = buf[from + k];
    } else {
      buf.copy(out, p, from, from + n);
    }
    p += n;
    r.pos = from + n;
  }
  if (p !== total) throw new Error(`internal: bytes_contents serialized to ${p} bytes, summed ${total}`);
  return out;
}

/** A repeated scalar: one packed run (length-delimited) or one unpacked element of `elementWire`. */
function readRepeated<T>(s: WireReader, wt: number, field: string, elementWire: number, into: T[], read: (this: WireReader) => T): void {
  if (wt === WIRE_LEN) {
    const n = s.length();
    const end = s.pos + n;
    while (s.pos < end) into.push(read.call(s));
    if (s.pos !== end) throw new Error(`protobuf packed field '${field}' overruns its length`);
  } else if (wt === elementWire) {
    into.push(read.call(s));
  } else {
    throw wrongWireType(field, wt);
  }
}
