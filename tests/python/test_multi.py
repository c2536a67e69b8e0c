"""tests/python/test_multi.py — the Python package over two rdevd at once:
rdev.connect("A,B") (or RDEV_TARGET=A,B) opens one session over both (the
C library's session over several servers). A runs 2 devices of 256 MiB, B
1 device of 192 MiB, so that the numbering (0, 1 on A; 2 on B) shows in the
devices' memory. Checks the total device count, arrays copied between
servers (rdev.copyto, DeviceArray.copy) byte for byte at 20 MiB + 13 bytes
and at 13 bytes, and numpy round trips on every device: with a stream of
the array's own server, and as a program would write them, with the
session's default stream (test_roundtrip_default_stream_on_each_server).

Run by ctest as python_multi: RDEV_TEST_RDEVD names the rdevd, PYTHONPATH
the staged package.
"""
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "acl"))
import rdevd as rdevd_proc  # noqa: E402  tests/acl/rdevd.py

import rdev  # noqa: E402

RDEVD = os.environ.get("RDEV_TEST_RDEVD", os.path.join(HERE, "..", "..", "build", "server", "rdevd"))
MiB = 1 << 20
A_MEM, B_MEM = 256 * MiB, 192 * MiB
BIG, TINY = 20 * MiB + 13, 13


@pytest.fixture(scope="module")
def servers():
    a = rdevd_proc.start(RDEVD, "--sim-devices", "2", "--sim-mem", "256M")
    try:
        b = rdevd_proc.start(RDEVD, "--sim-devices", "1", "--sim-mem", "192M")
    except Exception:
        rdevd_proc.stop(a[0], a[2])
        raise
    yield a[1], b[1]
    codes = [rdevd_proc.stop(p, out) for p, _, out in (a, b)]
    assert codes == [0, 0], f"rdevd exit statuses {codes}"


@pytest.fixture
def target(servers):
    return ",".join(servers)


@pytest.fixture
def s(target):
    with rdev.connect(target) as session:
        yield session


def data(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def on(s, dev):
    """A new stream of device dev (so of dev's server)."""
    s.device = dev
    return s.stream()


def test_connect_sees_every_server_device(s, servers, monkeypatch):
    assert s.info.device_count == 3
    devs = s.devices()
    assert [d.index for d in devs] == [0, 1, 2]
    assert [d.total_bytes for d in devs] == [A_MEM, A_MEM, B_MEM]
    s.device = 2
    assert s.device == 2
    assert s.mem_info()[1] == B_MEM
    with pytest.raises(rdev.Error):
        s.device = 3
    # from the environment, as the ACL library and notebooks open it
    monkeypatch.setenv("RDEV_TARGET", ",".join(servers))
    with rdev.connect() as e:
        assert e.info.device_count == 3
        assert [d.total_bytes for d in e.devices()] == [A_MEM, A_MEM, B_MEM]
    # the other order: B's device first
    with rdev.connect(",".join(reversed(servers))) as r:
        assert [d.total_bytes for d in r.devices()] == [B_MEM, A_MEM, A_MEM]


@pytest.mark.parametrize("n", [TINY, BIG])
def test_copyto_between_servers(s, n):
    host = data(n, n)
    sa, sb = on(s, 0), on(s, 2)
    s.device = 0
    a = rdev.empty(n, np.uint8)
    a.set(host, stream=sa)
    sa.synchronize()
    s.device = 2
    b = rdev.empty(n, np.uint8)
    assert b.device == 2 and a.device == 0
    rdev.copyto(b, a, stream=sb)
    sb.synchronize()
    got = b.get(stream=sb)
    assert got.dtype == np.uint8 and got.shape == (n,)
    assert np.array_equal(got, host), f"first difference at {int(np.argmax(got != host))}"
    # and back, B -> device 1 (A), on A's stream
    host2 = data(n, n + 1)
    b.set(host2, stream=sb)
    sb.synchronize()
    s.device = 1
    c = rdev.empty(n, np.uint8)
    rdev.copyto(c, b, stream=on(s, 1))
    assert np.array_equal(c.get(stream=on(s, 1)), host2)


def test_copy_method_onto_other_server(s):
    """DeviceArray.copy() allocates on the current device: device 2 (B) here."""
    host = data(BIG, 7)
    sa = on(s, 0)
    s.device = 0
    a = rdev.empty(BIG, np.uint8)
    a.set(host, stream=sa)
    sa.synchronize()
    sb = on(s, 2)
    s.device = 2
    b = a.copy(stream=sb)
    sb.synchronize()
    assert b.device == 2
    assert np.array_equal(b.get(stream=sb), host)


@pytest.mark.parametrize("dev", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int64])
def test_roundtrip_on_each_device(s, dev, dtype):
    rng = np.random.default_rng(dev * 10 + np.dtype(dtype).itemsize)
    n = BIG // np.dtype(dtype).itemsize
    host = rng.integers(0, 1 << 20, n).astype(dtype) if np.dtype(dtype).kind != "f" else rng.random(n, dtype=dtype)
    st = on(s, dev)
    d = rdev.asarray(host, stream=st)
    assert d.device == dev
    assert np.array_equal(d.get(stream=st), host)
    small = host[:TINY]
    e = rdev.asarray(small, stream=st)
    assert np.array_equal(e.get(stream=st), small)


def test_roundtrip_default_stream_on_each_server(s):
    """As a program writes it: no stream named. Arrays on device 0 (A) and
    device 2 (B) go to and from numpy on the session's default stream."""
    ha, hb = data(BIG, 21), data(BIG, 22)
    s.device = 0
    a = rdev.asarray(ha)
    assert np.array_equal(a.get(), ha)
    s.device = 2
    b = rdev.asarray(hb)
    assert np.array_equal(b.get(), hb)
    c = rdev.empty(BIG, np.uint8)
    rdev.copyto(c, a)
    assert np.array_equal(c.get(), ha)
