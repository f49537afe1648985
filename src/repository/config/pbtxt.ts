/**
 * Protobuf text-format parser driven by protobufjs reflection: config.pbtxt
 * text in, a complete plain object out (see defaults.ts for the shape; enums
 * as names, 64-bit integers as JS numbers, maps as objects keyed by the
 * key's text). Errors are INVALID_ARG with Triton's prefix
 * `failed to read text proto from <path>` plus the line and the reason.
 */
import protobuf from 'protobufjs';
import { configDataTypeHint } from '../../core/datatypes';
import { ServerError } from '../../core/errors';
import type { ModelConfig } from '../../core/model-config';
import { modelConfigType, typeName } from './schema';
import { completeMessage, isMessageField, scalarDefault, setOwn } from './defaults';
import { LexError, tokenize, type Token } from './pbtxt-lexer';

export { fillDefaults } from './defaults';

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

const INT_RANGES: Record<string, [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  sint32: [-(2n ** 31n), 2n ** 31n - 1n],
  sfixed32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  fixed32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  sint64: [-(2n ** 63n), 2n ** 63n - 1n],
  sfixed64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
  fixed64: [0n, 2n ** 64n - 1n],
};
const TRUE_WORDS = new Set(['true', 'True', 't']);
const FALSE_WORDS = new Set(['false', 'False', 'f']);
const CLOSERS: Record<string, string> = { '{': '}', '<': '>' };
const utf8 = new TextDecoder('utf-8');

/** Parses config.pbtxt text into a complete `ModelConfig`. */
export function parseModelConfigText(text: string, sourcePath: string): ModelConfig {
  return parseTextProto(text, modelConfigType(), sourcePath) as ModelConfig;
}

/** Parses text format for any message type of the schema. */
export function parseTextProto(text: string, type: protobuf.Type, sourcePath: string): Record<string, unknown> {
  let tokens: Token[];
  try {
    tokens = tokenize(text);
  } catch (err) {
    if (err instanceof LexError) throw readError(sourcePath, err.line, err.message);
    throw err;
  }
  return new TextParser(tokens, sourcePath).parseTop(type);
}

function readError(sourcePath: string, line: number, what: string): ServerError {
  return new ServerError('INVALID_ARG', `failed to read text proto from ${sourcePath}: line ${line}: ${what}`);
}

/** How a scalar value is typed: the proto type name and its enum, if any. */
interface ScalarSpec {
  type: string;
  resolved: protobuf.ReflectionObject | null;
  field: string;
}

class TextParser {
  private pos = 0;

  constructor(
    private readonly tokens: Token[],
    private readonly sourcePath: string,
  ) {}

  parseTop(type: protobuf.Type): Record<string, unknown> {
    return this.parseMessageBody(type, null);
  }

  private peek(): Token {
    return this.tokens[this.pos];
  }

  private next(): Token {
    const t = this.tokens[this.pos];
    if (t.kind !== 'eof') this.pos++;
    return t;
  }

  private isSymbol(text: string): boolean {
    const t = this.peek();
    return t.kind === 'symbol' && t.text === text;
  }

  private trySymbol(text: string): boolean {
    if (!this.isSymbol(text)) return false;
    this.pos++;
    return true;
  }

  private fail(tok: Token, what: string): never {
    throw readError(this.sourcePath, tok.line, what);
  }

  private describe(tok: Token): string {
    return tok.kind === 'eof' ? 'end of input' : `'${tok.text}'`;
  }

  private expectSymbol(text: string, context: string): void {
    const t = this.peek();
    if (!this.trySymbol(text)) this.fail(t, `expected '${text}' ${context}, got ${this.describe(t)}`);
  }

  /** Fields until `close` (or end of input at top level); returns the completed message. */
  private parseMessageBody(type: protobuf.Type, close: string | null): Record<string, unknown> {
    const obj: Record<string, unknown> = {};
    const oneofSet = new Map<string, string>();
    for (;;) {
      const t = this.peek();
      if (close === null && t.kind === 'eof') break;
      if (close !== null && this.trySymbol(close)) break;
      if (t.kind === 'eof') this.fail(t, `unexpected end of input: expected '${close}' to close message '${typeName(type)}'`);
      this.parseField(type, obj, oneofSet);
      if (!this.trySymbol(',')) this.trySymbol(';');
    }
    return completeMessage(obj, type, false);
  }

