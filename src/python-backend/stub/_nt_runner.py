"""The TritonPythonModel lifecycle inside the stub: import model.py as
"<version>.model", auto_complete_config, initialize, execute (sync or async,
default or decoupled), is_ready (_nt_readiness.py), finalize; with Triton's
error texts (§2)."""
import asyncio
import functools
import importlib
import inspect
import json
import os

from _nt_errors import TritonModelException
from _nt_logger import internal_log
from _nt_model_config import ModelConfig
from _nt_readiness import Readiness
from _nt_request import InferenceRequest
from _nt_response import Collected, InferenceResponse, TRITONSERVER_RESPONSE_COMPLETE_FINAL
from _nt_runtime import runtime
from _nt_tensor import Tensor

_STUB_DIR = os.path.dirname(os.path.abspath(__file__))
# Models nodetron ships for backends that are not Python (the model author writes no model.py):
# the module whose TritonPythonModel(model_path) runs the version's model file.
BUILTIN_MODELS = {"pytorch": "_nt_torch_model", "repeat": "_nt_repeat_model", "square": "_nt_square_model"}
RELEASE_RESCHEDULE = 2  # pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE
SEQUENCE_START = 1  # pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
# Triton's text when the scheduler cannot take the request back, and what to do.
NO_RESCHEDULE = ("Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured "
                 "to handle such a flag. Only the iterative sequence batcher takes a request back: add "
                 "'sequence_batching { iterative_sequence: true }' to the model's config, or answer the request in "
                 "the execution that has it.")


def format_exception(exc):
    """`<Type>: <msg>\\n\\nAt:\\n  <file>(<line>): <func>\\n`, innermost frame first."""
    lines = ["%s: %s" % (type(exc).__name__, exc), "", "At:"]
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        # The stub's own frames are not the model's business (Triton's C++ stub has none).
        if os.path.dirname(os.path.abspath(tb.tb_frame.f_code.co_filename)) != _STUB_DIR:
            frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    for file, line, func in reversed(frames):
        lines.append("  %s(%d): %s" % (file, line, func))
    return "\n".join(lines) + "\n"


