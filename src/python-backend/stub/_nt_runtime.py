"""Process-wide state of the stub: the control channel, the shared-memory
regions, the lifecycle phase (which decides whether BLS is allowed), the
pending BLS calls and the lazily created asyncio loop."""
import asyncio
import queue
import threading


class Runtime:
    def __init__(self):
        self.channel = None
        self.h2s = None
        self.s2h = None
        self.name = ""
        self.decoupled = False
        # loading -> initializing -> ready -> finalizing
        self.phase = "loading"
        self._lock = threading.Lock()
        self._next_id = 1
        self._calls = {}
        self._loop = None
        # Set by stub_main: makes sure a thread reads the channel while this one waits.
        self.need_reader = None
        # Requests cancelled before their batch began (`cancel` messages): batch -> indexes.
        self._cancelled = {}
        # The last batch whose execution began (batch ids only grow).
        self._begun = 0

    def send(self, message, blob=None):
        if self.channel is not None:
            self.channel.send(message, blob)

    # ---- calls that wait for the server (BLS, model control) ----

    def open_call(self):
        """A new call id and the queue its replies arrive on."""
        if self.need_reader is not None:
            self.need_reader()
        with self._lock:
            call_id = self._next_id
            self._next_id += 1
            q = queue.Queue()
            self._calls[call_id] = q
        return call_id, q

    def close_call(self, call_id):
        with self._lock:
            self._calls.pop(call_id, None)

    def call(self, message):
        """Send `message` with a fresh id and wait for the server's one reply."""
        call_id, replies = self.open_call()
        try:
            message["id"] = call_id
            self.send(message)
            return replies.get()
        finally:
            self.close_call(call_id)

    def deliver(self, call_id, message):
        with self._lock:
            q = self._calls.get(call_id)
        if q is not None:
            q.put(message)
            return True
        return False

    # ---- cancels of batches still in the pipe ----

    def note_cancel(self, batch, index):
        """A `cancel`: for a batch that has not begun, the request is answered
        `skipped` now and left out when the batch begins; a running batch's
        model asks is_cancelled instead."""
        with self._lock:
            if batch <= self._begun:
                return
            skipped = self._cancelled.setdefault(batch, set())
            if index in skipped:
                return
            skipped.add(index)
        self.send({"t": "response", "batch": batch, "index": index, "final": True, "outputs": [], "skipped": True})

    def begin_batch(self, batch):
        """The batch begins now: the indexes of its requests cancelled before it did."""
        with self._lock:
            self._begun = batch
            return self._cancelled.pop(batch, ())

    # ---- asyncio ----

    def loop(self):
        """The instance's event loop, running on a daemon thread (created on first use)."""
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                t = threading.Thread(target=loop.run_forever, name="pb-asyncio", daemon=True)
                t.start()
                self._loop = loop
            return self._loop

    def stop_loop(self):
        with self._lock:
            loop = self._loop
            self._loop = None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)


runtime = Runtime()