  private parseField(type: protobuf.Type, obj: Record<string, unknown>, oneofSet: Map<string, string>): void {
    const nameTok = this.next();
    if (nameTok.kind !== 'ident') {
      if (nameTok.kind === 'symbol' && nameTok.text === '[') {
        this.fail(nameTok, `extension and Any fields are not supported in message '${typeName(type)}'`);
      }
      this.fail(nameTok, `expected field name in message '${typeName(type)}', got ${this.describe(nameTok)}`);
    }
    const name = nameTok.text;
    const field = hasOwn(type.fields, name) ? type.fields[name] : undefined;
    if (field === undefined) this.fail(nameTok, `unknown field '${name}' in message '${typeName(type)}'`);

    const multi = field.repeated || field.map;
    if (!multi && hasOwn(obj, name)) {
      this.fail(nameTok, `non-repeated field '${name}' is specified multiple times`);
    }
    if (field.partOf) {
      const other = oneofSet.get(field.partOf.name);
      if (other !== undefined && other !== name) {
        this.fail(nameTok, `field '${name}' is specified along with field '${other}', another member of oneof '${field.partOf.name}'`);
      }
      oneofSet.set(field.partOf.name, name);
    }

    const messageLike = field.map || isMessageField(field);
    if (messageLike) {
      this.trySymbol(':');
    } else {
      this.expectSymbol(':', `after field '${name}'`);
    }

    const readOne = (): unknown => {
      if (field.map) return this.parseMapEntry(field as unknown as protobuf.MapField, type);
      if (messageLike) return this.parseMessageValue(field.resolvedType as protobuf.Type, name);
      return this.parseScalar({ type: field.type, resolved: field.resolvedType, field: name });
    };
    const store = (value: unknown): void => {
      if (field.map) {
        const entry = value as { key: string; value: unknown };
        const map = (obj[name] ?? {}) as Record<string, unknown>;
        setOwn(map, entry.key, entry.value);
        setOwn(obj, name, map);
      } else if (field.repeated) {
        const arr = (obj[name] ?? []) as unknown[];
        arr.push(value);
        setOwn(obj, name, arr);
      } else {
        setOwn(obj, name, value);
      }
    };

    if (this.isSymbol('[')) {
      const open = this.next();
      if (!multi) this.fail(open, `field '${name}' is not repeated, a list value is not allowed`);
      // An empty list still marks a repeated field as present.
      if (obj[name] === undefined) setOwn(obj, name, field.map ? {} : []);
      if (this.trySymbol(']')) return;
      for (;;) {
        store(readOne());
        if (this.trySymbol(']')) return;
        this.expectSymbol(',', `or ']' in list of field '${name}'`);
      }
    }
    store(readOne());
  }

  private parseMessageValue(type: protobuf.Type, fieldName: string): Record<string, unknown> {
    const open = this.next();
    const close = open.kind === 'symbol' ? CLOSERS[open.text] : undefined;
    if (close === undefined) {
      this.fail(open, `expected '{' or '<' to start message field '${fieldName}', got ${this.describe(open)}`);
    }
    return this.parseMessageBody(type, close);
  }

  /** One `{ key: .. value: .. }` entry of a map field. */
  private parseMapEntry(field: protobuf.MapField, parent: protobuf.Type): { key: string; value: unknown } {
    const entryName = `${typeName(parent)}.${pascal(field.name)}Entry`;
    const open = this.next();
    const close = open.kind === 'symbol' ? CLOSERS[open.text] : undefined;
    if (close === undefined) {
      this.fail(open, `expected '{' or '<' to start map entry of field '${field.name}', got ${this.describe(open)}`);
    }
    const valueType = field.resolvedType instanceof protobuf.Type ? field.resolvedType : null;
    let key: unknown;
    let value: unknown;
    while (!this.trySymbol(close)) {
      const nameTok = this.next();
      if (nameTok.kind === 'eof') {
        this.fail(nameTok, `unexpected end of input: expected '${close}' to close message '${entryName}'`);
      }
      if (nameTok.kind !== 'ident' || (nameTok.text !== 'key' && nameTok.text !== 'value')) {
        this.fail(nameTok, `unknown field ${this.describe(nameTok)} in message '${entryName}'`);
      }
      const isKey = nameTok.text === 'key';
      if ((isKey ? key : value) !== undefined) {
        this.fail(nameTok, `non-repeated field '${nameTok.text}' is specified multiple times`);
      }
      if (isKey || valueType === null) {
        this.expectSymbol(':', `after field '${nameTok.text}'`);
        const spec: ScalarSpec = isKey
          ? { type: field.keyType, resolved: null, field: 'key' }
          : { type: field.type, resolved: field.resolvedType, field: 'value' };
        const v = this.parseScalar(spec);
        if (isKey) key = v;
        else value = v;
      } else {
        this.trySymbol(':');
        value = this.parseMessageValue(valueType, 'value');
      }
      if (!this.trySymbol(',')) this.trySymbol(';');
    }
    const keyText = key === undefined ? String(scalarDefault(field.keyType, null)) : String(key);
    if (value === undefined) {
      value = valueType !== null ? completeMessage({}, valueType, false) : scalarDefault(field.type, field.resolvedType);
    }
    return { key: keyText, value };
  }

