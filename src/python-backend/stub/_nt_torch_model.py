"""The built-in model of the pytorch backend: what Triton's libtorch
backend does, as a TritonPythonModel that the stub runs in place of a
model.py (the model author writes no Python). It loads the version's
model.pt with torch.jit.load (platform pytorch_libtorch) or model.pt2 with
torch._inductor.aoti_load_package (platform torch_aoti), and runs each
batch as one forward() along the first dimension. Inputs are torch tensors
over the stub's shared memory (torch.from_numpy of the request's view: no
copy for a batch of one); outputs go back through numpy.
Tensor naming: _nt_torch_plan.py; config parameters: _nt_torch_params.py."""
import json
import sys
import warnings

import numpy as np

from _nt_errors import TritonError, TritonModelException
from _nt_logger import internal_log
from _nt_response import InferenceResponse
from _nt_tensor import Tensor
from _nt_torch_params import ParameterError, cpu_notes, log_lines, parse_parameters
from _nt_torch_plan import PlanError, aoti_inputs, aoti_outputs, torchscript_inputs, torchscript_outputs

# The CPU wheel, as PyTorch's install page gives it for Linux.
INSTALL = "-m pip install torch --index-url https://download.pytorch.org/whl/cpu"
_CONFIG_TO_TORCH = {"TYPE_BOOL": "bool", "TYPE_UINT8": "uint8", "TYPE_INT8": "int8", "TYPE_INT16": "int16",
                    "TYPE_INT32": "int32", "TYPE_INT64": "int64", "TYPE_FP16": "float16", "TYPE_FP32": "float32",
                    "TYPE_FP64": "float64"}


class _BatchError(Exception):
    """Fails every request of one forward() with this text and code."""

    def __init__(self, message, code=TritonError.INTERNAL):
        super().__init__(message)
        self.code = code


def _import_torch(model):
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise TritonModelException(
            "unable to load model '%s': the pytorch backend runs the model with the torch module of %s, which cannot "
            "import it (%s: %s). Install PyTorch for that interpreter (%s %s), or point the backend at an interpreter "
            "that has it: --backend-config=pytorch,interpreter=<path to python3>"
            % (model, sys.executable, type(e).__name__, e, sys.executable, INSTALL))
    return torch


