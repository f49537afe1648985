"""pb_utils.MetricFamily and pb_utils.Metric (custom metrics, reference
§1.12). The values live in the server (src/metrics/custom-metrics.ts), which
exports them on /metrics: creating a family waits for the server's answer (a
name already used with another kind is refused there), updates are sent
without waiting, and value() asks the server, after the updates before it
on the same ordered channel. Kind rules are checked here, before sending."""
import itertools
import threading

from _nt_errors import TritonModelException
from _nt_runtime import runtime

_DELETED = ("Invalid metric operation as the corresponding 'MetricFamily' has been deleted. "
            "The 'MetricFamily' object should be deleted AFTER its corresponding 'Metric' objects have been deleted.")
_handles = itertools.count(1)
_handle_lock = threading.Lock()


def _next_handle():
    with _handle_lock:
        return next(_handles)


def _call(message):
    reply = runtime.call(message)
    if reply.get("error"):
        raise TritonModelException(reply["error"])
    return reply.get("value")


def _send_quietly(message):
    try:
        runtime.send(message)
    except Exception:  # the channel is gone (stub exiting): the server has dropped everything already
        pass


class _FamilyState:
    """Shared by a family and its metrics: whether the family was deleted."""

    def __init__(self, handle, kind):
        self.handle = handle
        self.kind = kind
        self.deleted = False


class MetricFamily:
    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2
    _KIND_NAMES = {COUNTER: "counter", GAUGE: "gauge", HISTOGRAM: "histogram"}

    def __init__(self, name, description, kind):
        if kind not in self._KIND_NAMES:
            raise TritonModelException("Unknown metric family kind: %r" % (kind,))
        if not isinstance(name, str) or not isinstance(description, str):
            raise TritonModelException("MetricFamily name and description must be strings")
        if runtime.phase == "loading":
            raise TritonModelException("MetricFamily is not supported in auto_complete_config.")
        self._state = None
        handle = _next_handle()
        _call({"t": "metric", "op": "family_new", "h": handle, "name": name, "description": description,
               "kind": self._KIND_NAMES[kind]})
        self._state = _FamilyState(handle, kind)
        self._name = name

    def Metric(self, labels=None, buckets=None):  # noqa: N802 (Triton's name)
        return Metric(self._state, labels, buckets)

    def __del__(self):
        state = getattr(self, "_state", None)
        if state is None or state.deleted:
            return
        state.deleted = True
        _send_quietly({"t": "metric", "op": "family_del", "h": state.handle})


class Metric:
    def __init__(self, family_state, labels=None, buckets=None):
        self._handle = None
        if family_state is None or family_state.deleted:
            raise TritonModelException(_DELETED)
        if labels is None:
            labels = {}
        if not isinstance(labels, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
            raise TritonModelException("Metric labels must be a dict of str to str")
        if family_state.kind == MetricFamily.HISTOGRAM:
            if buckets is None:
                raise TritonModelException("Missing required buckets for histogram metric.")
            buckets = [float(b) for b in buckets]
            if any(b >= c for b, c in zip(buckets, buckets[1:])):
                raise TritonModelException("Buckets must be in strictly increasing order, without duplicates.")
        elif buckets is not None:
            raise TritonModelException("Unexpected buckets found for a metric that is not a histogram.")
        self._family = family_state
        handle = _next_handle()
        message = {"t": "metric", "op": "metric_new", "h": handle, "family": family_state.handle, "labels": labels}
        if buckets is not None:
            message["buckets"] = buckets
        runtime.send(message)
        self._handle = handle

    def _check(self, op):
        if self._family.deleted:
            raise TritonModelException(_DELETED)
        kind = self._family.kind
        refused = ((kind == MetricFamily.COUNTER and op in ("set", "observe")) or
                   (kind == MetricFamily.GAUGE and op == "observe") or
                   (kind == MetricFamily.HISTOGRAM and op in ("increment", "set", "value")))
        if refused:
            raise TritonModelException("Failed to %s metric value: %s is not supported for a %s metric."
                                       % (op, op, MetricFamily._KIND_NAMES[kind]))

    def _update(self, op, value):
        self._check(op)
        runtime.send({"t": "metric", "op": op, "h": self._handle, "v": float(value)})

    def increment(self, value):
        if self._family.kind == MetricFamily.COUNTER and value < 0:
            raise TritonModelException("Failed to increment metric value: counter metrics cannot be decremented.")
        self._update("increment", value)

    def set(self, value):
        self._update("set", value)

    def observe(self, value):
        self._update("observe", value)

    def value(self):
        self._check("value")
        return float(_call({"t": "metric", "op": "value", "h": self._handle}))

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle is None:
            return
        self._handle = None
        if not self._family.deleted:
            _send_quietly({"t": "metric", "op": "metric_del", "h": handle})
