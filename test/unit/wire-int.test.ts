/**
 * 64-bit integers in the Python stub's JSON frames (src/python-backend/wire-int.ts;
 * the stub's side is _nt_ipc.py wire_int / from_wire_int): past 2^53 a value
 * travels as {"int":"<decimal>"} and comes back as the same bigint; smaller
 * ones, strings and booleans travel as themselves.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ParamValue } from '../../src/core/request';
import { fromWire, paramsFromWire, toWire, type WireValue } from '../../src/python-backend/wire-int';

// [value, its wire form]
const rows: [ParamValue, WireValue][] = [
  [9223372036854775813n, { int: '9223372036854775813' }],
  [-9223372036854775808n, { int: '-9223372036854775808' }],
  [18446744073709551615n, { int: '18446744073709551615' }],
  [9007199254740991, 9007199254740991],
  [-3, -3],
  ['9223372036854775813', '9223372036854775813'],
  [true, true],
  [0.5, 0.5],
];

for (const [value, wire] of rows) {
  test(`wire form of ${typeof value} ${String(value)}`, () => {
    assert.deepEqual(toWire(value), wire);
    assert.deepEqual(JSON.parse(JSON.stringify(toWire(value))), wire, "survives the frame's JSON");
    assert.deepEqual(fromWire(wire), value);
  });
}

test('a tagged value within 2^53 (the stub tags only past it) comes back a number; parameters keep a __proto__ key as their own', () => {
  assert.equal(fromWire({ int: '42' }), 42);
  const p = paramsFromWire(JSON.parse('{"__proto__":{"int":"9007199254740993"},"a":1}') as Record<string, WireValue>);
  assert.ok(Object.hasOwn(p, '__proto__'));
  assert.equal(p['__proto__'], 9007199254740993n);
  assert.equal(p.a, 1);
});
