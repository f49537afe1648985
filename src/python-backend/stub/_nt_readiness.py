"""A model's optional is_ready(self) (Triton 2.67): the server asks
(`ready_check` with an id, about once a second) and this answers
`ready_check_result` from a thread of its own, so a long execute() does not
hold the answer back. `async def is_ready` runs on the instance's event loop.
True is ready; False, an exception or anything but a bool is not (the
result says which). One check runs at a time; the server sends the next
only after this one answered."""
import asyncio
import inspect
import queue
import threading

from _nt_runtime import runtime


class Readiness:
    def __init__(self, model, format_exception):
        fn = getattr(model, "is_ready", None)
        self.fn = fn if callable(fn) else None
        self._format_exception = format_exception
        self._asks = queue.Queue()
        self._thread = None
        self._lock = threading.Lock()

    @property
    def defined(self):
        return self.fn is not None

    def ask(self, check_id):
        """Called by whichever thread reads the channel; the check runs on the readiness thread."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="pb-is-ready", daemon=True)
                self._thread.start()
        self._asks.put(check_id)

    def _run(self):
        while True:
            check_id = self._asks.get()
            runtime.send(self._check(check_id))

    def _check(self, check_id):
        done = {"t": "ready_check_result", "id": check_id}
        try:
            result = self.fn()
            if inspect.iscoroutine(result):
                result = asyncio.run_coroutine_threadsafe(result, runtime.loop()).result()
        except Exception as e:
            done["error"] = self._format_exception(e)
            return done
        if not isinstance(result, bool):
            done["error"] = "is_ready() must return a boolean value, got %s" % type(result).__name__
        else:
            done["ready"] = result
        return done
