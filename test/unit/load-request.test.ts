import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { parseIndexBody, parseLoadBody, parseUnloadBody } from '../../src/frontend/http/repository-body';
import { parseModelConfigJson } from '../../src/repository/config/json-config';
import { checkModelNameToLoad, removeOverrideDir, safeRelative, writeOverrideDir } from '../../src/repository/load-request';

const msg = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    return (e as Error).message;
  }
  return 'no error';
};

test('model names and override file paths', () => {
  assert.equal(
    msg(() => checkModelNameToLoad('  ')),
    'Model name cannot be empty. Please enter a valid name to deploy.',
  );
  assert.equal(
    msg(() => checkModelNameToLoad('..')),
    "invalid model name '..', model name must not contain path traversal characters",
  );
  assert.equal(
    msg(() => checkModelNameToLoad('a/b')),
    "invalid model name 'a/b', model name must not contain path traversal characters",
  );
  assert.equal(
    msg(() => checkModelNameToLoad('ok.name-1')),
    'no error',
  );
  const table: [string, string | null][] = [
    ['1/model.onnx', '1/model.onnx'],
    ['1/./sub/../model.onnx', '1/model.onnx'],
    ['../x', null],
    ['1/../../x', null],
    ['/etc/passwd', null],
    ['..', null],
    ['', null],
  ];
  for (const [p, expected] of table) {
    if (expected === null)
      assert.match(
        msg(() => safeRelative(p)),
        /^Invalid file parameter 'file:/,
        p,
      );
    else assert.equal(safeRelative(p), expected);
  }
  const dir = writeOverrideDir('m', [{ path: '2/sub/f.bin', data: Buffer.from('hi') }]);
  assert.equal(path.basename(dir), 'm');
  assert.equal(fs.readFileSync(path.join(dir, '2', 'sub', 'f.bin'), 'utf8'), 'hi');
  removeOverrideDir(dir);
  assert.equal(fs.existsSync(dir), false);
});

test('HTTP bodies of index, load and unload', () => {
  assert.deepEqual(parseIndexBody(''), { ready: false });
  assert.deepEqual(parseIndexBody('{"ready":true}'), { ready: true });
  assert.equal(
    msg(() => parseIndexBody('{"ready":"true"}')),
    "Invalid value for 'ready': expected a boolean",
  );
  assert.deepEqual(parseLoadBody(''), { files: [] });
  const load = parseLoadBody(JSON.stringify({ parameters: { config: '{}', 'file:1/a': Buffer.from('xyz').toString('base64') } }));
  assert.equal(load.config, '{}');
  assert.deepEqual(
    load.files.map((f) => [f.path, Buffer.from(f.data).toString()]),
    [['1/a', 'xyz']],
  );
  assert.equal(
    msg(() => parseLoadBody('{"parameters":{"config":{}}}')),
    'attempt to access JSON non-string as string',
  );
  assert.equal(
    msg(() => parseLoadBody('{"parameters":{"x":"y"}}')),
    'unexpected error on creating Triton parameter',
  );
  assert.deepEqual(parseUnloadBody('{"parameters":{"unload_dependents":true}}'), { unloadDependents: true });
  assert.deepEqual(parseUnloadBody('{"parameters":{"unload_dependents":"yes"}}'), { unloadDependents: false });
});

test('JSON config override: camelCase names, case-insensitive enums, int64 as strings, unknown fields refused', () => {
  const c = parseModelConfigJson(
    JSON.stringify({
      name: 'm',
      maxBatchSize: 4,
      input: [{ name: 'X', dataType: 'type_fp32', dims: ['-1', 3] }],
      instance_group: [{ kind: 'KIND_cpu', count: 2 }],
      dynamicBatching: { maxQueueDelayMicroseconds: '100' },
    }),
  );
  assert.equal(c.max_batch_size, 4);
  assert.equal(c.input[0].data_type, 'TYPE_FP32');
  assert.deepEqual(c.input[0].dims, [-1, 3]);
  assert.equal(c.instance_group[0].kind, 'KIND_CPU');
  assert.equal(c.dynamic_batching?.max_queue_delay_microseconds, 100);
  assert.deepEqual(c.output, []);
  const bad: [string, RegExp][] = [
    ['{', /^Invalid config override: /],
    ['{"nope": 1}', /^Invalid config override: Cannot find field: nope in message inference.ModelConfig$/],
    ['{"max_batch_size": 1.5}', /expected an integer/],
    ['{"input": [{"data_type": "TYPE_NOPE"}]}', /invalid value "TYPE_NOPE" for enum type inference.DataType/],
    [
      '{"input": [{"data_type": "FP32"}]}',
      /invalid value "FP32" for enum type inference.DataType\. config\.pbtxt spells it TYPE_FP32 \('FP32' is how requests spell it\)\.$/,
    ],
    ['[]', /expected a JSON object/],
  ];
  for (const [text, re] of bad)
    assert.match(
      msg(() => parseModelConfigJson(text)),
      re,
      text,
    );
});
