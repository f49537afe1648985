import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseModelConfigText } from '../../src/repository/config/pbtxt';
import { resolveBackend } from '../../src/repository/config/backend-resolution';
import { normalizeConfig } from '../../src/repository/config/normalize';
import { validateConfig } from '../../src/repository/config/validate';
import { messageToJson, modelConfigToJson } from '../../src/repository/config/to-json';
import { schemaType } from '../../src/repository/config/schema';
import type { ModelConfig } from '../../src/core/model-config';

/** parse → resolve → normalize → validate, as the repository loader does. */
function load(text: string, dir: string, files: string[], gpuCount = 0): ModelConfig {
  let c = parseModelConfigText(text, `${dir}/config.pbtxt`);
  c = resolveBackend(c, files, dir);
  c = normalizeConfig(c, { modelName: dir, gpuCount });
  validateConfig(c, gpuCount);
  return c;
}

const compact = (s: string): string => s.replace(/\n\s*/g, '');

test('renders the densenet_onnx example of protocol.md §1.7 exactly', () => {
  const c = load(
    `
    input [ { name: "data_0" data_type: TYPE_FP32 dims: [ 1, 3, 224, 224 ] } ]
    output [ { name: "fc6_1" data_type: TYPE_FP32 dims: [ 1, 1000, 1, 1 ] } ]
    `,
    'densenet_onnx',
    ['model.onnx'],
  );
  const expected = compact(`{"name":"densenet_onnx","platform":"onnxruntime_onnx","backend":"onnxruntime","runtime":"",
 "version_policy":{"latest":{"num_versions":1}},"max_batch_size":0,
 "input":[{"name":"data_0","data_type":"TYPE_FP32","format":"FORMAT_NONE","dims":[1,3,224,224],
           "is_shape_tensor":false,"allow_ragged_batch":false,"optional":false,"is_non_linear_format_io":false}],
 "output":[{"name":"fc6_1","data_type":"TYPE_FP32","dims":[1,1000,1,1],"label_filename":"",
            "is_shape_tensor":false,"is_non_linear_format_io":false}],
 "batch_input":[],"batch_output":[],
 "optimization":{"priority":"PRIORITY_DEFAULT","input_pinned_memory":{"enable":true},
                 "output_pinned_memory":{"enable":true},"gather_kernel_buffer_threshold":0,"eager_batching":false},
 "instance_group":[{"name":"densenet_onnx","kind":"KIND_CPU","count":2,"gpus":[],"secondary_devices":[],
                    "profile":[],"passive":false,"host_policy":""}],
 "default_model_filename":"model.onnx","cc_model_filenames":{},"metric_tags":{},"parameters":{},"model_warmup":[]}`);
  assert.equal(modelConfigToJson(c), expected);
});

test('renders the dynamic batching example of §1.7 in the scheduling slot', () => {
  const c = load(
    `
    max_batch_size: 4
    input [ { name: "x" data_type: TYPE_FP32 dims: [ 16 ] } ]
    output [ { name: "y" data_type: TYPE_FP32 dims: [ 16 ] } ]
    dynamic_batching { }
    `,
    'batched',
    ['model.onnx'],
  );
  const json = modelConfigToJson(c);
  const block = compact(`"dynamic_batching":{"preferred_batch_size":[4],"max_queue_delay_microseconds":0,"preserve_ordering":false,
                    "priority_levels":0,"default_priority_level":0,"priority_queue_policy":{}}`);
  assert.ok(json.includes(`"eager_batching":false},${block},"instance_group":[`), json);
  assert.doesNotThrow(() => JSON.parse(json));
});

const render = (text: string): string => modelConfigToJson(parseModelConfigText(text, 'x'));

