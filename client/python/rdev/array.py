"""rdev/array.py — device arrays: arrays in a session's device memory,
C-contiguous or strided views (.T, permute: operators take them as they
are; transfers go through a contiguous copy), views at an offset, and their transfers to and from numpy arrays
through the extension's copies (the buffer protocol: bytes land in the
numpy array itself), in pieces of _CHUNK queued on the stream, each waited
for (the step of the progress bar and of Ctrl-C); an upload of at most
_STAGE bytes is queued without waiting, as a notebook cell's small inputs
go: the extension's copy returns once the bytes have left the array (sent,
or copied into the request), and its errors come with the stream's next
wait. Their repr and notebook HTML show a preview of the first items only
when set_preview asks for one. Their arithmetic (+, @, .sum(), ...) is
rdev.ops's operators.
"""
import functools
import html

import numpy as np

from . import _common, _progress, _rdev
from .stream import Future

_preview_items = 0  # items a repr shows (set_preview); 0: none, no round trip

_CHUNK = 64 << 20
_STAGE = 4 << 20  # uploads up to this size are not waited for


class _Allocation:
    """Device memory; freed when its last array goes (or at free())."""

    def __init__(self, session, nbytes):
        self.ptr = None  # free() may run (as __del__) when malloc raised
        self.session, self.nbytes = session, nbytes
        self.device = session.device
        self.ptr = session._s.malloc(max(nbytes, 1))
        with session._lock:
            session._allocated += nbytes

    def free(self):
        ptr, self.ptr = self.ptr, None
        if ptr is not None:
            with self.session._lock:
                self.session._allocated -= self.nbytes
        if ptr is not None and not self.session.closed:
            try:
                self.session._s.free(ptr)
            except Exception:  # as __del__: nothing to tell, nobody to tell it to
                pass

    __del__ = free


