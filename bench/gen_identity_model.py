#!/usr/bin/env python3
"""A bench-only model for the protocol comparison (bench/README.md, "gRPC vs
HTTP"): identity_uint8, UINT8 INPUT [-1] -> Identity -> UINT8 OUTPUT [-1],
no batching, so the tensor size alone decides the cost and JSON works too.

Usage: python3 bench/gen_identity_model.py [--out bench/models/repo]
(needs onnx: `pip install onnx` from the local wheel mirror).
"""
import argparse
import os

import onnx
from onnx import TensorProto, helper

CONFIG = '''name: "identity_uint8"
platform: "onnxruntime_onnx"
max_batch_size: 0
input [ { name: "INPUT" data_type: TYPE_UINT8 dims: [ -1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_UINT8 dims: [ -1 ] } ]
'''


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', default=os.path.join(here, 'models', 'repo'))
    out = os.path.join(ap.parse_args().out, 'identity_uint8')
    graph = helper.make_graph(
        [helper.make_node('Identity', ['INPUT'], ['OUTPUT'])],
        'identity_uint8',
        [helper.make_tensor_value_info('INPUT', TensorProto.UINT8, ['n'])],
        [helper.make_tensor_value_info('OUTPUT', TensorProto.UINT8, ['n'])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)], producer_name='nodetron-bench')
    model.ir_version = 8
    onnx.checker.check_model(model)
    os.makedirs(os.path.join(out, '1'), exist_ok=True)
    onnx.save(model, os.path.join(out, '1', 'model.onnx'))
    with open(os.path.join(out, 'config.pbtxt'), 'w') as f:
        f.write(CONFIG)
    print(f'wrote {out}')


if __name__ == '__main__':
    main()
