"""tiny_llm: token-by-token generation over an ONNX decoder (see config.pbtxt)."""
import json
import os
import threading

import numpy as np
import triton_python_backend_utils as pb_utils

try:
    import onnxruntime as ort
    from tokenizers import Tokenizer
except ImportError as e:
    raise ImportError("tiny_llm needs the Python packages onnxruntime and tokenizers (%s): "
                      "python3 -m pip install onnxruntime tokenizers" % e) from e

MAX_CONTEXT = 256  # tokens the model is run on; older ones are dropped


def _text(s):
    return pb_utils.InferenceResponse([pb_utils.Tensor("text_output", np.array([s.encode()], dtype=np.object_))])


def _error(message, code=None):
    err = pb_utils.TritonError(message) if code is None else pb_utils.TritonError(message, code)
    return pb_utils.InferenceResponse(error=err)


def _whole(text):
    """Whether a token's text is whole printable characters (newline and tab too)."""
    return text != "" and "\ufffd" not in text and all(c.isprintable() or c in "\n\t" for c in text)


class TritonPythonModel:
    def initialize(self, args):
        version_dir = os.path.join(args["model_repository"], args["model_version"])
        model_dir = args["model_repository"]
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(os.path.join(version_dir, "model.onnx"), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        with open(os.path.join(model_dir, "tokenizer_config.json")) as f:
            eos = json.load(f).get("eos_token")
        if isinstance(eos, dict):  # Hugging Face's AddedToken form: {"content": "</s>", ...}
            eos = eos.get("content")
        self.eos_id = self.tokenizer.token_to_id(eos) if eos else None
        # Random weights pick lone UTF-8 continuation bytes and control bytes as
        # often as words; the config parameter whole_characters (true here) keeps
        # to tokens that decode to whole, printable characters. A real model
        # learned its byte order: leave it off.
        params = json.loads(args["model_config"]).get("parameters", {})
        self.mask = None
        if params.get("whole_characters", {}).get("string_value", "false") == "true":
            vocab = self.tokenizer.get_vocab_size()
            self.mask = np.array([not _whole(self.tokenizer.decode([i])) for i in range(vocab)])

    def execute(self, requests):
        for request in requests:
            threading.Thread(target=self._serve, args=(request,), daemon=True).start()
        return None

    def _serve(self, request):
        sender = request.get_response_sender()
        try:
            self._generate(request, sender)
        except Exception as e:  # one request's failure is its own error response, never the model's
            sender.send(_error("tiny_llm: %s" % e), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def _params(self, request):
        params = json.loads(request.parameters() or "{}")
        max_tokens = int(params.get("max_tokens", 16))
        temperature = float(params.get("temperature", 1.0))
        if max_tokens < 1:
            raise ValueError("max_tokens must be at least 1, got %d" % max_tokens)
        if temperature < 0:
            raise ValueError("temperature must be at least 0, got %s" % temperature)
        seed = params.get("seed")
        return max_tokens, temperature, np.random.default_rng(None if seed is None else int(seed))

    def _next_token(self, ids, temperature, rng):
        context = np.array([ids[-MAX_CONTEXT:]], dtype=np.int64)
        logits = self.session.run(["logits"], {"input_ids": context})[0][0, -1].astype(np.float64)
        if self.mask is not None:
            logits[self.mask[:len(logits)]] = -np.inf
        if temperature == 0:
            return int(np.argmax(logits))
        z = logits / temperature
        p = np.exp(z - z.max())
        return int(rng.choice(len(p), p=p / p.sum()))

    def _new_text(self, ids, prefix, read):
        return self.tokenizer.decode(ids[prefix:])[len(self.tokenizer.decode(ids[prefix:read])):]

    def _generate(self, request, sender):
        prompt = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().flat[0]
        prompt = prompt.decode("utf-8") if isinstance(prompt, bytes) else str(prompt)
        flag = pb_utils.get_input_tensor_by_name(request, "stream")
        stream = flag is not None and bool(flag.as_numpy().flat[0])
        max_tokens, temperature, rng = self._params(request)
        ids = self.tokenizer.encode(prompt).ids or ([self.eos_id] if self.eos_id is not None else [0])
        start = len(ids)
        # Incremental decoding (as vLLM does it): the new text is what the tokens
        # since `read` add to the decoding of a few tokens before them, so a
        # tokenizer that joins pieces (leading spaces, multi-byte characters)
        # decodes right, at a cost that does not grow with the stream.
        prefix, read = start, start
        for made in range(max_tokens):
            if request.is_cancelled():
                pb_utils.Logger.log_info("tiny_llm: request cancelled after %d tokens" % made)
                sender.send(_error("tiny_llm: request cancelled after %d tokens" % made, pb_utils.TritonError.CANCELLED),
                            flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                return
            token = self._next_token(ids, temperature, rng)
            if token == self.eos_id:
                break
            ids.append(token)
            if stream:
                piece = self._new_text(ids, prefix, read)
                if piece and not piece.endswith("\ufffd"):  # a character cut in two waits for its other bytes
                    sender.send(_text(piece))
                    prefix, read = read, len(ids)
        if not stream:
            sender.send(_text(self.tokenizer.decode(ids[start:])), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            return
        piece = self._new_text(ids, prefix, read)
        if piece:
            sender.send(_text(piece))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
