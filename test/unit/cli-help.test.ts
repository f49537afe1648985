/**
 * The command line's help and forgiveness, table-tested: getopt prefixes,
 * the warnings for ignored flags, the --help layout (every flag described,
 * 80 columns, Triton's groups) and word wrapping.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { FLAGS, parseServerOptions, usageText, type ServerOptions } from '../../src/cli-options';
import { NODETRON_VERSION } from '../../src/cli-flags';
import { closestFlag, editDistance, matchFlag } from '../../src/cli-flag-match';
import { FLAG_DOCS, flagHelp, type FlagDoc, type HelpFlag } from '../../src/cli-help';
import { wrapWords } from '../../src/core/text-wrap';

const REPO = ['--model-repository', '/models'];

const MATCHES: [string, string[], ReturnType<typeof matchFlag>][] = [
  ['http-port', ['http-port', 'http-port-x'], { kind: 'flag', name: 'http-port' }],
  ['http-p', ['http-port', 'grpc-port'], { kind: 'flag', name: 'http-port' }],
  ['h', ['http-port', 'help'], { kind: 'ambiguous', candidates: ['http-port', 'help'] }],
  ['hlep', ['help', 'id'], { kind: 'unknown', suggestion: 'help' }],
  ['zzz', ['help', 'id'], { kind: 'unknown' }],
  ['', ['help'], { kind: 'unknown' }],
];
for (const [typed, names, want] of MATCHES) {
  test(`matchFlag(${typed})`, () => {
    assert.deepEqual(matchFlag(typed, names), want);
  });
}

test('closestFlag and editDistance', () => {
  assert.equal(closestFlag('LOG_VERBOSE', ['log-verbose']), 'log-verbose');
  assert.equal(closestFlag('grpc_port', ['grpc-port', 'http-port']), 'grpc-port');
  assert.equal(closestFlag('metrics-prot', ['metrics-port', 'http-port']), 'metrics-port');
  assert.equal(closestFlag('x', ['id']), undefined);
  assert.equal(editDistance('abc', 'abc'), 0);
  assert.equal(editDistance('abc', 'acb'), 1);
  assert.equal(editDistance('kitten', 'sitting'), 3);
});

test('package.json version is the one --version prints', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../package.json'), 'utf8')) as { version: string };
  assert.equal(pkg.version, NODETRON_VERSION);
});

const PREFIXES: [string[], (o: ServerOptions) => unknown, unknown][] = [
  [['--model-repos=/m'], (o) => o.modelRepositories, ['/m']],
  [['--model-repos', '/m', '--http-po=9'], (o) => o.httpPort, 9],
  [[...REPO, '--exit-on=false'], (o) => o.exitOnError, false],
  [[...REPO, '--log-verb', '2'], (o) => o.logVerbose, 2],
  // an exact name wins over the longer names it is a prefix of
  [[...REPO, '--grpc-use-ssl=1'], (o) => [o.grpcUseSsl, o.grpcUseSslMutual], [true, false]],
  [[...REPO, '--disable-auto'], (o) => o.disableAutoCompleteConfig, true],
  // a value that looks like a flag prefix stays a value
  [[...REPO, '--id', '--ver'], (o) => o.id, '--ver'],
];
for (const [argv, get, expected] of PREFIXES) {
  test(`getopt prefix: ${argv.join(' ')}`, () => {
    assert.deepEqual(get(parseServerOptions(argv)), expected);
  });
}

const IGNORED: [string[], string[]][] = [
  [
    ['--allow-sagemaker=true'],
    ["Warning: '--allow-sagemaker=true' is ignored: nodetron has no SageMaker endpoint " + '(/ping, /invocations); use the KServe v2 HTTP API on --http-port.'],
  ],
  [['--allow-sagemaker=false', '--allow-vertex-ai=0', '--allow-gpu-metrics=1', '--buffer-manager-thread-count=0'], []],
  [['--allow-vertex-ai=1'], ["Warning: '--allow-vertex-ai=1' is ignored: nodetron has no Vertex AI endpoint; " + 'use the KServe v2 HTTP API on --http-port.']],
  [['--http-header-forward-pattern=^x-'], []],
  [
    ['--grpc-infer-thread-count=8', '--host-policy=p,numa-node=0'],
    [
      "Warning: '--grpc-infer-thread-count=8' is ignored: gRPC requests are handled on the main thread by grpc-js.",
      "Warning: '--host-policy=p,numa-node=0' is ignored: NUMA and CPU pinning are not supported; run the server " + 'under numactl or taskset.',
    ],
  ],
  [['--pinned-memory-pool-byte-size=0'], ["Warning: '--pinned-memory-pool-byte-size=0' is ignored: nodetron runs on " + 'the CPU only (no CUDA).']],
];
for (const [argv, expected] of IGNORED) {
  test(`ignored flags warn once: ${argv.join(' ')}`, () => {
    assert.deepEqual(parseServerOptions([...REPO, ...argv]).warnings, expected);
  });
}

test("--help: every flag has a group, a description and fits 80 columns; Triton's groups in order", () => {
  const text = usageText();
  for (const line of text.split('\n')) assert.ok(line.length <= 80, `too wide: ${line}`);
  for (const spec of FLAGS) {
    assert.ok(FLAG_DOCS[spec.name] !== undefined, `no help for --${spec.name}`);
    assert.match(text, new RegExp(`^  --${spec.name}( |$)`, 'm'));
  }
  const groups = [...text.matchAll(/^([A-Z][^\s:]*(?: [^\s:]+)*):$/gm)].map((m) => m[1]);
  assert.deepEqual(groups, [
    'Server',
    'Logging',
    'Model Repository',
    'HTTP',
    'GRPC',
    'Sagemaker',
    'Vertex',
    'Metrics',
    'Tracing',
    'Backend',
    'Repository Agent',
    'Response Cache',
    'Rate Limiter',
    'Memory/Device Management',
    'DEPRECATED',
  ]);
  assert.ok(text.includes("\nnodetron's own:\n  --http-codec-offload-bytes <integer>"));
});

const LAYOUT: [HelpFlag, FlagDoc, string[]][] = [
  [
    { name: 'http-port', arg: '<integer>', repeatable: false },
    { group: 'HTTP', text: 'HTTP port.', def: '8000' },
    ['  --http-port <integer>'.padEnd(80 - 13) + 'default: 8000', '      HTTP port.'],
  ],
  [
    { name: 'load-model', arg: '<name>', repeatable: true },
    { group: 'Model Repository', text: 'Load it.' },
    ['  --load-model <name>', '      Load it. Repeatable.'],
  ],
  [
    { name: 'x', arg: '<' + 'a'.repeat(60) + '>', repeatable: false },
    { group: 'HTTP', text: 'T.', def: '1234567' },
    ['  --x <' + 'a'.repeat(60) + '>', '      (default: 1234567) T.'],
  ],
  [
    { name: 'y', arg: '', repeatable: false },
    { group: 'HTTP', text: 'Off.', def: 'false', ignored: 'no reason' },
    ['  --y'.padEnd(80 - 14) + 'default: false', '      Off. Ignored by nodetron: no reason.'],
  ],
];
for (const [flag, doc, lines] of LAYOUT) {
  test(`help layout: --${flag.name}`, () => {
    assert.deepEqual(flagHelp(flag, doc), lines);
  });
}

const WRAP: [string, number, string[]][] = [
  ['a b c', 10, ['a b c']],
  ['aaaa bbbb cccc', 9, ['aaaa bbbb', 'cccc']],
  ['aaaa bbbb', 4, ['aaaa', 'bbbb']],
  ['see /a/very/long/path/name here', 10, ['see', '/a/very/lo', 'ng/path/na', 'me here']],
  ['one\ntwo three', 7, ['one', 'two', 'three']],
  ['', 5, ['']],
];
for (const [text, width, lines] of WRAP) {
  test(`wrapWords(${JSON.stringify(text)}, ${width})`, () => {
    assert.deepEqual(wrapWords(text, width), lines);
  });
}
