"""pb_utils.InferenceRequest: the requests execute() receives, and the BLS
requests a model builds and runs with exec()/async_exec() through the
server's scheduler."""
import asyncio
import json

from _nt_errors import TritonError, TritonModelException
from _nt_ipc import from_wire_int, wire_int
from _nt_response import CancelFlag, InferenceResponse, InferenceResponseSender, check_parameters
from _nt_runtime import runtime
from _nt_tensor import Tensor

TRITONSERVER_MEMORY_CPU = 0
TRITONSERVER_MEMORY_GPU = 1
_REQUIRED = object()


class PreferredMemory:
    def __init__(self, preferred_memory_type=TRITONSERVER_MEMORY_CPU, preferred_device_id=0):
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


class InferenceTrace:
    def __init__(self, context=None):
        self._context = context

    def get_context(self):
        return self._context


class InferenceRequest:
    def __init__(self, model_name=_REQUIRED, inputs=_REQUIRED, requested_output_names=_REQUIRED,
                 request_id="", correlation_id=0, model_version=-1, flags=0, timeout=0,
                 preferred_memory=None, trace=None, parameters=None):
        for arg, value in (("model_name", model_name), ("inputs", inputs),
                           ("requested_output_names", requested_output_names)):
            if value is _REQUIRED:
                raise TypeError("InferenceRequest(): missing required argument '%s'" % arg)
        for arg, value in (("model_name", model_name), ("inputs", inputs),
                           ("requested_output_names", requested_output_names), ("request_id", request_id),
                           ("correlation_id", correlation_id), ("model_version", model_version),
                           ("flags", flags)):
            if value is None:
                raise TypeError("InferenceRequest(): incompatible constructor arguments: %s must not be None" % arg)
        if isinstance(model_name, bytes):
            model_name = model_name.decode("utf-8")
        if not isinstance(model_name, str) or not isinstance(request_id, str):
            raise TypeError("InferenceRequest(): model_name and request_id must be str")
        if not isinstance(inputs, (list, tuple)) or not isinstance(requested_output_names, (list, tuple, set)):
            raise TypeError("InferenceRequest(): inputs and requested_output_names must be lists")
        for n in requested_output_names:
            if not isinstance(n, str):
                raise TypeError("InferenceRequest(): requested_output_names must hold str values")
        for t in inputs:
            if t is None:
                raise TritonModelException(
                    "Input tensor for request with id '%s' and model name '%s' should not be empty."
                    % (request_id, model_name))
            if not isinstance(t, Tensor):
                raise TypeError("InferenceRequest(): inputs must hold pb_utils.Tensor objects")
        if isinstance(correlation_id, bool) or not isinstance(correlation_id, (int, str)):
            raise TritonModelException("Correlation ID must be integer or string")
        if not isinstance(model_version, int) or not isinstance(flags, int) or not isinstance(timeout, int):
            raise TypeError("InferenceRequest(): model_version, flags and timeout must be int")
        self._model_name = model_name
        self._inputs = list(inputs)
        self._requested = list(requested_output_names)
        self._id = request_id
        self._correlation_id = correlation_id
        self._model_version = model_version
        self._flags = flags
        self._timeout = timeout
        self._parameters = check_parameters(parameters)
        self._trace = trace if trace is not None else InferenceTrace()
        self._sender = None
        self._release_flags = 1

    @classmethod
    def _incoming(cls, wire, inputs, batch, index, decoupled, spans=()):
        """`spans`: the (offset, size) h2s blocks of the batch's inputs (outputs that are views of them are not copied)."""
        r = cls.__new__(cls)
        r._model_name = ""
        r._inputs = inputs
        r._requested = list(wire["requested_outputs"])
        r._id = wire["id"]
        r._correlation_id = from_wire_int(wire["correlation_id"])
        r._model_version = -1
        r._flags = wire["flags"]
        r._timeout = wire["timeout"]
        r._parameters_json = wire["parameters"]
        r._trace = InferenceTrace()
        r._sender = None
        r._release_flags = 1
        r._batch = batch
        r._index = index
        r._decoupled = decoupled
        r._spans = spans
        r._cancel = CancelFlag(batch, index)
        return r

    # ---- what execute() reads ----

    def inputs(self):
        return list(self._inputs)

    def requested_output_names(self):
        return set(self._requested)

    def request_id(self):
        return self._id

    def correlation_id(self):
        return self._correlation_id

    def flags(self):
        return self._flags

    def set_flags(self, flags):
        self._flags = flags

    def timeout(self):
        return self._timeout

    def parameters(self):
        if hasattr(self, "_parameters_json"):
            return self._parameters_json
        return json.dumps(self._parameters)

    def trace(self):
        return self._trace

    def is_cancelled(self):
        """True once the server cancelled this request (its client went away or
        cancelled it, or its BLS caller did). Asks the server, as Triton's stub
        asks its parent; a request built for BLS is never cancelled."""
        flag = getattr(self, "_cancel", None)
        return flag is not None and flag.is_set()

    def set_release_flags(self, flags):
        self._release_flags = flags

    def get_response_sender(self):
        if self._sender is None:
            if not hasattr(self, "_batch"):
                raise TritonModelException("Response sender is only available for requests passed to execute.")
            self._sender = InferenceResponseSender(self._batch, self._index, set(self._requested), self._decoupled,
                                                   self._spans, self._cancel)
        return self._sender

    # ---- BLS ----

    def exec(self, decoupled=False):
        if runtime.phase != "ready":
            raise TritonModelException("BLS is only supported during the 'execute' function.")
        call_id, replies = runtime.open_call()
        try:
            wire_inputs = []
            for t in self._inputs:
                data = t._wire_bytes()
                size = memoryview(data).nbytes
                wire_inputs.append({"name": t._name, "datatype": t._datatype, "shape": t._shape,
                                    "offset": runtime.s2h.write(data), "size": size})
            runtime.send({"t": "bls", "id": call_id, "model": self._model_name, "version": self._model_version,
                          "decoupled": bool(decoupled),
                          "request": {"id": self._id, "correlation_id": wire_int(self._correlation_id), "flags": self._flags,
                                      "timeout": self._timeout,
                                      "parameters": json.dumps({k: wire_int(v) for k, v in self._parameters.items()}),
                                      "requested_outputs": self._requested, "inputs": wire_inputs}})
        except BaseException:
            runtime.close_call(call_id)
            raise
        iterator = ResponseIterator(call_id, replies)
        if decoupled:
            return iterator
        last = None
        for r in iterator:
            last = r
        return last if last is not None else InferenceResponse([])

    def async_exec(self, decoupled=False):
        loop = asyncio.get_running_loop()
        return loop.run_in_executor(None, self.exec, decoupled)