class ModelRunner:
    def __init__(self, model_path, name, builtin=None):
        self.model_path = model_path
        self.name = name
        # A BUILTIN_MODELS key: run that model on model_path instead of importing model_path.
        self.builtin = builtin
        self.model_class = None
        self.model = None
        self.decoupled = False
        # The model's scheduler takes a rescheduled request back (iterative sequence batching).
        self.reschedulable = False
        # Decoupled: the response sender of each rescheduled request, by correlation id, until the
        # request comes back (its sequence runs nothing else in between: the scheduler puts it first).
        self.held = {}
        # Set once initialize() succeeded; its `defined` says whether model.py has is_ready().
        self.readiness = None

    def import_model(self):
        if self.builtin is not None:
            module = importlib.import_module(BUILTIN_MODELS[self.builtin])
            self.model_class = functools.partial(module.TritonPythonModel, self.model_path)
            return
        if not os.path.isfile(self.model_path):
            raise TritonModelException(
                "Failed to preinitialize Python stub: Python model file not found in '%s'" % self.model_path)
        version_dir = os.path.dirname(os.path.abspath(self.model_path))
        version = os.path.basename(version_dir)
        module_name = os.path.splitext(os.path.basename(self.model_path))[0]
        module = importlib.import_module("%s.%s" % (version, module_name))
        cls = getattr(module, "TritonPythonModel", None)
        if cls is None:
            raise TritonModelException("Python model %s does not define class TritonPythonModel." % self.model_path)
        self.model_class = cls

    # ---- commands ----

    def auto_complete(self, config_json):
        try:
            self.import_model()
            config = json.loads(config_json)
            fn = getattr(self.model_class, "auto_complete_config", None)
            if fn is None:
                return {"t": "auto_complete_done", "config": config_json}
            result = fn(ModelConfig(config))
            if not isinstance(result, ModelConfig):
                return {"t": "auto_complete_done", "error":
                        "auto_complete_config function in model '%s' must return a valid pb.ModelConfig object."
                        % self.name}
            return {"t": "auto_complete_done", "config": json.dumps(result.as_dict())}
        except Exception as e:
            # Not logged here: the server's load-failure line carries the text and its traceback (once).
            return {"t": "auto_complete_done", "error": _text(e)}

    def initialize(self, args, decoupled, reschedulable=False):
        self.decoupled = decoupled
        self.reschedulable = reschedulable
        runtime.decoupled = decoupled
        runtime.phase = "initializing"
        try:
            self.import_model()
            self.model = self.model_class()
            if not hasattr(self.model, "execute"):
                raise TritonModelException("Python model %s does not implement `execute` method." % self.model_path)
            init = getattr(self.model, "initialize", None)
            if init is not None:
                result = init(args)
                if inspect.iscoroutine(result):
                    asyncio.run_coroutine_threadsafe(result, runtime.loop()).result()
        except Exception as e:
            # Not logged here: the server's load-failure line carries the text and its traceback (once).
            return {"t": "init_done", "error": _text(e)}
        runtime.phase = "ready"
        self.readiness = Readiness(self.model, format_exception)
        if self.readiness.defined:
            return {"t": "init_done", "is_ready": True}
        return {"t": "init_done"}

    def execute(self, message):
        batch = message["batch"]
        blob = message.get("blob")
        # A frame whose inline tensors are all empty has no blob.
        blob_view = memoryview(blob if blob is not None else bytearray())
        requests = []
        spans = []
        collected = Collected()
        # Requests cancelled while the batch waited in the pipe (already answered): the model never sees them.
        skip = runtime.begin_batch(batch)
        for index, wire in enumerate(message["requests"]):
            if index in skip:
                continue
            inputs = []
            for i in wire["inputs"]:
                offset = i["offset"]
                size = i["size"]
                if i.get("inline"):
                    if offset + size > len(blob_view):
                        raise ValueError("inline tensor bytes %d..%d are beyond the frame" % (offset, offset + size))
                    view = blob_view[offset:offset + size]
                else:
                    view = runtime.h2s.view(offset, size)
                    spans.append((offset, size))
                starts = i.get("starts")
                if starts is not None:
                    starts = runtime.h2s.view(starts, 4 * i["elements"])
                inputs.append(Tensor._from_buffer(i["name"], i["datatype"], i["shape"], view, starts))
            # A decoupled model may change an input after sending a view of it: its outputs are copied.
            request = InferenceRequest._incoming(wire, inputs, batch, index, self.decoupled,
                                                 () if self.decoupled else spans)
            if self.held:
                self._resume(request)
            requests.append(request)
        if not requests:
            runtime.send({"t": "execute_done", "batch": batch})
            return
        try:
            result = self.model.execute(requests)
            if inspect.iscoroutine(result):
                future = asyncio.run_coroutine_threadsafe(result, runtime.loop())
                if self.decoupled:
                    future.add_done_callback(_log_background_failure)
                    result = None
                else:
                    result = future.result()
            error = self._deliver(requests, result, collected)
            if error is not None:
                # python_backend raises these in the stub: the same prefix as an exception in execute.
                error = "Failed to process the request(s) for model '%s', message: %s" % (self.name, error)
                internal_log("ERROR", error)
        except Exception as e:
            error = "Failed to process the request(s) for model '%s', message: %s" % (self.name, format_exception(e))
            internal_log("ERROR", error)
        if error is not None:
            for r in requests:
                if r._sender is not None:
                    r._sender._closed = True
        # The responses of a returned list leave inside execute_done: one message, one write.
        done = {"t": "execute_done", "batch": batch}
        if collected.responses:
            done["responses"] = collected.responses
        if error:
            done["error"] = error
        runtime.send(done, collected.blob)

    def _deliver(self, requests, result, collected):
        """Checks execute()'s return value and collects its responses in
        `collected`; returns a batch error text or None."""
        if self.decoupled:
            if result is not None:
                return ("Python model '%s' is using the decoupled mode and the execute function must return None."
                        % self.name)
            for request in requests:
                if request._release_flags != RELEASE_RESCHEDULE:
                    continue
                sender = request.get_response_sender()
                if not self.reschedulable:
                    sender._close_with_error(NO_RESCHEDULE, "UNSUPPORTED")
                elif sender._hold(collected):
                    self.held[request._correlation_id] = sender
            return None
        if result is None:
            result = [None] * len(requests)
        if not isinstance(result, list):
            return "Expected a list in the execute return, found type '%s'." % type(result).__name__
        if len(result) != len(requests):
            return ("Number of InferenceResponse objects do not match the number of InferenceRequest objects. "
                    "InferenceRequest(s) size is:%d, and InferenceResponse(s) size is:%d"
                    % (len(requests), len(result)))
        for request, r in zip(requests, result):
            if r is not None and request._release_flags == RELEASE_RESCHEDULE:
                return ("Expected a None object in the execute function return list for reschduled request, found "
                        "type '%s'." % type(r))
            if r is not None and not isinstance(r, InferenceResponse):
                return ("Expected an 'InferenceResponse' object in the execute function return list, found type "
                        "'%s'." % type(r).__name__)
        for request, response in zip(requests, result):
            if response is None and request._release_flags == RELEASE_RESCHEDULE:
                sender = request.get_response_sender()
                if self.reschedulable:
                    # The same request comes back in a later execute, with a sender of its own.
                    sender._hold(collected)
                    continue
                sender._collect = collected
                sender._close_with_error(NO_RESCHEDULE, "UNSUPPORTED")
                sender._collect = None
                continue
            if response is None and request._sender is not None:
                continue
            sender = request.get_response_sender()
            sender._collect = collected
            try:
                if response is not None:
                    sender.send(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                else:
                    # Nothing answered this request and nothing can: say so instead of hanging the client.
                    sender._close_with_error(
                        "Python model '%s' returned None for a request and did not use its response sender"
                        % self.name)
            finally:
                sender._collect = None
        return None

    def _resume(self, request):
        """A decoupled request back after a RESCHEDULE keeps the response sender it had: what
        the model sent meanwhile (from another thread) leaves now, in this execution's slot. A
        request that starts a sequence is a new one: a sender still held for its id belonged
        to a request the server ended without running it again."""
        key = request._correlation_id
        if key not in self.held:
            return
        sender = self.held.pop(key)
        if request._flags & SEQUENCE_START:
            return
        sender._resume(request._batch, request._index, request._cancel)
        request._sender = sender

    def finalize(self):
        runtime.phase = "finalizing"
        fn = getattr(self.model, "finalize", None) if self.model is not None else None
        if fn is not None:
            try:
                result = fn()
                if inspect.iscoroutine(result):
                    asyncio.run_coroutine_threadsafe(result, runtime.loop()).result()
            except Exception as e:
                internal_log("ERROR", "Failed to finalize Python stub: " + _text(e))
        runtime.stop_loop()


def _text(exc):
    if isinstance(exc, TritonModelException):
        return str(exc)
    return format_exception(exc)


def _log_background_failure(future):
    exc = future.exception()
    if exc is not None:
        internal_log("ERROR", "Failed to process the request(s) in the background: " + format_exception(exc))

