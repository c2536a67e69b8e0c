"""tests/python/rdev_pkg/test_session_options.py — connect()'s keepalive and
resume options (docs/python.md, "Sessions") through the chaos_proxy
program ($RDEV_TEST_CHAOS_PROXY) in front of the suite's rdevd: with
keepalive=1 a stall of 3 s or more is a break (the library's
default keepalive, 10 s, would wait it out); the session then resumes and
its work completes, or, with resume=False, it ends and the call fails
RDEV_UNAVAILABLE.
"""
import os
import re
import subprocess
import time

import numpy as np
import pytest

import rdev

PROXY = os.environ.get("RDEV_TEST_CHAOS_PROXY")
UNAVAILABLE = 900002

pytestmark = pytest.mark.skipif(not PROXY, reason="RDEV_TEST_CHAOS_PROXY not set (tests/CMakeLists.txt sets it)")


class Proxy:
    """chaos_proxy with one route to upstream; commands on its stdin."""

    def __init__(self, upstream, tmp):
        self.errpath = os.path.join(tmp, "chaos_proxy.stderr")
        with open(self.errpath, "wb") as err:
            self.proc = subprocess.Popen([PROXY, "--route", f"127.0.0.1:0={upstream}", "--report", "0"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        line = self.proc.stdout.readline().decode()
        m = re.match(r"route 0 (\S+) -> ", line)
        assert m, f"chaos_proxy did not start: {line!r}"
        self.addr = m.group(1)

    def command(self, cmd):
        self.proc.stdin.write(cmd.encode() + b"\n")
        self.proc.stdin.flush()

    def accepted(self):
        """Connections it accepted so far (its stats line on stderr)."""
        with open(self.errpath, errors="replace") as f:
            n = f.read().count("chaos_proxy: stats:")
        self.command("stats")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(self.errpath, errors="replace") as f:
                stats = [x for x in f.read().splitlines() if x.startswith("chaos_proxy: stats:")]
            if len(stats) > n:
                return int(re.search(r"accepted=(\d+)", stats[n]).group(1))
            time.sleep(0.01)
        raise AssertionError("chaos_proxy did not answer stats")

    def stop(self):
        self.proc.stdin.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()


@pytest.fixture
def proxy(server, tmp_path):
    p = Proxy(server.addr, str(tmp_path))
    yield p
    p.stop()


def roundtrip(s, seed):
    """A small array up and back (in-band), compared."""
    a = np.random.default_rng(seed).integers(0, 1 << 30, 4096, dtype=np.int32)
    with s:
        x = rdev.asarray(a)
        assert np.array_equal(x.get(), a)


def test_keepalive_makes_a_stall_a_break_the_session_resumes_from(proxy):
    with rdev.connect(proxy.addr, keepalive=1) as s:
        roundtrip(s, 1)
        proxy.command("stall 6000")  # seconds past what a 1 s keepalive needs, as below
        t0 = time.monotonic()
        roundtrip(s, 2)  # waits out the stall: the connection is taken for dead, the session resumed
        assert time.monotonic() - t0 >= 5.5
        roundtrip(s, 3)
        assert proxy.accepted() >= 2, "the session did not connect again: the keepalive was not 1 s"


def test_resume_false_ends_the_session_at_the_first_break(proxy):
    with rdev.connect(proxy.addr, keepalive=1, resume=False) as s:
        roundtrip(s, 4)
        # a 1 s keepalive finds the break within about 2 s; the stall is
        # longer than that by seconds, since a loaded machine fires gRPC's
        # timers late (seen under ctest -j2 beside the soak test)
        proxy.command("stall 6000")
        t0 = time.monotonic()
        with pytest.raises(rdev.Error) as ei:
            roundtrip(s, 5)
        assert ei.value.code == UNAVAILABLE
        assert time.monotonic() - t0 < 5.5, "failed only once the stall was over: the keepalive was not 1 s"
