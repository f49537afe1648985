"""triton_python_backend_utils for nodetron: the module a Triton model.py
imports as pb_utils. Helper functions and constants as in Triton's file,
plus the classes Triton's stub injects from C++ (here pure Python, available
from import time on)."""
import numpy as np

from _nt_errors import TritonError, TritonModelException
from _nt_logger import Logger
from _nt_metrics import Metric, MetricFamily
from _nt_model_config import ModelConfig
from _nt_request import (InferenceRequest, InferenceTrace,  # noqa: F401 PreferredMemory, ResponseIterator,
                         TRITONSERVER_MEMORY_CPU, TRITONSERVER_MEMORY_GPU)
from _nt_response import InferenceResponse, InferenceResponseSender, TRITONSERVER_RESPONSE_COMPLETE_FINAL
from _nt_model_control import get_model_dir, is_model_ready, load_model, unload_model
from _nt_tensor import Tensor, deserialize_bytes, serialize_bytes

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2

TRITON_STRING_TO_NUMPY = {
    "TYPE_BOOL": bool,
    "TYPE_UINT8": np.uint8,
    "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64,
    "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16,
    "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16,
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}

_CODE_TO_NUMPY = {1: bool, 2: np.uint8, 3: np.uint16, 4: np.uint32, 5: np.uint64, 6: np.int8, 7: np.int16,
                  8: np.int32, 9: np.int64, 10: np.float16, 11: np.float32, 12: np.float64, 13: np.object_}


def get_input_tensor_by_name(inference_request, name):
    for t in inference_request.inputs():
        if t.name() == name:
            return t
    return None


def get_output_tensor_by_name(inference_response, name):
    for t in inference_response.output_tensors():
        if t.name() == name:
            return t
    return None


def get_input_config_by_name(model_config, name):
    for i in model_config.get("input", []):
        if i["name"] == name:
            return i
    return None


def get_output_config_by_name(model_config, name):
    for o in model_config.get("output", []):
        if o["name"] == name:
            return o
    return None


def using_decoupled_model_transaction_policy(model_config):
    if "model_transaction_policy" in model_config:
        return model_config["model_transaction_policy"].get("decoupled", False)
    return False


def triton_to_numpy_type(data_type):
    return _CODE_TO_NUMPY.get(data_type)


def numpy_to_triton_type(data_type):
    if data_type in (np.object_, np.bytes_):
        return 13
    for code, t in _CODE_TO_NUMPY.items():
        if t is not np.object_ and np.dtype(t) == np.dtype(data_type):
            return code
    return None


def triton_string_to_numpy(triton_type_string):
    return TRITON_STRING_TO_NUMPY[triton_type_string]


def serialize_byte_tensor(input_tensor):
    """Object/S array -> a uint8 array (flat) holding the length-prefixed stream."""
    if input_tensor.size == 0:
        return np.empty([0], dtype=np.object_)
    if input_tensor.dtype != np.object_ and input_tensor.dtype.type != np.bytes_:
        raise TritonModelException("cannot serialize bytes tensor: invalid datatype")
    return np.frombuffer(serialize_bytes(input_tensor), dtype=np.uint8)


def deserialize_bytes_tensor(encoded_tensor):
    return deserialize_bytes(bytes(encoded_tensor))


__all__ = [name for name in dir() if not name.startswith("_")] + ["InferenceResponseSender", "ResponseIterator"]
