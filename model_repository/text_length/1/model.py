"""LENGTH = number of bytes of each TEXT element. BYTES tensors reach the
model as numpy object arrays of Python `bytes`, so non-ASCII text (Arabic,
emoji) counts its UTF-8 bytes, not its characters."""
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()
            lengths = np.array([[len(item) for item in row] for row in text], dtype=np.int64)
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("LENGTH", lengths)]))
        return responses
