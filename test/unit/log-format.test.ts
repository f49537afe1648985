import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseServerOptions } from '../../src/cli-options';
import { escapeFromEnv, formatLogEntry, type LogEntry } from '../../src/logging/line-format';
import { createLogger, type LogStream, type LoggerOptions } from '../../src/logging/logger';
import { backendTable, formatTable, modelTable, optionsTableRows, optionsTable, statusSummary } from '../../src/logging/table';
import { accessLine, accessStatus } from '../../src/metrics/access-log';
import type { InferRequest } from '../../src/core/request';
import { SourceMap } from 'node:module';
import fs from 'node:fs';

/** The TypeScript line of this file's compiled line (the test runs from dist). */
function mappedLine(jsLine: number): number {
  const map = new SourceMap(JSON.parse(fs.readFileSync(`${__filename}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]);
  const e = map.findEntry(jsLine - 1, 0) as { originalLine?: number };
  return (e.originalLine ?? -1) + 1;
}

// 2024-11-29T17:05:00.123456Z
const T = Date.UTC(2024, 10, 29, 17, 5, 0) * 1000 + 123456;

const LINES: [Partial<LogEntry>, 'default' | 'ISO8601', boolean, string][] = [
  [{}, 'default', true, 'I1129 17:05:00.123456 42 server.ts:0] "hello"\n'],
  [{ letter: 'W' }, 'default', true, 'W1129 17:05:00.123456 42 server.ts:0] "hello"\n'],
  [{ letter: 'E', source: 'model_lifecycle.ts' }, 'default', true, 'E1129 17:05:00.123456 42 model_lifecycle.ts:0] "hello"\n'],
  [{ source: 'http_server.ts:12' }, 'default', true, 'I1129 17:05:00.123456 42 http_server.ts:12] "hello"\n'],
  [{ epochMicros: Date.UTC(2025, 0, 2, 3, 4, 5) * 1000 + 7 }, 'default', true, 'I0102 03:04:05.000007 42 server.ts:0] "hello"\n'],
  [{}, 'ISO8601', true, '2024-11-29T17:05:00Z I 42 server.ts:0] "hello"\n'],
  [{ message: 'say "hi"\\\n\tnow\u0001' }, 'default', true, 'I1129 17:05:00.123456 42 server.ts:0] "say \\"hi\\"\\\\\\n\\tnow\\u0001"\n'],
  [{ message: "successfully loaded 'simple'" }, 'default', false, "I1129 17:05:00.123456 42 server.ts:0] successfully loaded 'simple'\n"],
  [{ message: '+--+\n|a |\n+--+\n', multiline: true }, 'default', true, 'I1129 17:05:00.123456 42 server.ts:0] \n+--+\n|a |\n+--+\n\n'],
  [{ message: '{\n  "a": 1\n}', multiline: true, heading: 'config:' }, 'default', true, 'I1129 17:05:00.123456 42 server.ts:0] config:\n{\n  "a": 1\n}\n'],
];

for (const [partial, format, escape, expected] of LINES) {
  test(`line format ${format} ${JSON.stringify(partial)}`, () => {
    const entry: LogEntry = { letter: 'I', epochMicros: T, pid: 42, source: 'server.ts', message: 'hello', ...partial };
    assert.equal(formatLogEntry(entry, format, escape), expected);
  });
}

test('escaping is off only when TRITON_SERVER_ESCAPE_LOG_MESSAGES=0', () => {
  assert.equal(escapeFromEnv({}), true);
  assert.equal(escapeFromEnv({ TRITON_SERVER_ESCAPE_LOG_MESSAGES: '1' }), true);
  assert.equal(escapeFromEnv({ TRITON_SERVER_ESCAPE_LOG_MESSAGES: '0' }), false);
});

function capture(overrides: Partial<LoggerOptions> = {}) {
  const out: [LogStream, string][] = [];
  const log = createLogger({
    verbose: 0,
    info: true,
    warning: true,
    error: true,
    format: 'default',
    clock: () => T,
    pid: 7,
    escape: true,
    sites: false,
    sink: (text, stream) => out.push([stream, text]),
    ...overrides,
  });
  return { log, out };
}

test('logger routes INFO to stdout and WARNING/ERROR to stderr', () => {
  const { log, out } = capture();
  log.info('a');
  log.warn('b');
  log.error('c');
  log.child({ source: 'model_lifecycle.ts', model: 'simple' }).info("successfully loaded 'simple'");
  assert.deepEqual(out, [
    ['stdout', 'I1129 17:05:00.123456 7 server.ts:0] "a"\n'],
    ['stderr', 'W1129 17:05:00.123456 7 server.ts:0] "b"\n'],
    ['stderr', 'E1129 17:05:00.123456 7 server.ts:0] "c"\n'],
    ['stdout', 'I1129 17:05:00.123456 7 model_lifecycle.ts:0] "successfully loaded \'simple\'"\n'],
  ]);
});

test('logger sends everything to the file when one is set', () => {
  const { log, out } = capture({ file: '/tmp/unused.log' });
  log.info('a');
  log.error('b');
  assert.deepEqual(
    out.map(([s]) => s),
    ['file', 'file'],
  );
});

test('levels filter and can change at run time, children included', () => {
  const { log, out } = capture({ info: false, verbose: 1 });
  const child = log.child({ source: 'http_server.ts' });
  child.info('hidden');
  child.verbose(1, 'v1');
  child.verbose(2, 'v2');
  assert.equal(log.isVerbose(2), false);
  log.setLevels({ verbose: 2, info: true, warning: false, format: 'ISO8601' });
  child.verbose(2, 'v2');
  child.info('shown');
  child.warn('muted');
  assert.deepEqual(
    out.map(([, t]) => t),
    [
      'I1129 17:05:00.123456 7 http_server.ts:0] "v1"\n',
      '2024-11-29T17:05:00Z I 7 http_server.ts:0] "v2"\n',
      '2024-11-29T17:05:00Z I 7 http_server.ts:0] "shown"\n',
    ],
  );
  assert.deepEqual(log.settings(), { verbose: 2, info: true, warning: false, error: true, format: 'ISO8601' });
});

test('table entries: preamble line, table, empty line (§7.2 example)', () => {
  const { log, out } = capture();
  log.table(modelTable([{ name: 'simple', version: 1, status: 'READY' }], { width: 500 }));
  assert.equal(
    out[0]![1],
    [
      'I1129 17:05:00.123456 7 server.ts:0] ',
      '+--------+---------+--------+',
      '| Model  | Version | Status |',
      '+--------+---------+--------+',
      '| simple | 1       | READY  |',
      '+--------+---------+--------+',
      '',
      '',
    ].join('\n'),
  );
});

test('empty table has header and dividers only; model rows sort by name then version', () => {
  assert.equal(
    formatTable(['Repository Agent', 'Path'], [], { width: 500 }),
    ['+------------------+------+', '| Repository Agent | Path |', '+------------------+------+', '+------------------+------+', ''].join('\n'),
  );
  const t = modelTable(
    [
      { name: 'b', version: 1, status: 'READY' },
      { name: 'a', version: 10, status: 'READY' },
      { name: 'a', version: 2, status: 'UNAVAILABLE: unloaded' },
    ],
    { width: 500 },
  );
  assert.deepEqual(t.split('\n').slice(3, 6), [
    '| a     | 2       | UNAVAILABLE: unloaded |',
    '| a     | 10      | READY                 |',
    '| b     | 1       | READY                 |',
  ]);
});

test('options table matches the §7.2 example on an 80-column terminal', () => {
  const o = parseServerOptions(['--model-repository', '/models']);
  const rows = optionsTableRows(o);
  assert.deepEqual(
    rows.map((r) => r[0]),
    [
      'server_id',
      'server_version',
      'server_extensions',
      'model_repository_path[0]',
      'model_control_mode',
      'strict_model_config',
      'model_config_name',
      'rate_limit',
      'pinned_memory_pool_byte_size',
      'min_supported_compute_capability',
      'strict_readiness',
      'exit_timeout',
      'cache_enabled',
    ],
  );
  assert.equal(
    rows[2]![1],
    'classification sequence model_repository model_repository(unload_dependents) ' +
      'schedule_policy model_configuration system_shared_memory cuda_shared_memory binary_tensor_data ' +
      'parameters statistics trace logging',
  );
  // The §7.2 example is from an 80-column terminal: Value gets 40 columns and
  // the long extensions cell wraps at spaces (Triton cuts it mid-word).
  const lines = optionsTable(o, {}, { width: 80 }).split('\n');
  const withoutExtensions = [...lines.slice(0, 5), ...lines.slice(5 + 6)];
  assert.deepEqual(withoutExtensions, [
    '+----------------------------------+------------------------------------------+',
    '| Option                           | Value                                    |',
    '+----------------------------------+------------------------------------------+',
    '| server_id                        | triton                                   |',
    '| server_version                   | 2.73.0                                   |',
    '| model_repository_path[0]         | /models                                  |',
    '| model_control_mode               | MODE_NONE                                |',
    '| strict_model_config              | 0                                        |',
    '| model_config_name                |                                          |',
    '| rate_limit                       | OFF                                      |',
    '| pinned_memory_pool_byte_size     | 268435456                                |',
    '| min_supported_compute_capability | 7.5                                      |',
    '| strict_readiness                 | 1                                        |',
    '| exit_timeout                     | 30                                       |',
    '| cache_enabled                    | 0                                        |',
    '+----------------------------------+------------------------------------------+',
    '',
  ]);
  assert.deepEqual(lines.slice(5, 11), [
    '| server_extensions                | classification sequence model_repository |',
    '|                                  | model_repository(unload_dependents)      |',
    '|                                  | schedule_policy model_configuration      |',
    '|                                  | system_shared_memory cuda_shared_memory  |',
    '|                                  | binary_tensor_data parameters statistics |',
    '|                                  | trace logging                            |',
  ]);
});

test('models table: 80 columns by default off a TTY, one line of reason per model, words kept whole', () => {
  const status =
    'UNAVAILABLE: Internal: ValueError: cannot open weights file /models/badpy/1/weights.bin: no such file\n\nAt:\n  /m/badpy/1/model.py(4): initialize\n';
  const t = modelTable([
    { name: 'badpy', version: 1, status },
    { name: 'simple', version: 1, status: 'READY' },
  ]);
  assert.equal(
    t,
    [
      '+--------+---------+----------------------------------------------------------+',
      '| Model  | Version | Status                                                   |',
      '+--------+---------+----------------------------------------------------------+',
      '| badpy  | 1       | UNAVAILABLE: Internal: ValueError: cannot open weights   |',
      '|        |         | file /models/badpy/1/weights.bin: no such file           |',
      '| simple | 1       | READY                                                    |',
      '+--------+---------+----------------------------------------------------------+',
      '',
    ].join('\n'),
  );
  assert.equal(statusSummary(status), 'UNAVAILABLE: Internal: ValueError: cannot open weights file /models/badpy/1/weights.bin: no such file');
});

const CELLS: [string[][], number, string[]][] = [
  [[['a', 'one two three']], 40, ['| a | one two three |']],
  [[['a', 'one two three']], 20, ['| a | one two     |', '|   | three       |']],
  [[['a', 'one two three']], 16, ['| a | one two |', '|   | three   |']],
  [[['a', 'line1\nline2']], 40, ['| a | line1 |', '|   | line2 |']],
  [[['k', 'see /a/very/long/path']], 16, ['| k | see     |', '|   | /a/very |', '|   | /long/p |', '|   | ath     |']],
];
for (const [rows, width, body] of CELLS) {
  test(`table cells wrap at spaces and newlines: ${JSON.stringify(rows)} in ${width}`, () => {
    const lines = formatTable(['K', 'V'], rows, { width }).split('\n');
    assert.deepEqual(lines.slice(3, 3 + body.length), body);
    for (const l of lines) assert.ok(l.length <= width, l);
  });
}

test('backends table', () => {
  assert.deepEqual(
    backendTable([{ name: 'onnxruntime', path: 'built in', config: '{}' }], { width: 80 })
      .split('\n')
      .slice(1, 4),
    ['| Backend     | Path     | Config |', '+-------------+----------+--------+', '| onnxruntime | built in | {}     |'],
  );
});

const JSON_LINES: [Partial<LogEntry>, Record<string, unknown>][] = [
  [{}, { time: '2024-11-29T17:05:00.123456Z', level: 'INFO', pid: 42, source: 'server.ts', message: 'hello' }],
  [
    { letter: 'E', source: 'model-lifecycle.ts:79', model: 'simple', message: 'say "hi"\n' },
    { time: '2024-11-29T17:05:00.123456Z', level: 'ERROR', pid: 42, source: 'model-lifecycle.ts:79', message: 'say "hi"\n', model: 'simple' },
  ],
  [
    { letter: 'W', multiline: true, heading: 'x:', message: '+-+\n' },
    { time: '2024-11-29T17:05:00.123456Z', level: 'WARNING', pid: 42, source: 'server.ts', message: 'x:\n+-+\n' },
  ],
];
for (const [partial, rec] of JSON_LINES) {
  test(`--log-format=json ${JSON.stringify(partial)}`, () => {
    const entry: LogEntry = { letter: 'I', epochMicros: T, pid: 42, source: 'server.ts', message: 'hello', ...partial };
    const text = formatLogEntry(entry, 'json', true);
    assert.ok(text.endsWith('}\n') && !text.slice(0, -1).includes('\n'), 'one line');
    assert.deepEqual(JSON.parse(text), rec);
  });
}

test('lines name the caller: file and line of the log call, through the source map', () => {
  const { log, out } = capture({ sites: true });
  log.info('here');
  const line = Number(new Error().stack!.split('\n')[1]!.match(/:(\d+):\d+\)?$/)![1]);
  log.child({ source: 'model.py:12' }).warn('py');
  log.child({ source: 'access', site: false }).info('req');
  assert.equal(out[0]![1], `I1129 17:05:00.123456 7 log-format.test.ts:${mappedLine(line)}] "here"\n`);
  assert.equal(out[1]![1], 'W1129 17:05:00.123456 7 model.py:12] "py"\n');
  assert.equal(out[2]![1], 'I1129 17:05:00.123456 7 access:0] "req"\n');
});

test('access log line', () => {
  const req = { id: 'r1', model: 'simple', version: 2, client: '127.0.0.1:50412' } as InferRequest;
  assert.equal(
    accessLine('HTTP', req, 200, 128, 64, { queueUs: 12.4, computeUs: 85, totalUs: 310.6 }),
    'HTTP client=127.0.0.1:50412 model=simple version=2 status=200 in_bytes=128 out_bytes=64 queue_us=12 compute_us=85 total_us=311 id="r1"',
  );
  assert.equal(
    accessLine('GRPC', { ...req, client: undefined }, 5, 0, 0, undefined),
    'GRPC client=- model=simple version=2 status=5 in_bytes=0 out_bytes=0 queue_us=- compute_us=- total_us=- id="r1"',
  );
  assert.equal(
    accessLine('HTTP', { id: '', model: 'nope', version: '', client: '::1:8' }, 400, 17, 0, undefined),
    'HTTP client=::1:8 model=nope version=- status=400 in_bytes=17 out_bytes=0 queue_us=- compute_us=- total_us=- id=""',
  );
  assert.equal(accessStatus('HTTP', { code: 'NOT_FOUND', message: '' }), 404);
  assert.equal(accessStatus('GRPC', undefined), 0);
});

test('explicit mode lists startup models; GPUs get pool rows', () => {
  const o = parseServerOptions([
    '--model-repository',
    '/m',
    '--model-control-mode=explicit',
    '--load-model',
    'a',
    '--load-model',
    'b',
    '--cuda-memory-pool-byte-size',
    '1:1024',
  ]);
  const rows = optionsTableRows(o, { gpuIds: [0, 1] });
  const names = rows.map((r) => r[0]);
  assert.deepEqual(names.slice(4, 7), ['model_control_mode', 'startup_models_0', 'startup_models_1']);
  assert.deepEqual(
    rows.filter((r) => r[0]!.startsWith('cuda_memory_pool')),
    [
      ['cuda_memory_pool_byte_size{0}', '67108864'],
      ['cuda_memory_pool_byte_size{1}', '1024'],
    ],
  );
});
