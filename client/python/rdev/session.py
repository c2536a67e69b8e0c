"""rdev/session.py — sessions: connect (which makes the new session the
process's default), closing every session still open at exit, the server
and its devices, the session's streams (its default stream, and every
stream it made, for synchronize), its kernels, its overview (repr, HTML
for notebooks, rdev.info()), and writing the kernel print the extension
keeps on the waiting thread's sys.stdout (in a notebook: the cell that
waits).
"""
import atexit
import html
import os
import queue
import sys
import threading
import traceback
import weakref

from . import _common, _rdev
from .kernels import _Kernels
from .stream import Event, Stream

_DEFAULT_TARGET = "127.0.0.1:50051"


def _complete(completions):
    """A session's completion thread: runs what host functions handed over,
    until close (None)."""
    while (item := completions.get()) is not None:
        fn, status = item
        try:
            fn(status)
        except Exception:
            traceback.print_exc()


class Device:
    """One device of the server: index, name, total_bytes, free_bytes; and
    the session's tenant there: quota_bytes (what it may hold: its quota,
    else the device's memory) and used_bytes (what its sessions hold)."""

    def __init__(self, index, name, total_bytes, free_bytes, quota_bytes=0, used_bytes=0):
        self.index, self.name, self.total_bytes, self.free_bytes = index, name, total_bytes, free_bytes
        self.quota_bytes = quota_bytes or total_bytes
        self.used_bytes = used_bytes

    def __repr__(self):
        return f"<rdev.Device {self.index} {self.name!r} {self.free_bytes}/{self.total_bytes} bytes free>"


class _Info:
    def __init__(self, version, backend, identity, device_count, max_chunk):
        self.version, self.backend, self.identity = version, backend, identity
        self.device_count, self.max_chunk = device_count, max_chunk

    def __repr__(self):
        return (f"<rdev server {self.version} backend={self.backend} identity={self.identity!r} "
                f"devices={self.device_count}>")


_open = weakref.WeakSet()  # every session not yet closed: closed at exit
_open_lock = threading.Lock()


@atexit.register
def _close_all():
    """At exit: closes every session still open, so the server frees what
    they held at once (a process that dies without it has its sessions
    reaped when its connection goes)."""
    with _open_lock:
        sessions = list(_open)
    for s in sessions:
        try:
            s.close()
        except Exception:  # exiting: nobody to tell
            pass


def connect(target=None, token=None, *, ca=None, cert=None, key=None, timeout=None, device=0, keepalive=None,
            resume=None):
    """Opens a session on rdevd and makes it the process's default session
    (the current one wherever no `with` block names another) until it is
    closed or another is made current. Arguments left None come from the
    environment (RDEV_TARGET, else 127.0.0.1:50051; RDEV_TOKEN, RDEV_CA,
    RDEV_CERT, RDEV_KEY, RDEV_CONNECT_TIMEOUT_MS) or the library's defaults.
    keepalive: seconds without traffic after which the client pings rdevd;
    a server silent for as long again is taken for gone (default 10, at
    least 1). resume: how long, in seconds, a broken connection is retried
    and the session resumed (default: as long as rdevd keeps it; False or
    a negative number: never, the first break ends the session). Blocks
    until the server accepted it; raises Error otherwise. In a `with` block
    it is current for the block's thread or task and closed at the end."""
    s = Session(target, token, ca=ca, cert=cert, key=key, timeout=timeout, device=device, keepalive=keepalive,
                resume=resume)
    _common.make_default(s)
    return s


def info(session=None, file=None):
    """Prints the overview of the session (default: the current one):
    target, server, devices and their memory, this session's memory and
    open streams."""
    print(_common.session_of(session).overview(), file=file if file is not None else sys.stdout)


def _bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


