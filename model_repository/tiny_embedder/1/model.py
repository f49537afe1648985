"""tiny_embedder: text -> token ids -> ONNX -> a unit-length vector (see config.pbtxt)."""
import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils

try:
    import onnxruntime as ort
    from tokenizers import Tokenizer
except ImportError as e:
    raise ImportError("tiny_embedder needs the Python packages onnxruntime and tokenizers (%s): "
                      "python3 -m pip install onnxruntime tokenizers" % e) from e

MAX_TOKENS = 512  # longer texts are cut, as real embedding models cut at their context


class TritonPythonModel:
    def initialize(self, args):
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        version_dir = os.path.join(args["model_repository"], args["model_version"])
        self.session = ort.InferenceSession(os.path.join(version_dir, "model.onnx"), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(os.path.join(args["model_repository"], "tokenizer.json"))
        self.size = self.session.get_outputs()[0].shape[-1]

    def _embed(self, text):
        ids = self.tokenizer.encode(text).ids[:MAX_TOKENS] or [0]
        return self.session.run(None, {"input_ids": np.array([ids], dtype=np.int64)})[0][0]

    def execute(self, requests):
        responses = []
        for request in requests:
            try:
                size = int(json.loads(request.parameters() or "{}").get("dimensions", self.size))
                if not 1 <= size <= self.size:
                    raise ValueError("dimensions must be between 1 and %d, got %d" % (self.size, size))
                texts = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().reshape(-1)
                rows = []
                for t in texts:
                    v = self._embed(t.decode("utf-8") if isinstance(t, bytes) else str(t))[:size]
                    rows.append(v / np.linalg.norm(v))
                responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("embedding", np.stack(rows).astype(np.float32))]))
            except Exception as e:  # one request's failure is its own error response
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError("tiny_embedder: %s" % e)))
        return responses
