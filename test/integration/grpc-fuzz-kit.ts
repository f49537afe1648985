/**
 * What the gRPC fuzz suite (grpc-fuzz.test.ts) builds its cases from and
 * checks them with: a seeded PRNG, a protobuf writer that knows where each
 * field it wrote starts and ends (so a case can cut or corrupt one field
 * and know what the server must say), ModelInferRequests on `simple`, the
 * decoders of the responses from our protos, the case shape, and the
 * status check.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import * as protoLoader from '@grpc/proto-loader';
import type { RawCallResult, RawGrpcClient } from './grpc-raw-client';
import { int32Bytes, int32Values } from './grpc-test-client';
import type { GrpcTestClient } from './grpc-test-client';
import { REPO_ROOT } from './server-process';

/** What a case runs against: the raw HTTP/2 client, a grpc-js client, and the server's gRPC port. */
export interface FuzzEnv {
  raw: RawGrpcClient;
  client: GrpcTestClient;
  port: number;
}

/** One generated case: its family, what it sends (for the failure message), and the run that asserts. */
export interface FuzzCase {
  family: string;
  detail: string;
  run(env: FuzzEnv): Promise<void>;
}

/** The call answered (no timeout) with `code` and a message equal to, or matching, `message`. */
export function expectStatus(res: RawCallResult, code: number, message: string | RegExp): void {
  assert.equal(res.timedOut, false, 'the call was answered (it timed out)');
  assert.equal(res.status, code, `grpc-status ${res.status} '${res.message}', expected ${code}`);
  if (typeof message === 'string') assert.equal(res.message, message);
  else assert.match(res.message, message);
}

export function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The head and tail of the server's text for a ModelInferRequest of `bytes` bytes that did not parse. */
export function parseErrorParts(bytes: number, id: string, model: string): { head: string; tail: string } {
  return {
    head:
      `${id !== '' ? `[request id: ${id}] ` : ''}unable to parse the ModelInferRequest message (${bytes} bytes)` +
      `${model !== '' ? ` for model '${model}'` : ''}: `,
    tail: ". Send a ModelInferRequest serialized from Triton's grpc_service.proto",
  };
}

/** mulberry32: small, seeded, good enough to pick cases. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  /** [0, 1) */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [lo, hi] (inclusive). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  bytes(n: number): Buffer {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = this.int(0, 255);
    return b;
  }
  /** A key of `weights` drawn with those weights. */
  weighted<K extends string>(weights: Record<K, number>): K {
    const entries = Object.entries(weights) as [K, number][];
    let x = this.next() * entries.reduce((a, [, w]) => a + w, 0);
    for (const [k, w] of entries) {
      x -= w;
      if (x < 0) return k;
    }
    return entries[entries.length - 1][0];
  }
}

/** The server's text for a gzip message of `bytes` bytes that does not decompress (zlib's reason varies with the damage). */
export function undecompressableText(bytes: number): RegExp {
  return new RegExp(
    `^${escapeRe(`unable to decompress the ModelInferRequest message (${bytes} bytes, grpc-encoding gzip): `)}.+` +
      escapeRe(". Send it compressed with the encoding the call's grpc-encoding header names, or uncompressed (compressed flag 0)") +
      '$',
  );
}

// ---- protobuf writing ----

export const WT = { VARINT: 0, FIXED64: 1, LEN: 2, START_GROUP: 3, END_GROUP: 4, FIXED32: 5 } as const;

export function varint(n: number): Buffer {
  const out: number[] = [];
  let v = BigInt(n);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return Buffer.from(out);
}

export function tag(field: number, wireType: number): Buffer {
  return varint(field * 8 + wireType);
}

export function lenField(field: number, bytes: Buffer | string): Buffer {
  const b = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  return Buffer.concat([tag(field, WT.LEN), varint(b.length), b]);
}

/** A message as a list of top-level fields, each with its bytes and name. */
export interface Field {
  name: string;
  bytes: Buffer;
}