class Session:
    """A session on rdevd (see connect). Thread-safe; waits release the GIL."""

    def __init__(self, target=None, token=None, *, ca=None, cert=None, key=None, timeout=None, device=0,
                 keepalive=None, resume=None):
        target = target or os.environ.get("RDEV_TARGET") or _DEFAULT_TARGET
        ms = 0 if timeout is None else max(1, int(timeout * 1000))
        keep_ms = 0 if keepalive is None else max(1000, int(keepalive * 1000))
        if resume is None or resume is True:
            resume_ms = 0
        elif resume is False or resume < 0:
            resume_ms = -1
        else:
            resume_ms = max(1, int(resume * 1000))
        self._s = _rdev.Session(target, token, ca, cert, key, ms, keep_ms, resume_ms)
        self.target = target
        self._credentials = (token, ca, cert, key, ms)  # for rdev.jobs' connection
        self._allocated = 0  # bytes of device memory this session's arrays hold
        self._lock = threading.RLock()  # default_stream makes a Stream, which registers here
        self._streams = []  # weak references: synchronize() covers them all
        self._default = {}  # device -> its default stream
        self._kernels = None
        self._entered = 0  # `with` blocks in, over every thread
        self._completions = queue.SimpleQueue()  # (fn, status) of host functions reached
        self._completer = None
        with _open_lock:
            _open.add(self)
        if device:
            self.device = device

    # -- lifetime
    def make_current(self):
        """Makes this session the process's default (as connect() does);
        returns it."""
        _common.make_default(self)
        return self

    def __enter__(self):
        with self._lock:
            self._entered += 1
        _common.enter(_common.cur_session, self)
        return self

    def __exit__(self, *exc):
        _common.leave(_common.cur_session, self)
        with self._lock:
            self._entered -= 1
            last = self._entered == 0
        if last:
            self.close()

    def close(self):
        """Ends the session: the server frees everything it held; futures
        not yet done fail. Waits for calls in flight on other threads."""
        self._s.close()
        _common.drop_default(self)
        with _open_lock:
            _open.discard(self)
        self._completions.put(None)  # after every host function ran
        self._flush_print()

    def __del__(self):
        completions = getattr(self, "_completions", None)  # None when connecting failed
        if completions is not None:
            completions.put(None)

    def _on_reached(self, fn):
        """A host function that hands fn(status) to the session's completion
        thread: no user code (a future's callbacks, which may wait on the
        session or close it) runs on the C library's host-call thread."""
        with self._lock:
            if self._completer is None:
                self._completer = threading.Thread(target=_complete, args=(self._completions,),
                                                   name="rdev-futures", daemon=True)
                self._completer.start()
        return lambda status: self._completions.put((fn, status))

    @property
    def closed(self):
        return self._s.closed

    def __repr__(self):
        if self.closed:
            return f"<rdev.Session {self.target} closed>"
        return (f"<rdev.Session {self.target} arrays={_bytes(self._allocated)} "
                f"streams={len(self._live_streams())}>")

    def _live_streams(self):
        with self._lock:
            return [st for st in (r() for r in self._streams) if st is not None]

    def _facts(self):
        """(server info, devices, current device) or None when closed; asks the server."""
        if self.closed:
            return None
        return self.info, self.devices(), self.device

    def overview(self):
        """The session as text: target, server, devices and their memory,
        this session's memory and open streams (one round trip per device)."""
        facts = self._facts()
        if facts is None:
            return f"rdev session {self.target}: closed"
        info, devices, current = facts
        lines = [f"rdev session {self.target}", f"  server   rdev {info.version}, backend {info.backend}, "
                 f"identity {info.identity!r}"]
        for d in devices:
            lines.append(f"  device {d.index} {d.name}: {_bytes(d.used_bytes)} in use of {_bytes(d.quota_bytes)}"
                         f"{' (quota)' if d.quota_bytes < d.total_bytes else ''}, "
                         f"{_bytes(d.free_bytes)} of {_bytes(d.total_bytes)} free on the device"
                         f"{'  (current)' if d.index == current else ''}")
        lines.append(f"  this session: {_bytes(self._allocated)} of device memory in arrays, "
                     f"{len(self._live_streams())} open streams")
        return "\n".join(lines)

    def _repr_html_(self):
        facts = self._facts()
        e = html.escape
        if facts is None:
            return f"<b>rdev session</b> <code>{e(self.target)}</code>: closed"
        info, devices, current = facts
        rows = "".join(
            f"<tr><td>{d.index}{' ★' if d.index == current else ''}</td><td>{e(d.name)}</td>"
            f"<td>{e(_bytes(d.used_bytes))} of {e(_bytes(d.quota_bytes))}"
            f"{' (quota)' if d.quota_bytes < d.total_bytes else ''}</td>"
            f"<td><progress value='{d.used_bytes}' max='{max(d.quota_bytes, 1)}'></progress></td>"
            f"<td>{e(_bytes(d.free_bytes))} of {e(_bytes(d.total_bytes))}</td></tr>"
            for d in devices)
        return (f"<div><b>rdev session</b> <code>{e(self.target)}</code> — rdev {e(info.version)}, "
                f"backend {e(info.backend)}, identity <code>{e(info.identity)}</code>"
                f"<table><tr><th>device</th><th>name</th><th>in use by you</th><th></th><th>free on the device</th></tr>{rows}</table>"
                f"this session: {e(_bytes(self._allocated))} of device memory in arrays, "
                f"{len(self._live_streams())} open streams</div>")

    # -- server and devices
    @property
    def info(self):
        """The server: version, backend, identity, device_count, max_chunk."""
        return _Info(*self._s.info())

    def devices(self):
        return [Device(i, *self._s.device_info(i)) for i in range(self._s.device_count())]

    @property
    def device(self):
        """The current device's index; assign to select another."""
        return self._s.get_device()

    @device.setter
    def device(self, index):
        self._s.set_device(index)

    def set_device(self, index):
        self._s.set_device(index)

    def mem_info(self):
        """(free, total) bytes of the current device."""
        return self._s.mem_info()

    # -- streams and events
    def _register(self, stream):
        with self._lock:
            self._streams = [r for r in self._streams if r() is not None]
            self._streams.append(weakref.ref(stream))

    def _forget(self, stream):
        with self._lock:
            self._streams = [r for r in self._streams if r() not in (None, stream)]
            for dev, st in list(self._default.items()):
                if st is stream:
                    del self._default[dev]

    @property
    def default_stream(self):
        """The current device's default stream: where work on its arrays goes
        outside any `with stream:` block (each device has its own, made on
        first use)."""
        return self._default_on(self.device)

    def _default_on(self, device):
        with self._lock:
            st = self._default.get(device)
            if st is None:
                current = self.device
                if device != current:  # made on its device (a session over several servers: on its server)
                    self._s.set_device(device)
                try:
                    st = self._default[device] = Stream(self)
                finally:
                    if device != current:
                        self._s.set_device(current)
            return st

    def stream(self):
        """A new stream on the current device; `with` makes it current."""
        return Stream(self)

    def event(self):
        """A new event on the current device."""
        return Event(self)

    def _stream_for(self, stream, device=None):
        """The stream a call uses: the given one, else the current one if it
        is this session's, else the default stream of device (the arrays'
        device; None: the current device)."""
        if stream is None:
            stream = _common.cur_stream.get()
            if stream is None or stream.session is not self:
                return self._default_on(self.device if device is None else device)
        elif not isinstance(stream, Stream):
            raise TypeError(f"stream must be an rdev.Stream, not {type(stream).__name__}")
        elif stream.session is not self:
            raise ValueError("the stream belongs to another session")
        return stream

    def synchronize(self):
        """Waits for the work of every stream of this session."""
        for st in self._live_streams():
            st.synchronize()

    @property
    def kernels(self):
        """The kernels the server offers, as callables: s.kernels.NAME(*args, blocks=1, stream=None)."""
        if self._kernels is None:
            self._kernels = _Kernels(self, self._s.kernels())
        return self._kernels

    def _flush_print(self):
        text = self._s.take_print()
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()
