#!/usr/bin/env python3
"""Bench-only ONNX identity models, no batching, so the tensor size alone
decides the cost:
- `uint8` (default): identity_uint8, UINT8 INPUT [-1] -> OUTPUT [-1], for the
  protocol comparison (bench/README.md, "gRPC vs HTTP"); JSON works too.
- `string`: identity_bytes_onnx, STRING INPUT0 [-1] -> OUTPUT0 [-1], one
  instance, for bench/bytes-tensor.ts: the ONNX twin of
  test/integration/fixtures/large_models/identity_bytes_py.

Usage: python3 bench/gen_identity_model.py [--kind uint8|string] [--out bench/models/repo]
(needs onnx: `pip install onnx` from the local wheel mirror).
"""
import argparse
import os

import onnx
from onnx import TensorProto, helper

# kind -> (model name, ONNX type, config type, input name, output name, config extra)
KINDS = {
    'uint8': ('identity_uint8', TensorProto.UINT8, 'TYPE_UINT8', 'INPUT', 'OUTPUT', ''),
    'string': ('identity_bytes_onnx', TensorProto.STRING, 'TYPE_STRING', 'INPUT0', 'OUTPUT0',
               'instance_group [ { kind: KIND_CPU count: 1 } ]\n'),
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument('--kind', choices=sorted(KINDS), default='uint8')
    ap.add_argument('--out', default=os.path.join(here, 'models', 'repo'))
    args = ap.parse_args()
    name, onnx_type, config_type, inp, outp, extra = KINDS[args.kind]
    out = os.path.join(args.out, name)
    graph = helper.make_graph(
        [helper.make_node('Identity', [inp], [outp])],
        name,
        [helper.make_tensor_value_info(inp, onnx_type, ['n'])],
        [helper.make_tensor_value_info(outp, onnx_type, ['n'])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)], producer_name='nodetron-bench')
    model.ir_version = 8
    onnx.checker.check_model(model)
    os.makedirs(os.path.join(out, '1'), exist_ok=True)
    onnx.save(model, os.path.join(out, '1', 'model.onnx'))
    with open(os.path.join(out, 'config.pbtxt'), 'w') as f:
        f.write(f'''name: "{name}"
platform: "onnxruntime_onnx"
max_batch_size: 0
input [ {{ name: "{inp}" data_type: {config_type} dims: [ -1 ] }} ]
output [ {{ name: "{outp}" data_type: {config_type} dims: [ -1 ] }} ]
{extra}''')
    print(f'wrote {out}')


if __name__ == '__main__':
    main()
