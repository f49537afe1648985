"""The built-in model of the `square` backend (Triton's decoupled test
backend): a request with IN = n is answered with n responses of OUT = n,
sent from a thread of its own, then a flags-only FINAL (IN = 0: the FINAL
alone). Run by the stub in place of a model.py (backends/decoupled-test/)."""
import threading

import numpy as np

from _nt_errors import TritonError
from _nt_response import InferenceResponse
from _nt_tensor import Tensor

FINAL = 1  # TRITONSERVER_RESPONSE_COMPLETE_FINAL


class TritonPythonModel:
    def __init__(self, model_path):
        self.model_path = model_path
        self.lock = threading.Lock()
        self.threads = []

    def initialize(self, args):
        pass

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            values = [t.as_numpy() for t in request.inputs() if t.name() == "IN"]
            if not values or values[0].size != 1:
                sender.send(InferenceResponse(error=TritonError("square: expected one INT32 element in input 'IN'")), flags=FINAL)
                continue
            n = int(values[0].reshape(-1)[0])
            if n < 0:
                sender.send(InferenceResponse(error=TritonError("square: IN must not be negative, got %d" % n)), flags=FINAL)
                continue
            t = threading.Thread(target=self._answer, args=(sender, n), daemon=True)
            with self.lock:
                self.threads = [x for x in self.threads if x.is_alive()] + [t]
            t.start()
        return None

    def _answer(self, sender, n):
        for _ in range(n):
            sender.send(InferenceResponse([Tensor("OUT", np.array([n], dtype=np.int32))]))
        sender.send(flags=FINAL)

    def finalize(self):
        with self.lock:
            threads = list(self.threads)
        for t in threads:
            t.join()
