#!/usr/bin/env python3
"""Generate the example ONNX models of model_repository/.

Run from the repository root (needs numpy and onnx; onnxruntime only for the
optional --check):

    python3 -m venv .venv && .venv/bin/pip install numpy onnx onnxruntime
    .venv/bin/python scripts/gen_models.py [--out model_repository] [--check]

Deterministic: fixed seeds and fixed producer fields, so rerunning it gives
byte-identical files. Models written:

  simple/            Triton's classic example: INT32 INPUT0, INPUT1 [16];
                     OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1
  dense_classifier/  FP32 [64] -> dense(128) + relu -> dense(10) logits,
                     dynamic batching
  image_classifier/  FP32 [3, 224, 224] NCHW -> two strided convs + relu ->
                     global average pool -> dense(1000) -> softmax, labels.txt
  identity_types/    one identity per datatype onnxruntime-node supports, for
                     datatype round-trip tests
  tiny_llm/          a tiny decoder-only language model (random weights: its
                     text is nonsense by design) as 1/model.onnx, INT64
                     input_ids [1, T] -> FP32 logits [1, T, V], with a
                     byte-level BPE tokenizer.json trained on proto/*.proto
                     (needs the `tokenizers` package) and a chat template;
                     1/model.py (hand-written, not generated) drives it
  tiny_embedder/     a tiny text embedding model (random weights) as
                     1/model.onnx, INT64 input_ids [1, T] -> FP32 embedding
                     [1, 32] (token embeddings through a tanh layer, mean-
                     pooled over the tokens, unit length), with tiny_llm's
                     tokenizer.json; 1/model.py (hand-written) serves it on
                     /v1/embeddings (text_input -> embedding)
  fil_lightgbm/, fil_xgboost/
                     tree models for the FIL backend, by
                     scripts/gen_fil_models.py (run for each library that is
                     installed: lightgbm here, xgboost in Debian's python3)

With --pytorch (and --aoti) it writes the PyTorch examples instead
(scripts/gen_torch_models.py, needs torch; not committed).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # readable by every onnxruntime since 1.10

# Triton datatype -> ONNX elem type; the set onnxruntime-node 1.30 can feed and
# fetch (no BF16: the Node binding has no bfloat16 tensor type).
IDENTITY_TYPES = [
    ('BOOL', TensorProto.BOOL),
    ('UINT8', TensorProto.UINT8),
    ('UINT16', TensorProto.UINT16),
    ('UINT32', TensorProto.UINT32),
    ('UINT64', TensorProto.UINT64),
    ('INT8', TensorProto.INT8),
    ('INT16', TensorProto.INT16),
    ('INT32', TensorProto.INT32),
    ('INT64', TensorProto.INT64),
    ('FP16', TensorProto.FLOAT16),
    ('FP32', TensorProto.FLOAT),
    ('FP64', TensorProto.DOUBLE),
    ('BYTES', TensorProto.STRING),
]


def config_type(triton_dt):
    return 'TYPE_STRING' if triton_dt == 'BYTES' else 'TYPE_' + triton_dt


def make_model(graph):
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid('', OPSET)],
        producer_name='nodetron-gen_models',
        producer_version='1',
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def dense_weights(rng, fan_in, fan_out, name):
    w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
    b = (rng.standard_normal(fan_out) * 0.01).astype(np.float32)
    return numpy_helper.from_array(w, name + '_w'), numpy_helper.from_array(b, name + '_b')


def tensor_block(name, dtype, dims, extra=()):
    lines = ['  {', f'    name: "{name}"', f'    data_type: {dtype}']
    lines += [f'    {e}' for e in extra]
    lines += [f'    dims: [ {", ".join(str(d) for d in dims)} ]', '  }']
    return lines


def config_text(name, max_batch_size, inputs, outputs, tail=()):
    """inputs/outputs: (name, config dtype, dims, extra lines) tuples."""
    lines = [f'name: "{name}"', 'platform: "onnxruntime_onnx"', f'max_batch_size: {max_batch_size}']
    for key, tensors in (('input', inputs), ('output', outputs)):
        lines.append(f'{key} [')
        blocks = [tensor_block(n, t, d, e) for (n, t, d, e) in tensors]
        for i, block in enumerate(blocks):
            if i < len(blocks) - 1:
                block[-1] += ','
            lines += block
        lines.append(']')
    lines += list(tail)
    return '\n'.join(lines) + '\n'


def random_init(rng):
    """initializer(name, shape, scale): normal weights from `rng`, times scale, as FP32."""
    return lambda name, shape, scale: numpy_helper.from_array(
        (rng.standard_normal(shape) * scale).astype(np.float32), name)


def write_onnx(out, name, model, files=None):
    """<out>/<name>/1/model.onnx, and each of `files` (file name -> text) beside the version folder."""
    version_dir = os.path.join(out, name, '1')
    os.makedirs(version_dir, exist_ok=True)
    with open(os.path.join(version_dir, 'model.onnx'), 'wb') as f:
        f.write(model.SerializeToString())
    for fname, text in (files or {}).items():
        with open(os.path.join(out, name, fname), 'w') as f:
            f.write(text)


def write_model(out, name, model, config, extra_files=None):
    write_onnx(out, name, model, {'config.pbtxt': config, **(extra_files or {})})


def gen_simple(out):
    io = lambda n: helper.make_tensor_value_info(n, TensorProto.INT32, ['batch', 16])
    graph = helper.make_graph(
        [helper.make_node('Add', ['INPUT0', 'INPUT1'], ['OUTPUT0']),
         helper.make_node('Sub', ['INPUT0', 'INPUT1'], ['OUTPUT1'])],
        'simple',
        [io('INPUT0'), io('INPUT1')],
        [io('OUTPUT0'), io('OUTPUT1')],
    )
    tensors = lambda names: [(n, 'TYPE_INT32', [16], ()) for n in names]
    config = config_text('simple', 8, tensors(['INPUT0', 'INPUT1']), tensors(['OUTPUT0', 'OUTPUT1']))
    write_model(out, 'simple', make_model(graph), config)


def gen_dense_classifier(out):
    rng = np.random.default_rng(20240601)
    w1, b1 = dense_weights(rng, 64, 128, 'fc1')
    w2, b2 = dense_weights(rng, 128, 10, 'fc2')
    graph = helper.make_graph(
        [helper.make_node('Gemm', ['input', 'fc1_w', 'fc1_b'], ['h1']),
         helper.make_node('Relu', ['h1'], ['a1']),
         helper.make_node('Gemm', ['a1', 'fc2_w', 'fc2_b'], ['logits'])],
        'dense_classifier',
        [helper.make_tensor_value_info('input', TensorProto.FLOAT, ['batch', 64])],
        [helper.make_tensor_value_info('logits', TensorProto.FLOAT, ['batch', 10])],
        initializer=[w1, b1, w2, b2],
    )
    config = config_text(
        'dense_classifier', 32,
        [('input', 'TYPE_FP32', [64], ())],
        [('logits', 'TYPE_FP32', [10], ())],
        tail=[
            'dynamic_batching {',
            '  preferred_batch_size: [ 8, 16, 32 ]',
            '  max_queue_delay_microseconds: 500',
            '}',
            'instance_group [',
            '  {',
            '    count: 1',
            '    kind: KIND_CPU',
            '  }',
            ']',
        ],
    )
    write_model(out, 'dense_classifier', make_model(graph), config)


def gen_image_classifier(out):
    rng = np.random.default_rng(20240602)

    def conv(name, cin, cout, k):
        w = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
        b = np.zeros(cout, dtype=np.float32)
        return numpy_helper.from_array(w, name + '_w'), numpy_helper.from_array(b, name + '_b')

    c1w, c1b = conv('conv1', 3, 16, 7)
    c2w, c2b = conv('conv2', 16, 32, 3)
    fcw, fcb = dense_weights(rng, 32, 1000, 'fc')
    graph = helper.make_graph(
        [
            # 224 -> 56 -> 28 spatially; cheap enough for CPU tests.
            helper.make_node('Conv', ['input', 'conv1_w', 'conv1_b'], ['c1'], strides=[4, 4], pads=[3, 3, 3, 3]),
            helper.make_node('Relu', ['c1'], ['r1']),
            helper.make_node('Conv', ['r1', 'conv2_w', 'conv2_b'], ['c2'], strides=[2, 2], pads=[1, 1, 1, 1]),
            helper.make_node('Relu', ['c2'], ['r2']),
            helper.make_node('GlobalAveragePool', ['r2'], ['pool']),
            helper.make_node('Flatten', ['pool'], ['flat'], axis=1),
            helper.make_node('Gemm', ['flat', 'fc_w', 'fc_b'], ['fc']),
            helper.make_node('Softmax', ['fc'], ['probabilities'], axis=1),
        ],
        'image_classifier',
        [helper.make_tensor_value_info('input', TensorProto.FLOAT, ['batch', 3, 224, 224])],
        [helper.make_tensor_value_info('probabilities', TensorProto.FLOAT, ['batch', 1000])],
        initializer=[c1w, c1b, c2w, c2b, fcw, fcb],
    )
    config = config_text(
        'image_classifier', 8,
        [('input', 'TYPE_FP32', [3, 224, 224], ('format: FORMAT_NCHW',))],
        [('probabilities', 'TYPE_FP32', [1000], ('label_filename: "labels.txt"',))],
    )
    labels = ''.join(f'class_{i}\n' for i in range(1000))
    write_model(out, 'image_classifier', make_model(graph), config, {'labels.txt': labels})


def gen_identity_types(out):
    nodes, inputs, outputs, cfg_in, cfg_out = [], [], [], [], []
    for dt, elem in IDENTITY_TYPES:
        i_name, o_name = 'INPUT_' + dt, 'OUTPUT_' + dt
        nodes.append(helper.make_node('Identity', [i_name], [o_name]))
        inputs.append(helper.make_tensor_value_info(i_name, elem, ['batch', 'n']))
        outputs.append(helper.make_tensor_value_info(o_name, elem, ['batch', 'n']))
        cfg_in.append((i_name, config_type(dt), [-1], ()))
        cfg_out.append((o_name, config_type(dt), [-1], ()))
    graph = helper.make_graph(nodes, 'identity_types', inputs, outputs)
    config = config_text('identity_types', 8, cfg_in, cfg_out)
    write_model(out, 'identity_types', make_model(graph), config)


TINY_LLM_VOCAB = 384
TINY_LLM_DIM = 48
TINY_LLM_EOS = '<|endoftext|>'
TINY_LLM_CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


# The tokenizer's training text: Triton's protocol files, which change only
# when the protocol does (README.md would change the tokenizer at every edit).
TINY_LLM_CORPUS = ['proto/grpc_service.proto', 'proto/model_config.proto']


def train_tiny_tokenizer(corpus):
    """The byte-level BPE tokenizer tiny_llm and tiny_embedder share, trained
    on `corpus` (a list of files); the same files give a byte-identical one."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=TINY_LLM_VOCAB, special_tokens=[TINY_LLM_EOS], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train(corpus, trainer)
    return tok