  private parseScalar(spec: ScalarSpec): unknown {
    const { type, resolved, field } = spec;
    if (resolved instanceof protobuf.Enum) return this.parseEnum(resolved, field);
    if (type === 'string' || type === 'bytes') {
      const first = this.next();
      if (first.kind !== 'string') this.fail(first, `expected string for field '${field}', got ${this.describe(first)}`);
      const parts: Uint8Array[] = [first.bytes ?? new Uint8Array()];
      while (this.peek().kind === 'string') parts.push(this.next().bytes ?? new Uint8Array());
      const all = Buffer.concat(parts);
      return type === 'string' ? utf8.decode(all) : all;
    }
    if (type === 'bool') {
      const t = this.next();
      if (t.kind === 'ident' && TRUE_WORDS.has(t.text)) return true;
      if (t.kind === 'ident' && FALSE_WORDS.has(t.text)) return false;
      if (t.kind === 'int' && (t.text === '1' || t.text === '0')) return t.text === '1';
      this.fail(t, `invalid value ${this.describe(t)} for bool field '${field}'`);
    }
    if (type === 'float' || type === 'double') return this.parseFloat(field, type);
    const range = INT_RANGES[type];
    if (range === undefined) this.fail(this.peek(), `unsupported type '${type}' of field '${field}'`);
    return this.parseInteger(field, type, range);
  }

  private parseInteger(field: string, type: string, [min, max]: [bigint, bigint]): number {
    const negTok = this.peek();
    const negative = this.trySymbol('-');
    const t = this.next();
    if (t.kind !== 'int') {
      this.fail(t, `expected integer for ${type} field '${field}', got ${this.describe(t)}`);
    }
    if (negative && min === 0n) {
      this.fail(negTok, `invalid negative value for unsigned ${type} field '${field}'`);
    }
    let v = intLiteral(t.text);
    if (negative) v = -v;
    if (v < min || v > max) {
      this.fail(t, `integer out of range for ${type} field '${field}': ${negative ? '-' : ''}${t.text}`);
    }
    return Number(v);
  }

  private parseFloat(field: string, type: string): number {
    const negative = this.trySymbol('-');
    const t = this.next();
    let v: number;
    if (t.kind === 'float') {
      v = Number(t.text.replace(/[fF]$/, ''));
    } else if (t.kind === 'int') {
      v = Number(intLiteral(t.text));
    } else if (t.kind === 'ident' && /^(inf|infinity)$/i.test(t.text)) {
      v = Infinity;
    } else if (t.kind === 'ident' && /^nan$/i.test(t.text)) {
      v = NaN;
    } else {
      this.fail(t, `expected number for ${type} field '${field}', got ${this.describe(t)}`);
    }
    return negative ? -v : v;
  }

  private parseEnum(e: protobuf.Enum, field: string): string {
    const negative = this.trySymbol('-');
    const t = this.next();
    if (t.kind === 'ident' && !negative) {
      if (hasOwn(e.values, t.text)) return t.text;
      const hint = typeName(e) === 'inference.DataType' ? configDataTypeHint(t.text) : undefined;
      this.fail(t, `unknown enum value '${t.text}' for field '${field}' of type '${typeName(e)}'${hint === undefined ? '' : `. ${hint}`}`);
    }
    if (t.kind === 'int') {
      const num = Number(intLiteral(t.text)) * (negative ? -1 : 1);
      const name = e.valuesById[num];
      if (name !== undefined) return name;
      this.fail(t, `unknown enum value ${num} for field '${field}' of type '${typeName(e)}'`);
    }
    this.fail(t, `expected enum value for field '${field}' of type '${typeName(e)}', got ${this.describe(t)}`);
  }
}

/** Value of an integer token: decimal, 0x hex or leading-zero octal. */
function intLiteral(text: string): bigint {
  if (/^0[xX]/.test(text)) return BigInt(text);
  if (text.length > 1 && text[0] === '0') return BigInt(`0o${text.slice(1)}`);
  return BigInt(text);
}

function pascal(name: string): string {
  return name
    .split('_')
    .map((p) => (p === '' ? '' : p[0].toUpperCase() + p.slice(1)))
    .join('');
}