def _response_from_wire(msg):
    """Copies BLS outputs out of h2s (then the server may reuse the space)."""
    if msg.get("error"):
        return InferenceResponse([], TritonError._from_wire(msg["error"]))
    tensors = []
    offsets = []
    for o in msg["outputs"]:
        view = runtime.h2s.view(o["offset"], o["size"])
        t = Tensor._from_buffer(o["name"], o["datatype"], o["shape"], bytes(view) if o["datatype"] == "BYTES" else view)
        if t._array is not None:
            t._array = t._array.copy()
        tensors.append(t)
        offsets.append(o["offset"])
    if offsets:
        runtime.send({"t": "release_h2s", "offsets": offsets})
    params = msg.get("parameters")
    r = InferenceResponse(tensors)
    if params:
        r._parameters = json.loads(params) if isinstance(params, str) else params
    return r


class ResponseIterator:
    """Yields every response of a BLS call, including the (maybe empty) final one."""

    def __init__(self, call_id, replies):
        self._id = call_id
        self._replies = replies
        self._done = False

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        msg = self._replies.get()
        if msg["final"]:
            self._done = True
            runtime.close_call(self._id)
        return _response_from_wire(msg)

    def cancel(self):
        """Cancels the BLS request in flight. Its responses still come, up to the
        final one: typically an error with code CANCELLED from the model, or
        from the server if the request had not started."""
        if not self._done:
            runtime.send({"t": "bls_cancel", "id": self._id})

    def __del__(self):
        # Drain so the server's blocks are released.
        try:
            while not self._done:
                self.__next__()
        except Exception:
            pass
