"""pb_utils.get_model_dir and the model-control calls (load_model,
unload_model, is_model_ready), answered by the server's repository API
(model-control.ts on the host side words the failures as python_backend
does: "Failed to load model: <the server's error>")."""
import base64

from _nt_errors import TritonModelException
from _nt_runtime import runtime

_model_dir = [""]


def set_model_dir(path):
    _model_dir[0] = path


def get_model_dir():
    """The version directory of the model (the folder holding model.py)."""
    return _model_dir[0]


def _call(name, args):
    if runtime.phase not in ("initializing", "ready"):
        raise TritonModelException("%s is not supported in auto_complete_config or finalize." % name)
    reply = runtime.call({"t": "call", "name": name, "args": args})
    if reply.get("error"):
        raise TritonModelException(reply["error"])
    return reply.get("value")


def load_model(model_name, config="", files=None):
    """`config`: a JSON model config overriding the model's; `files`: {"file:<path>": bytes},
    an override model folder (it needs `config`). Explicit model control mode only."""
    if not isinstance(model_name, str) or not isinstance(config, str):
        raise TypeError("load_model(): model_name and config must be str")
    wire = {}
    if files is not None:
        if not isinstance(files, dict):
            raise TritonModelException(
                "failed to load model '%s', files should be a dictionary of file paths and file contents" % model_name)
        for path, content in files.items():
            if not isinstance(path, str) or not isinstance(content, (bytes, bytearray, memoryview)):
                raise TypeError("load_model(): files must map str file paths to bytes contents")
            wire[path] = base64.b64encode(bytes(content)).decode("ascii")
    _call("load_model", [model_name, config, wire])


def unload_model(model_name, unload_dependents=False):
    if not isinstance(model_name, str):
        raise TypeError("unload_model(): model_name must be str")
    _call("unload_model", [model_name, bool(unload_dependents)])


def is_model_ready(model_name, model_version=""):
    if not isinstance(model_name, str) or not isinstance(model_version, str):
        raise TypeError("is_model_ready(): model_name and model_version must be str")
    return bool(_call("is_model_ready", [model_name, model_version]))