def gen_tiny_llm(out, corpus=TINY_LLM_CORPUS):
    """A causal network small enough to commit: embedding, one attention-free
    mixing block (the running mean of the earlier positions stands in for
    attention: position t sees only tokens 0..t), a residual MLP, and a
    projection to vocabulary logits."""
    tok = train_tiny_tokenizer(corpus)
    vocab = tok.get_vocab_size()

    rng = np.random.default_rng(20240618)
    d = TINY_LLM_DIM
    init = random_init(rng)
    weights = [
        init('embedding', (vocab, d), 1.0),
        init('mix_w', (d, d), 1.0 / np.sqrt(d)),
        init('mlp_w', (d, d), 1.0 / np.sqrt(d)),
        init('out_w', (d, vocab), 2.0 / np.sqrt(d)),
        # Random weights know no end of text: the EOS logit is held down, so a
        # stream runs to max_tokens (a real model stops on its own).
        numpy_helper.from_array(np.where(np.arange(vocab) == tok.token_to_id(TINY_LLM_EOS), -1e4, 0).astype(np.float32), 'out_b'),
        numpy_helper.from_array(np.array([2], dtype=np.int64), 'axis2'),
        numpy_helper.from_array(np.array(1, dtype=np.int64), 'axis1'),
    ]
    n = helper.make_node
    graph = helper.make_graph(
        [
            n('Gather', ['embedding', 'input_ids'], ['h']),                    # [1, T, d]
            n('Shape', ['input_ids'], ['ids_shape']),
            n('ConstantOfShape', ['ids_shape'], ['ones'],
              value=helper.make_tensor('one', TensorProto.FLOAT, [1], [1.0])),
            n('CumSum', ['ones', 'axis1'], ['count2']),                         # [1, T]: 1..T
            n('Unsqueeze', ['count2', 'axis2'], ['count']),                     # [1, T, 1]
            n('CumSum', ['h', 'axis1'], ['h_sum']),
            n('Div', ['h_sum', 'count'], ['h_mean']),                           # causal mean
            n('MatMul', ['h_mean', 'mix_w'], ['mixed']),
            n('Add', ['h', 'mixed'], ['h1']),
            n('MatMul', ['h1', 'mlp_w'], ['mlp']),
            n('Tanh', ['mlp'], ['mlp_act']),
            n('Add', ['h1', 'mlp_act'], ['h2']),
            n('MatMul', ['h2', 'out_w'], ['out']),
            n('Add', ['out', 'out_b'], ['logits']),
        ],
        'tiny_llm',
        [helper.make_tensor_value_info('input_ids', TensorProto.INT64, [1, 'sequence'])],
        [helper.make_tensor_value_info('logits', TensorProto.FLOAT, [1, 'sequence', vocab])],
        initializer=weights,
    )
    write_onnx(out, 'tiny_llm', make_model(graph), {
        'tokenizer.json': tok.to_str(),
        'tokenizer_config.json': json.dumps({'chat_template': TINY_LLM_CHAT_TEMPLATE, 'eos_token': TINY_LLM_EOS}, indent=2) + '\n',
    })