const fragments: { name: string; text: string; has: string[]; lacks?: string[] }[] = [
  {
    name: 'numeric 64-bit fields',
    text: `version_policy { specific { versions: [ 1, 3 ] } }
      input { name: "i" dims: [ -1 ] reshape { shape: [ 1, -1 ] } }
      output { name: "o" dims: 2 reshape { shape: [ 2 ] } }`,
    has: [
      '"version_policy":{"specific":{"versions":[1,3]}}',
      '"dims":[-1],"reshape":{"shape":[1,-1]}',
      '"dims":[2],"reshape":{"shape":[2]},"label_filename":""',
    ],
  },
  {
    name: 'dynamic batching policies: numbers, sorted numeric keys',
    text: `dynamic_batching {
        max_queue_delay_microseconds: 100 priority_levels: 10 default_priority_level: 2
        default_queue_policy { default_timeout_microseconds: 7 timeout_action: DELAY }
        priority_queue_policy { key: 10 value { max_queue_size: 1 } }
        priority_queue_policy { key: 2 value { default_timeout_microseconds: 5 } } }`,
    has: [
      '"max_queue_delay_microseconds":100,"preserve_ordering":false,"priority_levels":10,"default_priority_level":2',
      '"default_queue_policy":{"timeout_action":"DELAY","default_timeout_microseconds":7,"allow_timeout_override":false,"max_queue_size":0}',
      '"priority_queue_policy":{"2":{"timeout_action":"REJECT","default_timeout_microseconds":5,',
      '"max_queue_size":0},"10":{',
    ],
  },
  {
    name: 'sequence batching: state dims numbers, initial_state dims strings (Triton quirk)',
    text: `sequence_batching { max_sequence_idle_microseconds: 5 oldest { max_queue_delay_microseconds: 3 }
        state { input_name: "a" output_name: "b" data_type: TYPE_INT32 dims: [ 4 ]
                initial_state { data_type: TYPE_INT32 dims: [ 4 ] zero_data: false name: "z" } } }`,
    has: [
      '"sequence_batching":{"oldest":{"max_candidate_sequences":0,"preferred_batch_size":[],"max_queue_delay_microseconds":3,"preserve_ordering":false},"max_sequence_idle_microseconds":5,',
      '"dims":[4],"initial_state":[{"data_type":"TYPE_INT32","dims":["4"],"zero_data":false,"name":"z"}]',
    ],
    lacks: ['"direct"'],
  },
  {
    name: 'direct strategy max_queue_delay is a number, float utilisation',
    text: 'sequence_batching { direct { max_queue_delay_microseconds: 9 minimum_slot_utilization: 0.1 } }',
    has: ['"direct":{"max_queue_delay_microseconds":9,"minimum_slot_utilization":0.1}'],
  },
  {
    name: 'ensemble model_version number',
    text: `platform: "ensemble" ensemble_scheduling { step { model_name: "a" model_version: -1
        input_map { key: "x" value: "y" } output_map { key: "o" value: "p" } } }`,
    has: [
      '"ensemble_scheduling":{"step":[{"model_name":"a","model_version":-1,"input_map":{"x":"y"},"output_map":{"o":"p"},"model_namespace":""}],"max_inflight_requests":0}',
    ],
  },
  {
    name: 'warmup dims numbers, oneof member only when set',
    text: 'model_warmup { name: "w" batch_size: 1 inputs { key: "in" value { data_type: TYPE_FP32 dims: [ 2 ] random_data: true } } }',
    has: ['"model_warmup":[{"name":"w","batch_size":1,"inputs":{"in":{"data_type":"TYPE_FP32","dims":[2],"random_data":true}},"count":0}]'],
    lacks: ['zero_data', 'input_data_file'],
  },
  {
    name: 'secondary device id and graph spec dims stay strings',
    text: `instance_group { secondary_devices { kind: KIND_NVDLA device_id: 1 } }
      optimization { cuda { graph_spec { batch_size: 2 input { key: "i" value { dim: [ 3 ] } } } } }`,
    has: [
      '"secondary_devices":[{"kind":"KIND_NVDLA","device_id":"1"}]',
      '"cuda":{"graphs":false,"busy_wait_events":false,"graph_spec":[{"batch_size":2,"input":{"i":{"dim":["3"]}}}],"output_copy_stream":false}',
    ],
  },
  {
    name: 'optional messages printed when set, with their fields',
    text: 'model_transaction_policy { } response_cache { enable: true } model_operations { op_library_filename: "a.so" }',
    has: ['"model_operations":{"op_library_filename":["a.so"]},"model_transaction_policy":{"decoupled":false}', '"response_cache":{"enable":true}'],
    lacks: ['model_repository_agents', 'model_metrics', 'version_policy', 'optimization'],
  },
  {
    name: 'string maps sorted, strings escaped like rapidjson',
    text: String.raw`parameters { key: "b" value { string_value: "q\"\\\n\001/<é" } } parameters { key: "a" value {} }`,
    has: [String.raw`"parameters":{"a":{"string_value":""},"b":{"string_value":"q\"\\\n\u0001/<é"}}`],
  },
  {
    name: 'floats: float32 shortest form, doubles, non-finite as strings',
    text: `sequence_batching { control_input { name: "c" control { fp32_false_true: [ 0.3, 1e30, nan, -inf ] } } }
      model_metrics { metric_control { metric_identifier { family: "f" } histogram_options { buckets: [ 0.1, 2.5e-7, 1e21 ] } } }`,
    has: ['"fp32_false_true":[0.3,1e30,"NaN","-Infinity"]', '"buckets":[0.1,2.5e-7,1e21]'],
  },
];

for (const f of fragments) {
  test(`config JSON: ${f.name}`, () => {
    const json = render(f.text);
    assert.doesNotThrow(() => JSON.parse(json), json);
    for (const s of f.has) assert.ok(json.includes(s), `missing ${s}\nin ${json}`);
    for (const s of f.lacks ?? []) assert.ok(!json.includes(s), `unexpected ${s}\nin ${json}`);
  });
}

test('config JSON: keys follow declaration order, not field numbers', () => {
  const keys = Object.keys(JSON.parse(render('dynamic_batching {} response_cache {}')));
  assert.deepEqual(keys, [
    'name',
    'platform',
    'backend',
    'runtime',
    'max_batch_size',
    'input',
    'output',
    'batch_input',
    'batch_output',
    'dynamic_batching',
    'instance_group',
    'default_model_filename',
    'cc_model_filenames',
    'metric_tags',
    'parameters',
    'model_warmup',
    'response_cache',
  ]);
});

test('config JSON: partial objects render primitive defaults', () => {
  const json = messageToJson({ name: 'i', dims: [3] }, schemaType('ModelInput'), 'input');
  assert.equal(
    json,
    '{"name":"i","data_type":"TYPE_INVALID","format":"FORMAT_NONE","dims":[3],"is_shape_tensor":false,' +
      '"allow_ragged_batch":false,"optional":false,"is_non_linear_format_io":false}',
  );
  // Outside its place in ModelConfig a 64-bit field keeps protobuf's string form.
  assert.ok(messageToJson({ dims: [3] }, schemaType('ModelInput')).includes('"dims":["3"]'));
});
