/**
 * A config in protobuf text format, the other way from pbtxt.ts: the
 * complete shape (defaults.ts) in, config.pbtxt text out, with only what
 * differs from proto3's defaults written (a set sub-message is written even
 * when empty: `dynamic_batching { }` turns batching on). Fields follow the
 * proto's declaration order, two spaces an indent; repeated fields as lists
 * (`dims: [ 16 ]`, `input [ { ... } ]`), as Triton's own configs are written. `nodetron tune` writes
 * its winner with it; pbtxt.ts reads the text back to the same object
 * (test/unit/pbtxt-writer.test.ts checks every shipped config that way).
 */
import protobuf from 'protobufjs';
import type { ModelConfig } from '../../core/model-config';
import { isMessageField, scalarDefault } from './defaults';
import { modelConfigType } from './schema';

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/** config.pbtxt text of a complete config. */
export function formatModelConfigText(config: ModelConfig): string {
  return formatMessage(config as unknown as Record<string, unknown>, modelConfigType(), '');
}

/** The text-format body of one message at `indent`, a line per field value. */
export function formatMessage(obj: Record<string, unknown>, type: protobuf.Type, indent: string): string {
  let out = '';
  for (const field of type.fieldsArray) {
    if (!hasOwn(obj, field.name)) continue;
    const value = obj[field.name];
    if (value === undefined || value === null) continue;
    if (field.map) {
      const entries = Object.entries(value as Record<string, unknown>);
      for (const [key, v] of entries) out += mapEntry(field as unknown as protobuf.MapField, key, v, indent);
    } else if (field.repeated) {
      const list = value as unknown[];
      if (list.length > 0) out += isMessageField(field) ? messageList(field, list, indent) : scalarList(field, list, indent);
    } else if (isMessageField(field) || field.partOf !== null || !isDefault(field, value)) {
      out += fieldLine(field, value, indent);
    }
  }
  return out;
}

function isDefault(field: protobuf.Field, value: unknown): boolean {
  const d = scalarDefault(field.type, field.resolvedType);
  if (field.type === 'bytes') return bytesOf(value).length === 0;
  return value === d || (typeof value === 'bigint' && value === 0n);
}

function fieldLine(field: protobuf.Field, value: unknown, indent: string): string {
  if (isMessageField(field)) return messageBlock(field.name, value as Record<string, unknown>, field.resolvedType as protobuf.Type, indent);
  return `${indent}${field.name}: ${scalarText(field.type, field.resolvedType, value)}\n`;
}

/** `dims: [ 16, -1 ]` */
function scalarList(field: protobuf.Field, list: unknown[], indent: string): string {
  return `${indent}${field.name}: [ ${list.map((v) => scalarText(field.type, field.resolvedType, v)).join(', ')} ]\n`;
}

/** `input [ { ... }, { ... } ]`, one message a block, as Triton's configs are written. */
function messageList(field: protobuf.Field, list: unknown[], indent: string): string {
  const inner = indent + '  ';
  const type = field.resolvedType as protobuf.Type;
  const blocks = list.map((v) => {
    const body = formatMessage(v as Record<string, unknown>, type, inner + '  ');
    return `${inner}{\n${body}${inner}}`;
  });
  return `${indent}${field.name} [\n${blocks.join(',\n')}\n${indent}]\n`;
}

function messageBlock(name: string, value: Record<string, unknown>, type: protobuf.Type, indent: string): string {
  const body = formatMessage(value, type, indent + '  ');
  return body === '' ? `${indent}${name} {\n${indent}}\n` : `${indent}${name} {\n${body}${indent}}\n`;
}

function mapEntry(field: protobuf.MapField, key: string, value: unknown, indent: string): string {
  const inner = indent + '  ';
  const keyText = field.keyType === 'string' ? quote(Buffer.from(key, 'utf8')) : key;
  const valueText =
    field.resolvedType instanceof protobuf.Type
      ? messageBlock('value', value as Record<string, unknown>, field.resolvedType, inner)
      : `${inner}value: ${scalarText(field.type, field.resolvedType, value)}\n`;
  return `${indent}${field.name} {\n${inner}key: ${keyText}\n${valueText}${indent}}\n`;
}

function scalarText(type: string, resolved: protobuf.ReflectionObject | null, value: unknown): string {
  if (resolved instanceof protobuf.Enum) return typeof value === 'number' ? (resolved.valuesById[value] ?? String(value)) : String(value);
  switch (type) {
    case 'string':
      return quote(Buffer.from(String(value), 'utf8'));
    case 'bytes':
      return quote(bytesOf(value), true);
    case 'bool':
      return value === true ? 'true' : 'false';
    case 'float':
    case 'double': {
      const n = Number(value);
      if (Number.isNaN(n)) return 'nan';
      if (!Number.isFinite(n)) return n > 0 ? 'inf' : '-inf';
      return String(n);
    }
    default:
      return String(value);
  }
}

function bytesOf(value: unknown): Buffer {
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return Buffer.from(String(value ?? ''), 'utf8');
}

/**
 * A double-quoted string: C escapes for quotes, backslash and control bytes.
 * A string's other bytes (its UTF-8) are kept as they are; a bytes field's
 * bytes from 0x80 up are escaped too, since they need not be UTF-8.
 */
function quote(bytes: Buffer, escapeHigh = false): string {
  const parts: Buffer[] = [Buffer.from('"')];
  let plain = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    let esc: string | undefined;
    if (b === 0x22) esc = '\\"';
    else if (b === 0x5c) esc = '\\\\';
    else if (b === 0x0a) esc = '\\n';
    else if (b === 0x0d) esc = '\\r';
    else if (b === 0x09) esc = '\\t';
    else if (b < 0x20 || b === 0x7f || (escapeHigh && b >= 0x80)) esc = '\\' + b.toString(8).padStart(3, '0');
    if (esc === undefined) continue;
    parts.push(bytes.subarray(plain, i), Buffer.from(esc));
    plain = i + 1;
  }
  parts.push(bytes.subarray(plain), Buffer.from('"'));
  return Buffer.concat(parts).toString('utf8');
}
