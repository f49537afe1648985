import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fillDefaults, parseModelConfigText, parseTextProto } from '../../src/repository/config/pbtxt';
import { schemaType } from '../../src/repository/config/schema';
import { ServerError } from '../../src/core/errors';

/** Value at a dotted path (`input.0.dims`). */
function at(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

const parse = (text: string): Record<string, unknown> => parseModelConfigText(text, 'm/config.pbtxt');

const syntaxCases: { name: string; text: string; expect: Record<string, unknown> }[] = [
  { name: 'scalar with colon', text: 'name: "a"', expect: { name: 'a' } },
  { name: 'single-quoted string', text: "name: 'a b'", expect: { name: 'a b' } },
  { name: 'adjacent strings concatenate', text: 'name: "ab" \'cd\'\n "ef"', expect: { name: 'abcdef' } },
  {
    name: 'string escapes',
    text: String.raw`name: "q\"s\'b\\n\nt\tx\x41o\101h\x7eu\u00e9"`,
    expect: { name: 'q"s\'b\\n\nt\txAoAh~u\u00e9' },
  },
  { name: 'octal escape for utf-8 bytes', text: String.raw`name: "\303\251"`, expect: { name: '\u00e9' } },
  { name: 'utf-8 text kept', text: 'name: "模型"', expect: { name: '模型' } },
  { name: 'comments', text: '# head\nname: "a" # tail\n# end', expect: { name: 'a' } },
  { name: 'negative int', text: 'max_batch_size: -3', expect: { max_batch_size: -3 } },
  { name: 'hex int', text: 'max_batch_size: 0x1F', expect: { max_batch_size: 31 } },
  { name: 'octal int', text: 'max_batch_size: 017', expect: { max_batch_size: 15 } },
  {
    name: 'int64 to number',
    text: 'dynamic_batching { max_queue_delay_microseconds: 9007199254740991 }',
    expect: { 'dynamic_batching.max_queue_delay_microseconds': 9007199254740991 },
  },
  { name: 'enum by name', text: 'input { data_type: TYPE_FP16 }', expect: { 'input.0.data_type': 'TYPE_FP16' } },
  { name: 'enum by number', text: 'input { data_type: 13 }', expect: { 'input.0.data_type': 'TYPE_STRING' } },
  { name: 'message with braces', text: 'version_policy { all { } }', expect: { 'version_policy.all': {} } },
  { name: 'message with colon', text: 'version_policy: { latest: { num_versions: 2 } }', expect: { 'version_policy.latest.num_versions': 2 } },
  { name: 'message with angle brackets', text: 'version_policy < specific < versions: [1, 3] > >', expect: { 'version_policy.specific.versions': [1, 3] } },
  { name: 'repeated list form', text: 'input { dims: [ 1, -1, 3 ] }', expect: { 'input.0.dims': [1, -1, 3] } },
  { name: 'repeated one by one', text: 'input { dims: 1 dims: 2 }', expect: { 'input.0.dims': [1, 2] } },
  { name: 'repeated mixed forms', text: 'input { dims: [1] dims: 2 dims: [] }', expect: { 'input.0.dims': [1, 2] } },
  { name: 'empty list', text: 'input { dims: [] }', expect: { 'input.0.dims': [] } },
  {
    name: 'list of messages',
    text: 'input [ { name: "a" }, { name: "b" } ]\ninput { name: "c" }',
    expect: { 'input.0.name': 'a', 'input.1.name': 'b', 'input.2.name': 'c' },
  },
  { name: 'list of messages with colon', text: 'output: [ { name: "o" } ]', expect: { 'output.0.name': 'o' } },
  { name: 'separators , and ;', text: 'name: "a", platform: "p"; backend: "b"', expect: { name: 'a', platform: 'p', backend: 'b' } },
  {
    name: 'floats',
    text: 'sequence_batching { direct { minimum_slot_utilization: .5 } }',
    expect: { 'sequence_batching.direct.minimum_slot_utilization': 0.5 },
  },
  {
    name: 'float forms',
    text: 'sequence_batching { control_input { control { fp32_false_true: [ 1e2, -2.5f, 3, -inf, Infinity ] } } }',
    expect: { 'sequence_batching.control_input.0.control.0.fp32_false_true': [100, -2.5, 3, -Infinity, Infinity] },
  },
  {
    name: 'nan',
    text: 'sequence_batching { control_input { control { fp32_false_true: nan } } }',
    expect: { 'sequence_batching.control_input.0.control.0.fp32_false_true': [NaN] },
  },
  {
    name: 'bool words',
    text: 'input { is_shape_tensor: true optional: t allow_ragged_batch: True } input { optional: 1 is_shape_tensor: False allow_ragged_batch: f }',
    expect: {
      'input.0.is_shape_tensor': true,
      'input.0.optional': true,
      'input.0.allow_ragged_batch': true,
      'input.1.optional': true,
      'input.1.is_shape_tensor': false,
      'input.1.allow_ragged_batch': false,
    },
  },
  {
    name: 'map of messages, block form',
    text: 'parameters { key: "k" value { string_value: "v" } }\nparameters { key: "j" value: { string_value: "w" } }',
    expect: { parameters: { k: { string_value: 'v' }, j: { string_value: 'w' } } },
  },
  {
    name: 'map, list form',
    text: 'cc_model_filenames [ { key: "8.0" value: "a.plan" }, { key: "7.5", value: "b.plan" } ]',
    expect: { cc_model_filenames: { '8.0': 'a.plan', '7.5': 'b.plan' } },
  },
  {
    name: 'map duplicate key: last wins',
    text: 'metric_tags { key: "a" value: "1" } metric_tags { key: "a" value: "2" }',
    expect: { metric_tags: { a: '2' } },
  },
  { name: 'map entry without value', text: 'parameters { key: "k" }', expect: { parameters: { k: { string_value: '' } } } },
  { name: 'map __proto__ key is data', text: 'metric_tags { key: "__proto__" value: "x" }', expect: { 'metric_tags.__proto__': 'x' } },
  {
    name: 'uint64 map keys',
    text: 'dynamic_batching { priority_queue_policy { key: 2 value { max_queue_size: 4 } } }',
    expect: { 'dynamic_batching.priority_queue_policy.2.max_queue_size': 4 },
  },
  {
    name: 'oneof member set',
    text: 'sequence_batching { oldest { max_candidate_sequences: 4 } }',
    expect: { 'sequence_batching.oldest.max_candidate_sequences': 4, 'sequence_batching.direct': undefined },
  },
  {
    name: 'oneof primitive member only when set',
    text: 'model_warmup { inputs { key: "x" value { zero_data: true } } }',
    expect: { 'model_warmup.0.inputs.x.zero_data': true, 'model_warmup.0.inputs.x.random_data': undefined },
  },
  { name: 'empty text', text: '', expect: { name: '', max_batch_size: 0, input: [] } },
  { name: 'BOM and CRLF', text: '\ufeffname: "a"\r\nplatform: "b"\r\n', expect: { name: 'a', platform: 'b' } },
];

for (const c of syntaxCases) {
  test(`pbtxt syntax: ${c.name}`, () => {
    const cfg = parse(c.text);
    for (const [path, want] of Object.entries(c.expect)) {
      assert.deepEqual(at(cfg, path), want, `${c.name}: ${path}`);
    }
  });
}

test('pbtxt: every primitive, repeated and map field present; unset messages absent', () => {
  const cfg = parse('input { name: "x" }');
  assert.deepEqual(Object.keys(cfg), [
    'name',
    'platform',
    'backend',
    'runtime',
    'max_batch_size',
    'input',
    'output',
    'batch_input',
    'batch_output',
    'instance_group',
    'default_model_filename',
    'cc_model_filenames',
    'metric_tags',
    'parameters',
    'model_warmup',
  ]);
  assert.deepEqual(cfg.input, [
    {
      name: 'x',
      data_type: 'TYPE_INVALID',
      format: 'FORMAT_NONE',
      dims: [],
      is_shape_tensor: false,
      allow_ragged_batch: false,
      optional: false,
      is_non_linear_format_io: false,
    },
  ]);
});

test('pbtxt: nested messages get defaults, sub-messages inside only when set', () => {
  const cfg = parse('dynamic_batching { }');
  assert.deepEqual(cfg.dynamic_batching, {
    preferred_batch_size: [],
    max_queue_delay_microseconds: 0,
    preserve_ordering: false,
    priority_levels: 0,
    default_priority_level: 0,
    priority_queue_policy: {},
  });
});

test('parseTextProto works for any message type', () => {
  const v = parseTextProto('name: "g" kind: KIND_GPU gpus: [0, 1]', schemaType('ModelInstanceGroup'), 'x');
  assert.equal(v.kind, 'KIND_GPU');
  assert.deepEqual(v.gpus, [0, 1]);
  assert.equal(v.count, 0);
  assert.equal(v.rate_limiter, undefined);
});

const P = 'failed to read text proto from m/config.pbtxt';
const errorCases: { name: string; text: string; error: string }[] = [
  { name: 'unknown top-level field', text: 'name: "a"\nfoo: 1', error: `${P}: line 2: unknown field 'foo' in message 'inference.ModelConfig'` },
  {
    name: 'unknown nested field',
    text: 'input [\n  {\n    name: "a"\n    bogus: 2\n  }\n]',
    error: `${P}: line 4: unknown field 'bogus' in message 'inference.ModelInput'`,
  },
  {
    name: 'unknown enum value',
    text: 'input {\n data_type: TYPE_FOO }',
    error: `${P}: line 2: unknown enum value 'TYPE_FOO' for field 'data_type' of type 'inference.DataType'`,
  },
  {
    name: 'unknown enum number',
    text: 'input { data_type: 99 }',
    error: `${P}: line 1: unknown enum value 99 for field 'data_type' of type 'inference.DataType'`,
  },
  { name: 'string for int', text: '\nmax_batch_size: "8"', error: `${P}: line 2: expected integer for int32 field 'max_batch_size', got '"8"'` },
  { name: 'float for int', text: 'max_batch_size: 1.5', error: `${P}: line 1: expected integer for int32 field 'max_batch_size', got '1.5'` },
  { name: 'int for string', text: 'name: 5', error: `${P}: line 1: expected string for field 'name', got '5'` },
  { name: 'bad bool', text: 'input { optional: yes }', error: `${P}: line 1: invalid value 'yes' for bool field 'optional'` },
  { name: 'int32 overflow', text: 'max_batch_size: 2147483648', error: `${P}: line 1: integer out of range for int32 field 'max_batch_size': 2147483648` },
  {
    name: 'negative unsigned',
    text: 'dynamic_batching { max_queue_delay_microseconds: -1 }',
    error: `${P}: line 1: invalid negative value for unsigned uint64 field 'max_queue_delay_microseconds'`,
  },
  { name: 'unterminated string', text: 'name: "abc\nplatform: "x"', error: `${P}: line 1: unterminated string` },
  { name: 'unterminated string at end', text: "\n\nname: 'abc", error: `${P}: line 3: unterminated string` },
  { name: 'bad escape', text: String.raw`name: "a\q"`, error: `${P}: line 1: invalid escape sequence in string literal: '\\q'` },
  { name: 'missing colon for scalar', text: 'name "a"', error: `${P}: line 1: expected ':' after field 'name', got '"a"'` },
  {
    name: 'unclosed message',
    text: 'input {\n name: "a"\n',
    error: `${P}: line 3: unexpected end of input: expected '}' to close message 'inference.ModelInput'`,
  },
  { name: 'mismatched closer', text: 'input { name: "a" >', error: `${P}: line 1: expected field name in message 'inference.ModelInput', got '>'` },
  { name: 'stray closer', text: 'name: "a" }', error: `${P}: line 1: expected field name in message 'inference.ModelConfig', got '}'` },
  { name: 'scalar where message expected', text: 'input: 3', error: `${P}: line 1: expected '{' or '<' to start message field 'input', got '3'` },
  { name: 'list for non-repeated', text: 'name: ["a"]', error: `${P}: line 1: field 'name' is not repeated, a list value is not allowed` },
  { name: 'list without commas', text: 'input { dims: [1 2] }', error: `${P}: line 1: expected ',' or ']' in list of field 'dims', got '2'` },
  { name: 'non-repeated twice', text: 'name: "a"\nname: "b"', error: `${P}: line 2: non-repeated field 'name' is specified multiple times` },
  {
    name: 'two oneof members',
    text: 'dynamic_batching { }\nsequence_batching { }',
    error: `${P}: line 2: field 'sequence_batching' is specified along with field 'dynamic_batching', another member of oneof 'scheduling_choice'`,
  },
  {
    name: 'unknown map entry field',
    text: 'parameters { key: "k" val: "v" }',
    error: `${P}: line 1: unknown field 'val' in message 'inference.ModelConfig.ParametersEntry'`,
  },
  { name: 'bad character', text: 'name: "a"\n@', error: `${P}: line 2: unexpected character '@'` },
  { name: 'bad octal', text: 'max_batch_size: 08', error: `${P}: line 1: numbers starting with leading zero must be in octal: '08'` },
  { name: 'number glued to identifier', text: 'max_batch_size: 8x', error: `${P}: line 1: invalid number '8x'` },
  { name: 'extensions rejected', text: '[ext]: 1', error: `${P}: line 1: extension and Any fields are not supported in message 'inference.ModelConfig'` },
];

for (const c of errorCases) {
  test(`pbtxt error: ${c.name}`, () => {
    assert.throws(
      () => parse(c.text),
      (err: unknown) => {
        assert.ok(err instanceof ServerError);
        assert.equal(err.code, 'INVALID_ARG');
        assert.equal(err.message, c.error);
        return true;
      },
    );
  });
}

test('fillDefaults completes a partial object recursively without changing it', () => {
  const partial = { name: 'm', input: [{ name: 'x', dims: [1] }], dynamic_batching: {} };
  const before = structuredClone(partial);
  const full = fillDefaults<Record<string, unknown>>(partial, schemaType('ModelConfig'));
  assert.deepEqual(partial, before);
  assert.equal(at(full, 'input.0.data_type'), 'TYPE_INVALID');
  assert.equal(at(full, 'input.0.format'), 'FORMAT_NONE');
  assert.deepEqual(at(full, 'dynamic_batching.priority_queue_policy'), {});
  assert.deepEqual(full.instance_group, []);
  assert.equal(full.version_policy, undefined);
  assert.deepEqual(full, parse('name: "m" input { name: "x" dims: 1 } dynamic_batching {}'));
});
