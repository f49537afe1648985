import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultTraceConfig } from '../../src/cli-trace-config';
import { ServerError } from '../../src/core/errors';
import { createLogger } from '../../src/logging/logger';
import { updateLogSettings } from '../../src/logging/logging-extension';
import { applyTraceUpdate, settingFromConfig, traceSettingJson } from '../../src/tracing/trace-settings';

const TRACE: [string, unknown, boolean, Record<string, unknown> | [string, string]][] = [
  ['rate and count as strings', { trace_rate: '5', trace_count: '3' }, false, { trace_rate: '5', trace_count: '3' }],
  ['levels; unknown ignored', { trace_level: ['TIMESTAMPS', 'bogus', 'tensors'] }, false, { trace_level: ['TIMESTAMPS', 'TENSORS'] }],
  ['OFF alone', { trace_level: ['OFF'] }, false, { trace_level: ['OFF'] }],
  ['OFF with another', { trace_level: ['OFF', 'TIMESTAMPS'] }, false, ['INVALID_ARG', "Expect only one trace level 'OFF' is specified"]],
  ['bad rate', { trace_rate: 'abc' }, false, ['INVALID_ARG', "Unable to parse 'trace_rate', got: abc"]],
  [
    'rate out of range',
    { trace_rate: '4294967296' },
    false,
    ['INVALID_ARG', "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: 4294967296"],
  ],
  ['count below -1', { trace_count: '-2' }, false, ['INVALID_ARG', "Unable to parse 'trace_count'. Expecting value >= -1, got:-2"]],
  ['bad log_frequency', { log_frequency: 'x' }, false, ['INVALID_ARG', "Unable to parse 'log_frequency', got: x"]],
  ['trace_file', { trace_file: '/x' }, false, ['UNSUPPORTED', 'trace file location can not be updated through network protocol']],
  ['empty object', {}, false, { trace_rate: '1000', trace_count: '-1', trace_level: ['OFF'] }],
];

for (const [name, body, model, expected] of TRACE) {
  test(`trace setting update: ${name}`, () => {
    const base = settingFromConfig(defaultTraceConfig());
    if (Array.isArray(expected)) {
      assert.throws(
        () => applyTraceUpdate(base, body, model),
        (e: unknown) => e instanceof ServerError && e.code === expected[0] && e.message === expected[1],
      );
      return;
    }
    const json = traceSettingJson(applyTraceUpdate(base, body, model));
    for (const [k, v] of Object.entries(expected)) assert.deepEqual(json[k], v, k);
  });
}

test('a model override: null clears a member back to the global value', () => {
  const o = applyTraceUpdate({}, { trace_rate: '7', trace_count: '2' }, true);
  assert.deepEqual(o, { rate: 7, count: 2 });
  assert.deepEqual(applyTraceUpdate(o, { trace_rate: null }, true), { count: 2 });
});

test('opentelemetry mode shows its settings and no file members', () => {
  const cfg = { ...defaultTraceConfig(), mode: 'opentelemetry' as const };
  const json = traceSettingJson(settingFromConfig(cfg));
  assert.equal(json['trace_mode'], 'opentelemetry');
  assert.equal(json['url'], 'http://localhost:4318/v1/traces');
  assert.equal(json['trace_file'], undefined);
});

const LOGGING: [string, unknown, Record<string, unknown> | [string, string]][] = [
  [
    'levels and format',
    { log_verbose_level: 2, log_format: 'ISO8601', log_warning: false },
    { log_verbose_level: 2, log_format: 'ISO8601', log_warning: false },
  ],
  ['nulls ignored', { log_info: null, log_file: null }, { log_info: true, log_file: '' }],
  ['log_file', { log_file: 'x' }, ['UNSUPPORTED', 'log file location can not be updated through network protocol']],
  ['bad format (503 quirk)', { log_format: 'xml' }, ['UNAVAILABLE', 'invalid argument for --log_format, got: xml']],
  ['non-boolean', { log_error: 1 }, ['INTERNAL', 'attempt to access JSON non-boolean as boolean']],
  ['negative verbose', { log_verbose_level: -1 }, ['INTERNAL', 'attempt to access JSON non-unsigned-integer as unsigned integer']],
  ['non-string format', { log_format: 3 }, ['INTERNAL', 'attempt to access JSON non-string as string']],
];

for (const [name, body, expected] of LOGGING) {
  test(`logging update: ${name}`, () => {
    const log = createLogger({ verbose: 0, info: true, warning: true, error: true, format: 'default', sink: () => undefined });
    if (Array.isArray(expected)) {
      assert.throws(
        () => updateLogSettings(log, body),
        (e: unknown) => e instanceof ServerError && e.code === expected[0] && e.message === expected[1],
      );
      // A refused body changes nothing.
      assert.equal(log.settings().verbose, 0);
      return;
    }
    const json = updateLogSettings(log, body) as unknown as Record<string, unknown>;
    for (const [k, v] of Object.entries(expected)) assert.deepEqual(json[k], v, k);
  });
}
