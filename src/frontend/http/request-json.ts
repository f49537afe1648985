/**
 * Parsing the inference header JSON. The fast path is JSON.parse. When it
 * fails, a small parser that follows rapidjson's grammar runs over the same
 * bytes: it accepts what Triton's parser accepts and JSON.parse does not
 * (bare `NaN`, `Inf`, `Infinity`, `-Infinity`, a UTF-8 BOM), and otherwise
 * reports rapidjson's message and byte offset:
 *   `failed to parse the request JSON buffer: <message> at <offset>` (INTERNAL).
 * Both take any nesting depth without recursion, as Triton's rapidjson in
 * iterative mode does; the depth limits are where parsed values are walked
 * (core/json-depth.ts).
 * Known differences from rapidjson on the fast path: numbers too large for a
 * double become Infinity instead of an error, lone surrogate escapes are
 * accepted, and of duplicate object keys the last one wins.
 *
 * 64-bit integers: rapidjson keeps an integer literal within int64/uint64
 * exact, a double does not past 2^53. The small parser gives such literals
 * as bigints (`exact`); JSON.parse rounds them, but never below 2^53, so a
 * reader that meets an integral double past 2^53 where an integer belongs
 * knows the text may have held more and asks for the exact parse
 * (json-integers.ts InexactInteger). Ordinary bodies are parsed once, by
 * JSON.parse, with no scan of their text (bench/json-exact-cost.ts).
 */
import { checkJsonDepth } from '../../core/json-depth';
import { ServerError } from '../../core/errors';
import { DoubleLiteral, INT64_MIN, UINT64_MAX } from './json-integers';

const MESSAGES = {
  empty: 'The document is empty.',
  notSingular: 'The document root must not be followed by other values.',
  invalidValue: 'Invalid value.',
  missName: 'Missing a name for object member.',
  missColon: 'Missing a colon after a name of object member.',
  missCommaCurly: "Missing a comma or '}' after an object member.",
  missCommaSquare: "Missing a comma or ']' after an array element.",
  badHex: 'Incorrect hex digit after \\u escape in string.',
  badSurrogate: 'The surrogate pair in string is invalid.',
  badEscape: 'Invalid escape character in string.',
  missQuote: 'Missing a closing quotation mark in string.',
  badEncoding: 'Invalid encoding in string.',
  tooBig: 'Number too big to be stored in double.',
  missFraction: 'Miss fraction part in number.',
  missExponent: 'Miss exponent in number.',
} as const;

/** A parsed body; `exact`: 64-bit integer literals are bigints (else every number is a double). */
export interface ParsedJson {
  doc: unknown;
  exact: boolean;
}

/**
 * The first `length` bytes of `body` as JSON: by JSON.parse unless `exact`
 * is asked for or JSON.parse refuses the text; the small parser's result is
 * always exact.
 */
export function parseRequestJson(body: Buffer, length: number, exact = false): ParsedJson {
  if (!exact) {
    try {
      return { doc: JSON.parse(body.toString('utf8', 0, length)), exact: false };
    } catch {
      // rapidjson's grammar, texts and offsets below
    }
  }
  return { doc: parseLikeRapidjson(body.subarray(0, length), true), exact: true };
}

/**
 * The body of a control API (trace and log settings, repository, shared
 * memory) as JSON. No such body nests more than a few levels, and their
 * handlers render values into error texts, so a body nested deeper than
 * Triton's JSON limit is refused with its text before it is parsed.
 */
export function parseControlJson(body: string): unknown {
  checkJsonDepth(body);
  try {
    return JSON.parse(body);
  } catch {
    return parseLikeRapidjson(Buffer.from(body, 'utf8'));
  }
}

const ESCAPES: Record<number, string> = {
  0x22: '"',
  0x5c: '\\',
  0x2f: '/',
  0x62: '\b',
  0x66: '\f',
  0x6e: '\n',
  0x72: '\r',
  0x74: '\t',
};

class ParseFailure {
  constructor(
    readonly message: string,
    readonly offset: number,
  ) {}
}

/** A container the parser is inside of; an object keeps the name of the member being read. */
type Open = { array: unknown[] } | { object: Record<string, unknown>; key: string };

/**
 * rapidjson-compatible parse (kParseNanAndInfFlag); throws ServerError
 * INTERNAL on error. With `exactIntegers`, an integer literal (no fraction,
 * no exponent) in [-2^63, 2^64-1] that is not a safe integer is a bigint, as
 * rapidjson keeps it an int64/uint64; one outside that range is a double, as
 * in rapidjson.
 */