def _host(a, nbytes=None, writable=False):
    """The byte view of a C-contiguous ndarray, checked for its size."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected a numpy array, not {type(a).__name__}")
    if not a.flags.c_contiguous or (writable and not a.flags.writeable):
        raise ValueError("the host array must be C-contiguous" + (" and writable" if writable else ""))
    if nbytes is not None and a.nbytes != nbytes:
        raise ValueError(f"the host array has {a.nbytes} bytes, the device array {nbytes}")
    return memoryview(a.reshape(-1).view(np.uint8))


@functools.lru_cache(maxsize=256)
def _c_strides(shape):
    """C-contiguous strides in elements (shape a tuple; remembered: every
    operator call asks for its operands')."""
    strides, n = [], 1
    for d in reversed(shape):
        strides.append(n)
        n *= max(d, 1)
    return tuple(reversed(strides))


def _is_c_order(shape, strides):
    """Whether strides lay shape out C-contiguously (dimensions of size 1 have any stride)."""
    if 0 in shape:
        return True
    return all(n == 1 or st == c for n, st, c in zip(shape, strides, _c_strides(shape)))


class DeviceArray:
    """An array in device memory of one session: C-contiguous, or a strided
    view of another (.T, .permute()), which operators take as it is."""

    __array_ufunc__ = None  # numpy scalars and arrays leave arithmetic with a device array to it

    def __init__(self, shape, dtype=np.float32, *, session=None, _mem=None, _offset=0, _strides=None):
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(n) for n in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if any(n < 0 for n in self.shape):
            raise ValueError(f"negative dimension in {self.shape}")
        if _mem is None:
            _mem = _Allocation(_common.session_of(session), self.nbytes)
        self._mem, self._offset = _mem, _offset
        self._strides = None if _strides is None or _is_c_order(self.shape, _strides) else tuple(_strides)
        self.session = _mem.session

    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    ndim = property(lambda self: len(self.shape))
    device = property(lambda self: self._mem.device)
    base = property(lambda self: None if self._offset == 0 and self.nbytes == self._mem.nbytes and
                    self._strides is None else self._mem)
    is_contiguous = property(lambda self: self._strides is None, doc="Whether the array is C-contiguous.")

    @property
    def strides(self):
        """Bytes between neighbours in each dimension, as numpy's."""
        return tuple(n * self.dtype.itemsize for n in self._elem_strides())

    def _elem_strides(self):
        """Strides in elements."""
        return self._strides if self._strides is not None else _c_strides(self.shape)

    def _need_contiguous(self, what):
        if self._strides is not None:
            raise ValueError(f"{what} takes a C-contiguous device array: call .contiguous() first")

    @property
    def ptr(self):
        """The device address of the first element."""
        if self._mem.ptr is None:
            raise _common.error(_rdev.INVALID_PARAM, "the device array was freed")
        return self._mem.ptr + self._offset

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d device array")
        return self.shape[0]

    def __repr__(self):
        where = f"ptr={self._mem.ptr + self._offset:#x}" if self._mem.ptr is not None else "freed"
        view = "" if self._strides is None else f" strides={self.strides}"
        text = (f"<rdev.DeviceArray shape={self.shape} dtype={self.dtype} device={self.device} "
                f"nbytes={self.nbytes}{view} {where}>")
        preview = self._preview()
        return text if preview is None else f"{text}\n{preview}"

    def _preview(self):
        """The first items as text when previews are on (set_preview) and
        the array can be read; else None."""
        n = min(_preview_items, self.size)
        if n <= 0 or self._mem.ptr is None or self.session.closed:
            return None
        try:
            return np.array2string(self.head(n)) + (" ..." if n < self.size else "")
        except Exception as e:  # a repr must not raise: say why there is none
            return f"(no preview: {e})"

    def _repr_html_(self):
        e = html.escape
        rows = [("shape", self.shape), ("dtype", self.dtype), ("device", self.device),
                ("bytes", f"{self.nbytes:,}"), ("session", self.session.target)]
        if self._mem.ptr is None:
            rows.append(("state", "freed"))
        preview = self._preview()
        if preview is not None:
            rows.append(("first items", preview))
        body = "".join(f"<tr><th style='text-align:left'>{e(k)}</th><td><code>{e(str(v))}</code></td></tr>"
                       for k, v in rows)
        return f"<div><b>rdev.DeviceArray</b><table>{body}</table></div>"

    def head(self, n=8):
        """The first n items (in C order) as a numpy array: one small copy
        to the host, after the current stream's work."""
        n = max(0, min(int(n), self.size))
        if self._strides is not None:
            return self.contiguous().head(n)
        return DeviceArray((n,), self.dtype, _mem=self._mem, _offset=self._offset).get()

    def free(self):
        """Frees the allocation now (every view of it becomes unusable)."""
        self._mem.free()

    # -- views
    def __getitem__(self, key):
        if not self.shape:
            raise IndexError("a 0-d device array has no items")
        self._need_contiguous("indexing")
        n, row = self.shape[0], self.nbytes // self.shape[0] if self.shape[0] else 0
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            i = int(key) + (n if key < 0 else 0)
            if not 0 <= i < n:
                raise IndexError(f"index {key} out of range for length {n}")
            start, shape = i, self.shape[1:]
        elif isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step != 1:
                raise IndexError("device array slices take step 1 (views are contiguous)")
            start, shape = start, (max(0, stop - start),) + self.shape[1:]
        else:
            raise IndexError("device arrays take an int or a slice on the first axis")
        return DeviceArray(shape, self.dtype, _mem=self._mem, _offset=self._offset + start * row)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        shape = tuple(int(n) for n in shape)
        self._need_contiguous("reshape")
        if -1 in shape:
            rest = int(np.prod([n for n in shape if n != -1], dtype=np.int64))
            shape = tuple(self.size // rest if n == -1 else n for n in shape)
        if int(np.prod(shape, dtype=np.int64)) != self.size:
            raise ValueError(f"cannot reshape {self.shape} into {shape}")
        return DeviceArray(shape, self.dtype, _mem=self._mem, _offset=self._offset)

    # -- transfers
    def _out(self, out):
        if out is None:
            return np.empty(self.shape, self.dtype)
        _host(out, self.nbytes, writable=True)
        return out

    def _transfer(self, op, view, stream, desc):
        """op(piece, ptr, raw stream) per _CHUNK queued, each piece waited for."""
        st = self.session._stream_for(stream, self.device)
        n, ptr = len(view), self.ptr
        bar = _progress.bar(n, desc) if n > _CHUNK else _progress.NONE
        try:
            for done in range(0, n, _CHUNK):
                piece = view[done:done + _CHUNK]
                st._queue(lambda raw: op(piece, ptr + done, raw), piece, self._mem)
                st.synchronize()
                bar.update(len(piece))
            if n == 0:
                st.synchronize()
        finally:
            bar.close()

    def get(self, out=None, *, stream=None):
        """Waits for the stream's work, then copies the array to the host:
        into `out` (C-contiguous, writable, same byte size), else a new
        ndarray. Returns it. A strided view is copied to a contiguous array
        on the device first (an operator)."""
        if self._strides is not None:
            return self.contiguous(stream=stream).get(out, stream=stream)
        out = self._out(out)
        self._transfer(lambda piece, ptr, raw: self.session._s.read(piece, ptr, raw), _host(out), stream, "D2H")
        return out

    def get_async(self, out=None, *, stream=None):
        """Queues the copy to the host on the stream and returns an
        rdev.Future whose result is the filled ndarray."""
        if self._strides is not None:
            return self.contiguous(stream=stream).get_async(out, stream=stream)
        out = self._out(out)
        st = self.session._stream_for(stream, self.device)
        view = _host(out)
        fut = Future(self.session)
        fut.set_running_or_notify_cancel()

        def reached(status):  # on the session's completion thread
            if status:
                fut.set_exception(_common.error(status, "the copy did not complete"))
            else:
                fut.set_result(out)

        s, ptr, done = self.session._s, self.ptr, self.session._on_reached(reached)

        def queue(raw):
            if len(view):
                s.read(view, ptr, raw)
            s.host_func(raw, done)

        st._queue(queue, view, self._mem)
        return fut

    def set(self, a, *, stream=None):
        """Uploads the host array a (same byte size) into this array, in
        stream order (work of other streams sees it after a synchronize or
        an event); returns when a may change: for at most _STAGE bytes once
        they have left a, without waiting for the stream (an error comes
        with the stream's next wait), else once they were written. A strided
        view gets a's values through a contiguous copy (an operator)."""
        if self._strides is not None:
            tmp = asarray(np.asarray(a, dtype=self.dtype).reshape(self.shape), session=self.session, stream=stream)
            self.copy_(tmp, stream=stream)
            return self
        a = np.asarray(a, dtype=self.dtype, order="C")
        view = _host(a, self.nbytes)
        if 0 < len(view) <= _STAGE:
            ptr = self.ptr
            self.session._stream_for(stream, self.device)._queue(lambda raw: self.session._s.write(ptr, view, raw),
                                                                self._mem)
            return self
        self._transfer(lambda piece, ptr, raw: self.session._s.write(ptr, piece, raw), view, stream, "H2D")
        return self

    def copy(self, *, stream=None):
        """A new device array with this one's contents (device to device),
        C-contiguous."""
        if self._strides is not None:
            return self.contiguous(stream=stream)
        out = DeviceArray(self.shape, self.dtype, session=self.session)
        copyto(out, self, stream=stream)
        return out

    def fill(self, byte, *, stream=None):
        """Sets every byte to `byte`, 0 to 255 (a device memset, queued on the stream)."""
        if isinstance(byte, bool) or not isinstance(byte, (int, np.integer)) or not 0 <= byte <= 255:
            raise ValueError(f"fill takes a byte value from 0 to 255, not {byte!r}")
        self._need_contiguous("fill (a memset; fill_ is the operator)")
        st, ptr, n = self.session._stream_for(stream, self.device), self.ptr, self.nbytes
        if n:
            st._queue(lambda raw: self.session._s.memset(ptr, int(byte), n, raw), self._mem)
        return self

    # -- layout views (no copy; operators take them as they are)
    def permute(self, *dims):
        """A view with the dimensions reordered (torch's permute, numpy's
        transpose); rdev.ops.permute makes a contiguous copy."""
        dims = dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        nd = self.ndim
        norm = [int(d) + (nd if d < 0 else 0) for d in dims]
        if sorted(norm) != list(range(nd)):
            raise ValueError(f"{tuple(dims)} is not a permutation of {nd} dimensions")
        st = self._elem_strides()
        return DeviceArray(tuple(self.shape[d] for d in norm), self.dtype, _mem=self._mem, _offset=self._offset,
                           _strides=tuple(st[d] for d in norm))

    def transpose(self, *axes):
        """numpy's transpose: the dimensions reversed, or in the order of axes (a view)."""
        return self.permute(*axes) if axes else self.permute(*reversed(range(self.ndim)))

    T = property(lambda self: self.transpose(), doc="The transpose (a view; the dimensions reversed).")

    # contiguous(), the arithmetic (+ - * / @, unary - and abs) and the
    # operator methods (sum, mean, max/amax, astype, softmax, fill_, copy_)
    # are rdev.ops's: ops.py installs them on this class.


def set_preview(n):
    """Makes reprs of device arrays (text and notebook HTML) show their
    first n items, a small copy to the host each; 0 (the default) shows
    none and asks the server nothing. Returns the setting before."""
    global _preview_items
    before, _preview_items = _preview_items, max(0, int(n))
    return before


def copyto(dst, src, *, stream=None):
    """Copies device array src into dst (same byte size, same session), queued on the stream."""
    if not isinstance(dst, DeviceArray) or not isinstance(src, DeviceArray):
        raise TypeError("copyto takes two device arrays")
    if dst.session is not src.session:
        raise ValueError("the arrays belong to different sessions")
    if dst.nbytes != src.nbytes:
        raise ValueError(f"dst has {dst.nbytes} bytes, src {src.nbytes}")
    dst._need_contiguous("copyto")
    src._need_contiguous("copyto")
    st, d, s, n = dst.session._stream_for(stream, dst.device), dst.ptr, src.ptr, dst.nbytes
    if n and src.device != dst.device:  # src's device's stream has run what writes src
        src_st = src.session._stream_for(stream, src.device)
        if src_st is not st:
            src_st.synchronize()
    if n:
        st._queue(lambda raw: dst.session._s.copy(d, s, n, raw), dst._mem, src._mem)


def asarray(a, dtype=None, *, stream=None, session=None):
    """Uploads an array-like to the device (returns a if it is already a DeviceArray)."""
    if isinstance(a, DeviceArray):
        return a
    a = np.asarray(a, dtype=dtype, order="C")  # not ascontiguousarray: it makes 0-d arrays 1-d
    return DeviceArray(a.shape, a.dtype, session=session).set(a, stream=stream)


def empty(shape, dtype=np.float32, *, session=None):
    """A new device array (rdevd hands out new device memory zeroed)."""
    return DeviceArray(shape, dtype, session=session)


def zeros(shape, dtype=np.float32, *, session=None):
    """A new device array of zeros: new device memory, which rdevd zeroes
    before any later request of the session runs (rdev_malloc's contract),
    so no memset is queued on any stream."""
    return DeviceArray(shape, dtype, session=session)


def empty_like(d):
    return DeviceArray(d.shape, d.dtype, session=d.session)


zeros_like = empty_like

