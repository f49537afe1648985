/**
 * Proto3 default values over the reflected schema, and the "complete" shape
 * every config object in nodetron has: each primitive field present with its
 * default, each repeated field present ([]), each map present ({}), singular
 * sub-messages and oneof members present only when set. Keys follow the
 * proto declaration order.
 */
import protobuf from 'protobufjs';

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/** Sets an own enumerable property even for keys like `__proto__`. */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** True when the field's values are messages (singular, repeated or map values). */
export function isMessageField(field: protobuf.Field): boolean {
  return field.resolvedType instanceof protobuf.Type;
}

/** Name of an enum's zero value (proto3), else its first value. */
export function enumDefault(e: protobuf.Enum): string {
  for (const [name, num] of Object.entries(e.values)) if (num === 0) return name;
  return Object.keys(e.values)[0] ?? '';
}

/** Default of a scalar or enum type: '' / 0 / false / first enum name. */
export function scalarDefault(type: string, resolved: protobuf.ReflectionObject | null): unknown {
  if (resolved instanceof protobuf.Enum) return enumDefault(resolved);
  switch (type) {
    case 'string':
    case 'bytes':
      return '';
    case 'bool':
      return false;
    default:
      return 0;
  }
}

/**
 * Returns `obj` with the complete shape of `type`. With `recurse`, nested
 * messages (singular, repeated, map values) are completed too; the parser
 * passes false because it completes each message as it closes it. Keys not
 * in the schema are kept, after the schema's.
 */
export function completeMessage(obj: Record<string, unknown>, type: protobuf.Type, recurse: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    const name = field.name;
    const present = hasOwn(obj, name) && obj[name] !== undefined && obj[name] !== null;
    if (present) {
      setOwn(out, name, recurse ? completeValue(obj[name], field) : obj[name]);
    } else if (field.partOf) {
      // oneof members (and proto3 optional) have presence: absent stays absent
    } else if (field.map) {
      setOwn(out, name, {});
    } else if (field.repeated) {
      setOwn(out, name, []);
    } else if (!isMessageField(field)) {
      setOwn(out, name, scalarDefault(field.type, field.resolvedType));
    }
  }
  for (const key of Object.keys(obj)) {
    if (!hasOwn(out, key) && !hasOwn(type.fields, key)) setOwn(out, key, obj[key]);
  }
  return out;
}

function completeValue(value: unknown, field: protobuf.Field): unknown {
  if (!isMessageField(field)) return value;
  const sub = field.resolvedType as protobuf.Type;
  const one = (v: unknown): unknown => (v !== null && typeof v === 'object' ? completeMessage(v as Record<string, unknown>, sub, true) : v);
  if (field.map) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) setOwn(out, k, one(v));
    return out;
  }
  if (field.repeated) return Array.isArray(value) ? value.map(one) : value;
  return one(value);
}

/**
 * Fills proto3 defaults into a plain config object (e.g. a JSON-supplied
 * config) recursively, returning a new object; `obj` is not modified.
 */
export function fillDefaults<T = Record<string, unknown>>(obj: object, type: protobuf.Type): T {
  return completeMessage(obj as Record<string, unknown>, type, true) as T;
}
