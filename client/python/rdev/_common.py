"""rdev/_common.py — what every part of the rdev package stands on: its
errors (rdev.Error from the extension), the current session and stream of
a thread or asyncio task (context variables, entered by `with`), progress
bars, and interruptible waits.

A wait first blocks in C for up to _POLL_MS with the GIL released. If the
work is not done by then, a helper thread (_Waiter) goes on waiting while
the calling thread waits on an event, which Ctrl-C interrupts. An
interrupted wait stays with its stream or event: the next wait there
takes its outcome first, so an error of the work is never lost.
"""
import contextvars
import os
import sys
import threading
import warnings

from . import _rdev

Error = _rdev.Error
Error.__module__ = "rdev"
strerror = _rdev.strerror

POLL_MS = 100  # how long a wait blocks in C before it becomes interruptible

cur_session = contextvars.ContextVar("rdev_session", default=None)
cur_stream = contextvars.ContextVar("rdev_stream", default=None)
_entered = contextvars.ContextVar("rdev_entered", default=())  # (variable, token) per `with`, innermost last


def error(code, message):
    """An Error as the extension raises them."""
    e = Error(f"{message} ({strerror(code)}, code {code})")
    e.code, e.message = code, message
    return e


def enter(var, value):
    """Makes value current in var for this thread or task (a `with` block's start)."""
    _entered.set(_entered.get() + ((var, var.set(value)),))


def leave():
    """Undoes this thread's or task's innermost enter."""
    stack = _entered.get()
    var, token = stack[-1]
    _entered.set(stack[:-1])
    var.reset(token)


def current_session():
    """The session of the innermost `with session:` of this thread or task."""
    s = cur_session.get()
    if s is None:
        raise error(_rdev.INVALID_PARAM, "no current session: use `with rdev.connect() as s:` or pass session=")
    return s


def session_of(session):
    return current_session() if session is None else session


# ---- progress ---------------------------------------------------------------------------------

_progress = os.environ.get("RDEV_PROGRESS", "1").lower() not in ("0", "off", "no", "false")


def set_progress(on):
    """Turns progress bars for transfers and waits longer than a second on
    or off; returns the setting before."""
    global _progress
    before, _progress = _progress, bool(on)
    return before


def bar(total, desc):
    """A tqdm bar that shows itself after a second (None when off or without tqdm)."""
    if not _progress:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from tqdm.autonotebook import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="B" if total else "it", unit_scale=bool(total), delay=1.0,
                leave=False, file=sys.stderr)


# ---- waits ------------------------------------------------------------------------------------


class _Waiter:
    """call(ms) going on in a helper thread."""

    def __init__(self, call, ms):
        self.done, self.failure = threading.Event(), None
        threading.Thread(target=self._run, args=(call, ms), name="rdev-wait", daemon=True).start()

    def _run(self, call, ms):
        try:
            call(ms)
        except BaseException as e:  # handed to the waiting thread
            self.failure = e
        finally:
            self.done.set()

    def join(self, desc, timeout=None):
        """Waits for it (interruptibly; a progress bar past a second) up to
        timeout seconds; whether it is done."""
        b = bar(None, desc)
        try:
            return self.done.wait(timeout) if timeout is not None else self._ticks(b)
        finally:
            if b is not None:
                b.close()

    def _ticks(self, b):
        while not self.done.wait(0.1):
            if b is not None:
                b.update(0)
        return True


def wait(owner, call, timeout_code, desc, timeout=None):
    """Runs call(ms), which waits up to ms (-1: for ever) and raises
    Error(timeout_code) when the work did not finish, until the work is done
    or `timeout` seconds passed (then Error(timeout_code)). owner (a stream
    or an event) keeps a wait that Ctrl-C interrupted in owner._waiter."""
    prior = owner._waiter
    if prior is not None:  # an interrupted wait: its outcome comes first
        if not prior.join(desc, timeout):
            raise error(timeout_code, "the work is not done")
        owner._waiter = None
        if isinstance(prior.failure, Error) and prior.failure.code != timeout_code:
            raise prior.failure
    limit = -1 if timeout is None else max(0, int(timeout * 1000))
    first = POLL_MS if limit < 0 else min(POLL_MS, limit)
    try:
        call(first)
        return
    except Error as e:
        if e.code != timeout_code or 0 <= limit <= first:
            raise
    w = _Waiter(call, -1 if limit < 0 else limit - first)
    try:
        w.join(desc)
    except BaseException:
        owner._waiter = w
        raise
    if w.failure is not None:
        raise w.failure
