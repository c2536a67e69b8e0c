"""rdev/stream.py — streams (a `with` block makes one current and
synchronizes it at the end), events, and futures. A stream holds the host
buffers and device arrays its queued work uses until a synchronize of it
has returned (Stream._hold), so Ctrl-C or a dropped reference never frees
memory a pending reply may still write into.
"""
import asyncio
import concurrent.futures
import threading

from . import _common, _rdev
from ._common import Error


class Stream:
    """A device stream. `with st:` makes it current for this thread or task
    and synchronizes it at the end of the block."""

    def __init__(self, session):
        self.session = session
        self._raw = session._s.stream()
        self._lock = threading.Lock()
        self._held = {}  # id -> object that queued work uses
        self._waiter = self._earlier = None  # what an unfinished wait left (_common.wait)
        session._register(self)

    def _queue(self, fn, *objs):
        """Queues work: fn(raw stream), holding objs until a synchronize has
        returned. Under the stream's lock, so that a synchronize on another
        thread either covers the work or leaves its objects held."""
        with self._lock:
            for o in objs:
                self._held[id(o)] = o
            return fn(self._raw)

    def __enter__(self):
        _common.enter(_common.cur_stream, self)
        return self

    def __exit__(self, exc_type, *rest):
        _common.leave(_common.cur_stream, self)
        if exc_type is None or not issubclass(exc_type, KeyboardInterrupt):
            self.synchronize()

    def synchronize(self, timeout=None):
        """Waits until the work queued so far has run and its device-to-host
        data has arrived; raises the first error since the last synchronize.
        timeout in seconds (None: for ever), else Error(RT_STREAM_SYNC_TIMEOUT)."""
        with self._lock:
            held, self._held = self._held, {}
        try:
            _common.wait(self, self._raw.synchronize, _rdev.RT_STREAM_SYNC_TIMEOUT, "synchronize", timeout)
        except BaseException as e:
            if not isinstance(e, Error) or e.code == _rdev.RT_STREAM_SYNC_TIMEOUT:
                with self._lock:  # still queued: keep what it uses
                    held.update(self._held)
                    self._held = held
            raise
        finally:
            self.session._flush_print()

    def query(self):
        """True when the stream is idle."""
        return self._raw.query()

    def abort(self):
        """Discards queued work not yet started (CANN's aclrtStreamAbort)."""
        self._raw.abort()

    def set_failure_mode(self, stop):
        """stop true: once a task of the stream fails, its later device work
        is skipped until the synchronize that reports the error (CANN's
        aclrtSetStreamFailureMode); false, the default: every task runs."""
        self._raw.set_failure_mode(bool(stop))

    def close(self):
        """Waits for queued work, then destroys the stream."""
        self.session._forget(self)
        try:
            self._raw.destroy()
        finally:
            self.session._flush_print()
        with self._lock:
            self._held = {}

    def record(self, event=None):
        """Records event (a new one if None) here; returns it."""
        event = event if event is not None else Event(self.session)
        event.record(self)
        return event

    def wait_event(self, event):
        """Later work of this stream waits for event's latest record."""
        self._queue(event._raw.wait_on)


class Event:
    """A device event."""

    def __init__(self, session):
        self.session = session
        self.device = session.device
        self._raw = session._s.event()
        self._waiter = self._earlier = None  # what an unfinished wait left (_common.wait)

    def record(self, stream=None):
        self.session._stream_for(stream, self.device)._queue(self._raw.record)
        return self

    def synchronize(self, timeout=None):
        try:
            _common.wait(self, self._raw.synchronize, _rdev.RT_WAIT_TIMEOUT, "event", timeout)
        finally:
            self.session._flush_print()

    def query(self):
        """True when the latest record has completed."""
        return self._raw.query()

    def timestamp(self):
        """When the latest record completed, in ns of the device's clock
        (rdev.Error while it is not recorded or not complete)."""
        return self._raw.timestamp()

    def close(self):
        self._raw.destroy()


def elapsed_time(start, end):
    """Milliseconds between the completion of two recorded events."""
    return end._raw.elapsed_since(start._raw)


class Future(concurrent.futures.Future):
    """A concurrent.futures.Future that asyncio code can also await. Taking
    its result writes the kernel print received so far, as waits do."""

    def __init__(self, session=None):
        super().__init__()
        self._session = session

    def _flush_print(self):
        if self._session is not None:
            self._session._flush_print()

    def result(self, timeout=None):
        try:
            return super().result(timeout)
        finally:
            self._flush_print()

    def __await__(self):
        value = yield from asyncio.wrap_future(self).__await__()
        self._flush_print()
        return value
