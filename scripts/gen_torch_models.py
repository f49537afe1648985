"""The PyTorch example models (backend "pytorch"), written by
`python3 scripts/gen_models.py --pytorch --out <dir> [--aoti]` (needs torch:
`pip install torch --index-url https://download.pytorch.org/whl/cpu`). They
are not committed: model_repository/ stays servable without torch.

  torch_add_sub/   TorchScript, Triton's INPUT__0/OUTPUT__0 naming: FP32
                   INPUT__0, INPUT__1 [4] -> OUTPUT__0 = sum, OUTPUT__1 =
                   difference; dynamic batching (max_batch_size 8)
  torch_mixed/     TorchScript named by forward()'s arguments: INT32
                   `counts` [3] and FP64 `values` [3] -> INT32 OUTPUT__0 =
                   2 * counts + 1, FP64 OUTPUT__1 = values * counts
  torch_strings/   TorchScript over a list of strings: BYTES TEXT [-1] ->
                   INT64 LENGTHS__0 (UTF-8 bytes, as TorchScript counts) and BYTES
                   UPPER__1
  torch_aoti_add_sub/  (--aoti) the add/sub model as an AOTInductor package
                   model.pt2 (platform torch_aoti), batch 1..8; the compile
                   takes about 40 s on 2 cores
"""
import os
from typing import List, Tuple

import torch


class AddSub(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return x + y, x - y


class Mixed(torch.nn.Module):
    def forward(self, counts: torch.Tensor, values: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return counts * 2 + 1, values * counts.to(torch.float64)


class Strings(torch.nn.Module):
    def forward(self, TEXT: List[str]) -> Tuple[torch.Tensor, List[str]]:
        lengths = [len(s) for s in TEXT]
        return torch.tensor(lengths, dtype=torch.int64), [s.upper() for s in TEXT]


def _write(out, name, config, save):
    version_dir = os.path.join(out, name, '1')
    os.makedirs(version_dir, exist_ok=True)
    save(version_dir)
    with open(os.path.join(out, name, 'config.pbtxt'), 'w') as f:
        f.write(config)


def gen_torch_add_sub(out):
    config = '''platform: "pytorch_libtorch"
max_batch_size: 8
input [
  { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT__1" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [
  { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 4 ] }
]
dynamic_batching { max_queue_delay_microseconds: 2000 }
'''
    _write(out, 'torch_add_sub', config, lambda d: torch.jit.script(AddSub()).save(os.path.join(d, 'model.pt')))


def gen_torch_mixed(out):
    config = '''backend: "pytorch"
max_batch_size: 4
input [
  { name: "counts" data_type: TYPE_INT32 dims: [ 3 ] },
  { name: "values" data_type: TYPE_FP64 dims: [ 3 ] }
]
output [
  { name: "OUTPUT__0" data_type: TYPE_INT32 dims: [ 3 ] },
  { name: "OUTPUT__1" data_type: TYPE_FP64 dims: [ 3 ] }
]
'''
    _write(out, 'torch_mixed', config, lambda d: torch.jit.script(Mixed()).save(os.path.join(d, 'model.pt')))


def gen_torch_strings(out):
    config = '''platform: "pytorch_libtorch"
max_batch_size: 0
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
output [
  { name: "LENGTHS__0" data_type: TYPE_INT64 dims: [ -1 ] },
  { name: "UPPER__1" data_type: TYPE_STRING dims: [ -1 ] }
]
'''
    _write(out, 'torch_strings', config, lambda d: torch.jit.script(Strings()).save(os.path.join(d, 'model.pt')))


def gen_torch_aoti_add_sub(out):
    config = '''platform: "torch_aoti"
max_batch_size: 8
input [
  { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT__1" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [
  { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 4 ] }
]
'''

    def save(d):
        batch = torch.export.Dim('batch', min=1, max=8)
        example = (torch.zeros(2, 4), torch.zeros(2, 4))
        program = torch.export.export(AddSub(), example, dynamic_shapes=({0: batch}, {0: batch}))
        torch._inductor.aoti_compile_and_package(program, package_path=os.path.join(d, 'model.pt2'))

    _write(out, 'torch_aoti_add_sub', config, save)


def gen_torch_models(out, aoti=False):
    gen_torch_add_sub(out)
    gen_torch_mixed(out)
    gen_torch_strings(out)
    if aoti:
        gen_torch_aoti_add_sub(out)
