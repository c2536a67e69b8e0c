"""tests/python/rdev_pkg/test_notebook_session.py — the package in a
notebook's way of working, against a real rdevd: rdev.connect() without
`with` makes the process's default session (a cell's session serves the
next), threads and `with` blocks pick their own, closing falls back to the
default before; sessions left open are closed at exit (and a killed
process's are reaped), as rdevd's audit lines show; the session's and a
device array's repr, HTML and rdev.info(); progress bars where people look
(nothing in a non-interactive process unless asked, a text bar on a
terminal, a widget in a notebook) for waits and transfers; Ctrl-C during a
synchronize blocked by a host function leaving the session usable.
"""
import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import numpy as np
import pytest

import rdev
from rdev import _common, _progress

MiB = 1 << 20


@pytest.fixture
def no_default(monkeypatch):
    """An empty list of default sessions for the test (others' sessions left open do not count)."""
    monkeypatch.setattr(_common, "_defaults", [])


# ---- the default session ------------------------------------------------------------------------


def test_no_session_at_all_is_a_clear_error(no_default):
    with pytest.raises(rdev.Error) as ei:
        rdev.current_session()
    assert "no current session" in str(ei.value) and "rdev.connect()" in str(ei.value)
    with pytest.raises(rdev.Error):
        rdev.empty(4)


def test_connect_makes_the_process_default(target, no_default):
    s = rdev.connect()  # $RDEV_TARGET, as a notebook's first cell
    try:
        assert rdev.current_session() is s
        x = rdev.asarray(np.arange(8, dtype=np.float32))  # "the next cell"
        assert x.session is s and x.get().tolist() == list(range(8))
        seen = []

        def other():
            seen.append(rdev.current_session() is s)
            with rdev.Session(target) as own:  # a thread picks its own with `with`
                seen.append(rdev.current_session() is own)
            seen.append(rdev.current_session() is s)

        t = threading.Thread(target=other)
        t.start()
        t.join(30)
        assert seen == [True, True, True]
        s2 = rdev.connect()
        assert rdev.current_session() is s2
        s.make_current()
        assert rdev.current_session() is s
        s.close()
        assert rdev.current_session() is s2, "closing the default did not fall back to the one before"
        s2.close()
        with pytest.raises(rdev.Error):
            rdev.current_session()
    finally:
        s.close()


def _rdevd_with_audit(tmp):
    """An rdevd on a free port logging at info (its audit lines) into a file: (proc, addr, log path).
    It keeps a session whose client vanished for 1 s (for a resume that never comes)."""
    out, log = os.path.join(tmp, "out"), os.path.join(tmp, "log")
    with open(out, "wb") as o, open(log, "wb") as e:
        proc = subprocess.Popen([os.environ.get("RDEV_TEST_RDEVD", "rdevd"), "--listen", "127.0.0.1:0",
                                 "--log-level", "info", "--sim-devices", "1", "--sim-mem", "64M",
                                 "--resume-ms", "1000"], stdout=o, stderr=e)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(out) as f:
            line = f.readline()
        if line.endswith("\n"):
            return proc, line.split()[-1], log
        time.sleep(0.02)
    proc.kill()
    raise RuntimeError("rdevd did not start")


