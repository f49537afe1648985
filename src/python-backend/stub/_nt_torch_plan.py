"""Which config tensor is which argument and which result of a PyTorch
model, decided once at load with the rules and texts of Triton's pytorch
backend (pt/model_instance_state.cc, pt2/model_state.cc). Pure: no torch.

TorchScript inputs: the forward() argument names when every config input
is one (FORWARD_ARGUMENT), else `<name>__<index>` (NAMED_INDEX), else the
config's order (STRICT_CONFIG_ORDERING, with Triton's warning); a forward()
taking one Dict[str, Tensor] gets the config names as keys. Outputs:
`<name>__<index>`, else the config's order. AOTInductor packages: the call
specification's names (ARGS[i], KWARGS[key]; RESULT or RESULT[i]) or the
ordinals INPUT__i / OUTPUT__i."""

# Config datatypes a torch tensor can hold (ModelConfigDataTypeToTorchType).
TORCH_TYPES = {"TYPE_BOOL", "TYPE_UINT8", "TYPE_INT8", "TYPE_INT16", "TYPE_INT32", "TYPE_INT64", "TYPE_FP16",
               "TYPE_FP32", "TYPE_FP64"}
STRING = "TYPE_STRING"


class PlanError(ValueError):
    pass


class TensorSpec:
    __slots__ = ("name", "data_type", "index", "key")

    def __init__(self, name, data_type, index, key=None):
        self.name = name
        self.data_type = data_type
        # Position among forward()'s arguments (inputs) or the model's results (outputs).
        self.index = index
        # AOTI keyword inputs: the keyword; Dict inputs: the key (the config name).
        self.key = key

    @property
    def is_string(self):
        return self.data_type == STRING


def named_index(name):
    """The index of `<name>__<index>`, or None when the name does not follow the convention."""
    pos = name.find("__")
    if pos < 0:
        return None
    digits = name[pos + 2:]
    return int(digits) if digits.isdigit() and digits.isascii() else None


def _dims(io):
    reshape = io.get("reshape")
    if isinstance(reshape, dict) and "shape" in reshape:
        return list(reshape.get("shape") or [])
    return list(io.get("dims") or [])


def _check_io(io, kind, model, batching, allow_string=True):
    name = io["name"]
    dt = io.get("data_type", "")
    if dt not in TORCH_TYPES and not (dt == STRING and allow_string):
        raise PlanError("unsupported datatype %s for %s '%s' for model '%s'" % (dt, kind, name, model))
    if dt == STRING and len(_dims(io)) + (1 if batching else 0) > 1:
        raise PlanError("Triton only supports 1 dimensional List of String as %s for '%s' for model '%s'"
                        % (kind, name, model))


def torchscript_inputs(config, model, forward_args):
    """forward_args: [(name, type_str, kind)] without `self`, kind one of
    'tensor', 'list', 'dict', 'other'. Returns (specs, is_dict, warnings)."""
    inputs = config.get("input") or []
    batching = int(config.get("max_batch_size", 0) or 0) > 0
    warnings = []
    is_dict = len(forward_args) == 1 and forward_args[0][2] == "dict"
    if not is_dict and forward_args:
        if any(kind == "dict" for _, _, kind in forward_args[1:]):
            raise PlanError("Multiple inputs of kind DictType were detected. Only a single input of type "
                            "Dict(str, Tensor) is supported.")
        for _, type_str, kind in forward_args:
            if kind not in ("tensor", "list"):
                raise PlanError("An input of type '%s' was detected in the model. Only a single input of type "
                                "Dict(str, Tensor) or input(s) of type Tensor are supported." % type_str)
        if len(forward_args) != len(inputs):
            raise PlanError("unable to load model '%s', configuration expects %d inputs, model provides %d"
                            % (model, len(inputs), len(forward_args)))
    if not inputs:
        raise PlanError("model configuration must contain at least one input, none were specified.")
    allowed = [a[0] for a in forward_args]
    names = [io["name"] for io in inputs]
    if is_dict:
        convention = "DICT"
    elif all(n in allowed for n in names):
        convention = "FORWARD_ARGUMENT"
    elif all(named_index(n) is not None for n in names):
        convention = "NAMED_INDEX"
    else:
        convention = "STRICT_CONFIG_ORDERING"
        bad = next(n for n in names if named_index(n) is None and n not in allowed)
        warnings.append("input '%s' or previous input(s) are neither an input argument to the model '%s' nor do "
                        "they follow the <name>__<index> naming convention. Falling back to enforcing strict "
                        "ordering from model configuration." % (bad, model))
    specs = []
    for i, io in enumerate(inputs):
        _check_io(io, "input", model, batching)
        name = io["name"]
        if convention == "DICT":
            index, key = 0, name
        elif convention == "FORWARD_ARGUMENT":
            index, key = allowed.index(name), None
        elif convention == "NAMED_INDEX":
            index, key = named_index(name), None
        else:
            index, key = i, None
        if convention == "NAMED_INDEX" and index >= len(inputs):
            raise PlanError("input '%s' of model '%s' names forward() argument %d, but forward(%s) takes %d: number "
                            "the inputs from __0 to __%d, or name them after the arguments"
                            % (name, model, index, ", ".join(allowed), len(allowed), len(inputs) - 1))
        specs.append(TensorSpec(name, io["data_type"], index, key))
    if convention != "DICT":
        _no_duplicate_index(specs, "input", model)
    return specs, is_dict, warnings


