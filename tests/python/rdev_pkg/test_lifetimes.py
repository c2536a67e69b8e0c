"""tests/python/rdev_pkg/test_lifetimes.py — regressions for the lifetimes of
buffers, streams and sessions in the rdev package, against a real rdevd:
an error of earlier work raised by an interrupted wait never frees the
buffers of later work (get(out=) still lands byte for byte); a dropped
stream whose wait Ctrl-C interrupted keeps its buffers until the copy is
done; closing the session from a future's callback (and refusing it from a
raw host function); close() soon after an interrupted long wait;
Stream.close() while another thread is inside a call on it; a stream's
deallocation not clearing an exception in flight; host_func on a closed
session not leaking its callable; two threads on one stream (queueing and
synchronizing); and small contract points: set() casting to the array's
dtype, fill()'s byte range, f32 kernel arguments, set_device out of int
range, numpy integers as device addresses, `with session:` in interleaved
generators, a closed default stream, and the fields of the package's
own Errors. Crashes and hangs are caught by running those scenarios in a
child process (sys.executable, the test's environment).
"""
import contextvars
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import rdev
from rdev import _rdev

MiB = 1 << 20
INVALID_PARAM = 100000


def sigint_soon(delay):
    """A started timer that sends SIGINT to the main thread after delay seconds, as Ctrl-C does."""
    t = threading.Timer(delay, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    t.start()
    return t


def interrupted(call, delay=0.3):
    """Whether call() raised KeyboardInterrupt, with SIGINT sent `delay` seconds in."""
    assert threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = sigint_soon(delay)
    try:
        call()
    except KeyboardInterrupt:
        return True
    finally:
        timer.cancel()
        timer.join()
        signal.signal(signal.SIGINT, old)
    return False


# ---- scenarios in a child process (a crash or a hang fails the test, not the run) ---------------

_CHILD_PRELUDE = '''
import faulthandler, gc, os, signal, sys, threading, time, weakref
import numpy as np
import rdev
faulthandler.enable()
faulthandler.dump_traceback_later(float(os.environ["LT_HANG_S"]), exit=True)

def interrupted(call, delay=0.3):
    """(whether call() raised KeyboardInterrupt, seconds it took); SIGINT after delay."""
    timer = threading.Timer(delay, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    try:
        call()
    except KeyboardInterrupt:
        return True, time.monotonic() - t0
    finally:
        timer.cancel()
        timer.join()
    return False, time.monotonic() - t0

def pattern(n):
    """n bytes that a misplaced or missing piece shows up in (period 251)."""
    return np.resize(np.arange(251, dtype=np.uint8), n)

s = rdev.connect(os.environ["RDEV_TARGET"])
'''


def run_child(body, timeout=20):
    """Runs the prelude and body in a new interpreter on the test's rdevd ($RDEV_TARGET);
    asserts it exited 0 within timeout seconds and printed CHILD-OK; its stdout."""
    env = dict(os.environ)
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(rdev.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg, env.get("PYTHONPATH")) if p)
    env["LT_HANG_S"] = str(max(1, timeout - 3))  # faulthandler dumps the stacks of a hang first
    try:
        r = subprocess.run([sys.executable, "-c", _CHILD_PRELUDE + textwrap.dedent(body) + "\nprint('CHILD-OK')\n"],
                           env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the child hung past {timeout} s:\n{e.stdout}\n{e.stderr}")
    report = f"exit {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    assert r.returncode == 0, report
    assert "CHILD-OK" in r.stdout, report
    return r.stdout


def test_error_of_interrupted_wait_keeps_later_get_buffer(target):
    """The trap's error, left by an interrupted synchronize, surfaces at the
    get after it only once the get's own copy has landed in `out`."""
    run_child('''
        n = 64 << 20
        want = pattern(n)
        d = rdev.asarray(want, session=s)
        st = s.stream()
        s.kernels.delay_us(1_000_000, stream=st)
        s.kernels.trap(stream=st)
        hit, took = interrupted(st.synchronize)
        assert hit and took < 1.5, (hit, took)
        s.kernels.delay_us(1_500_000, stream=st)  # the get's copy waits behind it
        t0 = time.monotonic()
        buf = np.full(n, 0xFF, np.uint8)  # 0xFF is not in the pattern
        try:
            d.get(out=buf, stream=st)
            raised = None
        except rdev.Error as e:
            raised = e.code
        took = time.monotonic() - t0
        assert raised == 507015, raised
        assert took >= 1.2, f"get raised the earlier error after {took:.2f} s, before its own copy"
        gc.collect()
        bad = np.flatnonzero(buf != want)
        assert bad.size == 0, f"{bad.size} bytes differ, the first at {bad[:1]}"
        st.synchronize()  # the error was raised once; nothing is pending
        assert st.query()
        assert rdev.asarray(np.arange(5), session=s).get().tolist() == [0, 1, 2, 3, 4]
        s.close()
    ''', timeout=40)


def test_dropped_stream_keeps_buffer_of_interrupted_get(target):
    """A stream dropped after Ctrl-C of a get(out=) on it keeps `out` alive
    until the copy into it has landed; the session then goes on."""
    run_child('''
        n = 64 << 20
        want = pattern(n)
        d = rdev.asarray(want, session=s)
        refs = {}

        def work():
            st = s.stream()
            s.kernels.delay_us(1_500_000, stream=st)
            out = np.full(n, 0xFF, np.uint8)
            refs["out"] = weakref.ref(out)
            hit, took = interrupted(lambda: d.get(out=out, stream=st))
            assert hit and took < 1.5, (hit, took)

        t0 = time.monotonic()
        work()  # the stream and the buffer go with the frame
        gc.collect()
        assert refs["out"]() is not None, "out was freed while the copy into it was pending"
        # the session's later work, while the copy is pending
        a = np.arange(1000, dtype=np.float32)
        x = rdev.asarray(a, session=s)
        y = rdev.empty_like(x)
        s.kernels.square_f32(x, y, a.size)
        assert np.array_equal(y.get(), a * a)
        time.sleep(max(0, 2.5 - (time.monotonic() - t0)))  # the delay is over, the copy has landed
        s.synchronize()
        assert np.array_equal(d.get(), want)
        deadline = time.monotonic() + 10
        while refs["out"]() is not None and time.monotonic() < deadline:
            gc.collect()
            time.sleep(0.05)
        assert refs["out"]() is None, "out outlived the copy into it"
        s.close()
    ''', timeout=40)


def test_close_from_future_callback(target):
    """A future's done-callback may close the session; a raw host function
    (the C library's host-call thread) may not: it gets Error 100000."""
    run_child('''
        st = s.stream()
        x = rdev.asarray(np.arange(16, dtype=np.float32), session=s)
        s.kernels.delay_us(1_000_000, stream=st)  # the future completes after the callback is added
        fut = x.get_async(stream=st)
        done, seen = threading.Event(), {}

        def cb(f):
            try:
                seen["result"] = f.result().tolist()
                seen["main thread"] = threading.current_thread() is threading.main_thread()
                s.close()
                seen["closed"] = s.closed
            except BaseException as e:
                seen["error"] = repr(e)
            finally:
                done.set()

        fut.add_done_callback(cb)
        assert done.wait(10), "the callback did not finish"
        assert seen == {"result": list(range(16)), "main thread": False, "closed": True}, seen
        assert s.closed
        print("future callback closed the session")

        s2 = rdev.connect(os.environ["RDEV_TARGET"])
        st2 = s2.stream()
        s2.kernels.delay_us(200_000, stream=st2)
        seen2, ran = {}, threading.Event()

        def fn(status):
            try:
                s2._s.close()
                seen2["returned"] = True
            except rdev.Error as e:
                seen2["code"] = e.code
            except BaseException as e:
                seen2["other"] = repr(e)
            seen2["main thread"] = threading.current_thread() is threading.main_thread()
            ran.set()

        s2._s.host_func(st2._raw, fn)  # not blocking: the stream may go on before fn ran
        assert ran.wait(10), "the host function did not run"
        st2.synchronize(timeout=10)
        assert seen2 == {"code": 100000, "main thread": False}, seen2
        assert not s2.closed
        assert rdev.asarray(np.arange(3), session=s2).get().tolist() == [0, 1, 2]
        s2.close()
    ''', timeout=20)


def test_concurrent_closes_wait_for_the_first(session):
    """Two threads close one session at once: both return only when it is
    closed, and a future pending on it is resolved (its host function ran
    at the close), not left hanging."""
    x = rdev.asarray(np.arange(1 << 20, dtype=np.float32))
    session.kernels.delay_us(300_000)
    fut = x.get_async()
    barrier, done = threading.Barrier(2), []

    def closer():
        barrier.wait()
        session.close()
        done.append(session.closed)

    threads = [threading.Thread(target=closer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert done == [True, True]
    assert fut.exception(timeout=5) is not None or fut.result().size == 1 << 20


def test_close_soon_after_interrupted_wait(target):
    """close() does not wait for the interrupted wait's helper to see the
    10 s of work end (it waits in slices of at most 2 s)."""
    s = rdev.connect(target)
    try:
        st = s.stream()
        s.kernels.delay_us(10_000_000, stream=st)
        assert interrupted(st.synchronize), "synchronize was not interrupted"
        t0 = time.monotonic()
        s.close()
        took = time.monotonic() - t0
        assert took < 4, f"close() took {took:.2f} s behind the interrupted wait"
        assert s.closed
        with pytest.raises(rdev.Error):
            rdev.asarray(np.arange(3), session=s)
    finally:
        s.close()


def test_stream_close_while_another_thread_calls_it(target):
    """Stream.close() waits for a call in flight on the stream on another
    thread; afterwards the stream is destroyed (Error 200005), and so is
    every call that begins while the close runs."""
    run_child('''
        def race(call_on):
            st = s.stream()
            t0 = time.monotonic()
            s.kernels.delay_us(1_000_000, stream=st)
            outcome = {}

            def other():
                try:
                    call_on(st)
                    outcome["returned"] = True
                except rdev.Error as e:
                    outcome["code"] = e.code
                except BaseException as e:
                    outcome["other"] = repr(e)

            t = threading.Thread(target=other)
            t.start()
            time.sleep(0.3)
            st.close()
            closed_at = time.monotonic() - t0
            t.join(10)
            assert not t.is_alive()
            assert closed_at >= 0.8, f"close returned after {closed_at:.2f} s, before the work"
            for use in (st._raw.query, st.synchronize, lambda: s.kernels.delay_us(1, stream=st)):
                try:
                    use()
                except rdev.Error as e:
                    assert e.code == 200005 and "destroyed" in str(e), e
                else:
                    raise AssertionError("a destroyed stream was used")
            return outcome

        # a C call in flight on the stream
        got = race(lambda st: st._raw.synchronize(-1))
        assert got == {"returned": True}, got
        # the package's synchronize: it completes, or its next wait finds the stream destroyed
        got = race(lambda st: st.synchronize())
        assert got in ({"returned": True}, {"code": 200005}), got

        # calls that begin while close() runs: each works or finds the stream destroyed
        sys.setswitchinterval(1e-5)  # interleave the two threads finely
        ends = {}
        for _ in range(300):
            st = s.stream()
            raw, looping = st._raw, threading.Event()

            def caller():
                try:
                    for _ in range(100_000):
                        raw.query()
                        looping.set()
                    ends["no error"] = ends.get("no error", 0) + 1
                except rdev.Error as e:
                    key = (e.code, "destroyed" in str(e)) if e.code == 200005 else str(e)
                    ends[key] = ends.get(key, 0) + 1
                finally:
                    looping.set()

            t = threading.Thread(target=caller)
            t.start()
            looping.wait(10)
            st.close()
            t.join(10)
            assert not t.is_alive()
        sys.setswitchinterval(0.005)
        assert ends == {(200005, True): 300}, f"how the calls racing close() ended: {ends}"
        assert rdev.asarray(np.arange(3), session=s).get().tolist() == [0, 1, 2]
        s.close()
    ''', timeout=30)


@pytest.fixture
def own_server(server):
    """A private rdevd (as conftest's Server starts them) that a test may kill."""
    srv = type(server)("--sim-devices", "1", "--sim-mem", "64M")
    yield srv
    if srv.proc.poll() is None:
        srv.stop()
    elif os.path.exists(srv.stdout_path):
        os.unlink(srv.stdout_path)


def test_stream_dealloc_keeps_exception_in_flight(own_server):
    """A stream whose destroy fails (its server is gone), freed while an
    exception propagates, leaves that exception as it was."""
    s = rdev.connect(own_server.addr)
    raws = [s._s.stream()]
    streams = [s.stream()]
    own_server.proc.kill()
    own_server.proc.wait()
    time.sleep(0.5)  # the connection is gone
    with pytest.raises(TypeError, match="int"):
        int(raws.pop())  # the last reference goes while TypeError is set
    with pytest.raises(TypeError, match="int"):
        int(streams.pop())
    s.close()


def test_host_func_on_closed_session_keeps_no_reference(target):
    """A host_func refused because the session is closed keeps no reference to fn."""
    s = rdev.connect(target)
    raw = s.stream()._raw
    s.close()

    def fn(status):
        pass

    before = sys.getrefcount(fn)
    failed = 0
    for _ in range(100):
        try:
            s._s.host_func(raw, fn)
        except rdev.Error:
            failed += 1
    assert failed == 100
    assert sys.getrefcount(fn) == before, f"{sys.getrefcount(fn) - before} references to the callable leaked"


def test_two_threads_on_one_stream(session):
    """Thread A synchronizes the stream again and again while thread B queues
    kernels on temporaries there (held by the stream, queued under its lock):
    every result is right and nothing fails."""
    st = session.stream()
    stop, errors, results = threading.Event(), [], []

    def synchronizer():
        try:
            while not stop.is_set():
                st.synchronize()
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(f"synchronizer: {e!r}")

    def launcher():
        try:
            rng = np.random.default_rng(3)
            for i in range(200):
                n = 4096 + i
                a = rng.standard_normal(n).astype(np.float32)
                out = rdev.empty(n, np.float32, session=session)
                session.kernels.square_f32(rdev.asarray(a, stream=st, session=session), out, n, stream=st)
                results.append(np.array_equal(out.get(stream=st), a * a))
        except BaseException as e:  # noqa: BLE001
            errors.append(f"launcher: {e!r}")
        finally:
            stop.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, inside the package's steps too
    try:
        threads = [threading.Thread(target=synchronizer), threading.Thread(target=launcher)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(old)
        stop.set()
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert len(results) == 200 and all(results), f"{results.count(False)} wrong results"


# ---- small contract points ----------------------------------------------------------------------


def test_set_casts_to_the_arrays_dtype(session):
    f = rdev.empty(2, np.float32)
    f.set([1.0, 2.0])
    assert f.get().dtype == np.float32 and f.get().tolist() == [1.0, 2.0]
    i = rdev.zeros(3, np.int16)
    i.set([1, -2, 3])
    assert i.get().tolist() == [1, -2, 3]


def test_fill_takes_a_byte(session):
    d = rdev.empty(4, np.uint8)
    for bad in (256, -1, True, 1.0):
        with pytest.raises(ValueError):
            d.fill(bad)
    assert d.fill(255).get().tolist() == [255] * 4
    assert d.fill(np.uint8(7)).get().tolist() == [7] * 4
    assert d.fill(0).get().tolist() == [0] * 4


def test_f32_argument_range(session):
    k = session.kernels
    x = rdev.asarray(np.ones(4, np.float32))
    y = rdev.zeros(4, np.float32)
    for bad in (1e39, -1e39, np.float64(1e39), 10 ** 39, 10 ** 400):
        with pytest.raises(ValueError):
            k.axpy_f32(bad, x, y, 4)
    k.axpy_f32(float("inf"), x, y, 4)
    assert np.isposinf(y.get()).all()
    y.fill(0)
    k.axpy_f32(float("nan"), x, y, 4)
    assert np.isnan(y.get()).all()
    y.fill(0)
    k.axpy_f32(3e38, x, y, 4)
    assert (y.get() == np.float32(3e38)).all()


def test_set_device_out_of_int_range(session):
    start = 1 if session.info.device_count > 1 else 0
    session.device = start
    for bad in (2 ** 32, 2 ** 32 + start, -2 ** 32, 2 ** 64):
        with pytest.raises((OverflowError, rdev.Error)):
            session.set_device(bad)
        assert session.device == start, f"set_device({bad}) selected device {session.device}"
    session.device = 0


def test_numpy_integer_as_device_address(session):
    free0 = session.mem_info()[0]
    ptr = session._s.malloc(4 * MiB)
    assert session.mem_info()[0] < free0
    with pytest.raises(TypeError):
        session._s.free(float(ptr))
    session._s.free(np.uint64(ptr))
    assert session.mem_info()[0] >= free0, "free(np.uint64(ptr)) did not free"
    ptr = session._s.malloc(4096)
    session._s.write(np.int64(ptr), np.arange(4, dtype=np.int32))
    got = np.zeros(4, np.int32)
    session._s.read(got, np.uint64(ptr))
    assert got.tolist() == [0, 1, 2, 3]
    session._s.free(ptr)


def _enter_in_generator(cm):
    with cm:
        yield


def test_with_session_and_stream_in_interleaved_generators(target):
    """Generators share their caller's context: leaving `with s1:` in one after
    another entered `with st:` undoes the session, not the stream."""
    s1, s2 = rdev.connect(target), rdev.connect(target)
    try:
        st = s2.stream()

        def body():
            g1, g2 = _enter_in_generator(s1), _enter_in_generator(st)
            try:
                steps(g1, g2)
            finally:  # leave both blocks in this context, whatever failed
                g1.close()
                g2.close()

        def steps(g1, g2):
            next(g1)
            next(g2)
            assert rdev.current_session() is s1
            next(g1, None)  # g1 leaves its block first
            assert s1.closed
            assert rdev.current_session() is s2  # s1's block is over: the process's default, the latest connect()
            s2.kernels.delay_us(300_000)  # to st, still the current stream
            assert not st.query(), "work of s2 did not go to the current stream st"
            next(g2, None)  # leaving `with st:` synchronizes st
            assert st.query()
            s2.kernels.delay_us(300_000)  # to the default stream again
            assert st.query() and not s2.default_stream.query()

        contextvars.copy_context().run(body)
    finally:
        s1.close()
        s2.close()


def test_with_session_in_interleaved_generators(target):
    """Two sessions entered in two generators (the caller's context); the
    first leaves its block first: the second is then the current one."""
    s1, s2 = rdev.connect(target), rdev.connect(target)
    try:
        def body():
            g1, g2 = _enter_in_generator(s1), _enter_in_generator(s2)
            try:
                steps(g1, g2)
            finally:  # leave both blocks in this context, whatever failed
                g1.close()
                g2.close()

        def steps(g1, g2):
            next(g1)
            assert rdev.current_session() is s1
            next(g2)
            assert rdev.current_session() is s2
            next(g1, None)  # leaves `with s1:`, which closes s1
            assert s1.closed and not s2.closed
            assert rdev.current_session() is s2, "leaving `with s1:` made the closed s1 current"
            next(g2, None)
            with pytest.raises(rdev.Error):
                rdev.current_session()

        contextvars.copy_context().run(body)
    finally:
        s1.close()
        s2.close()


def test_closed_default_stream_is_replaced(session):
    ds = session.default_stream
    ds.close()
    assert session.default_stream is not ds
    a = np.arange(100, dtype=np.int32)
    assert np.array_equal(rdev.asarray(a).get(), a)
    session.kernels.delay_us(1)
    session.default_stream.synchronize(timeout=10)
    session.synchronize()


def test_python_layer_error_fields():
    """The package's own Errors read as the extension's: code, message, status name."""
    with pytest.raises(rdev.Error) as ei:
        contextvars.Context().run(rdev.current_session)
    e = ei.value
    assert e.code == INVALID_PARAM == _rdev.INVALID_PARAM
    assert isinstance(e.message, str) and e.message and e.message in str(e)
    assert "INVALID_PARAM" in str(e) and str(INVALID_PARAM) in str(e)
    assert type(e) is rdev.Error
