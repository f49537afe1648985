"""WORDS = each NUMBER as humanize.intword writes it ("1.2 million"), ORDINAL
= humanize.ordinal ("3rd"). `humanize` is not in the server's Python: it
comes from the requirements.txt beside config.pbtxt."""
import humanize
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            numbers = pb_utils.get_input_tensor_by_name(request, "NUMBER").as_numpy()
            words = np.array([humanize.intword(int(n)).encode() for n in numbers], dtype=np.object_)
            ordinal = np.array([humanize.ordinal(int(n)).encode() for n in numbers], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("WORDS", words), pb_utils.Tensor("ORDINAL", ordinal)]))
        return responses