def _closed_reasons(log, n, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        with open(log) as f:
            lines = [ln for ln in f if "audit: session closed" in ln]
        if len(lines) >= n or time.monotonic() > deadline:
            return [ln.split("reason=")[1].split(" buffers_freed")[0] for ln in lines]
        time.sleep(0.05)


def test_exit_closes_sessions_and_a_killed_process_is_reaped():
    tmp = tempfile.mkdtemp(prefix="rdev-nb-exit-")
    proc, addr, log = _rdevd_with_audit(tmp)
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(rdev.__file__)))
    env = dict(os.environ, PYTHONPATH=pkg, RDEV_TARGET=addr)
    # The session is still held at exit (a reference never dropped, as a cycle or a thread may hold
    # one): only the exit hook closes it; without it the connection just drops ("cancelled").
    child = textwrap.dedent("""
        import ctypes, os, signal, sys, numpy as np, rdev
        s = rdev.connect()
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(s))
        x = rdev.asarray(np.ones(1 << 20, np.uint8))
        s.stream()
        if sys.argv[1] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        print("exiting")
    """)
    try:
        r = subprocess.run([sys.executable, "-c", child, "exit"], env=env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and "exiting" in r.stdout, r.stderr
        assert _closed_reasons(log, 1) == ["closed by client"], "the session was not closed at exit"
        r = subprocess.run([sys.executable, "-c", child, "kill"], env=env, capture_output=True, timeout=30)
        assert r.returncode == -signal.SIGKILL
        # kept for a resume, then reaped
        assert _closed_reasons(log, 2)[1:] == ["resume window passed"], "the killed process's session was not reaped"
        with rdev.Session(addr) as s:  # all its memory is back
            free, total = s.mem_info()
            assert total - free < MiB
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
        with open(log) as f:
            assert "buffers_freed=1" in f.read()


# ---- overview: repr, HTML, rdev.info() ----------------------------------------------------------


def test_session_overview(session):
    x = rdev.asarray(np.zeros(MiB // 4, np.float32))
    st = session.stream()
    text = session.overview()
    assert session.target in text and "device 0" in text and "device 1" in text and "backend" in text
    assert "1.0 MiB of device memory in arrays" in text and "open streams" in text, text
    assert re.search(r"device 0 \S+: 1\.0 MiB in use of \S+ MiB, \S+ MiB of \S+ MiB free on the device", text), text
    buf = io.StringIO()
    rdev.info(file=buf)
    assert buf.getvalue().strip() == session.overview().strip()
    h = session._repr_html_()
    assert "<table" in h and session.target in h and "<progress" in h and "1.0 MiB" in h
    assert "arrays=1.0 MiB" in repr(session)
    del x
    st.close()
    session.synchronize()  # the upload's stream lets go of the array
    assert "arrays=0 B" in repr(session)
    session.close()
    assert "closed" in repr(session) and "closed" in session._repr_html_()


def test_device_array_repr_preview_only_when_asked(session):
    x = rdev.asarray(np.arange(100, dtype=np.int32))
    r = repr(x)
    assert "shape=(100,)" in r and "int32" in r and "nbytes=400" in r and "[" not in r.split(">")[1]
    h = x._repr_html_()
    assert "(100,)" in h and "400" in h and "first items" not in h
    before = rdev.set_preview(4)
    try:
        assert "[0 1 2 3] ..." in repr(x)
        assert "first items" in x._repr_html_() and "[0 1 2 3]" in x._repr_html_()
    finally:
        rdev.set_preview(before)
    assert x.head(3).tolist() == [0, 1, 2]
    x.free()
    assert "freed" in repr(x) and "freed" in x._repr_html_()


# ---- progress where people look -----------------------------------------------------------------


@pytest.fixture
def auto_progress():
    before = rdev.set_progress(None)
    yield
    rdev.set_progress(before)


class _Tty(io.StringIO):
    def isatty(self):
        return True


class _FakeWidget:
    """A stand-in for an ipywidgets widget: its attributes, and whether it was closed."""

    def __init__(self, *children, **kw):
        self.children, self.closed, self.value = (children[0] if children else []), False, ""
        self.__dict__.update(kw)

    def close(self):
        self.closed = True


@pytest.fixture
def notebook(monkeypatch):
    """This process as a Jupyter kernel with ipywidgets 8 (a stand-in): the widgets displayed."""
    import types

    import IPython.display
    fake = types.ModuleType("ipywidgets")
    fake.__version__ = "8.0.0"
    fake.IntProgress = type("IntProgress", (_FakeWidget,), {})
    fake.Label = type("Label", (_FakeWidget,), {})
    fake.HBox = type("HBox", (_FakeWidget,), {})
    monkeypatch.setitem(sys.modules, "ipywidgets", fake)
    monkeypatch.setattr(_progress, "in_notebook", lambda: True)
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs: shown.extend(objs))
    return shown


def test_progress_policy(monkeypatch, auto_progress):
    assert _progress.kind() is None  # pytest's stderr is no terminal
    assert _progress.kind(True) == "text" and _progress.kind(False) is None
    monkeypatch.setattr(sys, "stderr", _Tty())
    assert _progress.kind() == "text"
    monkeypatch.setattr(_progress, "in_notebook", lambda: True)
    assert _progress.kind() == "widget" and _progress.kind(True) == "widget" and _progress.kind(False) is None
    rdev.set_progress(False)
    assert _progress.kind() is None
    with pytest.raises(ValueError):
        rdev.set_progress("yes")


def test_wait_quiet_when_not_interactive(session, capsys, auto_progress):
    st = session.stream()
    session.kernels.delay_us(1_300_000, stream=st)
    capsys.readouterr()
    st.synchronize()
    assert capsys.readouterr().err == ""


def test_wait_text_bar_on_a_terminal(session, monkeypatch, auto_progress):
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    st = session.stream()
    session.kernels.delay_us(1_400_000, stream=st)
    st.synchronize()
    assert "synchronize:" in tty.getvalue() and "\r" in tty.getvalue(), repr(tty.getvalue())


def test_transfer_widget_in_a_notebook(session, notebook, auto_progress):
    st = session.stream()
    d = rdev.zeros(128 * MiB, np.uint8)
    session.kernels.delay_us(1_300_000, stream=st)
    d.get(stream=st)
    bars = [b.children[0] for b in notebook]
    # drawn at most every 0.1 s: the last piece may end the transfer before its drawing
    assert any(b.max == 128 * MiB and b.value >= 64 * MiB for b in bars), [(b.max, b.value) for b in bars]
    assert all(b.closed for b in notebook), "a transfer's widget stayed"


def test_old_ipywidgets_falls_back_to_text(session, notebook, auto_progress, capsys):
    sys.modules["ipywidgets"].__version__ = "6.0.0"
    st = session.stream()
    session.kernels.delay_us(1_300_000, stream=st)
    capsys.readouterr()
    st.synchronize()
    assert not notebook and "synchronize:" in capsys.readouterr().err


# ---- Ctrl-C -------------------------------------------------------------------------------------


@contextlib.contextmanager
def sigint_after(delay):
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(delay, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()
        signal.signal(signal.SIGINT, old)


def test_ctrl_c_during_synchronize_blocked_by_a_host_function(session):
    st = session.stream()
    release = threading.Event()
    session._s.host_func(st._raw, lambda status: release.wait(20), True)  # blocks the stream until released
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with sigint_after(0.3):
            st.synchronize()
    took = time.monotonic() - t0
    assert took < 1.5, f"KeyboardInterrupt after {took:.2f} s"
    # the session is usable: other streams, memory, kernels
    a = np.arange(1000, dtype=np.int32)
    np.testing.assert_array_equal(rdev.asarray(a).get(), a)
    assert not st.query()
    release.set()
    st.synchronize(timeout=10)
    assert st.query()
