/**
 * A minimal protobuf wire writer into one preallocated Buffer, with the size
 * functions its callers use to allocate exactly once. 64-bit integers may be
 * numbers (safe integers) or decimal strings; negative ones take 10 bytes
 * (two's complement), as protobuf encodes int64.
 */

const TWO_32 = 4294967296;

/** Bytes of a varint holding a non-negative value below 2^53. */
export function varintSize(n: number): number {
  if (n < 0x80) return 1;
  if (n < 0x4000) return 2;
  if (n < 0x200000) return 3;
  if (n < 0x10000000) return 4;
  let size = 4;
  let v = Math.floor(n / 0x10000000);
  while (v > 0) {
    size++;
    v = Math.floor(v / 128);
  }
  return size;
}

/** An int64 value's (lo, hi) words, two's complement. */
function int64Words(v: number | string): [number, number] {
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw new Error(`int64 value ${v} is not a safe integer`);
    if (v >= 0) return [(v % TWO_32) >>> 0, Math.floor(v / TWO_32) >>> 0];
    const m = -v;
    const lo = (m % TWO_32) >>> 0;
    const hi = Math.floor(m / TWO_32) >>> 0;
    const nlo = (~lo + 1) >>> 0;
    return [nlo, (~hi + (nlo === 0 ? 1 : 0)) >>> 0];
  }
  const b = BigInt.asUintN(64, BigInt(v));
  return [Number(b & 0xffffffffn), Number(b >> 32n)];
}

/** Bytes of an int64 varint. */
export function int64Size(v: number | string): number {
  if (typeof v === 'number' && v >= 0 && v < 0x10000000) return varintSize(v);
  const [lo, hi] = int64Words(v);
  if (hi === 0) return varintSize(lo);
  return Math.ceil((64 - Math.clz32(hi)) / 7);
}

/** True when every char is ASCII, so the UTF-8 length is the string length. */
function isAscii(s: string): boolean {
  for (let k = 0; k < s.length; k++) if (s.charCodeAt(k) >= 0x80) return false;
  return true;
}

export function utf8Size(s: string): number {
  return s.length < 64 && isAscii(s) ? s.length : Buffer.byteLength(s, 'utf8');
}

/** A length-delimited field (tag byte + length + payload) around a payload of `n` bytes; tags here are one byte. */
export function delimitedSize(n: number): number {
  return 1 + varintSize(n) + n;
}

export function stringFieldSize(s: string): number {
  return delimitedSize(utf8Size(s));
}

export class WireWriter {
  pos = 0;

  constructor(readonly buf: Buffer) {}

  byte(b: number): void {
    this.buf[this.pos++] = b;
  }

  /** A non-negative varint below 2^53. */
  varint(n: number): void {
    const buf = this.buf;
    let pos = this.pos;
    while (n >= 0x80000000) {
      buf[pos++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    while (n >= 0x80) {
      buf[pos++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    buf[pos++] = n;
    this.pos = pos;
  }

  int64(v: number | string): void {
    if (typeof v === 'number' && v >= 0 && v < 0x80000000) return this.varint(v);
    let [lo, hi] = int64Words(v);
    const buf = this.buf;
    let pos = this.pos;
    while (hi !== 0 || lo >= 0x80) {
      buf[pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    buf[pos++] = lo;
    this.pos = pos;
  }

  double(v: number): void {
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  /** Tag, length and UTF-8 bytes of a string field. */
  stringField(tag: number, s: string): void {
    this.byte(tag);
    if (s.length < 64 && isAscii(s)) {
      const buf = this.buf;
      let pos = this.pos;
      buf[pos++] = s.length; // < 64: one varint byte
      for (let k = 0; k < s.length; k++) buf[pos++] = s.charCodeAt(k);
      this.pos = pos;
      return;
    }
    const n = Buffer.byteLength(s, 'utf8');
    this.varint(n);
    this.pos += this.buf.write(s, this.pos, n, 'utf8');
  }

  /** Tag, length and a copy of the bytes. */
  bytesField(tag: number, b: Uint8Array): void {
    this.byte(tag);
    this.varint(b.byteLength);
    this.buf.set(b, this.pos);
    this.pos += b.byteLength;
  }
}
