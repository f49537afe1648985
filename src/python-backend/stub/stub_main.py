"""Entry of a nodetron Python stub process (one per model instance, plus a
short-lived one for auto_complete_config). argv[1] is a JSON object:
mode ("model" | "auto_complete"), model_path, name (instance name), growth
(shm growth bytes), parent_pid, and builtin when the stub runs one of the
models nodetron ships (_nt_runner.BUILTIN_MODELS) on model_path. fds: 3 control in, 4 control out, 5 the h2s
region, 6 the s2h region (see src/python-backend/stub-process.ts)."""
import collections
import json
import os
import queue
import signal
import sys
import threading
import time


def main():
    cfg = json.loads(sys.argv[1])
    stub_dir = os.path.dirname(os.path.abspath(__file__))
    model_path = os.path.abspath(cfg["model_path"])
    version_dir = os.path.dirname(model_path)
    model_dir = os.path.dirname(version_dir)
    # Triton's three sys.path entries: "import model" and "import <sibling>"
    # resolve in the version folder, "<version>.model" through the model folder.
    # A built-in model (the pytorch backend's) imports nothing from the model's folders.
    builtin = cfg.get("builtin")
    for p in (stub_dir,) if builtin else (stub_dir, model_dir, version_dir):
        if p in sys.path:
            sys.path.remove(p)
        sys.path.insert(0, p)

    # The server drives shutdown; Ctrl-C to the process group must not kill us first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

    from _nt_ipc import Channel
    from _nt_model_control import set_model_dir
    from _nt_runner import ModelRunner
    from _nt_runtime import runtime
    from _nt_shm import ReadRegion, WriteRegion

    runtime.name = cfg["name"]
    runtime.h2s = ReadRegion()
    runtime.s2h = WriteRegion(int(cfg["growth"]))
    channel = Channel()
    set_model_dir(version_dir)

    # The main thread reads the control channel itself while it has nothing
    # to do, and runs what it reads: no thread hand-off per message. A model
    # that waits for the server while the main thread is busy (BLS, model
    # control, metric calls) or a decoupled one (responses from other threads
    # during a long execute: their s2h releases must come in) starts the
    # reader thread, which from then on reads and queues commands for the
    # main thread. One reader at a time (read_lock); the main thread reads
    # only if reader["on"] is still off once it holds the lock, so no command
    # is read out of order, and it never waits on the lock behind the reader.
    commands = queue.Queue()
    read_lock = threading.Lock()
    start_lock = threading.Lock()
    reader = {"on": False}

    def route(msg):
        """Handles replies and releases; returns a command for the main thread, or None."""
        if msg is None:
            _gone(cfg["name"])
        t = msg.get("t")
        if t in ("bls_response", "call_result"):
            runtime.deliver(msg["id"], msg)
        elif t == "ready_check":
            runner.readiness.ask(msg["id"])
        elif t == "release":
            for offset in msg["offsets"]:
                runtime.s2h.release(offset)
        elif t == "cancel":
            runtime.note_cancel(msg["batch"], msg["index"])
        else:
            return msg
        return None

    def recv():
        try:
            return channel.recv()
        except Exception as e:
            sys.stderr.write("python stub '%s': control channel failed: %s\n" % (cfg["name"], e))
            return None

    def read_loop():
        while True:
            with read_lock:
                msg = recv()
            msg = route(msg)
            if msg is not None:
                commands.put(msg)

    def start_reader():
        if reader["on"]:
            return
        with start_lock:
            if reader["on"]:
                return
            reader["on"] = True
            threading.Thread(target=read_loop, name="pb-reader", daemon=True).start()

    # Commands drain() read ahead of their turn; they go first.
    pending = collections.deque()

    def drain():
        """Before a batch begins: route what the server has already sent, so
        that a `cancel` for this batch, written behind it in the pipe, is seen
        before execute(). The reader thread, when on, does this as it reads."""
        while not reader["on"] and channel.readable():
            if not read_lock.acquire(blocking=False):
                return
            try:
                if reader["on"]:
                    return
                msg = recv()
            finally:
                read_lock.release()
            msg = route(msg)
            if msg is not None:
                pending.append(msg)

    def next_command():
        if pending:
            return pending.popleft()
        while True:
            if reader["on"]:
                return commands.get()
            # Only the reader thread can hold read_lock for long, and it is
            # on before it starts: then the loop turns to the queue.
            if not read_lock.acquire(timeout=0.05):
                continue
            try:
                msg = recv() if not reader["on"] else False
            finally:
                read_lock.release()
            if msg is False:
                return commands.get()
            msg = route(msg)
            if msg is not None:
                return msg

    runtime.need_reader = start_reader

    def parent_watch():
        while True:
            time.sleep(0.3)
            if os.getppid() != cfg["parent_pid"]:
                _gone(cfg["name"])

    threading.Thread(target=parent_watch, name="pb-parent-watch", daemon=True).start()
    runtime.channel = channel
    runner = ModelRunner(model_path, cfg["name"], builtin)
    channel.send({"t": "alive", "pid": os.getpid(), "python": sys.version.split()[0]})

    while True:
        msg = next_command()
        t = msg["t"]
        if t == "execute":
            drain()
            runner.execute(msg)
        elif t == "init":
            if msg["decoupled"]:
                start_reader()
            done = runner.initialize(msg["args"], bool(msg["decoupled"]), bool(msg.get("reschedulable")))
            # is_ready() checks are answered while execute() runs: a thread must read the channel then.
            if done.get("is_ready"):
                start_reader()
            channel.send(done)
        elif t == "auto_complete":
            channel.send(runner.auto_complete(msg["config"]))
        elif t == "finalize":
            if cfg["mode"] == "model":
                runner.finalize()
            channel.send({"t": "finalize_done"})
            _exit(0)


def _gone(name):
    sys.stderr.write("python stub '%s': Non-graceful termination detected.\n" % name)
    _exit(1)


def _exit(code):
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    main()