TINY_EMBEDDER_DIM = 32


def gen_tiny_embedder(out, corpus=TINY_LLM_CORPUS):
    """Token embeddings, a tanh layer, the mean over the tokens and a unit
    length: an embedding model's shape (the weights are random, so similar
    texts are not near each other). The tokenizer is tiny_llm's, trained
    again on the same text (byte-identical)."""
    tok = train_tiny_tokenizer(corpus)
    vocab = tok.get_vocab_size()

    rng = np.random.default_rng(20251201)
    d = TINY_EMBEDDER_DIM
    init = random_init(rng)
    weights = [
        init('embedding', (vocab, d), 1.0),
        init('proj_w', (d, d), 1.0 / np.sqrt(d)),
    ]
    n = helper.make_node
    graph = helper.make_graph(
        [
            n('Gather', ['embedding', 'input_ids'], ['h']),                    # [1, T, d]
            n('MatMul', ['h', 'proj_w'], ['p']),
            n('Tanh', ['p'], ['t']),
            n('ReduceMean', ['t'], ['pooled'], axes=[1], keepdims=0),           # [1, d]: mean over tokens (opset 17: axes an attribute)
            n('LpNormalization', ['pooled'], ['embedding_out'], axis=-1, p=2),  # unit length
        ],
        'tiny_embedder',
        [helper.make_tensor_value_info('input_ids', TensorProto.INT64, [1, 'sequence'])],
        [helper.make_tensor_value_info('embedding_out', TensorProto.FLOAT, [1, d])],
        initializer=weights,
    )
    write_onnx(out, 'tiny_embedder', make_model(graph), {'tokenizer.json': tok.to_str()})


