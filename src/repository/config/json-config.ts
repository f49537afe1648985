/**
 * A `ModelConfig` from JSON text, as the load API's `config` parameter
 * carries it (protocol.md §1.7 last paragraph): protobuf JSON parsing with
 * proto (snake_case) or lowerCamelCase field names, enums by name
 * (case-insensitive) or number, 64-bit integers as numbers or strings, unknown
 * fields rejected. The result has the same complete shape the text parser
 * produces (defaults.ts). Errors are INVALID_ARG `Invalid config override: ...`.
 */
import protobuf from 'protobufjs';
import { configDataTypeHint } from '../../core/datatypes';
import { ServerError } from '../../core/errors';
import { checkJsonDepth } from '../../core/json-depth';
import { completeMessage, isMessageField, setOwn } from './defaults';
import type { ModelConfig } from '../../core/model-config';
import { modelConfigType, typeName } from './schema';

const INT_LIMITS: Record<string, [number, number]> = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  sint32: [-(2 ** 31), 2 ** 31 - 1],
  sfixed32: [-(2 ** 31), 2 ** 31 - 1],
  uint32: [0, 2 ** 32 - 1],
  fixed32: [0, 2 ** 32 - 1],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  sint64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  sfixed64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  uint64: [0, Number.MAX_SAFE_INTEGER],
  fixed64: [0, Number.MAX_SAFE_INTEGER],
};

class JsonConfigError extends Error {}

/** Parse JSON config text into a complete ModelConfig. */
export function parseModelConfigJson(text: string): ModelConfig {
  let doc: unknown;
  try {
    // The message walk below recurses; no ModelConfig nests anywhere near the limit.
    checkJsonDepth(text);
    doc = JSON.parse(text);
  } catch (err) {
    throw new ServerError('INVALID_ARG', `Invalid config override: ${(err as Error).message}`);
  }
  try {
    return parseMessage(doc, modelConfigType(), '') as unknown as ModelConfig;
  } catch (err) {
    if (err instanceof JsonConfigError) throw new ServerError('INVALID_ARG', `Invalid config override: ${err.message}`);
    throw err;
  }
}

function camel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function fieldByJsonName(type: protobuf.Type, key: string): protobuf.Field | undefined {
  if (Object.prototype.hasOwnProperty.call(type.fields, key)) return type.fields[key];
  return type.fieldsArray.find((f) => camel(f.name) === key);
}

function parseMessage(value: unknown, type: protobuf.Type, where: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new JsonConfigError(`${where || typeName(type)}: expected a JSON object for message '${typeName(type)}'`);
  }
  const out: Record<string, unknown> = {};
  const oneofs = new Map<string, string>();
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    const field = fieldByJsonName(type, key);
    if (field === undefined) throw new JsonConfigError(`Cannot find field: ${key} in message ${typeName(type)}`);
    if (Object.prototype.hasOwnProperty.call(out, field.name)) {
      throw new JsonConfigError(`field '${field.name}' is specified multiple times in message ${typeName(type)}`);
    }
    if (v === null) continue; // JSON null = field not set
    const path = where ? `${where}.${field.name}` : field.name;
    if (field.partOf) {
      const other = oneofs.get(field.partOf.name);
      if (other !== undefined) throw new JsonConfigError(`${path}: oneof '${field.partOf.name}' already has field '${other}' set`);
      oneofs.set(field.partOf.name, field.name);
    }
    setOwn(out, field.name, parseField(v, field, path));
  }
  return completeMessage(out, type, false);
}

function parseField(v: unknown, field: protobuf.Field, path: string): unknown {
  if (field.map) {
    if (typeof v !== 'object' || Array.isArray(v)) throw new JsonConfigError(`${path}: expected a JSON object for map field`);
    const out: Record<string, unknown> = {};
    const keyType = (field as unknown as protobuf.MapField).keyType;
    for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
      if (keyType !== 'string') parseScalar(k, keyType, null, `${path} key`);
      setOwn(out, k, parseOne(item, field, `${path}[${k}]`));
    }
    return out;
  }
  if (field.repeated) {
    if (!Array.isArray(v)) throw new JsonConfigError(`${path}: expected a JSON array for repeated field`);
    return v.map((item, i) => parseOne(item, field, `${path}[${i}]`));
  }
  return parseOne(v, field, path);
}

function parseOne(v: unknown, field: protobuf.Field, path: string): unknown {
  if (isMessageField(field)) return parseMessage(v, field.resolvedType as protobuf.Type, path);
  return parseScalar(v, field.type, field.resolvedType, path);
}

function parseScalar(v: unknown, type: string, resolved: protobuf.ReflectionObject | null, path: string): unknown {
  if (resolved instanceof protobuf.Enum) return parseEnum(v, resolved, path);
  switch (type) {
    case 'string':
      if (typeof v !== 'string') throw new JsonConfigError(`${path}: expected a string, got ${JSON.stringify(v)}`);
      return v;
    case 'bytes':
      if (typeof v !== 'string') throw new JsonConfigError(`${path}: expected a base64 string, got ${JSON.stringify(v)}`);
      return Buffer.from(v, 'base64');
    case 'bool':
      if (typeof v === 'boolean') return v;
      if (v === 'true' || v === 'false') return v === 'true';
      throw new JsonConfigError(`${path}: expected a boolean, got ${JSON.stringify(v)}`);
    case 'float':
    case 'double': {
      if (typeof v === 'number') return v;
      if (typeof v === 'string' && /^(NaN|-?Infinity)$/.test(v)) return Number(v);
      if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
      throw new JsonConfigError(`${path}: expected a number, got ${JSON.stringify(v)}`);
    }
    default: {
      const limits = INT_LIMITS[type];
      if (limits === undefined) throw new JsonConfigError(`${path}: unsupported field type '${type}'`);
      const n = typeof v === 'number' ? v : typeof v === 'string' && /^-?[0-9]+$/.test(v) ? Number(v) : NaN;
      if (!Number.isInteger(n)) throw new JsonConfigError(`${path}: expected an integer, got ${JSON.stringify(v)}`);
      if (n < limits[0] || n > limits[1]) throw new JsonConfigError(`${path}: integer out of range for ${type}: ${JSON.stringify(v)}`);
      return n;
    }
  }
}

function parseEnum(v: unknown, e: protobuf.Enum, path: string): string {
  if (typeof v === 'number') {
    const name = e.valuesById[v];
    if (name !== undefined) return name;
  } else if (typeof v === 'string') {
    const upper = v.toUpperCase();
    const name = Object.keys(e.values).find((n) => n.toUpperCase() === upper);
    if (name !== undefined) return name;
  }
  const hint = typeof v === 'string' && typeName(e) === 'inference.DataType' ? configDataTypeHint(v) : undefined;
  throw new JsonConfigError(`${path}: invalid value ${JSON.stringify(v)} for enum type ${typeName(e)}${hint === undefined ? '' : `. ${hint}`}`);
}
