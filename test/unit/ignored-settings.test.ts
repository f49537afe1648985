import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseModelConfigText } from '../../src/repository/config/pbtxt';
import { ignoredSettings } from '../../src/repository/config/ignored-settings';

const GPU = "nodetron runs models on the CPU (onnxruntime-node's CPU build), so there is no GPU";
const KEEP = 'Remove it, or keep it for a Triton with GPUs';

const CASES: [string, string, string[]][] = [
  ['nothing set', '', []],
  [
    'tensorrt accelerator',
    'optimization { execution_accelerators { gpu_execution_accelerator [ { name: "tensorrt" } ] } }',
    [
      `model 'm': optimization.execution_accelerators.gpu_execution_accelerator [ tensorrt ] is ignored: ${GPU} accelerator (TensorRT, CUDA) to hand the model to. ${KEEP}.`,
    ],
  ],
  [
    'openvino accelerator',
    'optimization { execution_accelerators { cpu_execution_accelerator [ { name: "openvino" } ] } }',
    [
      "model 'm': optimization.execution_accelerators.cpu_execution_accelerator [ openvino ] is ignored: onnxruntime-node ships only its default CPU execution provider (no OpenVINO). Remove it; the model runs on the default CPU provider.",
    ],
  ],
  ['cuda graphs', 'optimization { cuda { graphs: true } }', [`model 'm': optimization.cuda is ignored: ${GPU} for CUDA graphs or streams. ${KEEP}.`]],
  ['graph level is used, not ignored', 'optimization { graph { level: 1 } }', []],
  [
    'priority',
    'optimization { priority: PRIORITY_MAX }',
    [`model 'm': optimization.priority PRIORITY_MAX is ignored: Triton uses it for GPU stream priority, and ${GPU}. ${KEEP}.`],
  ],
  [
    'host policy',
    'instance_group [ { kind: KIND_CPU host_policy: "numa0" } ]',
    ["model 'm': instance_group[0].host_policy 'numa0' is ignored: nodetron has no host policies (--host-policy); instances run on any core. Remove it."],
  ],
  [
    'repository agents',
    'model_repository_agents { agents [ { name: "checksum" } ] }',
    [
      "model 'm': model_repository_agents is ignored: nodetron runs no repository agents (checksum, decryption) yet: the files are loaded as they are. Remove it.",
    ],
  ],
  [
    'metric tags',
    'metric_tags { key: "team" value: "a" }',
    ["model 'm': metric_tags is ignored: nodetron does not add custom labels to its metrics yet. Remove it."],
  ],
];

for (const [name, text, want] of CASES) {
  test(`ignoredSettings: ${name}`, () => {
    assert.deepEqual(ignoredSettings(parseModelConfigText(`name: "m"\n${text}`, 'm/config.pbtxt')), want);
  });
}
