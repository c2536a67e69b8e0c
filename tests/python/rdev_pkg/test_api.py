"""tests/python/rdev_pkg/test_api.py — the Pythonic API of the rdev package
(docs/python.md) against a real rdevd: connect (explicit target, $RDEV_TARGET,
unreachable target, `with` and the current session), info, devices and device
selection, device arrays (asarray/get byte for byte over dtypes and shapes,
get(out=), get_async and its Future, empty/zeros/*_like, views, reshape, set,
copy/copyto, fill, free), kernels by name (results, listing, signatures,
arguments refused before anything is sent), kernel print (client stdout on
sim, rdevd's stdout on acl), streams, events, errors of queued work, session
close, bad devices and allocations.

Interrupts, threads, progress bars and allocation behaviour are in
test_interrupts_threads.py.
"""
import asyncio
import concurrent.futures
import gc
import random
import re
import socket
import threading
import time
import zlib

import numpy as np
import pytest

import rdev

MiB = 1 << 20
KERNELS = ("write_i32", "square_f32", "add_f32", "axpy_f32", "reduce_sum_f32", "delay_us", "read_i32", "inc_u32",
           "long_inc_u32", "double_u32", "trap", "hello")


def closed_port():
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def random_array(shape, dtype, seed=0):
    """An array of the dtype whose bytes are random (NaN payloads and all)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_).reshape(shape)
    raw = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def assert_nothing_queued(st):
    """The stream's next synchronize raises nothing: a refused call queued no work."""
    st.synchronize(timeout=30)
    assert st.query()


@pytest.fixture
def other(target):
    """A second session on the same server."""
    s2 = rdev.connect(target)
    yield s2
    s2.close()


# ---- connect and the current session ------------------------------------------------------------


def test_connect_explicit_target(server, monkeypatch):
    monkeypatch.setenv("RDEV_TARGET", f"127.0.0.1:{closed_port()}")  # the explicit target wins
    with rdev.connect(server.addr, timeout=10) as s:
        assert s.target == server.addr
        assert s.info.device_count == 2
        assert not s.closed


def test_connect_from_environment(target):
    with rdev.connect(timeout=10) as s:
        assert s.target == target
        assert s.info.device_count == 2


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_connect_unreachable_target(monkeypatch, how):
    bad = f"127.0.0.1:{closed_port()}"
    t0 = time.monotonic()
    with pytest.raises(rdev.Error) as ei:
        if how == "argument":
            rdev.connect(bad, timeout=1.0)
        else:
            monkeypatch.setenv("RDEV_TARGET", bad)
            rdev.connect(timeout=1.0)
    assert time.monotonic() - t0 < 6, "the connect timeout was not honoured"
    assert ei.value.code == 900002  # RDEV_UNAVAILABLE
    assert isinstance(ei.value.message, str) and ei.value.message
    assert "900002" in str(ei.value)


def test_with_makes_session_current(target):
    with rdev.connect(target) as s:
        assert rdev.current_session() is s
        with rdev.connect(target) as inner:
            assert rdev.current_session() is inner
        assert inner.closed
        assert rdev.current_session() is s
        # new arrays go to the current session
        d = rdev.empty(4, np.float32)
        assert d.session is s
        # another thread without a `with` of its own sees the process's default (connect() made it s);
        # one with its own block sees its own
        seen = []

        def other_thread():
            try:
                seen.append(rdev.current_session() is s)
                seen.append(rdev.empty(4).session is s)
                with rdev.Session(target) as own:
                    seen.append(rdev.current_session() is own)
                seen.append(rdev.current_session() is s)
            except BaseException as e:  # noqa: BLE001 - reported below
                seen.append(repr(e))

        t = threading.Thread(target=other_thread)
        t.start()
        t.join(30)
        assert seen == [True, True, True, True]
        # and asyncio tasks started inside the block see it
        assert asyncio.run(_current_in_task()) is s
    assert s.closed
    with pytest.raises(rdev.Error):
        rdev.empty(4, np.float32, session=s)
    assert rdev._common.default_session() is not s


async def _current_in_task():
    return await asyncio.create_task(_current())


async def _current():
    return rdev.current_session()


# ---- server, devices ----------------------------------------------------------------------------


def test_info(session, on_acl):
    info = session.info
    assert info.backend == ("acl" if on_acl else "sim")
    assert re.match(r"^\d+\.\d+", info.version)
    assert isinstance(info.identity, str) and info.identity
    assert info.device_count == 2
    assert isinstance(info.max_chunk, int) and info.max_chunk > 0


