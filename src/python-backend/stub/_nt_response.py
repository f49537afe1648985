"""pb_utils.InferenceResponse and the InferenceResponseSender that every
request owns. Whatever the model returns from execute() also leaves through
the request's sender, so there is one path for responses to the server."""
import json
import threading

import numpy as np

from _nt_errors import TritonError, TritonModelException
from _nt_ipc import Blob, wire_int
from _nt_runtime import runtime
from _nt_shm import ShmSpaceError
from _nt_tensor import Tensor

TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
_OMITTED = object()
# Outputs up to this size travel inline in the response frame while its blob
# stays under the frame limit (ipc-protocol.ts INLINE_*); the rest use s2h.
INLINE_TENSOR_MAX_BYTES = 64 * 1024
INLINE_FRAME_MAX_BYTES = 1024 * 1024
# The frame limit (ipc-framing.ts MAX_FRAME_BYTES) and room for its JSON part,
# for outputs that go inline because the shared memory mount is full.
MAX_FRAME_BYTES = 256 * 1024 * 1024
FRAME_HEADROOM = 1024 * 1024


def check_parameters(parameters):
    """Response/request parameters: dict of str -> bool/int/str (§1.5, §1.7)."""
    if parameters is None:
        return {}
    if not isinstance(parameters, dict):
        raise TritonModelException("Expect parameters to be a dictionary, got %s" % type(parameters))
    for k, v in parameters.items():
        if not isinstance(k, str):
            raise TritonModelException("Expect parameters keys to have type str, found type %s" % type(k))
        if not isinstance(v, (bool, int, str)):
            raise TritonModelException(
                "Expect parameters values to have type bool/int/str, found type %s" % type(v))
    return dict(parameters)


class InferenceResponse:
    def __init__(self, output_tensors=_OMITTED, error=None, parameters=None):
        if output_tensors is _OMITTED:
            output_tensors = []
        if output_tensors is None:
            raise TypeError("InferenceResponse(): incompatible constructor arguments: output_tensors must be a list")
        if not isinstance(output_tensors, (list, tuple)):
            raise TypeError("InferenceResponse(): incompatible constructor arguments: output_tensors must be a list")
        for t in output_tensors:
            if t is None:
                raise TritonModelException("Output tensor for inference response should not be empty.")
            if not isinstance(t, Tensor):
                raise TypeError("InferenceResponse(): output_tensors must hold pb_utils.Tensor objects")
        if error is not None and not isinstance(error, TritonError):
            raise TypeError("InferenceResponse(): error must be a pb_utils.TritonError")
        self._outputs = list(output_tensors)
        self._error = error
        self._parameters = check_parameters(parameters)

    def output_tensors(self):
        return list(self._outputs)

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        return json.dumps(self._parameters)


class CancelFlag:
    """Whether request `index` of `batch` was cancelled, shared by the request
    and its response sender. The server holds the truth (it asks it); once
    true it stays true, so it is asked no more."""

    __slots__ = ("_batch", "_index", "_set")

    def __init__(self, batch, index):
        self._batch = batch
        self._index = index
        self._set = False

    def is_set(self):
        if not self._set:
            reply = runtime.call({"t": "is_cancelled", "batch": self._batch, "index": self._index})
            self._set = reply.get("value") is True
        return self._set


class Collected:
    """The responses of execute()'s returned list: they leave inside the
    execute_done message, their inline outputs in its one blob."""

    __slots__ = ("responses", "blob")

    def __init__(self):
        self.responses = []
        self.blob = Blob()


def _address(data):
    """Where a contiguous bytes-like object's first byte is."""
    array = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
    return array.__array_interface__["data"][0]


def write_response(response, requested, batch, index, final, collect=None, spans=()):
    """Outputs inline, as a range of the batch's own h2s inputs (`spans`) when
    they are views of one, or copied into s2h; then a 'response' message; the
    error wins over outputs. With `collect` (a Collected), the message waits
    there instead of being sent now."""
    outputs = []
    msg = {"t": "response", "batch": batch, "index": index, "final": final, "outputs": outputs}
    blob = collect.blob if collect is not None else None
    if response is not None:
        if response._error is not None:
            msg["error"] = response._error._wire()
        else:
            for t in response._outputs:
                if requested is not None and t._name not in requested:
                    continue
                data = t._wire_bytes()
                size = memoryview(data).nbytes
                if size <= INLINE_TENSOR_MAX_BYTES and (blob is None or blob.size + size <= INLINE_FRAME_MAX_BYTES):
                    if blob is None:
                        blob = Blob()
                    outputs.append({"name": t._name, "datatype": t._datatype, "shape": t._shape,
                                    "offset": blob.add(data), "size": size, "inline": True})
                    continue
                if spans:
                    offset = runtime.h2s.offset_in_h2s(_address(data), size, spans)
                    if offset is not None:
                        outputs.append({"name": t._name, "datatype": t._datatype, "shape": t._shape,
                                        "offset": offset, "size": size, "region": "h2s"})
                        continue
                try:
                    offset = runtime.s2h.write(data)
                except ShmSpaceError:
                    # The shared memory mount is full: the slower path, inline in the frame, where it fits.
                    if (blob.size if blob is not None else 0) + size > MAX_FRAME_BYTES - FRAME_HEADROOM:
                        raise
                    if blob is None:
                        blob = Blob()
                    outputs.append({"name": t._name, "datatype": t._datatype, "shape": t._shape,
                                    "offset": blob.add(data), "size": size, "inline": True})
                    continue
                outputs.append({"name": t._name, "datatype": t._datatype, "shape": t._shape,
                                "offset": offset, "size": size})
        if response._parameters:
            msg["parameters"] = {k: wire_int(v) for k, v in response._parameters.items()}
    if collect is not None:
        collect.responses.append(msg)
    else:
        runtime.send(msg, blob)