def check(out):
    """Run every model once with onnxruntime (Python) as a sanity check."""
    import onnxruntime as ort

    def session(name):
        return ort.InferenceSession(os.path.join(out, name, '1', 'model.onnx'), providers=['CPUExecutionProvider'])

    a = np.arange(32, dtype=np.int32).reshape(2, 16)
    b = np.ones((2, 16), dtype=np.int32)
    o0, o1 = session('simple').run(None, {'INPUT0': a, 'INPUT1': b})
    assert (o0 == a + b).all() and (o1 == a - b).all()
    (logits,) = session('dense_classifier').run(None, {'input': np.ones((3, 64), np.float32)})
    assert logits.shape == (3, 10)
    (probs,) = session('image_classifier').run(None, {'input': np.ones((2, 3, 224, 224), np.float32)})
    assert probs.shape == (2, 1000) and np.allclose(probs.sum(axis=1), 1, atol=1e-4)
    sess = session('identity_types')
    feeds = {}
    for dt, elem in IDENTITY_TYPES:
        np_type = object if dt == 'BYTES' else helper.tensor_dtype_to_np_dtype(elem)
        feeds['INPUT_' + dt] = np.array([[1, 0, 1]], dtype=np_type) if dt != 'BYTES' else np.array([['a', 'bc', '']], dtype=object)
    results = sess.run(None, feeds)
    for (dt, _), r in zip(IDENTITY_TYPES, results):
        assert (r == feeds['INPUT_' + dt]).all(), dt
    (logits,) = session(os.path.join('tiny_llm')).run(None, {'input_ids': np.array([[1, 2, 3]], np.int64)})
    assert logits.shape[:2] == (1, 3)
    (emb,) = session('tiny_embedder').run(None, {'input_ids': np.array([[1, 2, 3]], np.int64)})
    assert emb.shape == (1, TINY_EMBEDDER_DIM) and np.isclose(np.linalg.norm(emb), 1, atol=1e-5)
    print('check: all models ran in onnxruntime', ort.__version__)