def test_devices(session):
    devs = session.devices()
    assert [d.index for d in devs] == [0, 1]
    for d in devs:
        assert isinstance(d, rdev.Device)
        assert isinstance(d.name, str) and d.name
        assert d.total_bytes == 512 * MiB
        assert 0 < d.free_bytes <= d.total_bytes
    free, total = session.mem_info()
    assert total == 512 * MiB and 0 < free <= total


def test_device_selection(session):
    assert session.device == 0
    free0_before = session.devices()[0].free_bytes
    session.device = 1
    assert session.device == 1
    free1_before, total1 = session.mem_info()
    d = rdev.empty(8 * MiB, np.uint8)
    assert d.device == 1
    free1_after, _ = session.mem_info()
    assert free1_before - free1_after >= 8 * MiB
    assert session.devices()[0].free_bytes == free0_before
    assert session.devices()[1].free_bytes == free1_after
    # a stream made now is on device 1: a kernel on it can use d
    st = session.stream()
    x = rdev.asarray(np.arange(64, dtype=np.float32), stream=st)
    y = rdev.empty_like(x)
    assert (x.device, y.device) == (1, 1)
    session.kernels.square_f32(x, y, 64, stream=st)
    np.testing.assert_array_equal(y.get(stream=st), np.arange(64, dtype=np.float32) ** 2)
    session.set_device(0)
    assert session.device == 0
    assert rdev.empty(4).device == 0
    # a device-1 array on a device-0 stream is refused by the server
    st0 = session.stream()
    with pytest.raises(rdev.Error):
        session.kernels.square_f32(x, y, 64, stream=st0)
        st0.synchronize()


def test_connect_on_device(target):
    with rdev.connect(target, device=1) as s:
        assert s.device == 1
        assert rdev.empty(16).device == 1


@pytest.mark.parametrize("bad", [2, 17, -1])
def test_out_of_range_device(session, bad):
    with pytest.raises(rdev.Error) as ei:
        session.device = bad
    assert ei.value.code == 107001
    with pytest.raises(rdev.Error) as ei:
        session.set_device(bad)
    assert ei.value.code == 107001
    assert session.device == 0
    assert rdev.asarray(np.arange(3)).get().tolist() == [0, 1, 2]


def test_connect_out_of_range_device(target):
    with pytest.raises(rdev.Error) as ei:
        rdev.connect(target, device=7)
    assert ei.value.code == 107001


def test_huge_malloc(session):
    with pytest.raises(rdev.Error) as ei:
        rdev.empty(1 << 40, np.uint8)
    assert ei.value.code in (207018, 207001, 200000)
    assert ei.value.message
    assert rdev.asarray(np.arange(5, dtype=np.int64)).get().tolist() == [0, 1, 2, 3, 4]


def test_huge_malloc_leaves_no_unraisable_exception(session, monkeypatch):
    gc.collect()  # what earlier tests left
    unraisable = []
    monkeypatch.setattr("sys.unraisablehook", lambda u: unraisable.append(repr(u.exc_value)))
    with pytest.raises(rdev.Error):
        rdev.empty(1 << 40, np.uint8)
    gc.collect()
    assert unraisable == []


# ---- device arrays ------------------------------------------------------------------------------

