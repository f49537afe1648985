import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Tensor } from 'onnxruntime-node';
import { createSessionRunner } from '../../src/backends/onnxruntime/session-runner';

const SIMPLE = path.resolve(__dirname, '../../../model_repository/simple/1/model.onnx');
const OPTIONS = { intraOpNumThreads: 1, extra: { 'session.intra_op.allow_spinning': '0' } };

function feeds(): Record<string, Tensor> {
  const a = Int32Array.from({ length: 16 }, (_, i) => i);
  const b = Int32Array.from({ length: 16 }, () => 2);
  return { INPUT0: new Tensor('int32', a, [1, 16]), INPUT1: new Tensor('int32', b, [1, 16]) };
}

for (const c of [
  { what: 'the direct binding (CPU, no providers)', options: OPTIONS, direct: true },
  { what: 'the public API (execution providers given)', options: { ...OPTIONS, executionProviders: ['cpu'] }, direct: false },
]) {
  test(`session runner through ${c.what}: same outputs, only those asked for, release twice is fine`, async () => {
    const runner = await createSessionRunner(SIMPLE, c.options);
    assert.equal(runner.direct, c.direct);
    const out = await runner.run(feeds(), ['OUTPUT0', 'OUTPUT1']);
    assert.deepEqual(
      Array.from(out.OUTPUT0!.data as Int32Array),
      Array.from({ length: 16 }, (_, i) => i + 2),
    );
    assert.deepEqual(
      Array.from(out.OUTPUT1!.data as Int32Array),
      Array.from({ length: 16 }, (_, i) => i - 2),
    );
    assert.deepEqual(out.OUTPUT0!.dims, [1, 16]);
    const one = await runner.run(feeds(), ['OUTPUT1']);
    assert.deepEqual(Object.keys(one), ['OUTPUT1']);
    await assert.rejects(async () => runner.run({ INPUT0: feeds().INPUT0! }, ['OUTPUT0']));
    await runner.release();
    await runner.release();
  });
}