class TritonPythonModel:
    def __init__(self, model_path):
        self.model_path = model_path

    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.name = config.get("name", "")
        self.instance = args.get("model_instance_name", self.name)
        torch = _import_torch(self.name)
        self.torch = torch
        # Inputs are views of shared memory the request owns; torch may use them in place.
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        self.aoti = config.get("platform") == "torch_aoti" or self.model_path.endswith(".pt2")
        self.batching = int(config.get("max_batch_size", 0) or 0) > 0
        try:
            self.params = parse_parameters(config, self.name)
        except ParameterError as e:
            raise TritonModelException(str(e))
        self.device = self._device(args.get("model_instance_kind", "CPU"), int(args.get("model_instance_device_id", 0)))
        self._apply_process_settings()
        for line in log_lines(self.params, self.instance):
            internal_log("INFO", line)
        for note in cpu_notes(self.params, self.instance, self.device is not None and self.device.type == "cuda"):
            internal_log("WARNING", note)
        try:
            if self.aoti:
                self._load_aoti(config)
            else:
                self._load_torchscript(config)
        except PlanError as e:
            raise TritonModelException(str(e))

    # ---- load ----

    def _device(self, kind, device_id):
        torch = self.torch
        if kind == "GPU":
            if not torch.cuda.is_available():
                raise TritonModelException(
                    "instance '%s' of model '%s' has kind KIND_GPU, but the torch of %s (%s) sees no CUDA device: "
                    "use instance_group [ { kind: KIND_CPU } ], or install a CUDA build of torch there"
                    % (self.instance, self.name, sys.executable, torch.__version__))
            return torch.device("cuda", device_id)
        if kind == "MODEL":
            return None  # the model places its own tensors; inputs stay on the CPU
        return torch.device("cpu")

    def _apply_process_settings(self):
        torch, p = self.torch, self.params
        torch.backends.cudnn.enabled = p.cudnn  # DISABLE_CUDNN (no effect on a CPU instance)
        if p.intra_op_threads > 0:
            torch.set_num_threads(p.intra_op_threads)
            internal_log("INFO", "Intra op thread count is set to %d for model instance '%s'"
                         % (torch.get_num_threads(), self.instance))
        if p.inter_op_threads > 0:
            try:
                torch.set_num_interop_threads(p.inter_op_threads)
            except RuntimeError:
                pass  # already set (as Triton: only the first call counts)
            internal_log("INFO", "Inter op thread count is set to %d for model instance '%s'"
                         % (torch.get_num_interop_threads(), self.instance))

    def _load_torchscript(self, config):
        torch = self.torch
        try:
            with torch.inference_mode(self.params.inference_mode):
                self.model = torch.jit.load(self.model_path, map_location=self.device)
        except Exception as e:
            raise TritonModelException(
                "failed to load model '%s': %s. %s must be a TorchScript file (torch.jit.script(model) or "
                "torch.jit.trace(model, example), then .save(path)); a state_dict or a torch.save() of a module is "
                "not one. An AOTInductor package (.pt2) needs platform: \"torch_aoti\"."
                % (self.name, _first_line(e), self.model_path))
        # The JIT switches are process-wide. Triton sets them before every
        # forward() because one process holds many models; a stub holds one.
        p = self.params
        torch._C._set_graph_executor_optimize(p.optimized_execution)
        if p.jit_profiling is not None:
            torch._C._jit_set_profiling_mode(p.jit_profiling)
        if p.jit_executor is not None:
            torch._C._jit_set_profiling_executor(p.jit_executor)
        if p.tensor_fuser is not None:
            torch._C._jit_set_texpr_fuser_enabled(p.tensor_fuser)
        schema = self.model.forward.schema
        forward_args = []
        for i, a in enumerate(schema.arguments):
            kind = a.type.kind()
            if i == 0 and kind == "ClassType":
                continue  # self
            forward_args.append((a.name, str(a.type), {"TensorType": "tensor", "ListType": "list",
                                                       "DictType": "dict"}.get(kind, "other")))
        self.inputs, self.dict_input, warns = torchscript_inputs(config, self.name, forward_args)
        self.outputs, out_warns = torchscript_outputs(config, self.name)
        for w in warns + out_warns:
            internal_log("WARNING", w)
        self.arg_count = 1 if self.dict_input else len(forward_args)

    def _load_aoti(self, config):
        torch = self.torch
        try:
            with torch.inference_mode(self.params.inference_mode):
                self.model = torch._inductor.aoti_load_package(self.model_path)
        except Exception as e:
            raise TritonModelException(
                "failed to load model '%s': %s. %s must be an AOTInductor package "
                "(torch._inductor.aoti_compile_and_package(torch.export.export(model, example)))."
                % (self.name, _first_line(e), self.model_path))
        arg_count, kwarg_keys, result_count = _call_spec(self.model, self.name)
        self.inputs = aoti_inputs(config, self.name, self.instance, arg_count, kwarg_keys)
        self.outputs = aoti_outputs(config, self.name, self.instance, result_count)
        self.dict_input = False
        self.arg_count = arg_count

    # ---- execute ----

    def execute(self, requests):
        responses = [None] * len(requests)
        for group in self._groups(requests):
            try:
                for i, r in zip(group, self._run([requests[i] for i in group])):
                    responses[i] = r
            except _BatchError as e:
                for i in group:
                    responses[i] = InferenceResponse([], TritonError(str(e), e.code))
        return responses

    def _groups(self, requests):
        """Requests that can share one forward(): all, for a batching model,
        unless their shapes past the first dimension differ."""
        if not self.batching:
            return [[i] for i in range(len(requests))]
        groups = {}
        for i, r in enumerate(requests):
            key = tuple(tuple(t.shape()[1:]) for t in r.inputs())
            groups.setdefault(key, []).append(i)
        return list(groups.values())

    def _run(self, requests):
        torch = self.torch
        sizes = [self._batch_size(r) for r in requests]
        args = [None] * self.arg_count
        kwargs = {}
        named = {}
        for spec in self.inputs:
            value = self._input(spec, requests)
            if self.dict_input:
                named[spec.name] = value
            elif spec.key is not None:
                kwargs[spec.key] = value
            else:
                args[spec.index] = value
        if self.dict_input:
            args = [named]
        p = self.params
        try:
            with torch.inference_mode(p.inference_mode), torch.no_grad():
                if self.aoti:
                    result = self.model(*args, **kwargs)
                else:
                    result = self.model.forward(*args)
        except Exception as e:
            if self.aoti:
                raise _BatchError("Inductor model instance \"%s\" execution failure: %s" % (self.instance, e))
            raise _BatchError("PyTorch execute failure: %s" % e)
        items = self._results(result)
        for spec in self.outputs:
            if spec.index >= len(items):
                raise _BatchError("The output %s in the model configuration refers to an output index which doesn't "
                                  "exist. This model has %d outputs" % (spec.name, len(items)), TritonError.INVALID_ARG)
        per_request = [[] for _ in requests]
        for spec in self.outputs:
            for i, t in enumerate(self._split(spec, items[spec.index], sizes)):
                per_request[i].append(Tensor(spec.name, t))
        if self.params.cache_cleaning and self.device is not None and self.device.type == "cuda":
            torch.cuda.empty_cache()
        return [InferenceResponse(outs) for outs in per_request]

    def _batch_size(self, request):
        if not self.batching:
            return 1
        first = request.inputs()[0].shape()
        return int(first[0]) if first else 1

    def _input(self, spec, requests):
        torch = self.torch
        arrays = []
        for r in requests:
            t = next((x for x in r.inputs() if x.name() == spec.name), None)
            if t is None:
                raise _BatchError("input '%s' is missing from a request to model '%s'" % (spec.name, self.name),
                                  TritonError.INVALID_ARG)
            arrays.append(t.as_numpy())
        if spec.is_string:
            texts = []
            for a in arrays:
                for b in a.reshape(-1):
                    try:
                        texts.append(b.decode("utf-8") if isinstance(b, bytes) else str(b))
                    except UnicodeDecodeError:
                        raise _BatchError("input '%s' of model '%s' holds an element that is not UTF-8: the model "
                                          "takes it as List[str], so send text" % (spec.name, self.name),
                                          TritonError.INVALID_ARG)
            return texts
        if len(arrays) == 1:
            a = arrays[0]
            if not a.flags.writeable:
                a = a.copy()  # inline (small) tensors live in the frame's bytes
        else:
            a = np.concatenate(arrays, axis=0)
        tensor = torch.from_numpy(a)
        if self.device is not None and self.device.type != "cpu":
            tensor = tensor.to(self.device)
        return tensor

    def _results(self, result):
        torch = self.torch
        if isinstance(result, (tuple, list)) and not (isinstance(result, list) and _all_str(result)):
            if isinstance(result, list) and not self.aoti:
                raise _BatchError("output must be of type Tensor, List[str] or Tuple containing one of these two "
                                  "types. It should not be a List / Dictionary of Tensors or a Scalar")
            items = list(result)
            for i, item in enumerate(items):
                if isinstance(item, list) and not _all_str(item):
                    raise _BatchError("output at index %d must be of type Tensor or List[str], received List[%s]"
                                      % (i, type(item[0]).__name__ if item else "?"))
                if not isinstance(item, (list, torch.Tensor)):
                    raise _BatchError("output at index %d must be of type Tensor or List[str], received %s"
                                      % (i, type(item).__name__))
            return items
        if isinstance(result, (torch.Tensor, list)):
            return [result]
        raise _BatchError("output must be of type Tensor, List[str] or Tuple containing one of these two types. It "
                          "should not be a List / Dictionary of Tensors or a Scalar")

    def _split(self, spec, item, sizes):
        """One numpy array per request."""
        total = sum(sizes)
        if isinstance(item, list):
            if not spec.is_string:
                raise _BatchError("configuration expects datatype %s for output '%s', model provides List[str]"
                                  % (spec.data_type, spec.name), TritonError.INVALID_ARG)
            counts = sizes if self.batching else [len(item)]
            if sum(counts) > len(item):
                raise _BatchError("output '%s' of model '%s' has %d strings, the batch needs %d (one per batch element)"
                                  % (spec.name, self.name, len(item), sum(counts)), TritonError.INVALID_ARG)
            out, at = [], 0
            for n in counts:
                out.append(np.array([s.encode("utf-8") for s in item[at:at + n]], dtype=np.object_))
                at += n
            return out
        provided = _config_type(item.dtype)
        if provided != spec.data_type:
            raise _BatchError("configuration expects datatype %s for output '%s', model provides %s"
                              % (spec.data_type, spec.name, provided), TritonError.INVALID_ARG)
        if item.dim() == 0:
            raise _BatchError("output '%s' is a scalar which is not supported." % spec.name, TritonError.INVALID_ARG)
        array = item.detach().cpu().contiguous().numpy()
        if not self.batching:
            return [array]
        if array.shape[0] != total:
            raise _BatchError("output '%s' of model '%s' has %d rows along the first dimension, but the batch has %d: "
                              "with max_batch_size > 0 the model must return one row per batch element"
                              % (spec.name, self.name, array.shape[0], total), TritonError.INVALID_ARG)
        out, at = [], 0
        for n in sizes:
            out.append(array[at:at + n])
            at += n
        return out

    def finalize(self):
        self.model = None


