/**
 * Word wrapping for fixed-width text (--help, the startup tables). Pure, so
 * the layouts are table-tested.
 */

/**
 * Splits `text` into lines of at most `width` characters, breaking at spaces;
 * a word longer than the width (a path, a URL) is cut at the width. Newlines
 * in the text start a new line. Never returns an empty array.
 */
export function wrapWords(text: string, width: number): string[] {
  const w = Math.max(1, width);
  const out: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(' ')) {
      if (word === '' && line !== '') continue;
      let rest = word;
      // A word longer than a line (a path, a URL) starts a line of its own and is cut.
      if (rest.length > w) {
        if (line !== '') out.push(line);
        line = '';
        while (rest.length > w) {
          out.push(rest.slice(0, w));
          rest = rest.slice(w);
        }
      }
      if (line === '') line = rest;
      else if (line.length + 1 + rest.length <= w) line += ` ${rest}`;
      else {
        out.push(line);
        line = rest;
      }
    }
    out.push(line);
  }
  return out;
}
