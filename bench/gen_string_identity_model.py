#!/usr/bin/env python3
"""A bench-only model for bench/bytes-tensor.ts: identity_bytes_onnx, STRING
INPUT0 [-1] -> Identity -> STRING OUTPUT0 [-1], no batching, the ONNX twin of
test/integration/fixtures/large_models/identity_bytes_py.

Usage: python3 bench/gen_string_identity_model.py <repository dir>
(needs onnx: `pip install onnx` from the local wheel mirror).
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

CONFIG = '''name: "identity_bytes_onnx"
platform: "onnxruntime_onnx"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
'''


def main():
    out = os.path.join(sys.argv[1], 'identity_bytes_onnx')
    graph = helper.make_graph(
        [helper.make_node('Identity', ['INPUT0'], ['OUTPUT0'])],
        'identity_bytes_onnx',
        [helper.make_tensor_value_info('INPUT0', TensorProto.STRING, ['n'])],
        [helper.make_tensor_value_info('OUTPUT0', TensorProto.STRING, ['n'])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)], producer_name='nodetron-bench')
    model.ir_version = 8
    onnx.checker.check_model(model)
    os.makedirs(os.path.join(out, '1'), exist_ok=True)
    onnx.save(model, os.path.join(out, '1', 'model.onnx'))
    with open(os.path.join(out, 'config.pbtxt'), 'w') as f:
        f.write(CONFIG)


if __name__ == '__main__':
    main()
