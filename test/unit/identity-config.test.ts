/** checkIdentityConfig and identityDelay, table-driven, with Triton's identity backend texts. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ModelConfig } from '../../src/core/model-config';
import { checkIdentityConfig, identityDelay } from '../../src/backends/identity/identity-config';

type T = { name: string; data_type?: string; dims?: number[]; reshape?: { shape: number[] } };
const cfg = (inputs: T[], outputs: T[], parameters: Record<string, string> = {}): ModelConfig =>
  ({
    name: 'm',
    input: inputs.map((t) => ({ data_type: 'TYPE_FP32', dims: [4], ...t })),
    output: outputs.map((t) => ({ data_type: 'TYPE_FP32', dims: [4], ...t })),
    parameters: Object.fromEntries(Object.entries(parameters).map(([k, v]) => [k, { string_value: v }])),
  }) as unknown as ModelConfig;

const CASES: [string, ModelConfig, string | undefined][] = [
  ['one pair', cfg([{ name: 'INPUT0' }], [{ name: 'OUTPUT0' }]), undefined],
  [
    'pairs in another order',
    cfg([{ name: 'INPUT0' }, { name: 'INPUT1', data_type: 'TYPE_STRING' }], [{ name: 'OUTPUT1', data_type: 'TYPE_STRING' }, { name: 'OUTPUT0' }]),
    undefined,
  ],
  ['reshapes that agree', cfg([{ name: 'INPUT0', dims: [2, 2], reshape: { shape: [4] } }], [{ name: 'OUTPUT0' }]), undefined],
  ['more inputs than outputs', cfg([{ name: 'INPUT0' }, { name: 'INPUT1' }], [{ name: 'OUTPUT0' }]), 'model configuration must have equal input/output pairs'],
  ['an input not named INPUT<i>', cfg([{ name: 'X' }], [{ name: 'OUTPUT0' }]), "expected input name to follow INPUT<index> pattern, got 'X'"],
  ['an output not named OUTPUT<i>', cfg([{ name: 'INPUT0' }], [{ name: 'Y' }]), "expected output name to follow OUTPUT<index> pattern, got 'Y'"],
  ['indices that do not match', cfg([{ name: 'INPUT0' }], [{ name: 'OUTPUT1' }]), 'expected input and output indices to match'],
  [
    'datatypes that differ',
    cfg([{ name: 'INPUT0' }], [{ name: 'OUTPUT0', data_type: 'TYPE_INT32' }]),
    'expected input and output datatype to match, got TYPE_FP32 and TYPE_INT32',
  ],
  [
    'shapes that differ',
    cfg([{ name: 'INPUT0', dims: [4] }], [{ name: 'OUTPUT0', dims: [2, 2] }]),
    'expected input and output shape to match, got [4] and [2,2]',
  ],
];
for (const [name, config, want] of CASES) {
  test(`identity config: ${name}`, () => {
    if (want === undefined) checkIdentityConfig(config);
    else
      assert.throws(
        () => checkIdentityConfig(config),
        (e: Error) => e.message === want,
      );
  });
}

const DELAYS: [string, Record<string, string>, number | string][] = [
  ['absent', {}, 0],
  ['a number', { execute_delay_ms: '250' }, 250],
  ['a number with trailing text (std::stoi)', { execute_delay_ms: '30ms' }, 30],
  ['not a number', { execute_delay_ms: 'soon' }, "model 'm': parameter 'execute_delay_ms' must be a whole number, got 'soon'"],
];
for (const [name, params, want] of DELAYS) {
  test(`identity execute_delay_ms: ${name}`, () => {
    const config = cfg([{ name: 'INPUT0' }], [{ name: 'OUTPUT0' }], params);
    if (typeof want === 'number') assert.equal(identityDelay(config, 'execute_delay_ms'), want);
    else
      assert.throws(
        () => identityDelay(config, 'execute_delay_ms'),
        (e: Error) => e.message === want,
      );
  });
}
