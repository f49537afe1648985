/**
 * JSON nesting depth (core/json-depth.ts) and the parsers that take any
 * depth without recursion (frontend/http/request-json.ts): the scanner's
 * count as a table, the rapidjson-style parser on documents far deeper than
 * a call stack, and the control bodies' refusal past Triton's limit.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkJsonDepth, jsonNestingDepth, MAX_JSON_DEPTH } from '../../src/core/json-depth';
import { parseControlJson, parseLikeRapidjson, parseRequestJson } from '../../src/frontend/http/request-json';

const nested = (n: number, inner = '1'): string => '['.repeat(n) + inner + ']'.repeat(n);
const DEPTH_TEXT = 'JSON nesting depth exceeds maximum allowed limit (100)';

test('jsonNestingDepth counts arrays and objects outside strings', () => {
  const table: [text: string, depth: number][] = [
    ['', 0],
    ['1', 0],
    ['"[[["', 0],
    ['[]', 1],
    ['{}', 1],
    ['[[1],[2,[3]]]', 3],
    ['{"a":{"b":[{}]}}', 4],
    ['{"k[":"v{"}', 1],
    ['["\\"[[", 1]', 1], // an escaped quote does not end the string
    ['["\\\\", [2]]', 2], // an escaped backslash does
    [nested(100), 100],
    [nested(101), 101],
    ['[]]]][', 1], // unbalanced: closing brackets never go below 0
  ];
  for (const [text, depth] of table) assert.equal(jsonNestingDepth(text), depth, text);
});

test('jsonNestingDepth stops once past the bound it is given', () => {
  assert.equal(jsonNestingDepth(nested(5000), 100), 101);
  assert.equal(jsonNestingDepth(nested(50), 100), 50);
});

test("checkJsonDepth: the limit is Triton's 100, with its text", () => {
  assert.equal(MAX_JSON_DEPTH, 100);
  assert.doesNotThrow(() => checkJsonDepth(nested(100)));
  assert.throws(() => checkJsonDepth(nested(101)), { code: 'INVALID_ARG', message: DEPTH_TEXT });
});

test('the rapidjson-style parser takes nesting far deeper than a call stack', () => {
  // NaN sends the document to the fallback parser (JSON.parse refuses it).
  const depth = 200_000;
  const doc = Buffer.from(`{"a":${nested(depth, 'NaN')},"b":{"c":[{}]}}`);
  const v = parseRequestJson(doc, doc.length).doc as { a: unknown; b: unknown };
  let cur: unknown = v.a;
  for (let i = 0; i < depth; i++) {
    assert.ok(Array.isArray(cur) && cur.length === 1);
    cur = cur[0];
  }
  assert.ok(Number.isNaN(cur));
  assert.deepEqual(v.b, { c: [{}] });
});

test('the parser reports rapidjson offsets inside deep nesting', () => {
  const table: [text: string, message: string][] = [
    [`${nested(3000, '1 2')}`, "Missing a comma or ']' after an array element. at 3002"],
    [`[${'{"a":['.repeat(2000)}}`, 'Invalid value. at 12001'],
    [`${'['.repeat(1000)}{"k" 1}`, 'Missing a colon after a name of object member. at 1005'],
    ['[1,{"a":[NaN,{}],"b":[]}, {"c":1 x}]', "Missing a comma or '}' after an object member. at 33"],
  ];
  for (const [text, message] of table) {
    assert.throws(
      () => parseLikeRapidjson(Buffer.from(text)),
      { code: 'INTERNAL', message: `failed to parse the request JSON buffer: ${message}` },
      text.slice(0, 40),
    );
  }
});

test('control bodies: up to 100 levels parse, deeper ones are refused before parsing', () => {
  assert.deepEqual(parseControlJson('{"trace_level":["TIMESTAMPS"]}'), { trace_level: ['TIMESTAMPS'] });
  assert.equal((parseControlJson(`{"a":${nested(99)}}`) as { a: unknown[] }).a.length, 1);
  for (const body of [`{"trace_rate":${nested(100)}}`, `{"x":${nested(200_000)}}`, nested(101, '{')]) {
    assert.throws(() => parseControlJson(body), { code: 'INVALID_ARG', message: DEPTH_TEXT });
  }
  // An empty body is still rapidjson's empty-document error.
  assert.throws(() => parseControlJson(''), { code: 'INTERNAL', message: 'failed to parse the request JSON buffer: The document is empty. at 0' });
});
