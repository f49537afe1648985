#!/usr/bin/env python3
"""Models for the side-by-side bench (bench/side-by-side.ts), random weights.

Writes a Triton model repository under bench/models/repo/ (gitignored):

  simple/       copied from model_repository/ (INT32 add/sub, [16])
  simple_db/    simple plus `dynamic_batching { }`
  add_vectors/  copied from model_repository/ (Python backend, FP32 add)
  mlp/          FP32 INPUT [256] -> 1024 relu -> 1024 relu -> OUTPUT [10],
                dynamic batching (max_batch_size 32)
  resnet50/     a ResNet-50-shaped classifier: FP32 INPUT [3,224,224] ->
                OUTPUT [1000] logits (bottleneck stages 3,4,6,3, BN folded
                into conv biases), dynamic batching towards batches of 8 (max_batch_size 8)

Usage: python3 bench/gen_bench_models.py [--out bench/models/repo]
(needs numpy and onnx: `pip install onnx` from the local wheel mirror).
"""
import argparse
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
rng = np.random.default_rng(7)


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', OPSET)], producer_name='nodetron-bench')
    model.ir_version = 8
    onnx.checker.check_model(model)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(model, path)


def mlp(path):
    dims = [256, 1024, 1024, 10]
    inits, nodes, x = [], [], 'INPUT'
    for i in range(3):
        w = (rng.standard_normal((dims[i], dims[i + 1])) * np.sqrt(2.0 / dims[i])).astype(np.float32)
        b = np.zeros(dims[i + 1], np.float32)
        inits += [numpy_helper.from_array(w, f'w{i}'), numpy_helper.from_array(b, f'b{i}')]
        y = 'OUTPUT' if i == 2 else f'h{i}'
        nodes.append(helper.make_node('Gemm', [x, f'w{i}', f'b{i}'], [y if i == 2 else f'g{i}']))
        if i < 2:
            nodes.append(helper.make_node('Relu', [f'g{i}'], [y]))
        x = y
    g = helper.make_graph(nodes, 'mlp',
                          [helper.make_tensor_value_info('INPUT', TensorProto.FLOAT, ['N', 256])],
                          [helper.make_tensor_value_info('OUTPUT', TensorProto.FLOAT, ['N', 10])], inits)
    save(g, path)


class Builder:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, p):
        self.n += 1
        return f'{p}{self.n}'

    def conv(self, x, cin, cout, k, stride=1, relu=True, scale=1.0):
        w = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k)) * scale).astype(np.float32)
        wn, bn, y = self.name('w'), self.name('b'), self.name('c')
        self.inits += [numpy_helper.from_array(w, wn), numpy_helper.from_array(np.zeros(cout, np.float32), bn)]
        self.nodes.append(helper.make_node('Conv', [x, wn, bn], [y], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4))
        return self.relu(y) if relu else y

    def relu(self, x):
        y = self.name('r')
        self.nodes.append(helper.make_node('Relu', [x], [y]))
        return y

    def add(self, a, b):
        y = self.name('a')
        self.nodes.append(helper.make_node('Add', [a, b], [y]))
        return y


def resnet50(path):
    b = Builder()
    x = b.conv('INPUT', 3, 64, 7, 2)
    y = b.name('p')
    b.nodes.append(helper.make_node('MaxPool', [x], [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = y, 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(blocks):
            s = stride if i == 0 else 1
            h = b.conv(x, cin, width, 1)
            h = b.conv(h, width, width, 3, s)
            h = b.conv(h, width, width * 4, 1, relu=False, scale=0.2)
            short = b.conv(x, cin, width * 4, 1, s, relu=False) if i == 0 else x
            x, cin = b.relu(b.add(h, short)), width * 4
    b.nodes.append(helper.make_node('GlobalAveragePool', [x], ['gap']))
    b.nodes.append(helper.make_node('Flatten', ['gap'], ['flat']))
    w = (rng.standard_normal((2048, 1000)) * np.sqrt(1.0 / 2048)).astype(np.float32)
    b.inits += [numpy_helper.from_array(w, 'fcw'), numpy_helper.from_array(np.zeros(1000, np.float32), 'fcb')]
    b.nodes.append(helper.make_node('Gemm', ['flat', 'fcw', 'fcb'], ['OUTPUT']))
    g = helper.make_graph(b.nodes, 'resnet50',
                          [helper.make_tensor_value_info('INPUT', TensorProto.FLOAT, ['N', 3, 224, 224])],
                          [helper.make_tensor_value_info('OUTPUT', TensorProto.FLOAT, ['N', 1000])], b.inits)
    save(g, path)


CONFIGS = {
    'mlp': '''name: "mlp"
platform: "onnxruntime_onnx"
max_batch_size: 32
input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ 256 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 10 ] } ]
dynamic_batching { preferred_batch_size: [ 16, 32 ] max_queue_delay_microseconds: 1000 }
instance_group [ { count: 1 kind: KIND_CPU } ]
''',
    'resnet50': '''name: "resnet50"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 1000 ] } ]
dynamic_batching { preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 20000 }
instance_group [ { count: 1 kind: KIND_CPU } ]
''',
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', default=os.path.join(here, 'models', 'repo'))
    out = ap.parse_args().out
    src = os.path.join(here, '..', 'model_repository')
    for name in ['simple', 'add_vectors']:
        shutil.rmtree(os.path.join(out, name), ignore_errors=True)
        shutil.copytree(os.path.join(src, name), os.path.join(out, name), ignore=shutil.ignore_patterns('__pycache__'))
    # simple with a dynamic batcher: one execution per many requests (same model file).
    shutil.rmtree(os.path.join(out, 'simple_db'), ignore_errors=True)
    shutil.copytree(os.path.join(out, 'simple'), os.path.join(out, 'simple_db'))
    with open(os.path.join(out, 'simple_db', 'config.pbtxt')) as f:
        text = f.read().replace('name: "simple"', 'name: "simple_db"')
    with open(os.path.join(out, 'simple_db', 'config.pbtxt'), 'w') as f:
        f.write(text + 'dynamic_batching { }\n')
    mlp(os.path.join(out, 'mlp', '1', 'model.onnx'))
    resnet50(os.path.join(out, 'resnet50', '1', 'model.onnx'))
    for name, text in CONFIGS.items():
        with open(os.path.join(out, name, 'config.pbtxt'), 'w') as f:
            f.write(text)
    print(f'wrote {out}')


if __name__ == '__main__':
    main()
