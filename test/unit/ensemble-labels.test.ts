/**
 * resolvedLabels, table-driven: an ensemble output's labels are its own
 * label_filename's, else those of the composing model's output it carries,
 * through nested ensembles; tensors no step produces, unknown models and
 * cycles give none.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ModelConfig } from '../../src/core/model-config';
import { resolvedLabels, type LabelSource } from '../../src/repository/ensemble-labels';

type Step = { model: string; out: Record<string, string> };
const ensemble = (outputs: string[], steps: Step[]): ModelConfig =>
  ({
    output: outputs.map((name) => ({ name })),
    ensemble_scheduling: { step: steps.map((s) => ({ model_name: s.model, model_version: -1, input_map: {}, output_map: s.out })) },
  }) as unknown as ModelConfig;
const plain = (outputs: string[]): ModelConfig => ({ output: outputs.map((name) => ({ name })) }) as unknown as ModelConfig;

const MODELS: Record<string, LabelSource> = {
  cls: { config: plain(['logits', 'other']), labels: { logits: ['a', 'b'] } },
  // inner: its `scores` is cls's logits; `extra` is cls's unlabelled output.
  inner: { config: ensemble(['scores', 'extra'], [{ model: 'cls', out: { logits: 'scores', other: 'extra' } }]), labels: {} },
  // outer: two levels down; `mine` has a label file of its own, which wins.
  outer: {
    config: ensemble(
      ['top', 'mine'],
      [
        { model: 'inner', out: { scores: 'top' } },
        { model: 'cls', out: { logits: 'mine' } },
      ],
    ),
    labels: { mine: ['x', 'y'] },
  },
  // a middle tensor is not an output; the output comes from a step with no labels.
  chain: {
    config: ensemble(
      ['end'],
      [
        { model: 'cls', out: { logits: 'mid' } },
        { model: 'plainer', out: { y: 'end' } },
      ],
    ),
    labels: {},
  },
  plainer: { config: plain(['y']), labels: {} },
  ghost: { config: ensemble(['o'], [{ model: 'nobody', out: { z: 'o' } }]), labels: {} },
  loopA: { config: ensemble(['o'], [{ model: 'loopB', out: { o: 'o' } }]), labels: {} },
  loopB: { config: ensemble(['o'], [{ model: 'loopA', out: { o: 'o' } }]), labels: {} },
};
const lookup = (name: string): LabelSource | undefined => MODELS[name];

const CASES: { model: string; want: Record<string, string[]> }[] = [
  { model: 'cls', want: { logits: ['a', 'b'] } },
  { model: 'inner', want: { scores: ['a', 'b'] } },
  { model: 'outer', want: { top: ['a', 'b'], mine: ['x', 'y'] } },
  { model: 'chain', want: {} },
  { model: 'ghost', want: {} },
  { model: 'loopA', want: {} },
  { model: 'unknown', want: {} },
];

for (const c of CASES) {
  test(`labels of ${c.model}`, () => {
    assert.deepEqual(resolvedLabels(c.model, lookup), c.want);
  });
}