DTYPES = [np.float32, np.float64, np.int64, np.uint8, np.int16, np.complex64, np.bool_]
SHAPES = [(1000,), (17, 33), (2, 3, 4), (0,), (0, 5)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_asarray_get_byte_for_byte(session, dtype, shape):
    a = random_array(shape, dtype, seed=zlib.crc32(f"{np.dtype(dtype).name}{shape}".encode()))
    d = rdev.asarray(a)
    assert isinstance(d, rdev.DeviceArray)
    assert (d.shape, d.dtype, d.size, d.nbytes, d.ndim) == (a.shape, a.dtype, a.size, a.nbytes, a.ndim)
    assert d.session is session and d.device == 0 and d.base is None
    assert isinstance(d.ptr, int) and d.ptr > 0
    got = d.get()
    assert isinstance(got, np.ndarray)
    assert (got.shape, got.dtype) == (a.shape, a.dtype)
    assert got.tobytes() == a.tobytes()


def test_asarray_conversions(session):
    d = rdev.asarray([[1, 2, 3], [4, 5, 6]], dtype=np.int16)
    assert (d.shape, d.dtype) == ((2, 3), np.dtype(np.int16))
    assert d.get().tolist() == [[1, 2, 3], [4, 5, 6]]
    a = np.arange(40, dtype=np.int32)[::3]  # not contiguous on the host
    np.testing.assert_array_equal(rdev.asarray(a).get(), a)
    assert rdev.asarray(d) is d
    x = rdev.asarray(np.arange(8, dtype=np.uint32), session=session)
    assert x.session is session


def test_get_into_out(session):
    a = random_array((300, 7), np.float32, seed=1)
    d = rdev.asarray(a)
    out = np.full((300, 7), -1, np.float32)
    r = d.get(out=out)
    assert r is out
    assert out.tobytes() == a.tobytes()
    # any C-contiguous writable array of the same byte size
    raw = np.zeros(a.nbytes, np.uint8)
    assert d.get(out=raw) is raw
    assert raw.tobytes() == a.tobytes()


def test_get_out_refused_before_sending(session):
    st = session.stream()
    d = rdev.asarray(np.arange(100, dtype=np.float32), stream=st)
    cases = []
    small = np.full(99, 7, np.float32)
    cases.append((small, small))
    big = np.full(101, 7, np.float32)
    cases.append((big, big))
    base = np.full(200, 7, np.float32)
    cases.append((base[::2], base))  # 100 elements, not contiguous
    ro = np.full(100, 7, np.float32)
    ro.flags.writeable = False
    cases.append((ro, ro))
    fortran = np.asfortranarray(np.full((10, 10), 7, np.float32))  # contiguous, but not in C order
    cases.append((fortran, fortran))
    for out, backing in cases:
        with pytest.raises(ValueError):
            d.get(out=out, stream=st)
        with pytest.raises(ValueError):
            d.get_async(out=out, stream=st)
        assert_nothing_queued(st)
        assert (backing == 7).all(), "a refused get wrote into the host array"


def test_get_async(session):
    st = session.stream()
    a = np.arange(4096, dtype=np.float32)
    x = rdev.asarray(a, stream=st)
    y = rdev.empty_like(x)
    session.kernels.delay_us(400_000, stream=st)
    session.kernels.square_f32(x, y, a.size, blocks=4, stream=st)
    t0 = time.monotonic()
    fut = y.get_async(stream=st)
    assert time.monotonic() - t0 < 0.3, "get_async waited for the stream"
    assert isinstance(fut, rdev.Future) and isinstance(fut, concurrent.futures.Future)
    assert not fut.done()
    res = fut.result(timeout=30)
    np.testing.assert_array_equal(res, a * a)
    # into a given out
    out = np.zeros_like(a)
    fut = x.get_async(out=out, stream=st)
    assert fut.result(timeout=30) is out
    np.testing.assert_array_equal(out, a)
    st.synchronize()


def test_get_async_awaitable(session):
    a = random_array((64, 3), np.int64, seed=3)
    d = rdev.asarray(a)

    async def main():
        f = d.get_async()
        r = await f
        return f, r

    fut, got = asyncio.run(main())
    assert isinstance(fut, rdev.Future)
    assert got.tobytes() == a.tobytes()


def test_empty_zeros_like(session):
    e = rdev.empty((3, 5), np.int32)
    assert (e.shape, e.dtype, e.session) == ((3, 5), np.dtype(np.int32), session)
    assert rdev.empty(7).dtype == np.float32
    src = rdev.asarray(np.full((4, 6), 3.5, np.float64))
    el = rdev.empty_like(src)
    assert (el.shape, el.dtype, el.session) == (src.shape, src.dtype, session)
    assert el.ptr != src.ptr
    # zeros after dirtying the same amount of memory
    dirty = rdev.asarray(np.full(1 << 16, 0xA5, np.uint8))
    dirty.free()
    z = rdev.zeros(1 << 16, np.uint8)
    assert (z.get() == 0).all()
    z2 = rdev.zeros((2, 3), np.float64)
    assert z2.get().tolist() == [[0.0] * 3] * 2
    zl = rdev.zeros_like(src)
    assert (zl.shape, zl.dtype) == (src.shape, src.dtype)
    assert (zl.get() == 0).all()
    assert (src.get() == 3.5).all()
    with pytest.raises(ValueError):
        rdev.empty((3, -1))


def test_views_and_set(session):
    a = np.arange(10, dtype=np.float32)
    d = rdev.asarray(a)
    v = d[2:5]
    assert v.shape == (3,) and v.base is not None
    assert v.ptr == d.ptr + 2 * 4
    np.testing.assert_array_equal(v.get(), a[2:5])
    np.testing.assert_array_equal(d[-3:].get(), a[-3:])
    assert d[5:2].get().shape == (0,)
    assert d[3].get() == a[3] and d[3].shape == ()
    assert d[-1].get() == a[-1]
    assert v.set(np.array([100, 101, 102], np.float32)) is v
    expect = a.copy()
    expect[2:5] = [100, 101, 102]
    np.testing.assert_array_equal(d.get(), expect)
    with pytest.raises(ValueError):
        v.set(np.zeros(4, np.float32))  # wrong size
    np.testing.assert_array_equal(d.get(), expect)
    # a view keeps its allocation
    w = d[6:9]
    del d, v
    gc.collect()
    np.testing.assert_array_equal(w.get(), expect[6:9])


def test_views_2d_and_reshape(session):
    m = np.arange(12, dtype=np.int32).reshape(3, 4)
    dm = rdev.asarray(m)
    np.testing.assert_array_equal(dm[1].get(), m[1])
    np.testing.assert_array_equal(dm[-1].get(), m[-1])
    np.testing.assert_array_equal(dm[1:3].get(), m[1:3])
    assert dm[1].shape == (4,) and dm[1].ptr == dm.ptr + 16
    np.testing.assert_array_equal(dm[2][1:3].get(), m[2][1:3])
    r = dm.reshape(4, 3)
    assert r.shape == (4, 3)
    np.testing.assert_array_equal(r.get(), m.reshape(4, 3))
    np.testing.assert_array_equal(dm.reshape(-1).get(), m.reshape(-1))
    np.testing.assert_array_equal(dm.reshape((2, 6)).get(), m.reshape(2, 6))
    np.testing.assert_array_equal(dm.reshape(2, -1).get(), m.reshape(2, -1))
    with pytest.raises(ValueError):
        dm.reshape(5, 3)
    # writing through a 2-D row view touches that row only
    dm[1].set(np.full(4, -7, np.int32))
    expect = m.copy()
    expect[1] = -7
    np.testing.assert_array_equal(dm.get(), expect)


@pytest.mark.parametrize("key", [slice(None, None, 2), slice(1, 8, 3), slice(None, None, -1), 10, -11, "a", 1.0,
                                 (1, 2), Ellipsis])
def test_bad_index(session, key):
    d = rdev.asarray(np.arange(10, dtype=np.float32))
    with pytest.raises(IndexError):
        d[key]


def test_zero_d(session):
    a = np.array([1.5, 2.5, 3.5], np.float32)
    d0 = rdev.asarray(a)[2]  # a 0-d view
    assert (d0.shape, d0.size, d0.ndim, d0.nbytes) == ((), 1, 0, 4)
    got = d0.get()
    assert got.shape == () and got == np.float32(3.5)
    with pytest.raises(IndexError):
        d0[0]
    with pytest.raises(TypeError):
        len(d0)
    # a 0-d host array uploads its bytes
    assert rdev.asarray(np.float32(4.5)).get().tobytes() == np.float32(4.5).tobytes()


def test_asarray_zero_d_keeps_shape(session):
    d = rdev.asarray(np.float32(4.5))
    assert (d.shape, d.ndim) == ((), 0)
    assert d.get().shape == ()


def test_kernel_on_views(session):
    a = np.arange(16, dtype=np.float32)
    x = rdev.asarray(a)
    y = rdev.asarray(np.full(16, -1, np.float32))
    session.kernels.square_f32(x[4:8], y[0:4], 4)
    expect = np.full(16, -1, np.float32)
    expect[0:4] = a[4:8] ** 2
    np.testing.assert_array_equal(y.get(), expect)


def test_copy_and_copyto(session, other):
    a = random_array((50, 9), np.float64, seed=5)
    d = rdev.asarray(a)
    c = d.copy()
    assert c.ptr != d.ptr and (c.shape, c.dtype) == (d.shape, d.dtype)
    d.fill(0)
    assert c.get().tobytes() == a.tobytes()
    assert (d.get() == 0).all()
    rdev.copyto(d, c)
    assert d.get().tobytes() == a.tobytes()
    # views (device-to-device copies need 64-byte-aligned addresses, as in CANN)
    v = rdev.asarray(np.arange(64, dtype=np.int32))
    rdev.copyto(v[0:3], v[32:35])
    expect = np.arange(64, dtype=np.int32)
    expect[0:3] = [32, 33, 34]
    np.testing.assert_array_equal(v.get(), expect)
    with pytest.raises(rdev.Error) as ei:
        rdev.copyto(v[0:3], v[5:8])
        v.get()
    assert ei.value.code == 200003  # MEMORY_ADDRESS_UNALIGNED
    np.testing.assert_array_equal(v.get(), expect)
    with pytest.raises(ValueError):
        rdev.copyto(v[0:3], v[5:9])
    v = v[0:10]
    with pytest.raises(TypeError):
        rdev.copyto(v, np.arange(10, dtype=np.int32))
    with pytest.raises(TypeError):
        rdev.copyto(np.zeros(10, np.int32), v)
    theirs = rdev.asarray(np.arange(10, dtype=np.int32), session=other)
    with pytest.raises(ValueError):
        rdev.copyto(theirs, v)
    assert theirs.get().tolist() == list(range(10))


def test_fill(session):
    d = rdev.asarray(np.zeros(64, np.uint8))
    assert d.fill(0xAB) is d
    assert (d.get() == 0xAB).all()
    d[10:20].fill(1)
    got = d.get()
    assert (got[10:20] == 1).all() and (got[:10] == 0xAB).all() and (got[20:] == 0xAB).all()
    f = rdev.empty(8, np.uint32).fill(0x01)
    assert (f.get() == 0x01010101).all()


def test_free(session):
    session.synchronize()
    free_before, _ = session.mem_info()
    d = rdev.asarray(np.arange(8 * MiB // 4, dtype=np.float32))
    v = d[1:4]
    assert session.mem_info()[0] <= free_before - 8 * MiB
    d.free()
    assert session.mem_info()[0] >= free_before
    for use in (d.get, v.get, lambda: d.ptr, lambda: d.set(np.zeros(d.size, np.float32)), d.copy,
                lambda: session.kernels.square_f32(d, d, 4)):
        with pytest.raises(rdev.Error):
            use()
    assert_nothing_queued(session.default_stream)


def test_last_array_gone_frees(session):
    session.synchronize()
    free_before, _ = session.mem_info()
    d = rdev.asarray(np.ones(8 * MiB, np.uint8))
    assert session.mem_info()[0] <= free_before - 8 * MiB
    del d
    gc.collect()
    assert session.mem_info()[0] >= free_before


# ---- kernels ------------------------------------------------------------------------------------


def test_kernel_results(session):
    k = session.kernels
    rng = np.random.default_rng(7)
    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    x, y = rdev.asarray(a), rdev.asarray(b)
    out = rdev.empty_like(x)
    k.square_f32(x, out, n, blocks=4)
    np.testing.assert_array_equal(out.get(), a * a)
    k.add_f32(x, y, out, np.uint32(n), blocks=3)
    np.testing.assert_array_equal(out.get(), a + b)
    k.axpy_f32(2.5, x, y, n, blocks=2)
    np.testing.assert_allclose(y.get(), np.float32(2.5) * a + b, rtol=1e-6, atol=1e-6)
    s1 = rdev.empty(1, np.float32)
    k.reduce_sum_f32(x, s1, n)
    np.testing.assert_allclose(s1.get()[0], a.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)
    u = rdev.asarray(np.array([1, 2, 3, 4, 5], np.uint32))
    k.inc_u32(u, blocks=4)
    assert u.get().tolist() == [2, 3, 4, 5, 5]
    k.double_u32(u, blocks=2)
    assert u.get().tolist() == [4, 6, 4, 5, 5]
    w = rdev.asarray(np.zeros(4, np.int32))
    k.write_i32(w, -2**31, blocks=3)
    assert w.get().tolist() == [-2**31] * 3 + [0]


def test_kernel_launch_returns_at_once(session):
    st = session.stream()
    t0 = time.monotonic()
    session.kernels.delay_us(1_500_000, stream=st)
    assert time.monotonic() - t0 < 0.75
    assert not st.query()
    st.synchronize()
    assert time.monotonic() - t0 >= 1.3
    assert st.query()


def test_kernel_listing(session):
    ks = session.kernels
    assert set(KERNELS) <= set(dir(ks))
    assert dir(ks) == sorted(dir(ks))
    sq = ks.square_f32
    assert callable(sq)
    assert ks["square_f32"] is sq and "square_f32" in ks and "nope" not in ks
    assert {k.name for k in ks} >= set(KERNELS)
    assert sq.name == "square_f32"
    assert tuple(tuple(p) for p in sq.params) == (("in", "ptr"), ("out", "ptr"), ("n", "u32"))
    assert "in[i] * in[i]" in sq.doc
    assert sq.signature == "square_f32(in: ptr, out: ptr, n: u32)"
    assert sq.__doc__.startswith(sq.signature) and sq.doc in sq.__doc__
    assert tuple(tuple(p) for p in ks.axpy_f32.params)[0] == ("alpha", "f32")
    assert tuple(ks.trap.params) == ()
    with pytest.raises(AttributeError):
        ks.no_such_kernel
    with pytest.raises(KeyError):
        ks["no_such_kernel"]


def _bad_launches(k, x, y, w, theirs):
    """(description, exception type, call) for launches that must be refused client-side."""
    a = np.zeros(8, np.float32)
    return [
        ("too few args", TypeError, lambda: k.square_f32(x, y)),
        ("too many args", TypeError, lambda: k.square_f32(x, y, 8, 8)),
        ("float for u32", TypeError, lambda: k.square_f32(x, y, 2.0)),
        ("numpy float for u32", TypeError, lambda: k.square_f32(x, y, np.float32(2))),
        ("str for u32", TypeError, lambda: k.square_f32(x, y, "2")),
        ("bool for u32", TypeError, lambda: k.square_f32(x, y, True)),
        ("numpy bool for u32", TypeError, lambda: k.square_f32(x, y, np.bool_(True))),
        ("negative u32", ValueError, lambda: k.square_f32(x, y, -1)),
        ("negative numpy u32", ValueError, lambda: k.square_f32(x, y, np.int64(-1))),
        ("2**32 for u32", ValueError, lambda: k.square_f32(x, y, 2**32)),
        ("2**31 for i32", ValueError, lambda: k.write_i32(w, 2**31)),
        ("-2**31-1 for i32", ValueError, lambda: k.write_i32(w, -2**31 - 1)),
        ("float for i32", TypeError, lambda: k.write_i32(w, 3.0)),
        ("bool for i32", TypeError, lambda: k.write_i32(w, False)),
        ("bool for f32", TypeError, lambda: k.axpy_f32(True, x, y, 8)),
        ("str for f32", TypeError, lambda: k.axpy_f32("2", x, y, 8)),
        ("complex for f32", TypeError, lambda: k.axpy_f32(1j, x, y, 8)),
        ("numpy array for ptr", TypeError, lambda: k.square_f32(a, y, 8)),
        ("int for ptr", TypeError, lambda: k.square_f32(x.ptr, y, 8)),
        ("array of another session", ValueError, lambda: k.square_f32(x, theirs, 8)),
        ("blocks=0", ValueError, lambda: k.square_f32(x, y, 8, blocks=0)),
        ("blocks=-1", ValueError, lambda: k.write_i32(w, 5, blocks=-1)),
        ("blocks=2**32", ValueError, lambda: k.write_i32(w, 5, blocks=2**32)),
        ("blocks=0 on write_i32", ValueError, lambda: k.write_i32(w, 5, blocks=0)),
        ("args to trap", TypeError, lambda: k.trap(1)),
    ]


def test_kernel_bad_arguments_refused_before_sending(session, other):
    st = session.stream()
    k = session.kernels
    x = rdev.asarray(np.arange(8, dtype=np.float32) + 1, stream=st)
    y = rdev.asarray(np.full(8, -1, np.float32), stream=st)
    w = rdev.asarray(np.full(4, 77, np.int32), stream=st)
    theirs = rdev.asarray(np.full(8, -1, np.float32), session=other)
    for desc, exc, call in _bad_launches(k, x, y, w, theirs):
        with st:  # launches go to st
            with pytest.raises(exc):
                call()
        # had anything been sent, the synchronize on leaving the block would
        # have raised (a refused launch) or y/w/theirs would have changed
        assert_nothing_queued(st)
        assert (y.get(stream=st) == -1).all(), desc
        assert (w.get(stream=st) == 77).all(), desc
        assert (theirs.get() == -1).all(), desc
    # numpy integers within range are fine
    k.square_f32(x, y, np.uint32(8), blocks=np.int64(2), stream=st)
    np.testing.assert_array_equal(y.get(stream=st), (np.arange(8, dtype=np.float32) + 1) ** 2)


def test_kernel_error_surfaces_at_synchronize(session):
    st = session.stream()
    x = rdev.asarray(np.ones(8, np.float32), stream=st)
    y = rdev.empty_like(x)
    with pytest.raises(rdev.Error) as ei:
        session.kernels.square_f32(x, y, 9, stream=st)  # one past the end: the server's bound check
        st.synchronize()
    assert ei.value.code == 100000
    assert_nothing_queued(st)  # the error was reported once
    session.kernels.square_f32(x, y, 8, stream=st)
    assert (y.get(stream=st) == 1).all()


# ---- kernel print -------------------------------------------------------------------------------


def _server_stdout(server):
    with open(server.stdout_path) as f:
        return f.read()


def test_kernel_print(session, server, on_acl, capsys):
    value = random.randrange(10**6, 10**7)
    w = rdev.zeros(3, np.int32)
    capsys.readouterr()
    session.kernels.hello(blocks=2)
    session.kernels.write_i32(w, value, blocks=3)
    session.synchronize()
    out = capsys.readouterr().out
    assert w.get().tolist() == [value] * 3
    if on_acl:
        # CANN's print goes to the stdout of the process that runs the kernel: rdevd's
        assert out == ""
        text = _server_stdout(server)
        assert text.count(f"Source data: {value}") == 3
        assert "Hello World" in text
    else:
        assert out.count("Hello World") == 2
        assert out.count(f"Source data: {value}\n") == 3


def test_kernel_print_at_stream_exit(session, server, on_acl, capsys):
    value = random.randrange(10**6, 10**7)
    w = rdev.zeros(1, np.int32)
    session.synchronize()
    capsys.readouterr()
    with session.stream():
        session.kernels.write_i32(w, value)
        assert f"Source data: {value}" not in capsys.readouterr().out  # not before the wait
    out = capsys.readouterr().out
    if on_acl:
        assert out == ""
        assert f"Source data: {value}" in _server_stdout(server)
    else:
        assert out == f"Source data: {value}\n"


# ---- streams and events -------------------------------------------------------------------------


def test_small_set_is_staged(session):
    a = np.arange(1024, dtype=np.float32)
    d = rdev.empty(1024, dtype=np.float32)
    with session.stream():
        t0 = time.monotonic()
        session.kernels.delay_us(300_000)
        d.set(a)  # staged: returns at once, runs behind the delay
        assert time.monotonic() - t0 < 0.25
        a[:] = -1  # the caller's array is its own again
    assert d.get().tolist() == list(range(1024))


def test_small_sets_take_their_bytes_at_once(session):
    # one host array refilled between uploads, all queued behind a delay: each
    # upload carries what the array held when set returned (the bulk
    # connection's 1 MiB, a request's 4 KiB), and set holds no copy of it
    for n in (1 << 18, 1 << 10):
        a = np.empty(n, dtype=np.float32)
        ds = [rdev.empty(n, dtype=np.float32) for _ in range(8)]
        st = session.default_stream
        session.kernels.delay_us(100_000)
        for i, d in enumerate(ds):
            a.fill(i)
            d.set(a)
        assert not st.query()  # all still queued
        for i, d in enumerate(ds):
            got = d.get()
            assert got[0] == i and got[-1] == i and (got == i).all(), (n, i)


def test_stream_context(session):
    with session.stream() as st:
        t0 = time.monotonic()
        session.kernels.delay_us(400_000)  # goes to st, the current stream
        assert not st.query()
        assert session.default_stream.query()
        x = rdev.asarray(np.arange(4, dtype=np.float32))  # also on st, behind the delay
        assert time.monotonic() - t0 < 0.3  # a small upload is staged: no wait for the stream
    assert time.monotonic() - t0 >= 0.35  # synchronized on exit
    assert st.query()
    assert x.get().tolist() == [0, 1, 2, 3]
    # outside any with: the default stream
    session.kernels.delay_us(300_000)
    assert st.query() and not session.default_stream.query()
    session.default_stream.synchronize()
    assert session.default_stream.query()


def test_stream_synchronize_timeout(session):
    st = session.stream()
    session.kernels.delay_us(1_200_000, stream=st)
    t0 = time.monotonic()
    with pytest.raises(rdev.Error) as ei:
        st.synchronize(timeout=0.2)
    assert ei.value.code == 507046
    assert time.monotonic() - t0 < 1.0
    st.synchronize()
    assert st.query()


def test_stream_close(session):
    st = session.stream()
    session.kernels.delay_us(300_000, stream=st)
    t0 = time.monotonic()
    st.close()
    assert time.monotonic() - t0 >= 0.2  # waited for queued work
    with pytest.raises(rdev.Error):
        st.query()
    with pytest.raises(rdev.Error):
        session.kernels.delay_us(1, stream=st)


def test_session_synchronize(session):
    streams = [session.stream() for _ in range(2)]
    us = [rdev.asarray(np.zeros(1, np.uint32), stream=st) for st in streams]
    for st, u in zip(streams, us):
        session.kernels.delay_us(300_000, stream=st)
        session.kernels.inc_u32(u, stream=st)
    session.kernels.delay_us(300_000)
    assert not any(st.query() for st in streams) and not session.default_stream.query()
    session.synchronize()
    assert all(st.query() for st in streams) and session.default_stream.query()
    assert [u.get().tolist() for u in us] == [[1], [1]]


def test_events(session):
    st = session.stream()
    start = st.record()
    assert isinstance(start, rdev.Event)
    session.kernels.delay_us(200_000, stream=st)
    end = session.event()
    assert end.record(st) is end
    assert not end.query()
    end.synchronize()
    assert end.query() and start.query()
    ms = rdev.elapsed_time(start, end)
    assert 150 <= ms < 10_000
    assert 150e6 <= end.timestamp() - start.timestamp() < 10e9  # ns of the device clock
    with pytest.raises(rdev.Error):
        session.event().timestamp()  # never recorded
    # record on the current stream
    with st:
        ev = session.event().record()
    assert ev.query()


def test_stream_failure_mode(session):
    """stop: after a failed task, the stream's later work is skipped until
    the synchronize that reports it; then every task runs again."""
    st = session.stream()
    x = rdev.asarray(np.array([1], np.uint32))
    st.set_failure_mode(True)
    session.kernels.trap(stream=st)
    session.kernels.inc_u32(x, stream=st)  # skipped
    with pytest.raises(rdev.Error) as e:
        st.synchronize()
    assert e.value.code == 507015
    assert x.get().tolist() == [1]
    st.set_failure_mode(False)
    session.kernels.trap(stream=st)
    session.kernels.inc_u32(x, stream=st)  # runs
    with pytest.raises(rdev.Error):
        st.synchronize()
    assert x.get().tolist() == [2]


def test_stream_wait_event(session):
    st1, st2 = session.stream(), session.stream()
    u = rdev.asarray(np.array([3], np.uint32), stream=st2)
    session.kernels.delay_us(800_000, stream=st1)
    ev = st1.record()
    st2.wait_event(ev)
    session.kernels.double_u32(u, stream=st2)
    t0 = time.monotonic()
    assert not st2.query()
    st2.synchronize()
    assert time.monotonic() - t0 >= 0.3
    assert ev.query()
    assert u.get(stream=st2).tolist() == [6]


# ---- errors -------------------------------------------------------------------------------------


def test_trap(session):
    st = session.stream()
    session.kernels.trap(stream=st)
    with pytest.raises(rdev.Error) as ei:
        st.synchronize()
    e = ei.value
    assert isinstance(e, rdev.Error) and e.code == 507015
    assert isinstance(e.message, str) and e.message
    assert "507015" in str(e)
    assert rdev.strerror(507015) and rdev.strerror(507015) != rdev.strerror(0)
    # the session and the stream stay usable; the error was reported once
    assert_nothing_queued(st)
    x = rdev.asarray(np.arange(6, dtype=np.float32), stream=st)
    y = rdev.empty_like(x)
    session.kernels.square_f32(x, y, 6, stream=st)
    assert y.get(stream=st).tolist() == [0, 1, 4, 9, 16, 25]
    session.synchronize()


def test_trap_on_default_stream_via_session_synchronize(session):
    session.kernels.trap()
    with pytest.raises(rdev.Error) as ei:
        session.synchronize()
    assert ei.value.code == 507015
    session.synchronize()
    assert rdev.asarray(np.arange(3)).get().tolist() == [0, 1, 2]


# ---- close --------------------------------------------------------------------------------------


def test_close_fails_pending_futures(target):
    s = rdev.connect(target)
    st = s.stream()
    d = rdev.asarray(np.arange(16, dtype=np.int32), session=s, stream=st)
    s.kernels.delay_us(3_000_000, stream=st)
    fut = d.get_async(stream=st)
    assert not fut.done()
    t0 = time.monotonic()
    s.close()
    assert s.closed
    assert time.monotonic() - t0 < 2.5, "close waited for the queued work"
    assert isinstance(fut.exception(timeout=10), rdev.Error)
    with pytest.raises(rdev.Error):
        fut.result(timeout=0)
    # every later call fails with rdev.Error
    for call in (lambda: s.info, s.devices, s.mem_info, s.stream, s.event, d.get, lambda: d.get_async(),
                 lambda: rdev.empty(4, session=s), lambda: rdev.asarray([1, 2], session=s), st.synchronize,
                 st.query, lambda: s.kernels.delay_us(1, stream=st), lambda: d.fill(0, stream=st)):
        with pytest.raises(rdev.Error):
            call()
    s.close()  # again: harmless


def test_with_exit_closes(target):
    with rdev.connect(target) as s:
        d = rdev.asarray(np.arange(4))
    assert s.closed
    with pytest.raises(rdev.Error):
        s.mem_info()
    with pytest.raises(rdev.Error):
        d.get()
