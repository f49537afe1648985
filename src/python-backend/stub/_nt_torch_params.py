"""The config parameters of Triton's pytorch backend, parsed with its rules
(backend_common's ParseBoolValue / ParseIntValue) and texts, for the
built-in PyTorch model (_nt_torch_model.py). Pure: no torch import here;
what each setting does to torch is applied by the model."""

# Triton's defaults: optimized execution, inference mode and cuDNN on; the
# JIT and fuser switches untouched unless set (None).
_BOOLS = (
    # (parameter, attribute, inverted)
    ("DISABLE_OPTIMIZED_EXECUTION", "optimized_execution", True),
    ("INFERENCE_MODE", "inference_mode", False),
    ("DISABLE_CUDNN", "cudnn", True),
    ("ENABLE_CACHE_CLEANING", "cache_cleaning", False),
    # The torch_aoti platform's spelling of the same switch.
    ("CACHE_CLEANING_ENABLED", "cache_cleaning", False),
    ("ENABLE_WEIGHT_SHARING", "weight_sharing", False),
    ("ENABLE_TENSOR_FUSER", "tensor_fuser", False),
    ("ENABLE_JIT_PROFILING", "jit_profiling", False),
    ("ENABLE_JIT_EXECUTOR", "jit_executor", False),
)
_INTS = (("INTRA_OP_THREAD_COUNT", "intra_op_threads"), ("INTER_OP_THREAD_COUNT", "inter_op_threads"))


class ParameterError(ValueError):
    pass


def parse_bool(text):
    low = text.lower()
    if low in ("true", "on", "1"):
        return True
    if low in ("false", "off", "0"):
        return False
    raise ParameterError("failed to convert '%s' to boolean" % text)


def parse_int(text):
    """std::stoi: leading whitespace and sign, then digits; the rest ignored."""
    s = text.lstrip()
    digits = 0
    if s[:1] in ("+", "-"):
        digits = 1
    end = digits
    while end < len(s) and s[end].isdigit():
        end += 1
    if end == digits:
        raise ParameterError("failed to convert '%s' to integral number" % text)
    return int(s[:end])


class TorchParameters:
    def __init__(self):
        self.present = False
        self.optimized_execution = True
        self.inference_mode = True
        self.cudnn = True
        self.cache_cleaning = False
        self.weight_sharing = False
        self.tensor_fuser = None
        self.jit_profiling = None
        self.jit_executor = None
        self.intra_op_threads = -1
        self.inter_op_threads = -1
        # Which keys the config set (for the log lines and notes).
        self.given = set()


def parse_parameters(config, model_name):
    """config: the model config dict. Raises ParameterError naming the
    parameter, the model and the bad value."""
    p = TorchParameters()
    params = config.get("parameters") or {}
    p.present = "parameters" in config and bool(params)
    for key, attr, inverted in _BOOLS:
        text = _value(params, key)
        if text is None:
            continue
        try:
            value = parse_bool(text)
        except ParameterError as e:
            raise ParameterError("Failed to parse '%s' parameter for model '%s': %s. Use true or false."
                                 % (key, model_name, e))
        setattr(p, attr, not value if inverted else value)
        p.given.add(key)
    for key, attr in _INTS:
        text = _value(params, key)
        if text is None:
            continue
        try:
            setattr(p, attr, parse_int(text))
        except ParameterError as e:
            raise ParameterError("Failed to parse '%s' parameter for model '%s': %s. Use a thread count such as 4."
                                 % (key, model_name, e))
        p.given.add(key)
    return p


def _value(params, key):
    entry = params.get(key)
    if entry is None:
        return None
    if isinstance(entry, dict):
        return str(entry.get("string_value", ""))
    return str(entry)


def log_lines(p, instance):
    """Triton's INFO lines for the settings (it prints them when the config has parameters)."""
    if not p.present:
        return []
    on = lambda v: "enabled" if v else "disabled"  # noqa: E731
    lines = [
        "Optimized execution is %s for model instance '%s'" % (on(p.optimized_execution), instance),
        "Cache Cleaning is %s for model instance '%s'" % (on(p.cache_cleaning), instance),
        "Inference Mode is %s for model instance '%s'" % (on(p.inference_mode), instance),
        "cuDNN is %s for model instance '%s'" % (on(p.cudnn), instance),
    ]
    for attr, label in (("tensor_fuser", "Tensor fuser"), ("weight_sharing", "Weight sharing"),
                        ("jit_profiling", "Jit profiling"), ("jit_executor", "Jit executor")):
        key = {"tensor_fuser": "ENABLE_TENSOR_FUSER", "weight_sharing": "ENABLE_WEIGHT_SHARING",
               "jit_profiling": "ENABLE_JIT_PROFILING", "jit_executor": "ENABLE_JIT_EXECUTOR"}[attr]
        if key in p.given:
            lines.append("%s is %s for model instance '%s'" % (label, on(getattr(p, attr)), instance))
    return lines


def cpu_notes(p, instance, on_gpu):
    """WARNING lines for settings that do nothing where this instance runs."""
    notes = []
    if not on_gpu:
        if "DISABLE_CUDNN" in p.given:
            notes.append("DISABLE_CUDNN has no effect for model instance '%s': it runs on the CPU, where cuDNN is "
                         "not used" % instance)
        if p.cache_cleaning:
            notes.append("ENABLE_CACHE_CLEANING has no effect for model instance '%s': it empties the CUDA caching "
                         "allocator, and this instance runs on the CPU" % instance)
    if p.weight_sharing:
        notes.append("ENABLE_WEIGHT_SHARING has no effect for model instance '%s': each nodetron PyTorch instance is "
                     "its own process with its own copy of the weights (use fewer instances with more "
                     "INTRA_OP_THREAD_COUNT threads to save memory)" % instance)
    return notes
