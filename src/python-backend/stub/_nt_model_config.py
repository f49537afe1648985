"""pb_utils.ModelConfig: what auto_complete_config receives and returns
(python_backend.md §1.14), with Triton's texts."""


class ModelConfig:
    def __init__(self, model_config, *_args):
        self._model_config = model_config

    def as_dict(self):
        return self._model_config

    def _name(self):
        return self._model_config.get("name", "")

    def set_max_batch_size(self, max_batch_size):
        configured = self._model_config.get("max_batch_size", 0)
        if configured > max_batch_size:
            raise ValueError(
                "configuration specified max_batch_size " + str(configured) +
                ", but in auto-complete-config function for model '" + self._name() +
                "' specified max_batch_size " + str(max_batch_size))
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self):
        for choice in ("sequence_batching", "ensemble_scheduling"):
            if choice in self._model_config:
                raise ValueError(
                    "Configuration specified scheduling_choice as '" + choice +
                    "', but auto-complete-config function for model '" + self._name() +
                    "' tries to set scheduling_choice as 'dynamic_batching'")
        if "dynamic_batching" not in self._model_config:
            self._model_config["dynamic_batching"] = {}

    def _add_tensor(self, kind, tensor, allowed):
        label = "model input" if kind == "input" else "model output"
        if not isinstance(tensor, dict):
            raise ValueError(label + " must be a dict, got " + str(type(tensor)))
        for key in ("name", "data_type", "dims"):
            if key not in tensor:
                raise ValueError(label + " '" + str(tensor.get("name", "")) + "' in auto-complete-config function for "
                                 "model '" + self._name() + "' is missing '" + key + "' property.")
        for key in tensor:
            if key not in allowed:
                if kind == "input":
                    raise ValueError(
                        "input '" + tensor["name"] + "' in auto-complete-config function for model '" +
                        self._name() + "' contains property other than 'name', 'data_type', 'dims' and 'optional'.")
                raise ValueError(
                    "output '" + tensor["name"] + "' in auto-complete-config function for model '" +
                    self._name() + "' contains property other than 'name', 'data_type' and 'dims'.")
        entries = self._model_config.setdefault(kind, [])
        for existing in entries:
            if existing.get("name") != tensor["name"]:
                continue
            dt = existing.get("data_type", "TYPE_INVALID")
            if dt != "TYPE_INVALID" and dt != tensor["data_type"]:
                raise ValueError(
                    "unable to load model '" + self._name() + "', configuration expects datatype " + dt +
                    " for " + kind + " '" + tensor["name"] + "', model provides " + tensor["data_type"])
            dims = existing.get("dims", [])
            if dims and list(dims) != list(tensor["dims"]):
                raise ValueError(
                    "model '" + self._name() + "', tensor '" + tensor["name"] + "': the model expects dims " +
                    _dims(tensor["dims"]) + " but the model configuration specifies dims " + _dims(dims))
            if "optional" in tensor and "optional" in existing and existing["optional"] != tensor["optional"]:
                raise ValueError(
                    "model '" + self._name() + "', tensor '" + tensor["name"] + "': the model expects optional " +
                    str(tensor["optional"]) + " but the model configuration specifies optional " +
                    str(existing["optional"]))
            existing["data_type"] = tensor["data_type"]
            existing["dims"] = list(tensor["dims"])
            if "optional" in tensor:
                existing["optional"] = tensor["optional"]
            return
        entries.append(dict(tensor))

    def add_input(self, input):
        self._add_tensor("input", input, ("name", "data_type", "dims", "optional"))

    def add_output(self, output):
        self._add_tensor("output", output, ("name", "data_type", "dims"))

    def set_model_transaction_policy(self, transaction_policy_dict):
        for key in transaction_policy_dict:
            if key != "decoupled":
                raise ValueError(
                    "model transaction property in auto-complete-config function for model '" + self._name() +
                    "' contains property other than 'decoupled'.")
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            new = transaction_policy_dict["decoupled"]
            if "decoupled" in policy and policy["decoupled"] != new:
                raise ValueError(
                    "trying to change decoupled property in auto-complete-config for model '" + self._name() +
                    "', which is already set to '" + str(policy["decoupled"]) + "'.")
            policy["decoupled"] = new


def _dims(dims):
    return "[" + ",".join(str(d) for d in dims) + "]"
