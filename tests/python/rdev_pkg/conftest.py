"""tests/python/rdev_pkg/conftest.py — fixtures of the Python package's tests
(pytest): one real rdevd for the whole run on a free loopback port, on the
backend under test ($RDEV_TEST_RDEVD_ARGS, as for the other contract
suites), started with tests/acl/rdevd.py; a session on it per test.

Environment (tests/CMakeLists.txt sets it): RDEV_TEST_RDEVD, the rdevd to
start; PYTHONPATH with the staged package (build/python).
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "acl"))
import rdevd as rdevd_proc  # noqa: E402  tests/acl/rdevd.py

import rdev  # noqa: E402

RDEVD = os.environ.get("RDEV_TEST_RDEVD", os.path.join(HERE, "..", "..", "..", "build", "server", "rdevd"))
SERVER_ARGS = ("--sim-devices", "2", "--sim-mem", "512M")


class Server:
    """A running rdevd: addr, and stdout_path (its stdout, where kernel print
    goes on the acl backend)."""

    def __init__(self, *args):
        self.proc, self.addr, self.stdout_path = rdevd_proc.start(RDEVD, *args)

    def stop(self):
        """SIGTERM; rdevd's exit status."""
        return rdevd_proc.stop(self.proc, self.stdout_path)


@pytest.fixture(scope="session")
def server():
    srv = Server(*SERVER_ARGS)
    yield srv
    assert srv.stop() == 0, "rdevd did not exit cleanly"


@pytest.fixture
def target(server, monkeypatch):
    """The server's address, also as $RDEV_TARGET."""
    monkeypatch.setenv("RDEV_TARGET", server.addr)
    return server.addr


@pytest.fixture
def session(target):
    with rdev.connect(target) as s:
        yield s


@pytest.fixture
def on_acl():
    """Whether the server runs the acl backend (over the ACL test double)."""
    return "--backend acl" in os.environ.get("RDEV_TEST_RDEVD_ARGS", "")
