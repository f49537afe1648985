/**
 * Tokenizer for the protobuf text format (config.pbtxt). Follows protobuf's
 * own tokenizer: `#` comments, identifiers, decimal/hex/octal integers,
 * floats (with an optional `f` suffix), single- or double-quoted strings with
 * C escapes, and one-character symbols. String tokens carry their decoded
 * bytes; numbers keep their source text so the parser can range-check them.
 */

export type TokenKind = 'ident' | 'int' | 'float' | 'string' | 'symbol' | 'eof';

export interface Token {
  kind: TokenKind;
  /** Source text (strings include their quotes). */
  text: string;
  /** 1-based position of the first character. */
  line: number;
  col: number;
  /** Decoded bytes of a string literal. */
  bytes?: Uint8Array;
}

/** A tokenizing error; the parser turns it into the ServerError text. */
export class LexError extends Error {
  readonly line: number;
  readonly col: number;
  constructor(message: string, line: number, col: number) {
    super(message);
    this.line = line;
    this.col = col;
  }
}

const SYMBOLS = new Set(['{', '}', '<', '>', '[', ']', ':', ',', ';', '-']);
const SIMPLE_ESCAPES: Record<string, number> = {
  a: 0x07,
  b: 0x08,
  f: 0x0c,
  n: 0x0a,
  r: 0x0d,
  t: 0x09,
  v: 0x0b,
  '\\': 0x5c,
  "'": 0x27,
  '"': 0x22,
  '?': 0x3f,
};

const isDigit = (c: string): boolean => c >= '0' && c <= '9';
const isHex = (c: string): boolean => /^[0-9a-fA-F]$/.test(c);
const isOctal = (c: string): boolean => c >= '0' && c <= '7';
const isIdentStart = (c: string): boolean => /^[A-Za-z_]$/.test(c);
const isIdentPart = (c: string): boolean => /^[A-Za-z0-9_]$/.test(c);

/** Splits a text proto into tokens, ending with one `eof` token. */
export function tokenize(source: string): Token[] {
  const text = source.charCodeAt(0) === 0xfeff ? source.slice(1) : source;
  const tokens: Token[] = [];
  let pos = 0;
  let line = 1;
  let lineStart = 0;
  const col = (): number => pos - lineStart + 1;

  while (pos < text.length) {
    const c = text[pos];
    if (c === '\n') {
      pos++;
      line++;
      lineStart = pos;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\v' || c === '\f') {
      pos++;
      continue;
    }
    if (c === '#') {
      while (pos < text.length && text[pos] !== '\n') pos++;
      continue;
    }
    const startLine = line;
    const startCol = col();
    const start = pos;
    if (isIdentStart(c)) {
      while (pos < text.length && isIdentPart(text[pos])) pos++;
      tokens.push({ kind: 'ident', text: text.slice(start, pos), line: startLine, col: startCol });
      continue;
    }
    if (isDigit(c) || (c === '.' && pos + 1 < text.length && isDigit(text[pos + 1]))) {
      const kind = scanNumber();
      tokens.push({ kind, text: text.slice(start, pos), line: startLine, col: startCol });
      continue;
    }
    if (c === '"' || c === "'") {
      const bytes = scanString(c);
      tokens.push({ kind: 'string', text: text.slice(start, pos), line: startLine, col: startCol, bytes });
      continue;
    }
    if (SYMBOLS.has(c)) {
      pos++;
      tokens.push({ kind: 'symbol', text: c, line: startLine, col: startCol });
      continue;
    }
    throw new LexError(`unexpected character '${c}'`, startLine, startCol);
  }
  tokens.push({ kind: 'eof', text: '', line, col: col() });
  return tokens;

  function scanNumber(): TokenKind {
    const startCol = col();
    const start = pos;
    let isFloat = false;
    if (text[pos] === '0' && (text[pos + 1] === 'x' || text[pos + 1] === 'X')) {
      pos += 2;
      if (!isHex(text[pos] ?? '')) throw new LexError('"0x" must be followed by hex digits', line, startCol);
      while (pos < text.length && isHex(text[pos])) pos++;
    } else {
      while (pos < text.length && isDigit(text[pos])) pos++;
      if (text[pos] === '.') {
        isFloat = true;
        pos++;
        while (pos < text.length && isDigit(text[pos])) pos++;
      }
      if (text[pos] === 'e' || text[pos] === 'E') {
        isFloat = true;
        pos++;
        if (text[pos] === '+' || text[pos] === '-') pos++;
        if (!isDigit(text[pos] ?? '')) throw new LexError('"e" must be followed by exponent', line, startCol);
        while (pos < text.length && isDigit(text[pos])) pos++;
      }
      if (text[pos] === 'f' || text[pos] === 'F') {
        isFloat = true;
        pos++;
      }
    }
    if (pos < text.length && (isIdentPart(text[pos]) || text[pos] === '.')) {
      throw new LexError(`invalid number '${text.slice(start, pos + 1)}'`, line, startCol);
    }
    const literal = text.slice(start, pos);
    if (!isFloat && literal.length > 1 && literal[0] === '0' && !/^0[xX]/.test(literal)) {
      if (![...literal.slice(1)].every(isOctal)) {
        throw new LexError(`numbers starting with leading zero must be in octal: '${literal}'`, line, startCol);
      }
    }
    return isFloat ? 'float' : 'int';
  }

  function scanString(quote: string): Uint8Array {
    const startCol = col();
    const bytes: number[] = [];
    let run = '';
    const flush = (): void => {
      if (run !== '') {
        for (const b of Buffer.from(run, 'utf8')) bytes.push(b);
        run = '';
      }
    };
    pos++; // opening quote
    for (;;) {
      if (pos >= text.length || text[pos] === '\n') {
        throw new LexError('unterminated string', line, startCol);
      }
      const ch = text[pos];
      if (ch === quote) {
        pos++;
        flush();
        return Uint8Array.from(bytes);
      }
      if (ch !== '\\') {
        run += ch;
        pos++;
        continue;
      }
      flush();
      pos++; // backslash
      const e = text[pos] ?? '';
      if (e in SIMPLE_ESCAPES) {
        bytes.push(SIMPLE_ESCAPES[e]);
        pos++;
      } else if (isOctal(e)) {
        let v = 0;
        for (let i = 0; i < 3 && isOctal(text[pos] ?? ''); i++) v = v * 8 + Number(text[pos++]);
        bytes.push(v & 0xff);
      } else if (e === 'x' || e === 'X') {
        pos++;
        if (!isHex(text[pos] ?? '')) throw new LexError('expected hex digits for escape sequence', line, col());
        let v = 0;
        for (let i = 0; i < 2 && isHex(text[pos] ?? ''); i++) v = v * 16 + parseInt(text[pos++], 16);
        bytes.push(v);
      } else if (e === 'u' || e === 'U') {
        const n = e === 'u' ? 4 : 8;
        const digits = text.slice(pos + 1, pos + 1 + n);
        if (digits.length !== n || ![...digits].every(isHex)) {
          throw new LexError(`expected ${n} hex digits for \\${e} escape sequence`, line, col());
        }
        pos += 1 + n;
        const cp = parseInt(digits, 16);
        if (cp > 0x10ffff) throw new LexError(`invalid code point in \\${e} escape sequence`, line, col());
        for (const b of Buffer.from(String.fromCodePoint(cp), 'utf8')) bytes.push(b);
      } else {
        throw new LexError(`invalid escape sequence in string literal: '\\${e}'`, line, col() - 1);
      }
    }
  }
}