export function parseLikeRapidjson(bytes: Buffer, exactIntegers = false, markDoubles = false): unknown {
  const p = new Parser(bytes, exactIntegers, markDoubles);
  try {
    return p.document();
  } catch (e) {
    if (e instanceof ParseFailure) {
      throw new ServerError('INTERNAL', `failed to parse the request JSON buffer: ${e.message} at ${e.offset}`);
    }
    throw e;
  }
}

class Parser {
  private pos = 0;
  constructor(
    private readonly b: Buffer,
    private readonly exactIntegers: boolean,
    /** A number with a fraction or an exponent becomes a DoubleLiteral (json-integers.ts). */
    private readonly markDoubles = false,
  ) {}

  document(): unknown {
    const b = this.b;
    if (b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) this.pos = 3;
    this.ws();
    if (this.pos >= b.length) throw new ParseFailure(MESSAGES.empty, this.pos);
    const v = this.value();
    this.ws();
    if (this.pos < b.length) throw new ParseFailure(MESSAGES.notSingular, this.pos);
    return v;
  }

  private peek(): number {
    return this.pos < this.b.length ? this.b[this.pos] : 0;
  }

  private consume(c: number): boolean {
    if (this.peek() !== c) return false;
    this.pos++;
    return true;
  }

  private ws(): void {
    const b = this.b;
    while (this.pos < b.length) {
      const c = b[this.pos];
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return;
      this.pos++;
    }
  }

  /**
   * One JSON value. Arrays and objects are filled with an explicit stack of
   * the containers still open, so any depth costs heap, not call stack.
   */
  private value(): unknown {
    const open: Open[] = [];
    for (;;) {
      let v: unknown;
      const c = this.peek();
      if (c === 0x7b || c === 0x5b) {
        this.pos++;
        this.ws();
        if (c === 0x7b) {
          if (this.consume(0x7d)) {
            v = {};
          } else {
            open.push({ object: {}, key: this.memberName() });
            continue;
          }
        } else if (this.consume(0x5d)) {
          v = [];
        } else {
          open.push({ array: [] });
          continue;
        }
      } else {
        v = this.scalar();
      }
      // v is complete: put it into the open containers, closing those that end here.
      for (;;) {
        const top = open[open.length - 1];
        if (top === undefined) return v;
        this.ws();
        if ('array' in top) {
          top.array.push(v);
          if (this.consume(0x2c)) break;
          if (!this.consume(0x5d)) throw new ParseFailure(MESSAGES.missCommaSquare, this.pos);
          v = top.array;
        } else {
          // Define rather than assign, so a "__proto__" key stays a plain member.
          Object.defineProperty(top.object, top.key, { value: v, enumerable: true, writable: true, configurable: true });
          if (this.consume(0x2c)) {
            this.ws();
            top.key = this.memberName();
            break;
          }
          if (!this.consume(0x7d)) throw new ParseFailure(MESSAGES.missCommaCurly, this.pos);
          v = top.object;
        }
        open.pop();
      }
      this.ws();
    }
  }

  /** `"name"` `:` of an object member, with the whitespace after the colon. */
  private memberName(): string {
    if (this.peek() !== 0x22) throw new ParseFailure(MESSAGES.missName, this.pos);
    const key = this.string();
    this.ws();
    if (!this.consume(0x3a)) throw new ParseFailure(MESSAGES.missColon, this.pos);
    this.ws();
    return key;
  }

  private scalar(): unknown {
    switch (this.peek()) {
      case 0x6e: // n
        return this.literal('null', null);
      case 0x74: // t
        return this.literal('true', true);
      case 0x66: // f
        return this.literal('false', false);
      case 0x22: // "
        return this.string();
      default:
        return this.number();
    }
  }

  private literal(word: string, v: unknown): unknown {
    this.pos++;
    for (let k = 1; k < word.length; k++) {
      if (!this.consume(word.charCodeAt(k))) throw new ParseFailure(MESSAGES.invalidValue, this.pos);
    }
    return v;
  }

  private string(): string {
    const b = this.b;
    this.pos++;
    let out = '';
    let run = this.pos;
    for (;;) {
      if (this.pos >= b.length) throw new ParseFailure(MESSAGES.missQuote, this.pos);
      const c = b[this.pos];
      if (c === 0x22) {
        out += b.toString('utf8', run, this.pos);
        this.pos++;
        return out;
      }
      if (c === 0x5c) {
        out += b.toString('utf8', run, this.pos);
        out += this.escape();
        run = this.pos;
        continue;
      }
      if (c < 0x20) throw new ParseFailure(c === 0 ? MESSAGES.missQuote : MESSAGES.badEncoding, this.pos);
      this.pos++;
    }
  }