class InferenceResponseSender:
    """python_backend's rules (response_sender.cc): a non-decoupled model may
    send one response, at any time and with or without FINAL, and it is the
    request's answer at once; a second one, or FINAL before any, raises. A
    decoupled model sends any number until FINAL."""

    def __init__(self, batch, index, requested, decoupled, spans=(), cancel=None):
        self._cancel = cancel if cancel is not None else CancelFlag(batch, index)
        self._batch = batch
        self._index = index
        self._requested = requested
        self._decoupled = decoupled
        self._spans = spans
        self._closed = False
        self._sent = 0
        # Set by the runner while it delivers execute()'s return value: frames wait there.
        self._collect = None
        # While its request is rescheduled (between the execute that released it and the one
        # that has it again), what the model sends waits here:
        # [(response, final, error)], error a wire error of _close_with_error or None.
        self._held = None
        self._lock = threading.Lock()

    def send(self, response=None, flags=0):
        if flags not in (0, TRITONSERVER_RESPONSE_COMPLETE_FINAL):
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if flags == 0 and response is None:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set to zero.")
        if response is not None and not isinstance(response, InferenceResponse):
            raise TypeError("send(): response must be a pb_utils.InferenceResponse")
        final = flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL
        # Triton checks the non-decoupled rules before the closed sender.
        if not self._decoupled:
            if response is not None and self._sent > 0:
                raise TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send more than one response.")
            if response is None and self._sent == 0:
                raise TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send complete final before sending a "
                    "response.")
        if self._closed:
            raise TritonModelException("Unable to send response. Response sender has been closed.")
        if final:
            self._closed = True
        self._sent += 1
        if not self._decoupled:
            # The one response answers the request now (the server's view: final); a later
            # flags-only FINAL just closes the sender.
            if response is not None:
                self._emit(response, True)
            return
        self._emit(response, final)

    def _emit(self, response, final):
        with self._lock:
            if self._held is not None:
                self._held.append((response, final, None))
                return
            write_response(response, self._requested, self._batch, self._index, final, self._collect, self._spans)

    def _hold(self, collected):
        """Its request was released with RESCHEDULE: the slot of this execution ends (a
        'rescheduled' final in `collected`, not an answer) and later sends wait for _resume.
        False when the request already has its final response: nothing is rescheduled."""
        with self._lock:
            if self._answered():
                return False
            self._held = []
            collected.responses.append({"t": "response", "batch": self._batch, "index": self._index, "final": True,
                                        "outputs": [], "rescheduled": True})
            return True

    def _resume(self, batch, index, cancel):
        """The rescheduled request runs again as request `index` of `batch`: its responses go there."""
        with self._lock:
            self._batch = batch
            self._index = index
            self._cancel = cancel
            held = self._held or []
            self._held = None
            for response, final, error in held:
                if error is None:
                    write_response(response, self._requested, batch, index, final, None, self._spans)
                else:
                    runtime.send({"t": "response", "batch": batch, "index": index, "final": True, "outputs": [],
                                  "error": error})

    def _answered(self):
        """The request has its final response, as far as the server knows."""
        return self._closed or (not self._decoupled and self._sent > 0)

    def is_cancelled(self):
        """True once the server cancelled this sender's request (see InferenceRequest.is_cancelled)."""
        return self._cancel.is_set()

    def _close_with_error(self, message, code="INTERNAL"):
        """Ends the request with an error (INTERNAL unless told) unless it already ended."""
        if self._answered():
            return
        self._closed = True
        if self._held is not None:
            self._held.append((None, True, {"code": code, "message": message}))
            return
        msg = {"t": "response", "batch": self._batch, "index": self._index, "final": True,
               "outputs": [], "error": {"code": code, "message": message}}
        if self._collect is not None:
            self._collect.responses.append(msg)
        else:
            runtime.send(msg)

    def __del__(self):
        # A sender dropped without FINAL would leave its client waiting forever.
        try:
            if not self._answered() and self._held is None and runtime.phase in ("ready",):
                self._close_with_error(
                    "the model released the response sender of this request without sending a response "
                    "with TRITONSERVER_RESPONSE_COMPLETE_FINAL")
        except Exception:
            pass
