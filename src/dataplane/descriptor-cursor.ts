/**
 * Byte cursors for the ring descriptors (descriptor-codec.ts): little-endian
 * numbers and length-prefixed UTF-8 strings in a Buffer, with no per-field
 * allocation on the write side (one scratch buffer per thread, grown on
 * demand) and no copy on the read side (fields are read from the ring's own
 * bytes, before its space is handed back).
 */
export class DescriptorWriter {
  private buf = Buffer.allocUnsafe(4096);
  pos = 0;

  /** Starts a new descriptor; the previous one's bytes may be overwritten. */
  reset(): void {
    this.pos = 0;
  }

  /** The descriptor written since reset (a view of the scratch buffer). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos);
  }

  u8(v: number): void {
    this.room(1);
    this.buf[this.pos++] = v;
  }

  u32(v: number): void {
    this.room(4);
    this.buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
  }

  /** Any JS number (offsets, keys, nanosecond clocks): exactly what JSON would have carried. */
  f64(v: number): void {
    this.room(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  /** u32 byte length, then UTF-8. */
  str(s: string): void {
    this.room(4 + s.length * 3);
    const n = this.buf.write(s, this.pos + 4, 'utf8');
    this.buf.writeUInt32LE(n, this.pos);
    this.pos += 4 + n;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const bigger = Buffer.allocUnsafe(size);
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }
}

export class DescriptorReader {
  constructor(
    private readonly buf: Buffer,
    public pos: number,
    private readonly end: number,
  ) {}

  u8(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }

  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  f64(): number {
    this.need(8);
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  str(): string {
    const n = this.u32();
    this.need(n);
    const s = this.buf.toString('utf8', this.pos, this.pos + n);
    this.pos += n;
    return s;
  }

  /** Throws unless the descriptor was read to its last byte. */
  done(what: string): void {
    if (this.pos !== this.end) throw new RangeError(`${what} descriptor: ${this.end - this.pos} bytes left over`);
  }

  private need(n: number): void {
    if (this.pos + n > this.end) throw new RangeError(`descriptor truncated at byte ${this.pos} (needs ${n} more, ${this.end - this.pos} left)`);
  }
}
