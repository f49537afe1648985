"""pb_utils.Tensor: a named numpy array. Incoming tensors are zero-copy views
of the shared-memory region; BYTES tensors are object arrays of `bytes`,
carried on the wire in Triton's 4-byte little-endian length-prefixed form
(_nt_bytes_codec.py)."""
import numpy as np

from _nt_bytes_codec import deserialize_bytes, serialize_bytes  # noqa: F401 (pb_utils imports them from here)
from _nt_errors import TritonModelException

# Triton datatype string <-> numpy dtype, and the numeric codes of
# triton_to_numpy_type (python_backend.md §1.2).
_DT_TO_NP = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "FP16": np.float16, "FP32": np.float32, "FP64": np.float64, "BYTES": np.object_,
}
DT_CODES = {"BOOL": 1, "UINT8": 2, "UINT16": 3, "UINT32": 4, "UINT64": 5, "INT8": 6, "INT16": 7,
            "INT32": 8, "INT64": 9, "FP16": 10, "FP32": 11, "FP64": 12, "BYTES": 13, "BF16": 14}


_DT_OF_NP = {np.dtype(t): name for name, t in _DT_TO_NP.items() if name != "BYTES"}


def numpy_dtype_to_datatype(dtype):
    if not isinstance(dtype, np.dtype):
        dtype = np.dtype(dtype)
    if dtype.kind in ("O", "S"):
        return "BYTES"
    name = _DT_OF_NP.get(dtype)
    if name is not None:
        return name
    for name, t in _DT_TO_NP.items():
        if name != "BYTES" and np.dtype(t) == dtype:
            return name
    return None


class _DLPackCapsule:
    """Lets numpy import a bare DLPack capsule (np.from_dlpack wants __dlpack__)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


class Tensor:
    _starts = None  # BYTES inputs: the host's element index (deserialize_bytes)

    def __init__(self, name, array, *_args):
        if name is None or array is None:
            raise TypeError("Tensor(): incompatible constructor arguments: name and ndarray are required")
        if not isinstance(name, str):
            raise TypeError("Tensor(): incompatible constructor arguments: name must be str")
        if name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        if not isinstance(array, np.ndarray):
            raise TypeError("Tensor(): incompatible constructor arguments: expected a numpy.ndarray")
        datatype = numpy_dtype_to_datatype(array.dtype)
        if datatype is None:
            raise TritonModelException("NumPy dtype is not supported.")
        self._name = name
        self._datatype = datatype
        self._shape = [int(d) for d in array.shape]
        if datatype == "BYTES":
            self._array = None
            self._raw = serialize_bytes(array)
        else:
            self._array = array if array.flags["C_CONTIGUOUS"] else np.ascontiguousarray(array)
            self._raw = None

    @classmethod
    def _wrap(cls, name, datatype, shape, array=None, raw=None):
        t = cls.__new__(cls)
        t._name = name
        t._datatype = datatype
        t._shape = [int(d) for d in shape]
        t._array = array
        t._raw = raw
        return t

    @classmethod
    def _from_buffer(cls, name, datatype, shape, view, starts=None):
        """A tensor over `view` (zero-copy for fixed-size types); `starts`: see deserialize_bytes."""
        if datatype == "BYTES":
            t = cls._wrap(name, datatype, shape, raw=view)
            t._starts = starts
            return t
        if datatype == "BF16":
            return cls._wrap(name, datatype, shape, array=np.frombuffer(view, dtype=np.uint16).reshape(shape))
        dtype = _DT_TO_NP.get(datatype)
        if dtype is None:
            raise TritonModelException("Unsupported datatype '%s' for tensor '%s'" % (datatype, name))
        return cls._wrap(name, datatype, shape, array=np.frombuffer(view, dtype=dtype).reshape(shape))

    @staticmethod
    def from_dlpack(name, dlpack_obj):
        if name is None or name == "" or dlpack_obj is None:
            raise TritonModelException("Tensor name cannot be an empty string." if name == "" else
                                       "Invalid arguments: name and DLPack object are required.")
        obj = dlpack_obj if hasattr(dlpack_obj, "__dlpack__") else _DLPackCapsule(dlpack_obj)
        try:
            array = np.from_dlpack(obj)
        except Exception as e:
            raise TritonModelException("Failed to import DLPack tensor: %s" % e)
        if not array.flags["C_CONTIGUOUS"]:
            raise TritonModelException(
                "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored in C-Order "
                "are supported.")
        return Tensor(name, array)

    def name(self):
        return self._name

    def shape(self):
        return list(self._shape)

    def is_cpu(self):
        return True

    def triton_dtype(self):
        return DT_CODES[self._datatype]

    def as_numpy(self):
        if self._datatype == "BF16":
            raise TritonModelException(
                "Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and from_dlpack() instead.")
        if self._datatype == "BYTES":
            return deserialize_bytes(self._raw, self._starts).reshape(self._shape)
        return self._array

    def to_dlpack(self):
        return self.__dlpack__()

    def __dlpack__(self, stream=None):
        if self._datatype == "BYTES":
            raise TritonModelException("DLPack does not have support for string tensors.")
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)

    def _wire_bytes(self):
        """The bytes to put in shared memory (a buffer; no copy for fixed-size types)."""
        if self._datatype == "BYTES":
            return self._raw
        return self._array.reshape(-1).view(np.uint8) if self._array.size > 0 else b""

    def __repr__(self):
        return "Tensor(name=%r, datatype=%s, shape=%r)" % (self._name, self._datatype, self._shape)
