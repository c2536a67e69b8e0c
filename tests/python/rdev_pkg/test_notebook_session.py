"""tests/python/rdev_pkg/test_notebook_session.py — the package in a
notebook's way of working, against a real rdevd: rdev.connect() without
`with` makes the process's default session (a cell's session serves the
next), threads and `with` blocks pick their own, closing falls back to the
default before; sessions left open are closed at exit (and a killed
process's are reaped), as rdevd's audit lines show; the session's and a
device array's repr, HTML and rdev.info(); progress bars where people look
(nothing in a non-interactive process unless asked, a text bar on a
terminal, in a real Jupyter kernel a widget of the installed ipywidgets
or, without it, a text bar) for waits and transfers, the classes of
ipywidgets 7 and later used as they are (a stand-in: Debian's is 6.0),
rdev.track; Ctrl-C during a synchronize blocked by a host function leaving
the session usable.
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


TRANSFER = """
    import numpy as np
    import rdev
    s = rdev.connect({addr!r})
    st = s.stream()
    d = rdev.zeros(128 << 20, np.uint8)
    s.kernels.delay_us(1_300_000, stream=st)   # the copy waits 1.3 s for it: long enough for bars
    d.get(stream=st)
    print("copied")
"""


def test_transfer_widget_in_a_notebook(kernel, target):
    """A real kernel with the installed ipywidgets (Debian's is 6.0): the
    transfer's bar is a widget whose comm_open carries its state under
    "state" (where nbclient reads it), displayed as a widget view, drawn
    with the copy's progress, and closed with every widget it holds."""
    pytest.importorskip("ipywidgets")
    cell = kernel.run(TRANSFER.format(addr=target))
    assert cell.ok and cell.stdout == "copied\n", cell.describe()
    assert cell.stderr == "", "a text bar or a warning beside the widgets: " + repr(cell.stderr)
    assert cell.opens and all("state" in data for data in cell.opens.values()), cell.describe()
    bars = []
    for view in cell.views:
        assert cell.state(view)["_model_name"] == "HBoxModel", cell.describe()
        bar, label = cell.children(view)
        assert cell.state(bar)["_model_name"] in ("ProgressModel", "IntProgressModel")
        assert cell.state(label)["_model_name"] == "LabelModel"
        bars.append(bar)
    # a second view may be the wait for the kernel's 1.3 s; the last drawing may be skipped (0.1 s apart)
    drawn = [(st["max"], st["value"]) for b in bars for st in cell.states[b]]
    assert any(m == 128 * MiB and v >= 64 * MiB for m, v in drawn), drawn
    assert set(cell.opens) <= cell.closed, "widgets left open: " + repr(set(cell.opens) - cell.closed)


def test_text_bar_in_a_notebook_without_ipywidgets(kernel, target):
    """A real kernel that cannot import ipywidgets: the bar is text on the cell's stderr."""
    cell = kernel.run('import sys; sys.modules["ipywidgets"] = None   # as if not installed\n'
                      + textwrap.dedent(TRANSFER.format(addr=target)))
    assert cell.ok and cell.stdout == "copied\n", cell.describe()
    assert not cell.views and not cell.opens, cell.describe()
    assert "D2H: [" in cell.stderr and "\r" in cell.stderr, repr(cell.stderr)


class _FakeWidget:
    """A stand-in for an ipywidgets 7 or later widget: its attributes, and whether it was closed."""

    def __init__(self, *children, **kw):
        self.children, self.closed, self.value = (children[0] if children else []), False, ""
        self.__dict__.update(kw)

    def close(self):
        self.closed = True


def _fake_ipywidgets(monkeypatch, version):
    """A stand-in ipywidgets of that version in sys.modules; the objects IPython displays."""
    import types

    import IPython.display
    fake = types.ModuleType("ipywidgets")
    fake.__version__ = version
    fake.IntProgress = type("IntProgress", (_FakeWidget,), {})
    fake.Label = type("Label", (_FakeWidget,), {})
    fake.HBox = type("HBox", (_FakeWidget,), {})
    monkeypatch.setitem(sys.modules, "ipywidgets", fake)
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs: shown.extend(objs))
    return fake, shown


@pytest.mark.parametrize("version", ["7.8.5", "8.1.2"])
def test_widgets_of_ipywidgets_7_and_later_as_they_are(monkeypatch, version):
    """ipywidgets 7 and later (a stand-in: Debian installs 6): its own classes, unchanged."""
    fake, shown = _fake_ipywidgets(monkeypatch, version)
    b = _progress.Bar(10, "things", "widget", unit="things", delay=0.0)
    b.update(4)
    assert len(shown) == 1 and type(shown[0]) is fake.HBox
    bar, label = shown[0].children
    assert type(bar) is fake.IntProgress and type(label) is fake.Label
    assert (bar.max, bar.value) == (10, 4) and label.value.startswith("things: [") and "4/10 things" in label.value
    b.close()
    assert shown[0].closed and bar.closed and label.closed


def test_ipywidgets_older_than_6_falls_back_to_text(monkeypatch):
    _, shown = _fake_ipywidgets(monkeypatch, "5.2.2")
    out = io.StringIO()
    b = _progress.Bar(10, "things", "widget", unit="things", delay=0.0, file=out)
    b.update(4)
    b.close()
    assert not shown and b.kind == "text" and "things: [" in out.getvalue()


def test_track(monkeypatch, auto_progress):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    assert list(rdev.track(range(3), desc="n", progress=True)) == [0, 1, 2]
    assert "n: [" in out.getvalue() and "3/3 it" in out.getvalue() and out.getvalue().endswith("\n")
    out.seek(0)
    out.truncate()
    assert list(rdev.track(iter("ab"), progress=False)) == ["a", "b"] and out.getvalue() == ""
    assert list(rdev.track(iter("ab"), desc="chars", unit="chars", progress=True)) == ["a", "b"]
    assert "chars: 2 chars" in out.getvalue()  # no len(): the count, no total


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