def _all_str(items):
    return all(isinstance(s, str) for s in items)


def _config_type(dtype):
    name = str(dtype).replace("torch.", "")
    for config, torch_name in _CONFIG_TO_TORCH.items():
        if torch_name == name:
            return config
    return "torch.%s (no Triton datatype)" % name


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0].rstrip(".") if text else type(exc).__name__


def _call_spec(compiled, model):
    """(positional count, keyword names, result count or None for one tensor)
    from the package's call specification (pytree specs as JSON)."""
    try:
        in_spec, out_spec = (json.loads(s) for s in compiled.loader.get_call_spec())
        root = in_spec[1]
        args, kwargs = root["children_spec"]
        if any(c.get("type") is not None for c in args["children_spec"]):
            raise TritonModelException("model '%s': the package takes nested inputs (tuples, lists or dicts of "
                                       "tensors); export a forward() that takes tensors" % model)
        context = kwargs.get("context")
        keys = json.loads(context) if isinstance(context, str) and context != "null" else (context or [])
        out_root = out_spec[1]
        if out_root.get("type") is None:
            return len(args["children_spec"]), list(keys), None
        return len(args["children_spec"]), list(keys), len(out_root["children_spec"])
    except TritonModelException:
        raise
    except Exception as e:
        raise TritonModelException("Failed to parse input call specification for model \"%s\": %s" % (model, e))
