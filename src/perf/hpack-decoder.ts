/**
 * An HPACK decoder (RFC 7541) for the perf tool's raw HTTP/2 client: the
 * static table, a dynamic table bounded by the size we advertise, integers
 * with prefixes, raw and Huffman string literals. One per connection, since
 * the dynamic table is connection state: every header block must go through
 * it in order, even those whose fields are not needed.
 */
import { huffmanDecode } from './hpack-huffman';

const STATIC: readonly (readonly [string, string])[] = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'],
  ['accept-language', ''],
  ['accept-ranges', ''],
  ['accept', ''],
  ['access-control-allow-origin', ''],
  ['age', ''],
  ['allow', ''],
  ['authorization', ''],
  ['cache-control', ''],
  ['content-disposition', ''],
  ['content-encoding', ''],
  ['content-language', ''],
  ['content-length', ''],
  ['content-location', ''],
  ['content-range', ''],
  ['content-type', ''],
  ['cookie', ''],
  ['date', ''],
  ['etag', ''],
  ['expect', ''],
  ['expires', ''],
  ['from', ''],
  ['host', ''],
  ['if-match', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['if-range', ''],
  ['if-unmodified-since', ''],
  ['last-modified', ''],
  ['link', ''],
  ['location', ''],
  ['max-forwards', ''],
  ['proxy-authenticate', ''],
  ['proxy-authorization', ''],
  ['range', ''],
  ['referer', ''],
  ['refresh', ''],
  ['retry-after', ''],
  ['server', ''],
  ['set-cookie', ''],
  ['strict-transport-security', ''],
  ['transfer-encoding', ''],
  ['user-agent', ''],
  ['vary', ''],
  ['via', ''],
  ['www-authenticate', ''],
];

/** Size of an entry in the dynamic table (RFC 7541 §4.1). */
const entrySize = (name: string, value: string): number => name.length + value.length + 32;

export class HpackDecoder {
  /** Newest first. */
  private readonly dynamic: [string, string][] = [];
  private size = 0;
  private maxSize: number;

  /** `limit`: the SETTINGS_HEADER_TABLE_SIZE we advertised (default 4096). */
  constructor(private readonly limit = 4096) {
    this.maxSize = limit;
  }

  /** Decodes one complete header block into name → value (repeated names joined with ','). */
  decode(block: Buffer): Record<string, string> {
    const out: Record<string, string> = {};
    const add = (name: string, value: string): void => {
      out[name] = out[name] === undefined ? value : `${out[name]},${value}`;
    };
    const st = { pos: 0 };
    while (st.pos < block.length) {
      const b = block[st.pos];
      if (b & 0x80) {
        const [name, value] = this.entry(this.int(block, st, 7));
        add(name, value);
      } else if (b & 0x40) {
        const [name, value] = this.literal(block, st, 6);
        add(name, value);
        this.insert(name, value);
      } else if (b & 0x20) {
        const size = this.int(block, st, 5);
        if (size > this.limit) throw new Error(`HPACK: table size update ${size} over the limit ${this.limit}`);
        this.maxSize = size;
        this.evict(0);
      } else {
        // Literal without indexing (0000) or never indexed (0001).
        const [name, value] = this.literal(block, st, 4);
        add(name, value);
      }
    }
    return out;
  }

  private entry(index: number): readonly [string, string] {
    if (index === 0) throw new Error('HPACK: index 0');
    if (index <= STATIC.length) return STATIC[index - 1];
    const e = this.dynamic[index - STATIC.length - 1];
    if (e === undefined) throw new Error(`HPACK: index ${index} past the dynamic table`);
    return e;
  }

  private literal(block: Buffer, st: { pos: number }, prefix: number): [string, string] {
    const index = this.int(block, st, prefix);
    const name = index === 0 ? this.str(block, st) : this.entry(index)[0];
    return [name, this.str(block, st)];
  }

  private insert(name: string, value: string): void {
    const size = entrySize(name, value);
    this.evict(size);
    if (size <= this.maxSize) {
      this.dynamic.unshift([name, value]);
      this.size += size;
    }
  }

  /** Evicts oldest entries until `room` more bytes fit. */
  private evict(room: number): void {
    while (this.dynamic.length > 0 && this.size + room > this.maxSize) {
      const [n, v] = this.dynamic.pop()!;
      this.size -= entrySize(n, v);
    }
  }

  private int(block: Buffer, st: { pos: number }, prefix: number): number {
    const mask = (1 << prefix) - 1;
    if (st.pos >= block.length) throw new Error('HPACK: truncated integer');
    let v = block[st.pos++] & mask;
    if (v < mask) return v;
    let shift = 0;
    for (;;) {
      if (st.pos >= block.length) throw new Error('HPACK: truncated integer');
      const b = block[st.pos++];
      v += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if (b < 0x80) return v;
      if (shift > 28) throw new Error('HPACK: integer too large');
    }
  }

  private str(block: Buffer, st: { pos: number }): string {
    if (st.pos >= block.length) throw new Error('HPACK: truncated string');
    const huffman = (block[st.pos] & 0x80) !== 0;
    const n = this.int(block, st, 7);
    const start = st.pos;
    if (start + n > block.length) throw new Error('HPACK: truncated string');
    st.pos += n;
    return huffman ? huffmanDecode(block, start, start + n) : block.toString('latin1', start, start + n);
  }
}
