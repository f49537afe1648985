/**
 * The few protobuf encodings `onnx-tree-ensemble.ts` needs to write an ONNX
 * model: varints, length-delimited fields (strings, bytes, nested
 * messages), packed non-negative int64s and packed floats.
 */
export class ProtoWriter {
  private readonly parts: Uint8Array[] = [];
  private length = 0;

  private push(b: Uint8Array): void {
    this.parts.push(b);
    this.length += b.length;
  }

  private varint(v: number): void {
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`protobuf varint ${v}: only non-negative integers are written`);
    const out: number[] = [];
    while (v >= 0x80) {
      out.push((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    out.push(v);
    this.push(Uint8Array.from(out));
  }

  private tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  int(field: number, v: number): this {
    this.tag(field, 0);
    this.varint(v);
    return this;
  }

  float(field: number, v: number): this {
    this.tag(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.push(b);
    return this;
  }

  bytes(field: number, b: Uint8Array): this {
    this.tag(field, 2);
    this.varint(b.length);
    this.push(b);
    return this;
  }

  string(field: number, s: string): this {
    return this.bytes(field, Buffer.from(s, 'utf8'));
  }

  message(field: number, m: ProtoWriter): this {
    return this.bytes(field, m.finish());
  }

  packedInts(field: number, values: ArrayLike<number>): this {
    const inner = new ProtoWriter();
    for (let i = 0; i < values.length; i++) inner.varint(values[i]!);
    return this.bytes(field, inner.finish());
  }

  packedFloats(field: number, values: ArrayLike<number>): this {
    const b = new Uint8Array(4 * values.length);
    const view = new DataView(b.buffer);
    for (let i = 0; i < values.length; i++) view.setFloat32(4 * i, values[i]!, true);
    return this.bytes(field, b);
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.length);
    let pos = 0;
    for (const p of this.parts) {
      out.set(p, pos);
      pos += p.length;
    }
    return out;
  }
}
