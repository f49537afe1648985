"""Control channel to the server: 4-byte little-endian length + UTF-8 JSON
frames (the TypeScript side is src/python-backend/ipc-framing.ts; messages
are listed in src/python-backend/ipc-protocol.ts). A frame may carry small
tensors inline: its length word has the top bit set and the body is a
4-byte JSON length, the JSON, then the blob the tensors' offsets point into.
A received blob arrives as message["blob"] (a bytearray, so numpy views over
it are writable). Reads come from fd 3, writes go to fd 4; writes from any
thread are serialized by a lock; a frame goes out in one write."""
import json
import os
import select
import struct
import threading

READ_FD = 3
WRITE_FD = 4
HAS_BLOB = 0x80000000
_HEAD = struct.Struct("<I")
_HEAD2 = struct.Struct("<II")
_loads = json.JSONDecoder().decode


def _make_dumps():
    """json.dumps(o, separators=(",", ":")) without building an encoder per call."""
    make = getattr(json.encoder, "c_make_encoder", None)
    plain = json.JSONEncoder(separators=(",", ":"))
    if make is None:
        return plain.encode
    # JSONEncoder.iterencode's arguments for a one-shot encode (no indent, ensure_ascii), without
    # the circular-reference markers: they would be state shared by every thread, and our
    # messages hold no cycles.
    encoder = make(None, plain.default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True)

    def dumps(o):
        if isinstance(o, str):
            return json.encoder.encode_basestring_ascii(o)
        return "".join(encoder(o, 0))
    return dumps


_dumps = _make_dumps()

_SAFE_INT = 2 ** 53 - 1


def wire_int(v):
    """An int past 2^53 as {"int": "<decimal>"}: the host reads frames with
    JSON.parse, which would round it (src/python-backend/wire-int.ts)."""
    if isinstance(v, int) and not isinstance(v, bool) and not -_SAFE_INT <= v <= _SAFE_INT:
        return {"int": str(v)}
    return v


def from_wire_int(v):
    """wire_int's inverse, for what the host sends."""
    if isinstance(v, dict) and "int" in v:
        return int(v["int"])
    return v


class Blob:
    """Tensor bytes of one outgoing frame; each part starts on an 8-byte boundary."""

    __slots__ = ("parts", "size")

    def __init__(self):
        self.parts = []
        self.size = 0

    def add(self, data):
        """Appends a bytes-like object; returns its offset in the blob."""
        offset = (self.size + 7) & ~7
        if offset > self.size:
            self.parts.append(bytes(offset - self.size))
        self.parts.append(data)
        self.size = offset + memoryview(data).nbytes
        return offset


def encode(message, blob=None):
    """The frame of `message` as a list of bytes-like parts."""
    body = _dumps(message).encode("utf-8")
    if blob is None or blob.size == 0:
        return [_HEAD.pack(len(body)), body]
    return [_HEAD2.pack((4 + len(body) + blob.size) | HAS_BLOB, len(body)), body] + blob.parts


class Channel:
    def __init__(self, read_fd=READ_FD, write_fd=WRITE_FD):
        self._rfd = read_fd
        self._wfd = write_fd
        self._lock = threading.Lock()
        self._buf = bytearray()

    def send(self, message, blob=None):
        self.write_parts(encode(message, blob))

    def write_parts(self, parts):
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        view = memoryview(data)
        with self._lock:
            while len(view) > 0:
                n = os.write(self._wfd, view)
                view = view[n:]

    def readable(self):
        """True when recv() has a message to read now: a whole frame buffered, or bytes waiting in the pipe."""
        buf = self._buf
        if len(buf) >= 4:
            (word,) = _HEAD.unpack_from(buf, 0)
            if len(buf) >= 4 + (word & ~HAS_BLOB):
                return True
        return bool(select.select([self._rfd], [], [], 0)[0])

    def recv(self):
        """The next message, or None when the server closed the channel. One reader at a time."""
        buf = self._buf
        while True:
            have = len(buf)
            if have >= 4:
                (word,) = _HEAD.unpack_from(buf, 0)
                length = word & ~HAS_BLOB
                end = 4 + length
                if have >= end:
                    if word & HAS_BLOB:
                        (json_len,) = _HEAD.unpack_from(buf, 4)
                        if 8 + json_len > end:
                            raise ValueError("control frame's JSON length %d does not fit its %d bytes"
                                             % (json_len, length))
                        message = _loads(buf[8:8 + json_len].decode("utf-8"))
                        message["blob"] = buf[8 + json_len:end]
                    else:
                        message = _loads(buf[4:end].decode("utf-8"))
                    del buf[:end]
                    return message
                need = end - have
            else:
                need = 4 - have
            data = os.read(self._rfd, max(need, 1 << 16))
            if not data:
                return None
            buf += data