def gen_fil_examples(out):
    """The FIL examples need lightgbm and xgboost, which may live in other interpreters (xgboost: Debian's python3)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'gen_fil_models.py')
    for lib, python in [('lightgbm', sys.executable), ('xgboost', '/usr/bin/python3')]:
        if subprocess.run([python, '-c', f'import {lib}'], capture_output=True).returncode != 0:
            print(f'skipping the FIL {lib} example: no {lib} in {python}')
            continue
        subprocess.run([python, script, lib, '--out', out], check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--out', default='model_repository')
    parser.add_argument('--check', action='store_true', help='run each model once in onnxruntime')
    parser.add_argument('--pytorch', action='store_true',
                        help='write only the PyTorch examples (scripts/gen_torch_models.py; needs torch)')
    parser.add_argument('--aoti', action='store_true', help='with --pytorch: also the AOTInductor package (~40 s)')
    args = parser.parse_args()
    if args.pytorch:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from gen_torch_models import gen_torch_models
        gen_torch_models(args.out, aoti=args.aoti)
        return 0
    gen_simple(args.out)
    gen_dense_classifier(args.out)
    gen_image_classifier(args.out)
    gen_identity_types(args.out)
    gen_tiny_llm(args.out)
    gen_tiny_embedder(args.out)
    gen_fil_examples(args.out)
    if args.check:
        check(args.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
