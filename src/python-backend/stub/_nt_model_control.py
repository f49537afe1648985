"""pb_utils.get_model_dir and the model-control calls (load_model,
unload_model, is_model_ready), answered by the server."""
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
    if files:
        raise TritonModelException("Failed to load model: file overrides are not supported")
    _call("load_model", [model_name, config])


def unload_model(model_name, unload_dependents=False):
    _call("unload_model", [model_name, bool(unload_dependents)])


def is_model_ready(model_name, model_version=""):
    return bool(_call("is_model_ready", [model_name, str(model_version)]))
