/**
 * A UBJSON decoder (ubjson.org, draft 12: big-endian numbers, optimized
 * containers with `$` type and `#` count), enough for XGBoost's `.ubj`
 * models. Strongly typed numeric arrays come back as typed arrays.
 */
import { FilModelError } from './fil-model-error';

export function decodeUbjson(bytes: Uint8Array): unknown {
  const r = new Reader(bytes);
  const v = r.value(r.marker());
  return v;
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

class Reader {
  private pos = 0;
  private readonly view: DataView;

  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private need(n: number): void {
    if (this.pos + n > this.bytes.length) throw new FilModelError(`the UBJSON data ends early (at byte ${this.pos}, ${n} more needed)`);
  }

  marker(): number {
    for (;;) {
      this.need(1);
      const m = this.bytes[this.pos++]!;
      if (m !== 0x4e /* N: no-op */) return m;
    }
  }

  private int(m: number): number {
    const v = this.number(m);
    if (typeof v !== 'number' || !Number.isInteger(v))
      throw new FilModelError(`a UBJSON length or count is not an integer (marker '${String.fromCharCode(m)}' at byte ${this.pos})`);
    return v;
  }

  private number(m: number): number | undefined {
    const at = this.pos;
    switch (m) {
      case 0x69:
        this.need(1);
        this.pos += 1;
        return this.view.getInt8(at);
      case 0x55:
        this.need(1);
        this.pos += 1;
        return this.view.getUint8(at);
      case 0x49:
        this.need(2);
        this.pos += 2;
        return this.view.getInt16(at);
      case 0x6c:
        this.need(4);
        this.pos += 4;
        return this.view.getInt32(at);
      case 0x4c:
        this.need(8);
        this.pos += 8;
        return Number(this.view.getBigInt64(at));
      case 0x64:
        this.need(4);
        this.pos += 4;
        return this.view.getFloat32(at);
      case 0x44:
        this.need(8);
        this.pos += 8;
        return this.view.getFloat64(at);
      default:
        return undefined;
    }
  }

  private string(): string {
    const n = this.int(this.marker());
    this.need(n);
    const s = utf8.decode(this.bytes.subarray(this.pos, this.pos + n));
    this.pos += n;
    return s;
  }

  value(m: number): unknown {
    const n = this.number(m);
    if (n !== undefined) return n;
    switch (m) {
      case 0x5a:
        return null;
      case 0x54:
        return true;
      case 0x46:
        return false;
      case 0x43:
        this.need(1);
        return String.fromCharCode(this.bytes[this.pos++]!);
      case 0x53:
      case 0x48:
        return this.string();
      case 0x5b:
        return this.array();
      case 0x7b:
        return this.object();
      default:
        throw new FilModelError(`unknown UBJSON marker 0x${m.toString(16)} at byte ${this.pos - 1}`);
    }
  }

  /** After '[' or '{': the optional `$type` and `#count`. */
  private header(): { type: number | undefined; count: number | undefined } {
    let type: number | undefined;
    let count: number | undefined;
    this.need(1);
    if (this.bytes[this.pos] === 0x24 /* $ */) {
      this.pos++;
      this.need(1);
      type = this.bytes[this.pos++];
    }
    this.need(1);
    if (this.bytes[this.pos] === 0x23 /* # */) {
      this.pos++;
      count = this.int(this.marker());
    } else if (type !== undefined) {
      throw new FilModelError(`a typed UBJSON container has no count (byte ${this.pos})`);
    }
    return { type, count };
  }

  private array(): unknown[] | ArrayLike<number> {
    const { type, count } = this.header();
    if (count !== undefined && type !== undefined) {
      const typed = this.typedArray(type, count);
      if (typed !== undefined) return typed;
      const out: unknown[] = [];
      for (let i = 0; i < count; i++) out.push(this.value(type));
      return out;
    }
    const out: unknown[] = [];
    if (count !== undefined) {
      for (let i = 0; i < count; i++) out.push(this.value(this.marker()));
      return out;
    }
    for (;;) {
      const m = this.marker();
      if (m === 0x5d /* ] */) return out;
      out.push(this.value(m));
    }
  }

  private typedArray(type: number, count: number): ArrayLike<number> | undefined {
    const size = ({ 0x69: 1, 0x55: 1, 0x49: 2, 0x6c: 4, 0x4c: 8, 0x64: 4, 0x44: 8 } as Record<number, number>)[type];
    if (size === undefined) return undefined;
    this.need(size * count);
    const at = this.pos;
    this.pos += size * count;
    const v = this.view;
    switch (type) {
      case 0x69:
        return Int8Array.from(this.bytes.subarray(at, at + count), (b) => (b << 24) >> 24);
      case 0x55:
        return this.bytes.slice(at, at + count);
      case 0x49: {
        const a = new Int16Array(count);
        for (let i = 0; i < count; i++) a[i] = v.getInt16(at + 2 * i);
        return a;
      }
      case 0x6c: {
        const a = new Int32Array(count);
        for (let i = 0; i < count; i++) a[i] = v.getInt32(at + 4 * i);
        return a;
      }
      case 0x4c: {
        const a = new Float64Array(count);
        for (let i = 0; i < count; i++) a[i] = Number(v.getBigInt64(at + 8 * i));
        return a;
      }
      case 0x64: {
        const a = new Float32Array(count);
        for (let i = 0; i < count; i++) a[i] = v.getFloat32(at + 4 * i);
        return a;
      }
      default: {
        const a = new Float64Array(count);
        for (let i = 0; i < count; i++) a[i] = v.getFloat64(at + 8 * i);
        return a;
      }
    }
  }

  private object(): Record<string, unknown> {
    const { type, count } = this.header();
    const out: Record<string, unknown> = {};
    if (count !== undefined) {
      for (let i = 0; i < count; i++) {
        const key = this.string();
        out[key] = this.value(type ?? this.marker());
      }
      return out;
    }
    for (;;) {
      this.need(1);
      if (this.bytes[this.pos] === 0x7d /* } */) {
        this.pos++;
        return out;
      }
      const key = this.string();
      out[key] = this.value(this.marker());
    }
  }
}
