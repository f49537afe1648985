/**
 * The custom-metric registry behind pb_utils.MetricFamily: shared families
 * and series across owners, kind conflicts, histogram rendering, and removal
 * with the last owner.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CustomMetrics } from '../../src/metrics/custom-metrics';
import type { MetricOp } from '../../src/metrics/custom-metrics';

const cases: { name: string; ops: [owner: number, op: MetricOp][]; close?: number[]; text: string[]; error?: RegExp }[] = [
  {
    name: 'a counter with labels, sorted by name',
    ops: [
      [0, { op: 'family_new', h: 1, name: 'c', description: 'help me', kind: 'counter' }],
      [0, { op: 'metric_new', h: 2, family: 1, labels: { z: '1', a: 'x"y' } }],
      [0, { op: 'increment', h: 2, v: 2.5 }],
    ],
    text: ['# HELP c help me', '# TYPE c counter', 'c{a="x\\"y",z="1"} 2.5'],
  },
  {
    name: 'same name and kind in two owners: one family, first description, shared series',
    ops: [
      [0, { op: 'family_new', h: 1, name: 'g', description: 'first', kind: 'gauge' }],
      [1, { op: 'family_new', h: 1, name: 'g', description: 'second', kind: 'gauge' }],
      [0, { op: 'metric_new', h: 2, family: 1, labels: {} }],
      [1, { op: 'metric_new', h: 2, family: 1, labels: {} }],
      [0, { op: 'set', h: 2, v: 4 }],
      [1, { op: 'increment', h: 2, v: -1 }],
    ],
    close: [0],
    text: ['# HELP g first', '# TYPE g gauge', 'g 3'],
  },
  {
    name: 'another kind under a used name is refused',
    ops: [
      [0, { op: 'family_new', h: 1, name: 'k', description: '', kind: 'gauge' }],
      [1, { op: 'family_new', h: 1, name: 'k', description: '', kind: 'counter' }],
    ],
    text: [],
    error: /already exists with a different kind/,
  },
  {
    name: 'histogram: _count, _sum, cumulative buckets, +Inf',
    ops: [
      [0, { op: 'family_new', h: 1, name: 'h', description: 'd', kind: 'histogram' }],
      [0, { op: 'metric_new', h: 2, family: 1, labels: { m: 'a' }, buckets: [1, 5] }],
      [0, { op: 'observe', h: 2, v: 0.5 }],
      [0, { op: 'observe', h: 2, v: 3 }],
      [0, { op: 'observe', h: 2, v: 9 }],
    ],
    text: [
      '# HELP h d',
      '# TYPE h histogram',
      'h_count{m="a"} 3',
      'h_sum{m="a"} 12.5',
      'h_bucket{m="a",le="1"} 1',
      'h_bucket{m="a",le="5"} 2',
      'h_bucket{m="a",le="+Inf"} 3',
    ],
  },
  {
    name: 'the last owner closing removes everything',
    ops: [
      [0, { op: 'family_new', h: 1, name: 'c', description: '', kind: 'counter' }],
      [0, { op: 'metric_new', h: 2, family: 1, labels: {} }],
    ],
    close: [0],
    text: [],
  },
  {
    name: 'deleting a family takes its series; using them afterwards fails',
    ops: [
      [0, { op: 'family_new', h: 1, name: 'c', description: '', kind: 'counter' }],
      [0, { op: 'metric_new', h: 2, family: 1, labels: {} }],
      [0, { op: 'family_del', h: 1 }],
      [0, { op: 'increment', h: 2, v: 1 }],
    ],
    text: [],
    error: /'MetricFamily' has been deleted/,
  },
  {
    name: 'bad names are refused',
    ops: [[0, { op: 'family_new', h: 1, name: '1abc', description: '', kind: 'counter' }]],
    text: [],
    error: /Invalid metric family name '1abc'/,
  },
];

for (const c of cases) {
  test(c.name, () => {
    const reg = new CustomMetrics();
    const owners = [reg.owner(), reg.owner()];
    let error: Error | undefined;
    for (const [o, op] of c.ops) {
      try {
        owners[o]!.apply(op);
      } catch (err) {
        error = err as Error;
      }
    }
    if (c.error) assert.match(error?.message ?? '', c.error);
    else assert.equal(error, undefined);
    for (const o of c.close ?? []) owners[o]!.close();
    assert.equal(reg.text(), c.text.length === 0 ? '' : `${c.text.join('\n')}\n`);
  });
}

test('value reads what the updates left', () => {
  const o = new CustomMetrics().owner();
  o.apply({ op: 'family_new', h: 1, name: 'c', description: '', kind: 'counter' });
  o.apply({ op: 'metric_new', h: 2, family: 1, labels: {} });
  o.apply({ op: 'increment', h: 2, v: 3 });
  o.apply({ op: 'increment', h: 2, v: 4 });
  assert.equal(o.apply({ op: 'value', h: 2 }), 7);
});
