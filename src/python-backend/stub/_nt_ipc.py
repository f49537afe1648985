"""Control channel to the server: 4-byte little-endian length + UTF-8 JSON
frames (the TypeScript side is src/python-backend/ipc-framing.ts; messages
are listed in src/python-backend/ipc-protocol.ts). Reads come from fd 3,
writes go to fd 4; writes from any thread are serialized by a lock."""
import json
import os
import struct
import threading

READ_FD = 3
WRITE_FD = 4


class Channel:
    def __init__(self, read_fd=READ_FD, write_fd=WRITE_FD):
        self._rfd = read_fd
        self._wfd = write_fd
        self._lock = threading.Lock()

    def send(self, message):
        body = json.dumps(message, separators=(",", ":")).encode("utf-8")
        frame = struct.pack("<I", len(body)) + body
        view = memoryview(frame)
        with self._lock:
            while len(view) > 0:
                n = os.write(self._wfd, view)
                view = view[n:]

    def _read_exact(self, n):
        chunks = []
        while n > 0:
            data = os.read(self._rfd, min(n, 1 << 20))
            if not data:
                return None
            chunks.append(data)
            n -= len(data)
        return b"".join(chunks)

    def recv(self):
        """The next message, or None when the server closed the channel."""
        head = self._read_exact(4)
        if head is None:
            return None
        (length,) = struct.unpack("<I", head)
        body = self._read_exact(length)
        if body is None:
            return None
        return json.loads(body.decode("utf-8"))
