/**
 * Renders a config as Triton's `/config` JSON (protocol.md §1.7): compact,
 * keys in proto declaration order, primitives/repeated/maps always present,
 * singular messages and oneof members only when set, enums by name, 64-bit
 * integers as strings except the fields Triton rewrites to numbers. The
 * walk follows the schema, so missing primitive keys render as defaults.
 */
import protobuf from 'protobufjs';
import type { ModelConfig } from '../../core/model-config';
import { isMessageField, scalarDefault } from './defaults';
import { modelConfigType } from './schema';

/**
 * 64-bit fields Triton's fix-up pass turns back into JSON numbers, as paths
 * of field names (`value` = map value). `sequence_batching.state.
 * initial_state.dims` is deliberately absent: Triton looks for it on the
 * wrong object, so it stays a string.
 */
const NUMERIC_64 = new Set([
  'input.dims',
  'input.reshape.shape',
  'output.dims',
  'output.reshape.shape',
  'version_policy.specific.versions',
  'dynamic_batching.max_queue_delay_microseconds',
  'dynamic_batching.priority_levels',
  'dynamic_batching.default_priority_level',
  'dynamic_batching.default_queue_policy.default_timeout_microseconds',
  'dynamic_batching.priority_queue_policy.value.default_timeout_microseconds',
  'sequence_batching.max_sequence_idle_microseconds',
  'sequence_batching.oldest.max_queue_delay_microseconds',
  'sequence_batching.direct.max_queue_delay_microseconds',
  'sequence_batching.state.dims',
  'ensemble_scheduling.step.model_version',
  'model_warmup.inputs.value.dims',
]);

const INT64_TYPES = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);
const INT_KEY_TYPES = new Set(['int32', 'uint32', 'sint32', 'fixed32', 'sfixed32', ...INT64_TYPES]);

/** The `/config` body for a loaded model's config. */
export function modelConfigToJson(config: ModelConfig): string {
  return renderMessage(config as Record<string, unknown>, modelConfigType(), '');
}

/**
 * Same rendering for any message type of the schema. `path` is where the
 * message sits inside ModelConfig (e.g. `input`), which decides the 64-bit
 * number fix-ups; without it 64-bit integers render as strings.
 */
export function messageToJson(obj: Record<string, unknown>, type: protobuf.Type, path = ''): string {
  return renderMessage(obj, type, path);
}

function renderMessage(obj: Record<string, unknown>, type: protobuf.Type, path: string): string {
  const parts: string[] = [];
  for (const field of type.fieldsArray) {
    const fieldPath = path === '' ? field.name : `${path}.${field.name}`;
    const raw = Object.prototype.hasOwnProperty.call(obj, field.name) ? obj[field.name] : undefined;
    const value = raw === null ? undefined : raw;
    let text: string | undefined;
    if (field.map) {
      text = renderMap((value ?? {}) as Record<string, unknown>, field as protobuf.FieldBase as protobuf.MapField, fieldPath);
    } else if (field.repeated) {
      const items = (value ?? []) as unknown[];
      text = `[${items.map((v) => renderValue(v, field, fieldPath)).join(',')}]`;
    } else if (value === undefined && (field.partOf || isMessageField(field))) {
      text = undefined;
    } else {
      text = renderValue(value ?? scalarDefault(field.type, field.resolvedType), field, fieldPath);
    }
    if (text !== undefined) parts.push(`${quote(field.name)}:${text}`);
  }
  return `{${parts.join(',')}}`;
}

function renderMap(map: Record<string, unknown>, field: protobuf.MapField, path: string): string {
  const keys = Object.keys(map);
  // Deterministic order: numeric keys by value, others by code unit.
  if (INT_KEY_TYPES.has(field.keyType)) keys.sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
  else keys.sort();
  const valuePath = `${path}.value`;
  const parts = keys.map((k) => `${quote(k)}:${renderValue(map[k], field, valuePath)}`);
  return `{${parts.join(',')}}`;
}

/** One (non-repeated) value of `field`'s type. */
function renderValue(value: unknown, field: protobuf.FieldBase, path: string): string {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Type) {
    return renderMessage((value ?? {}) as Record<string, unknown>, resolved, path);
  }
  if (resolved instanceof protobuf.Enum) {
    if (typeof value !== 'number') return quote(String(value));
    const name = resolved.valuesById[value];
    return name !== undefined ? quote(name) : String(value);
  }
  switch (field.type) {
    case 'string':
      return quote(String(value));
    case 'bytes':
      return quote(Buffer.isBuffer(value) || value instanceof Uint8Array ? Buffer.from(value).toString('base64') : String(value));
    case 'bool':
      return value ? 'true' : 'false';
    case 'float':
      return renderFloat(Number(value), true);
    case 'double':
      return renderFloat(Number(value), false);
    default: {
      const n = integerText(value);
      return INT64_TYPES.has(field.type) && !NUMERIC_64.has(path) ? quote(n) : n;
    }
  }
}

function integerText(value: unknown): string {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return value.replace(/^(-?)0+(?=\d)/, '$1');
  const n = Number(value);
  return Number.isFinite(n) ? BigInt(Math.trunc(n)).toString() : '0';
}

/**
 * Floats as Triton prints them: protobuf writes the shortest text that
 * reads back as the same float32 (or double), rapidjson re-prints that as
 * the shortest double, without '+' in exponents; non-finite as strings.
 */
function renderFloat(v: number, single: boolean): string {
  if (Number.isNaN(v)) return '"NaN"';
  if (v === Infinity) return '"Infinity"';
  if (v === -Infinity) return '"-Infinity"';
  let n = v;
  if (single) {
    const f = Math.fround(v);
    for (let digits = 1; digits <= 9; digits++) {
      const candidate = Number(f.toPrecision(digits));
      if (Math.fround(candidate) === f) {
        n = candidate;
        break;
      }
    }
  }
  return String(n).replace('e+', 'e');
}

/** JSON string as rapidjson writes it (control characters as \u00XX, upper-case). */
function quote(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i];
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (c === 0x08) out += '\\b';
    else if (c === 0x0c) out += '\\f';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else if (c < 0x20) out += `\\u${c.toString(16).toUpperCase().padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}
