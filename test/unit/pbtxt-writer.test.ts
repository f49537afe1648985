/**
 * formatModelConfigText against the parser: every config.pbtxt the
 * repository ships reads back to the same object, and a table of the cases
 * a writer gets wrong (escapes, empty sub-messages, maps, enums, floats,
 * defaults left out).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { parseModelConfigText } from '../../src/repository/config/pbtxt';
import { formatModelConfigText } from '../../src/repository/config/pbtxt-writer';

const ROOT = path.resolve(__dirname, '../../..');

function configFiles(dir: string, out: string[] = []): string[] {
  if (!fs.existsSync(dir)) return out;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) configFiles(p, out);
    else if (entry.name === 'config.pbtxt') out.push(p);
  }
  return out;
}

test('every shipped config.pbtxt reads back to the same config', () => {
  const files = [...configFiles(path.join(ROOT, 'model_repository')), ...configFiles(path.join(ROOT, 'test/integration/fixtures'))];
  assert.ok(files.length > 20, `found ${files.length} configs`);
  let checked = 0;
  for (const file of files) {
    let config;
    try {
      config = parseModelConfigText(fs.readFileSync(file, 'utf8'), file);
    } catch {
      continue; // fixtures that are broken on purpose
    }
    const text = formatModelConfigText(config);
    assert.deepEqual(parseModelConfigText(text, 'written'), config, `${file}:\n${text}`);
    checked++;
  }
  assert.ok(checked > 20, `checked ${checked}`);
});

const cases: { name: string; source: string; written: string }[] = [
  { name: 'defaults are left out', source: 'name: "a"\nmax_batch_size: 0\nplatform: ""', written: 'name: "a"\n' },
  { name: 'an empty sub-message is kept', source: 'name: "a"\ndynamic_batching {}', written: 'name: "a"\ndynamic_batching {\n}\n' },
  {
    name: 'repeated scalars and nested messages',
    source: 'dynamic_batching { preferred_batch_size: [4, 8] max_queue_delay_microseconds: 100 }',
    written: 'dynamic_batching {\n  preferred_batch_size: [ 4, 8 ]\n  max_queue_delay_microseconds: 100\n}\n',
  },
  {
    name: 'enums by name, negative dims',
    source: 'input [{ name: "x" data_type: TYPE_FP32 dims: [-1, 3] }]',
    written: 'input [\n  {\n    name: "x"\n    data_type: TYPE_FP32\n    dims: [ -1, 3 ]\n  }\n]\n',
  },
  {
    name: 'a map of messages',
    source: 'parameters { key: "intra_op_thread_count" value { string_value: "2" } }',
    written: 'parameters {\n  key: "intra_op_thread_count"\n  value {\n    string_value: "2"\n  }\n}\n',
  },
  { name: 'escapes and UTF-8', source: String.raw`name: "q\"b\\n\nt\té模"`, written: String.raw`name: "q\"b\\n\nt\té模"` + '\n' },
  { name: 'a control byte in octal', source: String.raw`name: "a\001b"`, written: String.raw`name: "a\001b"` + '\n' },
  {
    name: 'instance groups',
    source: 'instance_group [{ count: 2 kind: KIND_CPU }, { count: 1 }]',
    written: 'instance_group [\n  {\n    kind: KIND_CPU\n    count: 2\n  },\n  {\n    count: 1\n  }\n]\n',
  },
];

for (const c of cases) {
  test(`pbtxt writer: ${c.name}`, () => {
    const config = parseModelConfigText(c.source, 'case');
    const text = formatModelConfigText(config);
    assert.equal(text, c.written);
    assert.deepEqual(parseModelConfigText(text, 'written'), config);
  });
}
