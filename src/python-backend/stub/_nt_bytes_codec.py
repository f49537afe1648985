"""BYTES tensors <-> Triton's serialized form (each element a 4-byte
little-endian length, then its bytes), for numpy object arrays of `bytes`.

Both directions work on whole runs of elements with numpy instead of one
Python step per element, where the elements allow it:
  - elements of one length L (all of them, or a group of them) are gathered
    as an (n, L) block of bytes and turned into `bytes` objects by numpy
    itself (a `V<L>` view cast to object), which is the floor of an object
    array: one object per element, made in C;
  - long elements (more than SHORT bytes) are sliced one by one, where the
    per-element cost is small next to the bytes copied;
  - serializing short elements casts the object array to S<max> rows (one
    copy in C, no join), keeps each row's first `len` bytes, and scatters
    the lengths and that payload with one boolean mask; long ones are
    joined.
"""
import numpy as np

from _nt_errors import TritonModelException

# Elements up to this long are gathered with numpy; longer ones are sliced.
SHORT = 64
# Elements per numpy gather: bounds the index block (n x L int64) to ~32 MiB.
GATHER_ROWS = 1 << 16
# Below this many elements the plain loops are as fast.
SMALL = 256


def serialize_bytes(array):
    """Object, S or U array -> the length-prefixed byte stream (C order)."""
    flat = np.asarray(array).reshape(-1, order="C")
    n = flat.size
    if n == 0:
        return b""
    items = flat.tolist()
    objects = flat if flat.dtype == np.object_ else None
    if set(map(type, items)) != {bytes}:
        items = [x if isinstance(x, bytes) else str(x).encode("utf-8") for x in items]
        objects = None
    lens = np.fromiter(map(len, items), dtype=np.int64, count=n)
    prefixes = lens.astype("<u4").view(np.uint8).reshape(n, 4)
    low, high = int(lens.min()), int(lens.max())
    if high <= SHORT:
        # Short elements: numpy copies them into fixed (n, high) rows (an
        # S<high> cast, NULs kept in the buffer) instead of joining objects.
        if objects is None:
            objects = np.empty(n, dtype=np.object_)
            objects[:] = items
        width = max(high, 1)
        block = objects.astype("S%d" % width).view(np.uint8).reshape(n, width)
        payload = block[:, :low] if low == high else block[np.arange(width) < lens[:, None]]
    else:
        payload = np.frombuffer(b"".join(items), dtype=np.uint8)
    if low == high:
        # One length: rows of 4 + L bytes.
        out = np.empty((n, 4 + low), dtype=np.uint8)
        out[:, :4] = prefixes
        out[:, 4:] = payload.reshape(n, low)
        return out.tobytes()
    # Mixed lengths: the lengths go at each element's start (4 strided
    # writes), the payload, in order, into every byte that is not a length.
    total = 4 * n + payload.size
    out = np.empty(total, dtype=np.uint8)
    starts = np.arange(0, 4 * n, 4, dtype=np.int64)
    starts[1:] += np.cumsum(lens[:-1])
    is_payload = np.ones(total, dtype=bool)
    for k in range(4):
        at = starts + k
        out[at] = prefixes[:, k]
        is_payload[at] = False
    out[is_payload] = payload
    return out.tobytes()


def deserialize_bytes(buf, starts=None):
    """The length-prefixed byte stream -> flat object array of bytes.

    `starts`: the host's index of the elements (a buffer of little-endian u32
    offsets of each length prefix, computed from this same stream), which
    turns the scan into slicing.
    """
    b = bytes(buf)
    if starts is None:
        return _deserialize_scan(b)
    st = np.frombuffer(starts, dtype="<u4").astype(np.int64)
    n = st.size
    out = np.empty(n, dtype=np.object_)
    if n == 0:
        return out
    ends = np.empty(n, dtype=np.int64)
    ends[:-1] = st[1:]
    ends[-1] = len(b)
    lens = ends - st - 4
    if n < SMALL:
        out[:] = [b[s:e] for s, e in zip((st + 4).tolist(), ends.tolist())]
        return out
    u8 = np.frombuffer(b, dtype=np.uint8)
    low, high = int(lens.min()), int(lens.max())
    if low == high and (4 + low) * n == len(b) and st[0] == 0:
        # One length, back to back: a structured view, no index at all.
        if low == 0:
            out[:] = [b""] * n
        elif low <= SHORT:
            rows = np.frombuffer(b, dtype=np.dtype([("n", "<u4"), ("v", "V%d" % low)]))
            out[:] = rows["v"].astype(object)
        else:
            out[:] = [b[s:s + low] for s in (st + 4).tolist()]
        return out
    # Mixed lengths: long elements sliced in one loop; short ones grouped by
    # length (a stable radix sort of 8-bit keys), each group gathered.
    short = lens <= SHORT
    long_ones = np.flatnonzero(~short)
    if long_ones.size == n:
        out[:] = [b[s:e] for s, e in zip((st + 4).tolist(), ends.tolist())]
        return out
    if long_ones.size:
        out[long_ones] = [b[s:e] for s, e in zip((st[long_ones] + 4).tolist(), ends[long_ones].tolist())]
    short_ones = np.flatnonzero(short)
    if short_ones.size == 0:
        return out
    order = short_ones[np.argsort(lens[short_ones].astype(np.uint8), kind="stable")]
    sorted_lens = lens[order]
    cuts = np.flatnonzero(np.diff(sorted_lens)) + 1
    for group in np.split(order, cuts):
        length = int(lens[group[0]])
        if length == 0:
            out[group] = b""
            continue
        cols = np.arange(length, dtype=np.int64)
        for at in range(0, group.size, GATHER_ROWS):
            g = group[at:at + GATHER_ROWS]
            block = u8[(st[g] + 4)[:, None] + cols]
            out[g] = block.view("V%d" % length).ravel().astype(object)
    return out


def _deserialize_scan(b):
    """No index: walk the length prefixes (short tensors; pb_utils.deserialize_bytes_tensor)."""
    n = len(b)
    items = []
    append = items.append
    from_bytes = int.from_bytes
    pos = 0
    while pos < n:
        end = pos + 4
        if end > n:
            raise TritonModelException("Invalid bytes tensor data: incomplete length field")
        length = from_bytes(b[pos:end], "little")
        pos = end + length
        if pos > n:
            raise TritonModelException("Invalid bytes tensor data: string extends beyond buffer")
        append(b[end:pos])
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out
