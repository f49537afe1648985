/**
 * HPACK's static Huffman code (RFC 7541 Appendix B) as its code lengths per
 * symbol (0-255, 256 = EOS): the code is canonical, so the lengths alone
 * rebuild it. Decoding walks a binary tree built once.
 */

const CODE_LENGTHS: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11,
  10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7,
  8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23,
  22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23,
  23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26,
  27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27,
  27, 27, 26, 30,
];

/** Tree nodes: children[2n], children[2n+1] = next node or -(symbol + 1). */
let tree: Int32Array | undefined;

function build(): Int32Array {
  const order = CODE_LENGTHS.map((len, sym) => ({ len, sym })).sort((a, b) => a.len - b.len || a.sym - b.sym);
  const nodes = new Int32Array(2 * 2 * 257); // a full binary tree with 257 leaves has 256 inner nodes
  let count = 1; // node 0 = root
  let code = 0;
  let prev = order[0].len;
  order.forEach(({ len, sym }, k) => {
    if (k > 0) code = (code + 1) * 2 ** (len - prev);
    prev = len;
    let node = 0;
    for (let bit = len - 1; bit >= 0; bit--) {
      const b = Math.floor(code / 2 ** bit) & 1;
      const slot = 2 * node + b;
      if (bit === 0) {
        nodes[slot] = -(sym + 1);
      } else {
        if (nodes[slot] === 0) nodes[slot] = count++;
        node = nodes[slot];
      }
    }
  });
  return nodes;
}

/** Decodes a Huffman-coded string literal; padding must be at most 7 one-bits (a prefix of EOS). */
export function huffmanDecode(buf: Buffer, start: number, end: number): string {
  tree ??= build();
  const out: number[] = [];
  let node = 0;
  let depth = 0;
  let allOnes = true;
  for (let i = start; i < end; i++) {
    const byte = buf[i];
    for (let bit = 7; bit >= 0; bit--) {
      const b = (byte >> bit) & 1;
      const next = tree[2 * node + b];
      depth++;
      allOnes &&= b === 1;
      if (next < 0) {
        const sym = -next - 1;
        if (sym === 256) throw new Error('HPACK: EOS in a Huffman string');
        out.push(sym);
        node = 0;
        depth = 0;
        allOnes = true;
      } else {
        node = next;
      }
    }
  }
  if (depth > 7 || !allOnes) throw new Error('HPACK: invalid Huffman padding');
  return Buffer.from(out).toString('latin1');
}
