"""OUTPUT = INPUT0 + INPUT1 for two FP32 vectors of the same length."""
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        out = pb_utils.get_output_config_by_name(config, "OUTPUT")
        self.out_dtype = pb_utils.triton_string_to_numpy(out["data_type"])

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            if a.shape != b.shape:
                # A per-request error: the other requests of the batch still get answers.
                error = pb_utils.TritonError(
                    "INPUT0 and INPUT1 must have the same shape, got %s and %s" % (list(a.shape), list(b.shape)),
                    pb_utils.TritonError.INVALID_ARG)
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            out = pb_utils.Tensor("OUTPUT", (a + b).astype(self.out_dtype))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
