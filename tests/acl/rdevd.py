"""tests/acl/rdevd.py — starts the rdevd the ACL program runners use: on a
free loopback port, on the backend under test ($RDEV_TEST_RDEVD_ARGS: the
sim by default; tests/acl/CMakeLists.txt also runs them on acl over the ACL
test double), with its stdout in a file. On acl a kernel's print goes where
CANN writes it, to the stdout of the process that runs the kernel, rdevd's:
the programs find it in that file ($RDEV_TEST_SERVER_STDOUT, capture.h),
which every write reaches before rdevd answers the synchronize after it.
"""
import os
import subprocess
import tempfile
import time


def start(rdevd, *args):
    """(process, address, stdout path) of a new rdevd; raises if it does not start."""
    fd, path = tempfile.mkstemp(prefix="rdevd-stdout-")
    proc = subprocess.Popen([rdevd, "--listen", "127.0.0.1:0", "--log-level", "warn", *args,
                             *os.environ.get("RDEV_TEST_RDEVD_ARGS", "").split()], stdout=fd)
    os.close(fd)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        with open(path) as f:
            line = f.readline()
        if line.endswith("\n"):
            return proc, line.split()[-1], path
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"rdevd did not start (exit {proc.returncode})")


def stop(proc, path):
    """SIGTERM, and rdevd's exit status."""
    proc.terminate()
    code = proc.wait(timeout=30)
    os.unlink(path)
    return code