  private escape(): string {
    const at = this.pos; // errors point at the backslash
    this.pos++;
    const e = this.peek();
    const simple = ESCAPES[e];
    if (simple !== undefined) {
      this.pos++;
      return simple;
    }
    if (e !== 0x75) throw new ParseFailure(MESSAGES.badEscape, at);
    this.pos++;
    let cp = this.hex4(at);
    if (cp >= 0xd800 && cp <= 0xdfff) {
      if (cp > 0xdbff || !this.consume(0x5c) || !this.consume(0x75)) throw new ParseFailure(MESSAGES.badSurrogate, at);
      const low = this.hex4(at);
      if (low < 0xdc00 || low > 0xdfff) throw new ParseFailure(MESSAGES.badSurrogate, at);
      cp = ((cp - 0xd800) << 10) + (low - 0xdc00) + 0x10000;
    }
    return String.fromCodePoint(cp);
  }

  private hex4(at: number): number {
    let v = 0;
    for (let k = 0; k < 4; k++) {
      const c = this.peek();
      let d: number;
      if (c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x37;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x57;
      else throw new ParseFailure(MESSAGES.badHex, at);
      v = v * 16 + d;
      this.pos++;
    }
    return v;
  }

  private digits(): void {
    while (this.peek() >= 0x30 && this.peek() <= 0x39) this.pos++;
  }

  private number(): number | bigint {
    const start = this.pos;
    const minus = this.consume(0x2d);
    const c = this.peek();
    if (c === 0x30) {
      this.pos++;
    } else if (c >= 0x31 && c <= 0x39) {
      this.digits();
      // 16+ digits, no fraction or exponent: an integer that may be past 2^53.
      if (this.exactIntegers && this.pos - start - (minus ? 1 : 0) >= 16 && !this.fractionOrExponentFollows()) {
        const v = exactInteger(this.b.toString('latin1', start, this.pos));
        if (v === Infinity || v === -Infinity) throw new ParseFailure(MESSAGES.tooBig, start);
        return v;
      }
    } else if (this.consume(0x4e)) {
      // NaN
      if (this.consume(0x61) && this.consume(0x4e)) return NaN;
      throw new ParseFailure(MESSAGES.invalidValue, this.pos);
    } else if (this.consume(0x49)) {
      // Inf / Infinity
      if (!(this.consume(0x6e) && this.consume(0x66))) throw new ParseFailure(MESSAGES.invalidValue, this.pos);
      if (this.peek() === 0x69) {
        for (const ch of [0x69, 0x6e, 0x69, 0x74, 0x79]) {
          if (!this.consume(ch)) throw new ParseFailure(MESSAGES.invalidValue, this.pos);
        }
      }
      return minus ? -Infinity : Infinity;
    } else {
      throw new ParseFailure(MESSAGES.invalidValue, this.pos);
    }
    if (this.consume(0x2e)) {
      if (!(this.peek() >= 0x30 && this.peek() <= 0x39)) throw new ParseFailure(MESSAGES.missFraction, this.pos);
      this.digits();
    }
    if (this.peek() === 0x65 || this.peek() === 0x45) {
      this.pos++;
      if (this.peek() === 0x2b || this.peek() === 0x2d) this.pos++;
      if (!(this.peek() >= 0x30 && this.peek() <= 0x39)) throw new ParseFailure(MESSAGES.missExponent, this.pos);
      this.digits();
    }
    const v = Number(this.b.toString('latin1', start, this.pos));
    if (!Number.isFinite(v)) throw new ParseFailure(MESSAGES.tooBig, start);
    if (this.markDoubles && fractionOrExponentIn(this.b, start, this.pos)) return new DoubleLiteral(v) as unknown as number;
    return v;
  }

  private fractionOrExponentFollows(): boolean {
    const c = this.peek();
    return c === 0x2e || c === 0x65 || c === 0x45;
  }
}

function fractionOrExponentIn(b: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = b[i];
    if (c === 0x2e || c === 0x65 || c === 0x45) return true;
  }
  return false;
}

/**
 * Whether the JSON text may hold a number written with a fraction or an
 * exponent: a `.`, `e` or `E` right after a digit, outside strings. Cheap
 * (one pass, no allocation); false means JSON.parse's numbers are exactly
 * the literals' integers.
 */
export function mayHoldDoubleLiterals(b: Buffer, length: number): boolean {
  let inString = false;
  for (let i = 0; i < length; i++) {
    const c = b[i]!;
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if ((c === 0x2e || c === 0x65 || c === 0x45) && i > 0 && b[i - 1]! >= 0x30 && b[i - 1]! <= 0x39) return true;
  }
  return false;
}

/** An integer literal as rapidjson holds it: exact within int64/uint64 (a number while safe), else a double. */
function exactInteger(literal: string): number | bigint {
  const n = BigInt(literal);
  if (n < INT64_MIN || n > UINT64_MAX) return Number(literal);
  const v = Number(n);
  return Number.isSafeInteger(v) ? v : n;
}
