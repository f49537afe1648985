"""The built-in model of the `repeat` backend (Triton's decoupled test
backend): for each request, one response per element of IN, carrying OUT =
IN[i] (output_num_elements copies of it) and IDX = i, DELAY[i] ms apart,
sent from a thread of its own, then a flags-only FINAL; execute itself
returns after WAIT ms, so that requests overlap. Run by the stub in place of
a model.py (backends/decoupled-test/)."""
import json
import threading
import time

import numpy as np

from _nt_errors import TritonError, TritonModelException
from _nt_response import InferenceResponse
from _nt_tensor import Tensor

FINAL = 1  # TRITONSERVER_RESPONSE_COMPLETE_FINAL


def _input(request, name):
    for t in request.inputs():
        if t.name() == name:
            return t.as_numpy()
    return None


class TritonPythonModel:
    def __init__(self, model_path):
        self.model_path = model_path
        self.lock = threading.Lock()
        self.active = []
        self.copies = 1

    def initialize(self, args):
        config = json.loads(args["model_config"])
        param = config.get("parameters", {}).get("output_num_elements", {}).get("string_value", "1")
        try:
            self.copies = max(1, int(param))
        except ValueError:
            raise TritonModelException("parameter 'output_num_elements' of model '%s' must be a whole number, got '%s'"
                                       % (config.get("name", ""), param))

    def execute(self, requests):
        for request in requests:
            values = _input(request, "IN")
            delays = _input(request, "DELAY")
            wait = _input(request, "WAIT")
            sender = request.get_response_sender()
            if values is None:
                sender.send(InferenceResponse(error=TritonError("repeat: the request has no input 'IN'")), flags=FINAL)
                continue
            values = values.copy().reshape(-1)
            delays = np.zeros(values.shape, dtype=np.uint32) if delays is None else delays.copy().reshape(-1)
            if delays.shape != values.shape:
                sender.send(InferenceResponse(error=TritonError(
                    "expected IN and DELAY shapes to match, got %s and %s" % (list(values.shape), list(delays.shape)))), flags=FINAL)
                continue
            t = threading.Thread(target=self._send_all, args=(sender, values, delays), daemon=True)
            with self.lock:
                self.active = [x for x in self.active if x.is_alive()] + [t]
            t.start()
            if wait is not None and wait.size > 0:
                time.sleep(int(wait.reshape(-1)[0]) / 1000.0)
        return None

    def _send_all(self, sender, values, delays):
        for i, (v, d) in enumerate(zip(values, delays)):
            time.sleep(int(d) / 1000.0)
            sender.send(InferenceResponse([
                Tensor("OUT", np.full([self.copies], v, dtype=np.int32)),
                Tensor("IDX", np.array([i], dtype=np.uint32)),
            ]))
        sender.send(flags=FINAL)

    def finalize(self):
        with self.lock:
            threads = list(self.active)
        for t in threads:
            t.join()