/** The bytes of `fields` and where each one starts and ends. */
export function layout(fields: Field[]): { bytes: Buffer; spans: { name: string; start: number; end: number }[] } {
  const spans: { name: string; start: number; end: number }[] = [];
  let at = 0;
  for (const f of fields) {
    spans.push({ name: f.name, start: at, end: at + f.bytes.length });
    at += f.bytes.length;
  }
  return { bytes: Buffer.concat(fields.map((f) => f.bytes)), spans };
}

// ---- requests on `simple` (INT32 [-1,16] in, OUTPUT0 = sum, OUTPUT1 = difference) ----

export const TOP_FIELDS: Record<number, string> = {
  1: 'model_name',
  2: 'model_version',
  3: 'id',
  4: 'parameters',
  5: 'inputs',
  6: 'outputs',
  7: 'raw_input_contents',
};
export const INPUT_FIELDS: Record<number, string> = { 1: 'name', 2: 'datatype', 3: 'shape', 4: 'parameters', 5: 'contents' };

function inputTensor(name: string, shape: number[]): Buffer {
  return Buffer.concat([lenField(1, name), lenField(2, 'INT32'), lenField(3, Buffer.concat(shape.map(varint)))]);
}

export interface SimpleRequest {
  id: string;
  in0: number[];
  in1: number[];
  fields: Field[];
}

/** A valid ModelInferRequest on `simple` (model_name and id first, in either order), or on `model` with `shape`. */
export function simpleRequest(rng: Rng, id: string, opts: { model?: string; shape?: number[] } = {}): SimpleRequest {
  const shape = opts.shape ?? [1, 16];
  const n = shape.reduce((a, b) => a * b, 1);
  const in0 = Array.from({ length: n }, () => rng.int(-1000, 1000));
  const in1 = Array.from({ length: n }, () => rng.int(-1000, 1000));
  const head: Field[] = [
    { name: 'model_name', bytes: lenField(1, opts.model ?? 'simple') },
    { name: 'id', bytes: lenField(3, id) },
  ];
  if (rng.chance(0.5)) head.reverse();
  return {
    id,
    in0,
    in1,
    fields: [
      ...head,
      { name: 'inputs', bytes: lenField(5, inputTensor('INPUT0', shape)) },
      { name: 'inputs', bytes: lenField(5, inputTensor('INPUT1', shape)) },
      { name: 'raw_input_contents', bytes: lenField(7, int32Bytes(in0)) },
      { name: 'raw_input_contents', bytes: lenField(7, int32Bytes(in1)) },
    ],
  };
}

export function requestBytes(r: SimpleRequest): Buffer {
  return layout(r.fields).bytes;
}

/** The outputs `simple` must return for a request. */
export function expectedOutputs(r: { in0: number[]; in1: number[] }): { sum: number[]; diff: number[] } {
  return { sum: r.in0.map((v, i) => (v + r.in1[i]) | 0), diff: r.in0.map((v, i) => (v - r.in1[i]) | 0) };
}

// ---- response decoding (proto-loader over our protos, as any client would) ----

const pkg = protoLoader.loadSync(['grpc_service.proto'], {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [path.join(REPO_ROOT, 'proto')],
});
const service = pkg['inference.GRPCInferenceService'] as unknown as Record<
  string,
  {
    requestSerialize(v: object): Buffer;
    responseDeserialize(b: Buffer): unknown;
  }
>;

export interface InferResponseMsg {
  id: string;
  model_name: string;
  outputs: { name: string }[];
  raw_output_contents: Buffer[];
}

export interface StreamResponseMsg {
  error_message: string;
  infer_response: InferResponseMsg | null;
}

export function decodeInferResponse(b: Buffer): InferResponseMsg {
  return service.ModelInfer.responseDeserialize(b) as InferResponseMsg;
}

export function decodeStreamResponse(b: Buffer): StreamResponseMsg {
  return service.ModelStreamInfer.responseDeserialize(b) as StreamResponseMsg;
}

/** OUTPUT0 and OUTPUT1 of a response on `simple`. */
export function simpleOutputs(r: InferResponseMsg): { sum: number[]; diff: number[] } {
  const at = (name: string): number[] => int32Values(r.raw_output_contents[r.outputs.findIndex((o) => o.name === name)]);
  return { sum: at('OUTPUT0'), diff: at('OUTPUT1') };
}
