/** The candidates `nodetron tune` tries: the coarse grid's shape and order, and the neighbours it refines with. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { candidateKey, candidateLabel, coarseGrid, instanceSteps, neighbours, type Candidate, type TunableModel } from '../../src/tune/tune-space';

const onnx = (shipped: Partial<Candidate> = {}, maxBatchLimit = 8): TunableModel => ({
  name: 'm',
  kind: 'onnx',
  shipped: { instances: 1, maxBatch: maxBatchLimit, batching: undefined, intraOp: undefined, interOp: undefined, ...shipped },
  maxBatchLimit,
  requestBatch: 1,
});

for (const [cores, want] of [
  [1, [1, 2]],
  [2, [1, 2, 4]],
  [3, [1, 2, 3, 4, 6]],
  [4, [1, 2, 4, 8]],
] as const) {
  test(`instance steps on ${cores} cores`, () => assert.deepEqual(instanceSteps(cores), want));
}

const gridCases: { name: string; model: TunableModel; cores: number; size: number }[] = [
  { name: 'ONNX that batches: instances x batching x intra-op', model: onnx(), cores: 2, size: 3 * 3 * 2 },
  { name: 'ONNX that does not batch: instances x intra-op', model: onnx({}, 0), cores: 2, size: 3 * 2 },
  { name: 'Python: instances only', model: { ...onnx({}, 0), kind: 'python' }, cores: 2, size: 3 },
  { name: 'Python that batches: still instances only', model: { ...onnx({}, 4), kind: 'python' }, cores: 2, size: 3 },
  {
    name: 'FIL: instances x batching',
    model: { ...onnx({ instances: 2, batching: { delayUs: 0, preferred: [] } }, 1024), kind: 'fil' },
    cores: 2,
    size: 3 * 3,
  },
  {
    name: 'a shipped config outside the grid is one more',
    model: onnx({ instances: 3, batching: { delayUs: 500, preferred: [8] } }),
    cores: 2,
    size: 3 * 3 * 2 + 1,
  },
];

for (const c of gridCases) {
  test(`coarse grid: ${c.name}`, () => {
    const grid = coarseGrid(c.model, c.cores);
    assert.equal(grid.length, c.size, grid.map(candidateLabel).join('\n'));
    assert.deepEqual(grid[0], c.model.shipped, 'the shipped config comes first');
    assert.equal(new Set(grid.map(candidateKey)).size, grid.length, 'no candidate twice');
    // One change before two: the second candidate differs from the shipped one in one number.
    // (Batching's delay and preferred sizes are two numbers; batching turned on or off is one change.)
    const s = c.model.shipped;
    const changes = (x: Candidate): number =>
      (['instances', 'maxBatch', 'intraOp', 'interOp'] as const).filter((k) => x[k] !== s[k]).length +
      (x.batching === undefined || s.batching === undefined
        ? Number((x.batching === undefined) !== (s.batching === undefined))
        : Number(x.batching.delayUs !== s.batching.delayUs) + Number(x.batching.preferred.join() !== s.batching.preferred.join()));
    const counts = grid.slice(1).map(changes);
    assert.deepEqual(
      counts,
      [...counts].sort((a, b) => a - b),
      `ordered by distance: ${counts.join(',')}`,
    );
  });
}

const nbCases: { name: string; model: TunableModel; best: Candidate; want: string[] }[] = [
  {
    name: 'batching on at 500 us: instances, off, 100/2000 us, preferred, half and double max batch, threads',
    model: onnx({}, 16),
    best: { instances: 2, maxBatch: 8, batching: { delayUs: 500, preferred: [] }, intraOp: undefined, interOp: undefined },
    want: [
      'instances=1 max_batch=8 dynamic=500us',
      'instances=3 max_batch=8 dynamic=500us',
      'instances=2 max_batch=8 dynamic=off',
      'instances=2 max_batch=8 dynamic=100us',
      'instances=2 max_batch=8 dynamic=2000us',
      'instances=2 max_batch=8 dynamic=500us preferred=8',
      'instances=2 max_batch=4 dynamic=500us',
      'instances=2 max_batch=16 dynamic=500us',
      'instances=2 max_batch=8 dynamic=500us intra_op=1',
      'instances=2 max_batch=8 dynamic=500us intra_op=2',
      'instances=2 max_batch=8 dynamic=500us inter_op=2',
    ],
  },
  {
    name: 'Python at the top instance count: one fewer only',
    model: { ...onnx({}, 0), kind: 'python' },
    best: { instances: 4, maxBatch: 0, batching: undefined, intraOp: undefined, interOp: undefined },
    want: ['instances=3'],
  },
  {
    name: 'preferred sizes above a halved max batch are dropped',
    model: { ...onnx({}, 8), kind: 'fil' },
    best: { instances: 1, maxBatch: 8, batching: { delayUs: 0, preferred: [8] }, intraOp: undefined, interOp: undefined },
    want: [
      'instances=2 max_batch=8 dynamic=0us preferred=8',
      'instances=1 max_batch=8 dynamic=off',
      'instances=1 max_batch=8 dynamic=100us preferred=8',
      'instances=1 max_batch=8 dynamic=0us',
      'instances=1 max_batch=4 dynamic=0us',
    ],
  },
];

for (const c of nbCases) {
  test(`neighbours: ${c.name}`, () => {
    assert.deepEqual(neighbours(c.best, c.model, 2, new Set()).map(candidateLabel), c.want);
  });
}

test('neighbours leave out what was tried', () => {
  const model = { ...onnx({}, 0), kind: 'python' as const };
  const best: Candidate = { instances: 2, maxBatch: 0, batching: undefined, intraOp: undefined, interOp: undefined };
  const tried = new Set([candidateKey({ ...best, instances: 1 })]);
  assert.deepEqual(neighbours(best, model, 2, tried).map(candidateLabel), ['instances=3']);
});
