/**
 * A minimal protobuf wire reader over one Buffer (varints, fixed 32/64,
 * length-delimited views, unknown-field skipping), for the hand-rolled
 * inference codecs. Values read the way protobufjs reads them, so the
 * decoded objects match @grpc/proto-loader's: 32-bit varints keep their low
 * 32 bits, 64-bit integers come back as decimal strings, `bytes` as views
 * into the received message (no copy). Malformed input throws.
 */

const TWO_32 = 4294967296;
/** hi words below this make hi * 2^32 + lo a safe integer. */
const SAFE_HI = 0x200000;

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_LEN = 2;
export const WIRE_START_GROUP = 3;
export const WIRE_END_GROUP = 4;
export const WIRE_FIXED32 = 5;

/** Groups skipped inside groups past this depth are refused, as protobuf's own recursion limit (100) does, instead of running out of stack. */
const MAX_GROUP_DEPTH = 100;

/** A read ran past the end of the message (or of the sub-message holding it) at byte `at`. */
function truncated(at: number): Error {
  return new Error(`protobuf message truncated at byte ${at}`);
}

export class WireReader {
  pos: number;
  /** The current 64-bit varint's high word, set by varint64(). */
  private hi = 0;

  constructor(
    readonly buf: Buffer,
    start: number,
    public end: number,
  ) {
    this.pos = start;
  }

  /** A varint's low 32 bits, unsigned (tags, lengths, uint32). */
  uint32(): number {
    const buf = this.buf;
    let pos = this.pos;
    if (pos >= this.end) throw truncated(pos);
    let b = buf[pos++];
    if (b < 0x80) {
      this.pos = pos;
      return b;
    }
    let v = b & 0x7f;
    for (let shift = 7; shift < 70; shift += 7) {
      if (pos >= this.end) throw truncated(pos);
      b = buf[pos++];
      if (shift < 32) v |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.pos = pos;
        return v >>> 0;
      }
    }
    throw new Error(`protobuf varint at byte ${this.pos} is longer than 10 bytes`);
  }

  /** A varint as (low word returned, high word in this.hi). */
  private varint64(): number {
    const buf = this.buf;
    let pos = this.pos;
    let lo = 0;
    let hi = 0;
    let b = 0;
    let k = 0;
    for (; k < 4; k++) {
      if (pos >= this.end) throw truncated(pos);
      b = buf[pos++];
      lo |= (b & 0x7f) << (k * 7);
      if (b < 0x80) {
        this.pos = pos;
        this.hi = 0;
        return lo >>> 0;
      }
    }
    // 5th byte: 4 bits to lo, 3 to hi.
    if (pos >= this.end) throw truncated(pos);
    b = buf[pos++];
    lo |= (b & 0x0f) << 28;
    hi = (b & 0x7f) >> 4;
    if (b >= 0x80) {
      for (k = 0; k < 5; k++) {
        if (pos >= this.end) throw truncated(pos);
        b = buf[pos++];
        hi |= (b & 0x7f) << (k * 7 + 3);
        if (b < 0x80) break;
      }
      if (b >= 0x80) throw new Error(`protobuf varint at byte ${this.pos} is longer than 10 bytes`);
    }
    this.pos = pos;
    this.hi = hi >>> 0;
    return lo >>> 0;
  }

  int32(): number {
    return this.uint32() | 0;
  }

  bool(): boolean {
    const lo = this.varint64();
    return lo !== 0 || this.hi !== 0;
  }

  /** int64 as a signed decimal string (longs: String). */
  int64(): string {
    const lo = this.varint64();
    const hi = this.hi;
    if (hi < SAFE_HI) return String(hi * TWO_32 + lo);
    if (hi >= 0x80000000) {
      // Negative: two's complement magnitude.
      const nlo = (~lo + 1) >>> 0;
      const nhi = (~hi + (nlo === 0 ? 1 : 0)) >>> 0;
      if (nhi < SAFE_HI) return '-' + String(nhi * TWO_32 + nlo);
    }
    return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)).toString();
  }

  /** uint64 as an unsigned decimal string. */
  uint64(): string {
    const lo = this.varint64();
    const hi = this.hi;
    if (hi < SAFE_HI) return String(hi * TWO_32 + lo);
    return ((BigInt(hi) << 32n) | BigInt(lo)).toString();
  }

  float(): number {
    if (this.pos + 4 > this.end) throw truncated(this.end);
    const v = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }

  double(): number {
    if (this.pos + 8 > this.end) throw truncated(this.end);
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  /** Length of a length-delimited field; leaves pos at its first byte and checks it fits. */
  length(): number {
    const n = this.uint32();
    if (n > this.end - this.pos) {
      throw new Error(`protobuf message truncated: a length-delimited field at byte ${this.pos} declares ${n} bytes, ${this.end - this.pos} remain`);
    }
    return n;
  }

  /** A `bytes` field as a view into the message (empty: a fresh empty Buffer, as protobufjs). */
  bytes(): Buffer {
    const n = this.length();
    const start = this.pos;
    this.pos += n;
    return n === 0 ? Buffer.alloc(0) : this.buf.subarray(start, start + n);
  }

  string(): string {
    const n = this.length();
    const start = this.pos;
    this.pos += n;
    return n === 0 ? '' : this.buf.toString('utf8', start, start + n);
  }

  /** Skips one field's value of the given wire type (groups included, `depth` of them around it). */
  skip(wireType: number, depth = 0): void {
    switch (wireType) {
      case WIRE_VARINT:
        this.varint64();
        return;
      case WIRE_FIXED64:
        this.advance(8);
        return;
      case WIRE_LEN:
        this.advance(this.length());
        return;
      case WIRE_START_GROUP:
        if (depth >= MAX_GROUP_DEPTH) throw new Error(`protobuf groups nested deeper than ${MAX_GROUP_DEPTH} at byte ${this.pos}`);
        for (;;) {
          const tag = this.uint32();
          const wt = tag & 7;
          if (wt === WIRE_END_GROUP) return;
          this.skip(wt, depth + 1);
        }
      case WIRE_FIXED32:
        this.advance(4);
        return;
      default:
        throw new Error(`invalid protobuf wire type ${wireType} at byte ${this.pos}`);
    }
  }

  private advance(n: number): void {
    if (n > this.end - this.pos) throw truncated(this.end);
    this.pos += n;
  }
}

/** Throws for a known field sent with the wrong wire type. */
export function wrongWireType(field: string, wireType: number): Error {
  return new Error(`protobuf field '${field}' has unexpected wire type ${wireType}`);
}
