/**
 * What the PyTorch tests share: the example models written by the
 * repository's own generator (scripts/gen_torch_models.py), and the
 * answer of in-process torch (python3, the same interpreter the stubs run)
 * for the same model file and inputs, to compare the server's with.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './server-process';

export const PYTHON = 'python3';

/**
 * The PyTorch examples into `dir` (torch_add_sub, torch_mixed, torch_strings; with `aoti`,
 * torch_aoti_add_sub only), by the functions `scripts/gen_models.py --pytorch` calls
 * (scripts/gen_torch_models.py; straight, since gen_models.py itself needs onnx, which CI does not install).
 */
export function generateTorchModels(dir: string, opts: { aoti?: boolean } = {}): void {
  const fn = opts.aoti ? 'gen_torch_aoti_add_sub(sys.argv[1])' : 'gen_torch_models(sys.argv[1])';
  execFileSync(PYTHON, ['-c', `import sys; sys.path.insert(0, 'scripts'); from gen_torch_models import *; ${fn}`, dir], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** One input for the reference run: KServe datatype, shape, flat data (strings for BYTES). */
export interface RefTensor {
  datatype: string;
  shape: number[];
  data: (number | string)[];
}

/** A reference output: the torch result, flattened, with its shape and Triton datatype. */
export interface RefOutput {
  datatype: string;
  shape: number[];
  data: (number | string)[];
}

const REFERENCE = String.raw`
import json, sys
import numpy as np
import torch
path, spec = sys.argv[1], json.loads(sys.stdin.read())
dt = {"FP32": torch.float32, "FP64": torch.float64, "INT32": torch.int32, "INT64": torch.int64, "FP16": torch.float16,
      "INT8": torch.int8, "INT16": torch.int16, "UINT8": torch.uint8, "BOOL": torch.bool}
name_of = {v: k for k, v in dt.items()}
def arg(t):
    if t["datatype"] == "BYTES":
        return list(t["data"])
    return torch.tensor(t["data"], dtype=dt[t["datatype"]]).reshape(t["shape"])
args = [arg(t) for t in spec["inputs"]]
if path.endswith(".pt2"):
    model = torch._inductor.aoti_load_package(path)
    with torch.inference_mode():
        result = model(*args)
else:
    model = torch.jit.load(path)
    with torch.inference_mode():
        result = model.forward(*args)
items = list(result) if isinstance(result, tuple) else [result]
out = []
for r in items:
    if isinstance(r, list):
        out.append({"datatype": "BYTES", "shape": [len(r)], "data": r})
    else:
        out.append({"datatype": name_of[r.dtype], "shape": list(r.shape), "data": r.reshape(-1).tolist()})
print(json.dumps(out))
`;

/** Run `modelFile` in-process (torch.jit.load or aoti_load_package) on `inputs`, in forward() argument order. */
export function torchReference(modelFile: string, inputs: RefTensor[]): RefOutput[] {
  if (!fs.existsSync(modelFile)) throw new Error(`no model file ${modelFile}`);
  const out = execFileSync(PYTHON, ['-c', REFERENCE, path.resolve(modelFile)], { input: JSON.stringify({ inputs }), stdio: ['pipe', 'pipe', 'inherit'] });
  return JSON.parse(out.toString()) as RefOutput[];
}

/** Whether `python` can import `module` (torch: a test that needs a python without it skips when there is none; numpy: the stub needs it). */
export function canImport(python: string, module: string): boolean {
  try {
    execFileSync(python, ['-c', `import ${module}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
