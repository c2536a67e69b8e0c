"""tests/python/rdev_pkg/test_interrupts_threads.py — the rdev package under
Ctrl-C, threads and long waits, against a real rdevd: SIGINT during a
stream synchronize and during a large get() stops the wait quickly with
KeyboardInterrupt, leaves the session usable, keeps the host buffer of the
queued copy alive until a later synchronize (and keeps queued errors for
it); one session used from four threads at once; the GIL released during
waits; progress bars on stderr (on and off); get(out=) allocating nothing
(tracemalloc); `with session:` entered from several threads.
"""
import contextlib
import gc
import signal
import threading
import time
import tracemalloc
import weakref

import numpy as np
import pytest

import rdev

MiB = 1 << 20


@contextlib.contextmanager
def sigint_after(delay):
    """Sends SIGINT to the main thread `delay` seconds into the block, as Ctrl-C does."""
    assert threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(delay, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()
        signal.signal(signal.SIGINT, old)


def interrupted(call, delay=0.3):
    """(whether call() raised KeyboardInterrupt, seconds it ran); SIGINT after delay.
    Keeps no reference to the exception or its frames."""
    t0 = time.monotonic()
    hit = False
    with sigint_after(delay):
        try:
            call()
        except KeyboardInterrupt:
            hit = True
    return hit, time.monotonic() - t0


@pytest.fixture
def progress():
    """Restores the progress setting a test changes."""
    before = rdev.set_progress(False)
    yield
    rdev.set_progress(before)


# ---- Ctrl-C -------------------------------------------------------------------------------------


def test_ctrl_c_during_synchronize(session):
    st = session.stream()
    t_launch = time.monotonic()
    session.kernels.delay_us(3_000_000, stream=st)
    hit, took = interrupted(st.synchronize)
    assert hit, "synchronize was not interrupted"
    assert 0.25 <= took < 1.5, f"KeyboardInterrupt after {took:.2f} s"
    # queued work keeps running; the session stays usable meanwhile
    assert not st.query()
    a = np.arange(1000, dtype=np.int32)
    np.testing.assert_array_equal(rdev.asarray(a).get(), a)
    x = rdev.asarray(np.ones(4, np.float32))
    session.kernels.square_f32(x, x, 4)
    assert x.get().tolist() == [1, 1, 1, 1]
    assert not st.query()
    st.synchronize()
    assert time.monotonic() - t_launch >= 2.5, "the later synchronize did not wait for the work"
    assert st.query()
    st.synchronize()


def test_ctrl_c_in_stream_block(session):
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with sigint_after(0.3):
            with session.stream() as st:
                session.kernels.delay_us(3_000_000)
                st.synchronize()
    assert time.monotonic() - t0 < 1.5, "leaving the block waited again after Ctrl-C"
    assert not st.query()
    # the current stream was restored: new work goes to the default stream
    session.kernels.delay_us(1)
    session.default_stream.synchronize(timeout=10)
    assert not st.query()
    st.abort()


def test_error_after_ctrl_c_surfaces_at_next_synchronize(session):
    st = session.stream()
    session.kernels.delay_us(1_000_000, stream=st)
    session.kernels.trap(stream=st)
    hit, took = interrupted(st.synchronize)
    assert hit and took < 1.5
    time.sleep(1.5)  # the work (and its fault) has finished
    with pytest.raises(rdev.Error) as ei:
        st.synchronize()
    assert ei.value.code == 507015


def _get_interrupted(d, box, st):
    out = box.pop()
    return interrupted(lambda: d.get(out=out, stream=st))


def test_ctrl_c_during_large_get(session):
    n = 256 * MiB
    st = session.stream()
    d = rdev.zeros(n, np.uint8)
    d[:MiB].fill(0x5A, stream=st)
    session.kernels.delay_us(2_000_000, stream=st)  # the get waits behind it
    box = [np.empty(n, np.uint8)]
    out_ref = weakref.ref(box[0])
    hit, took = _get_interrupted(d, box, st)
    assert hit, "get() was not interrupted"
    assert took < 1.5, f"KeyboardInterrupt after {took:.2f} s"
    gc.collect()
    # the queued copy may still write into the out buffer: the stream keeps it
    assert out_ref() is not None, "the out buffer was released while a copy into it was queued"
    # the session stays usable
    assert rdev.asarray(np.arange(3)).get().tolist() == [0, 1, 2]
    st.synchronize()
    gc.collect()
    assert out_ref() is None, "the stream kept the out buffer after synchronize"
    # and a later get of the same array works
    got = d[:2 * MiB].get(stream=st)
    assert (got[:MiB] == 0x5A).all() and (got[MiB:] == 0).all()


# ---- threads ------------------------------------------------------------------------------------


def test_one_session_four_threads(session):
    errors, results = [], {}
    start = threading.Barrier(4)

    def worker(i):
        try:
            rng = np.random.default_rng(i)
            with session.stream() as st:
                start.wait(30)
                for it in range(4):
                    n = (1 << 18) + 17 * i + it
                    a = rng.standard_normal(n).astype(np.float32)
                    x = rdev.asarray(a, session=session)  # on st, the thread's current stream
                    y = rdev.empty_like(x)
                    session.kernels.square_f32(x, y, n, blocks=1 + i)
                    got = y.get()
                    results[(i, it)] = np.array_equal(got, a * a)
                    b = np.arange(n % 1000, dtype=np.int64) * (i + 1)
                    results[(i, it, "b")] = np.array_equal(rdev.asarray(b, session=session).get(), b)
                assert st is not None
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(f"thread {i}: {e!r}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert len(results) == 32 and all(results.values()), results


def _count_during(wait):
    """Runs wait() while another Python thread counts; the timestamps it took."""
    stamps, stop = [], threading.Event()

    def counter():
        while not stop.is_set():
            stamps.append(time.monotonic())
            time.sleep(0)

    t = threading.Thread(target=counter)
    t.start()
    try:
        t0 = time.monotonic()
        wait()
        t1 = time.monotonic()
    finally:
        stop.set()
        t.join(30)
    return stamps, t0, t1


def test_gil_released_while_waiting(session):
    st = session.stream()
    session.kernels.delay_us(500_000, stream=st)
    stamps, t0, t1 = _count_during(st.synchronize)
    assert t1 - t0 >= 0.35
    inside = [s for s in stamps if t0 + 0.05 <= s <= t1 - 0.05]
    assert len(inside) > 100, f"the counting thread ran {len(inside)} times in {t1 - t0:.2f} s"


def test_gil_released_in_the_extension(session):
    """The extension's own wait (the first part of every wait) releases the GIL."""
    st = session.stream()
    session.kernels.delay_us(500_000, stream=st)
    stamps, t0, t1 = _count_during(lambda: st._raw.synchronize(-1))
    assert t1 - t0 >= 0.35
    inside = [s for s in stamps if t0 + 0.05 <= s <= t1 - 0.05]
    assert len(inside) > 100, f"the counting thread ran {len(inside)} times in {t1 - t0:.2f} s"
    # the largest pause of the counter stays well under the wait
    gaps = np.diff([t0] + inside + [t1])
    assert gaps.max() < 0.25


def test_with_session_in_several_threads(target):
    s = rdev.connect(target)
    errors = []
    entered = threading.Barrier(3)

    def worker(hold):
        try:
            with s:
                assert rdev.current_session() is s
                entered.wait(30)
                time.sleep(hold)
                assert rdev.asarray(np.arange(4)).get().tolist() == [0, 1, 2, 3]
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(repr(e))

    try:
        with s:
            threads = [threading.Thread(target=worker, args=(h,)) for h in (0.1, 0.4)]
            for t in threads:
                t.start()
            entered.wait(30)
            for t in threads:
                t.join(30)
            assert not s.closed, "a thread leaving its `with s:` closed the session"
            assert rdev.current_session() is s
        assert s.closed
        assert errors == []
    finally:
        s.close()


# ---- progress -----------------------------------------------------------------------------------


def test_progress_bar_on_long_wait(session, capsys, progress):
    pytest.importorskip("tqdm")
    rdev.set_progress(True)
    st = session.stream()
    session.kernels.delay_us(1_600_000, stream=st)
    capsys.readouterr()
    st.synchronize()
    err = capsys.readouterr().err
    assert "synchronize" in err and "\r" in err, repr(err)


def test_progress_bar_on_long_transfer(session, capsys, progress):
    pytest.importorskip("tqdm")
    rdev.set_progress(True)
    st = session.stream()
    d = rdev.zeros(128 * MiB, np.uint8)
    session.kernels.delay_us(1_300_000, stream=st)
    capsys.readouterr()
    out = d.get(stream=st)
    err = capsys.readouterr().err
    assert "D2H" in err, repr(err)
    assert out.nbytes == 128 * MiB


def test_progress_off(session, capsys, progress):
    rdev.set_progress(False)
    st = session.stream()
    session.kernels.delay_us(1_600_000, stream=st)
    capsys.readouterr()
    t0 = time.monotonic()
    st.synchronize()
    assert time.monotonic() - t0 >= 1.2
    assert capsys.readouterr().err == ""


def test_progress_quiet_on_short_wait(session, capsys, progress):
    pytest.importorskip("tqdm")
    rdev.set_progress(True)
    st = session.stream()
    session.kernels.delay_us(300_000, stream=st)
    capsys.readouterr()
    st.synchronize()
    assert capsys.readouterr().err == ""


# ---- allocations --------------------------------------------------------------------------------


def test_get_out_allocates_nothing(session):
    n = 16 * MiB
    d = rdev.empty(n, np.uint8).fill(0x3C)
    out = np.zeros(n, np.uint8)
    for _ in range(3):  # warm-up
        d.get(out=out)
    assert (out == 0x3C).all()
    out[:] = 0
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for _ in range(50):
            assert d.get(out=out) is out
        gc.collect()
        now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (out == 0x3C).all()
    assert now - base < 4096, f"traced memory grew by {now - base} bytes over 50 get(out=)"
    assert peak - base < MiB, f"get(out=) allocated {peak - base} bytes at its peak"
