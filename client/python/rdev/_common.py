"""rdev/_common.py — what every part of the rdev package stands on: its
errors (rdev.Error from the extension), the current session and stream of
a thread or asyncio task (context variables, entered by `with`, over the
process's default session, which connect() sets), and interruptible waits.
Progress bars are _progress.py's.

A wait first blocks in C for up to _POLL_MS with the GIL released. If the
work is not done by then, a helper thread (_Waiter) goes on waiting while
the calling thread waits on an event, which Ctrl-C interrupts. An
interrupted wait stays with its stream or event: the next wait there
takes its outcome first, so an error of the work is never lost.
"""
import contextvars
import itertools
import threading

from . import _progress, _rdev

Error = _rdev.Error
Error.__module__ = "rdev"
strerror = _rdev.strerror

POLL_MS = 100  # how long a wait blocks in C before it becomes interruptible

cur_session = contextvars.ContextVar("rdev_session", default=None)
cur_stream = contextvars.ContextVar("rdev_stream", default=None)
_entered = contextvars.ContextVar("rdev_entered", default=())  # (variable, value) per `with`, innermost last


def error(code, message):
    """An Error as the extension raises them (.code, .message)."""
    return _rdev.error(code, message)


def enter(var, value):
    """Makes value current in var for this thread or task (a `with` block's start)."""
    _entered.set(_entered.get() + ((var, value),))
    var.set(value)


def leave(var, value):
    """Ends this thread's or task's innermost `with value:` block: the
    innermost block of var still open, if any, is current again."""
    stack = _entered.get()
    i = max((i for i, (v, x) in enumerate(stack) if v is var and x is value), default=None)
    if i is None:  # entered in another context (a generator finalized elsewhere): nothing to undo here
        return
    stack = stack[:i] + stack[i + 1:]
    _entered.set(stack)
    var.set(next((x for v, x in reversed(stack) if v is var), None))


# The process's default sessions: those connect() made (or make_current() named), latest last. The
# latest still open is the default; a closed one leaves the list (Session.close), so the one before
# it is the default again.
_defaults = []
_defaults_lock = threading.Lock()


def make_default(s):
    """Makes s the process's default session (connect, Session.make_current)."""
    with _defaults_lock:
        if s in _defaults:
            _defaults.remove(s)
        _defaults.append(s)


def drop_default(s):
    """s is no default any more (it closed)."""
    with _defaults_lock:
        if s in _defaults:
            _defaults.remove(s)


def default_session():
    """The process's default session: the latest connect() still open, or None."""
    with _defaults_lock:
        return next((s for s in reversed(_defaults) if not s.closed), None)


def current_session():
    """The session of the innermost `with session:` of this thread or task,
    else the process's default session (the latest rdev.connect() not yet
    closed)."""
    s = cur_session.get()
    if s is None:
        s = default_session()
    if s is None:
        raise error(_rdev.INVALID_PARAM,
                    "no current session: call rdev.connect() (or `with rdev.connect() as s:`) or pass session=")
    return s


def session_of(session):
    return current_session() if session is None else session


# ---- waits ------------------------------------------------------------------------------------

_SLICE_MS = (500, 1000, 2000)  # a helper's waits in C, growing: each is a request to rdevd


class _Waiter:
    """A wait going on in a helper thread, in slices of at most 2 s, so that
    a close or a destroy of its stream never waits longer than one slice
    for it. It keeps its owner (and so the buffers the owner holds for the
    queued work) alive until it ends."""

    def __init__(self, owner, call, timeout_code, ms):
        self.owner, self.done, self.failure = owner, threading.Event(), None
        threading.Thread(target=self._run, args=(call, timeout_code, ms), name="rdev-wait", daemon=True).start()

    def _run(self, call, timeout_code, ms):
        try:
            for i in itertools.count():
                step = _SLICE_MS[min(i, len(_SLICE_MS) - 1)]
                try:
                    call(step if ms < 0 else min(step, ms))
                    return
                except Error as e:
                    if e.code != timeout_code or 0 <= ms <= step:
                        raise
                    ms = ms if ms < 0 else ms - step
        except BaseException as e:  # handed to the waiting thread
            self.failure = e
        finally:
            self.owner = None
            self.done.set()

    def join(self, desc, timeout=None):
        """Waits for it (interruptibly; a progress bar past a second), up to
        timeout seconds; whether it is done."""
        b = _progress.bar(None, desc)
        try:
            if timeout is not None:
                return self.done.wait(timeout)
            while not self.done.wait(0.1):
                b.update(0)
            return True
        finally:
            b.close()


def wait(owner, call, timeout_code, desc, timeout=None):
    """Runs call(ms), which waits up to ms (-1: for ever) and raises
    Error(timeout_code) when the work did not finish, until the work is
    done or `timeout` seconds passed. Returns when the work is done; raises
    an Error other than timeout_code when it is done with an error (the
    first since the last wait); else (the timeout, Ctrl-C) the work is still
    queued. owner (a stream or an event) keeps what a wait that did not
    finish leaves: the helper still waiting (owner._waiter), whose outcome
    the next wait takes first, and an error not yet raised (owner._earlier)."""
    earlier, owner._earlier = owner._earlier, None
    done = False
    try:
        prior = owner._waiter
        if prior is not None:
            if not prior.join(desc, timeout):
                raise error(timeout_code, "the work is not done")
            owner._waiter = None
            if earlier is None and isinstance(prior.failure, Error) and prior.failure.code != timeout_code:
                earlier = prior.failure
        try:
            _wait_once(owner, call, timeout_code, desc, timeout)
        except Error as e:
            if e.code != timeout_code:
                done = True
                raise (earlier or e) from None
            raise
        done = True
        if earlier is not None:
            raise earlier
    finally:
        if not done:
            owner._earlier = earlier


def _wait_once(owner, call, timeout_code, desc, timeout):
    limit = -1 if timeout is None else max(0, int(timeout * 1000))
    first = POLL_MS if limit < 0 else min(POLL_MS, limit)
    try:
        call(first)
        return
    except Error as e:
        if e.code != timeout_code or 0 <= limit <= first:
            raise
    w = _Waiter(owner, call, timeout_code, -1 if limit < 0 else limit - first)
    try:
        w.join(desc)
    except BaseException:
        owner._waiter = w
        raise
    if w.failure is not None:
        raise w.failure
