"""The two shared-memory regions of this stub (see
src/python-backend/shm-region.ts). h2s (fd 5) is written by the server: we
map it and build numpy views over it, remapping when the server has grown it.
s2h (fd 6) is ours to allocate and grow; the server reads it with positioned
reads and tells us when a block may be reused. The allocator is the same
first-fit, coalescing, 64-byte aligned scheme as shm-allocator.ts.

Growing never unmaps: a new, larger mapping replaces the old one for new
work, and the old one stays mapped (arrays may still point into it).

An output that is a view of this batch's own input in h2s (an identity, a
slice of an input) need not be copied into s2h: offset_in_h2s finds where it
lies, and the response names that h2s range instead (ipc-protocol.ts,
ShmTensor.region). The host still holds those blocks: it releases a batch's
inputs only after the batch's last final response."""
import ctypes
import mmap
import os
import threading

H2S_FD = 5
S2H_FD = 6
ALIGN = 64


class ReadRegion:
    def __init__(self, fd=H2S_FD):
        self._fd = fd
        self._lock = threading.Lock()
        self._mm = None
        self._size = 0
        # (address, size) of every mapping made, each of the file from offset 0.
        self._maps = []
        self._keep = []
        self._remap()

    def _remap(self):
        size = os.fstat(self._fd).st_size
        if size > self._size:
            mm = mmap.mmap(self._fd, size)
            anchor = ctypes.c_char.from_buffer(mm)
            address = ctypes.addressof(anchor)
            del anchor  # no buffer export left behind
            self._mm = mm
            self._size = size
            self._keep.append(mm)
            self._maps.append((address, size))

    def offset_in_h2s(self, address, size, spans):
        """The h2s offset of [address, address + size) when it lies inside one
        of `spans` ((offset, size) blocks of h2s), else None."""
        for base, mapped in self._maps:
            offset = address - base
            if 0 <= offset and offset + size <= mapped:
                for start, length in spans:
                    if start <= offset and offset + size <= start + length:
                        return offset
                return None
        return None

    def view(self, offset, size):
        """A writable memoryview of [offset, offset + size)."""
        with self._lock:
            if offset + size > self._size:
                self._remap()
            if offset + size > self._size:
                raise ValueError(
                    "shared memory reference %d..%d is beyond the region (%d bytes)"
                    % (offset, offset + size, self._size))
            mm = self._mm
        return memoryview(mm)[offset:offset + size]


SHM_FIX = ("Give the server more shared memory: `docker run --shm-size=1g ...` (Docker's default is 64 MiB), "
           "or in Kubernetes mount an emptyDir with `medium: Memory` (and a sizeLimit) at /dev/shm; "
           "or keep Python tensors smaller (the python backend's shm-default-byte-size and shm-growth-byte-size, "
           "--backend-config=python,shm-growth-byte-size=<bytes>, set how much each instance takes at a time).")


class ShmSpaceError(MemoryError):
    """The stub's region cannot grow: the shared memory mount is too small
    (the host's text, src/python-backend/shm-space.ts)."""

    def __init__(self, new_total, add, total, free, cause=None):
        mount = os.environ.get("NODETRON_SHM_DIR", "/dev/shm")
        MemoryError.__init__(
            self,
            "Failed to increase the shared memory pool size to %d bytes. It needs %d bytes more of %s "
            "(%.1f MiB, %.1f MiB free)%s. %s" % (
                new_total, add, mount, total / 1048576.0, free / 1048576.0,
                "" if cause is None else " (%s)" % cause, SHM_FIX))


class WriteRegion:
    def __init__(self, growth, fd=S2H_FD):
        self._fd = fd
        self._growth = growth
        self._lock = threading.Lock()
        self._total = os.fstat(fd).st_size
        self._mm = mmap.mmap(fd, self._total) if self._total > 0 else None
        self._free = [[0, self._total]] if self._total > 0 else []
        self._used = {}

    def alloc(self, nbytes):
        need = max(ALIGN, -(-nbytes // ALIGN) * ALIGN)
        with self._lock:
            i = self._first_fit(need)
            if i < 0:
                add = self._growth * (need // self._growth + 1)
                new_total = self._total + add
                # tmpfs grows a file sparsely: a page the mount has no room for
                # would only fail when touched, as SIGBUS. Refuse the grow first.
                st = os.fstatvfs(self._fd)
                free = st.f_bavail * st.f_frsize
                if add > free:
                    raise ShmSpaceError(new_total, add, st.f_blocks * st.f_frsize, free)
                try:
                    os.ftruncate(self._fd, new_total)
                except OSError as e:
                    raise ShmSpaceError(new_total, add, st.f_blocks * st.f_frsize, free, str(e))
                self._mm = mmap.mmap(self._fd, new_total)
                self._insert_free(self._total, add)
                self._total = new_total
                i = self._first_fit(need)
            span = self._free[i]
            offset = span[0]
            if span[1] == need:
                del self._free[i]
            else:
                span[0] += need
                span[1] -= need
            self._used[offset] = need
            mm = self._mm
        return offset, mm

    def write(self, data):
        """Copies a bytes-like object into a new block; returns its offset."""
        src = memoryview(data).cast("B")
        offset, mm = self.alloc(len(src))
        mm[offset:offset + len(src)] = src
        return offset

    def release(self, offset):
        with self._lock:
            size = self._used.pop(offset, None)
            if size is not None:
                self._insert_free(offset, size)

    def _first_fit(self, need):
        for i, span in enumerate(self._free):
            if span[1] >= need:
                return i
        return -1

    def _insert_free(self, offset, size):
        free = self._free
        i = 0
        while i < len(free) and free[i][0] < offset:
            i += 1
        if i > 0 and free[i - 1][0] + free[i - 1][1] == offset:
            free[i - 1][1] += size
            if i < len(free) and free[i - 1][0] + free[i - 1][1] == free[i][0]:
                free[i - 1][1] += free[i][1]
                del free[i]
            return
        if i < len(free) and offset + size == free[i][0]:
            free[i][0] = offset
            free[i][1] += size
            return
        free.insert(i, [offset, size])