def torchscript_outputs(config, model):
    """Returns (specs, warnings); the indexes are checked against the model's
    results when it has run (Triton checks them then)."""
    outputs = config.get("output") or []
    batching = int(config.get("max_batch_size", 0) or 0) > 0
    if not outputs:
        raise PlanError("model configuration must contain at least one output, none were specified.")
    warnings = []
    names = [io["name"] for io in outputs]
    strict = not all(named_index(n) is not None for n in names)
    if strict:
        bad = next(n for n in names if named_index(n) is None)
        warnings.append("output '%s' or previous output(s) of the model '%s' do not follow the <name>__<index> naming "
                        "convention. Falling back to enforcing strict ordering from model configuration."
                        % (bad, model))
    specs = []
    for i, io in enumerate(outputs):
        _check_io(io, "output", model, batching)
        specs.append(TensorSpec(io["name"], io["data_type"], i if strict else named_index(io["name"])))
    _no_duplicate_index(specs, "output", model)
    return specs, warnings


def _no_duplicate_index(specs, kind, model):
    seen = {}
    for s in specs:
        if s.index in seen:
            raise PlanError("%ss '%s' and '%s' of model '%s' both name index %d of the model: give each %s its own "
                            "<name>__<index>" % (kind, seen[s.index], s.name, model, s.index, kind))
        seen[s.index] = s.name


def aoti_inputs(config, model, instance, arg_count, kwarg_keys):
    """An AOTInductor package's inputs: ARGS[i] / KWARGS[key] or INPUT__<n>
    (n counts the positional arguments, then the keywords)."""
    inputs = config.get("input") or []
    batching = int(config.get("max_batch_size", 0) or 0) > 0
    expected = arg_count + len(kwarg_keys)
    if len(inputs) != expected:
        raise PlanError("Failed to load model \"%s\" configuration expects %d inputs, but model expects %d inputs."
                        % (model, len(inputs), expected))
    by_name = {}
    for i in range(arg_count):
        by_name["ARGS[%d]" % i] = (i, None)
        by_name["INPUT__%d" % i] = (i, None)
    for j, key in enumerate(kwarg_keys):
        by_name["KWARGS[%s]" % key] = (arg_count + j, key)
        by_name["INPUT__%d" % (arg_count + j)] = (arg_count + j, key)
    specs = []
    for io in inputs:
        _check_io(io, "input", model, batching, allow_string=False)
        found = by_name.get(io["name"])
        if found is None:
            raise PlanError("Input \"%s\" for model instance \"%s\" is not found in model input map. The package "
                            "takes %s." % (io["name"], instance, _names_text(by_name)))
        specs.append(TensorSpec(io["name"], io["data_type"], found[0], found[1]))
    _no_duplicate_index(specs, "input", model)
    return specs


def aoti_outputs(config, model, instance, result_count):
    """result_count None: the package returns one tensor (RESULT / OUTPUT__0)."""
    outputs = config.get("output") or []
    batching = int(config.get("max_batch_size", 0) or 0) > 0
    if not outputs:
        raise PlanError("Configuration for model \"%s\" must define at least one output, none were specified." % model)
    by_name = {}
    if result_count is None:
        by_name["RESULT"] = 0
        by_name["OUTPUT__0"] = 0
    else:
        for i in range(result_count):
            by_name["RESULT[%d]" % i] = i
            by_name["OUTPUT__%d" % i] = i
    specs = []
    for io in outputs:
        _check_io(io, "output", model, batching, allow_string=False)
        if io["name"] not in by_name:
            raise PlanError("Output \"%s\" for model instance \"%s\" is not found in model output map. The package "
                            "returns %s." % (io["name"], instance, _names_text(by_name)))
        specs.append(TensorSpec(io["name"], io["data_type"], by_name[io["name"]]))
    _no_duplicate_index(specs, "output", model)
    return specs


def _names_text(by_name):
    return ", ".join("'%s'" % n for n in by_name) if by_name else "nothing"
