#!/usr/bin/python3
"""tests/python/test_job_list_cap.py — the client library against a server
that answers ListJobs with more jobs than rdevd ever sends (128,
RDEV_WIRE_MAX_JOBS_LISTED). ListJobsReply.jobs is a nanopb pointer field:
the decoder allocates a JobStatus (some 3 KiB) per entry, so a 4 MiB reply
of empty entries would make `rdev job list` take some 200 MB. The library
counts the entries first and refuses a longer list undecoded: the command
fails with 900006 PROTOCOL ("the server's job list holds more than 128
jobs"), at once and with its memory small. A list of exactly 128 is shown.

The fake server is a plain gRPC server with hand-encoded replies (no rdev
code in it).

usage: test_job_list_cap.py RDEV_CLI
"""
import os
import subprocess
import sys
import tempfile
import time
import unittest
from concurrent import futures

RDEV_CLI = sys.argv[1]
del sys.argv[1:2]

import grpc  # noqa: E402

SERVICE = "rdev.v1.Device"
MAX_JOBS = 128  # RDEV_WIRE_MAX_JOBS_LISTED (proto/include/rdev/wire.h)
PROTOCOL = 900006
# The most a child's peak RSS may reach: the old client decoding 65535 entries
# took over 200 MB (more under ASan); the CLI itself takes some 20 MB (ASan: more).
MAX_RSS_MB = 120


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field_bytes(num, b):
    return varint(num << 3 | 2) + varint(len(b)) + b


def job(i):
    """A JobStatus: id (1), name (2), state (4) SUCCEEDED."""
    return field_bytes(1, b"%016x" % i) + field_bytes(2, b"j%d" % i) + varint(4 << 3 | 0) + varint(5)


def reply(jobs):
    """ListJobsReply: jobs (1) repeated, each a JobStatus message."""
    return b"".join(field_bytes(1, j) for j in jobs)


class FakeServer:
    """A gRPC server whose ListJobs answers the given bytes as its reply."""

    def __init__(self, answer):
        self.calls = 0
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))

        def list_jobs(request, context):
            self.calls += 1
            return answer

        handler = grpc.method_handlers_generic_handler(
            SERVICE, {"ListJobs": grpc.unary_unary_rpc_method_handler(list_jobs)})  # raw bytes both ways
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def stop(self):
        self.server.stop(0)


def job_list(port):
    """`rdev job list` against the fake: (exit status, stdout, stderr, seconds, peak RSS in MiB)."""
    env = dict(os.environ, RDEV_CONNECT_TIMEOUT_MS="5000")
    env.pop("RDEV_TOKEN", None)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen([RDEV_CLI, "--target", f"127.0.0.1:{port}", "job", "list"], env=env,
                             stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        try:
            _, status, usage = os.wait4(p.pid, 0)  # the child's own peak RSS
        except BaseException:
            p.kill()
            p.wait()
            raise
        p.returncode = os.waitstatus_to_exitcode(status)
        took = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        return (p.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"), took,
                usage.ru_maxrss / 1024)


class JobListCapTest(unittest.TestCase):
    def run_against(self, answer):
        srv = FakeServer(answer)
        try:
            r = job_list(srv.port)
        finally:
            srv.stop()
        self.assertEqual(srv.calls, 1)
        return r

    def test_full_list_is_shown(self):
        rc, out, err, _, _ = self.run_against(reply([job(i) for i in range(MAX_JOBS)]))
        self.assertEqual(rc, 0, out + err)
        rows = out.splitlines()
        self.assertEqual(len(rows), MAX_JOBS, out)
        self.assertEqual(rows[0].split(), ["%016x" % 0, "succeeded", "j0"])

    def test_one_job_too_many_is_refused(self):
        rc, out, err, _, _ = self.run_against(reply([job(i) for i in range(MAX_JOBS + 1)]))
        self.assertEqual(rc, 2, out + err)
        self.assertEqual(out, "")
        self.assertIn(f"({PROTOCOL} PROTOCOL)", err)
        self.assertIn(f"the server's job list holds more than {MAX_JOBS} jobs", err)

    def test_4mib_of_empty_jobs_is_refused_small_and_fast(self):
        # just under the client's 4 MiB receive limit: two bytes an entry, some 2M entries
        n = ((4 << 20) - 64) // 2
        rc, out, err, took, rss_mb = self.run_against(b"\x0a\x00" * n)
        self.assertEqual(rc, 2, out + err)
        self.assertIn(f"({PROTOCOL} PROTOCOL)", err)
        self.assertIn(f"the server's job list holds more than {MAX_JOBS} jobs", err)
        self.assertLess(rss_mb, MAX_RSS_MB, f"peak RSS {rss_mb:.0f} MiB: the entries were allocated")
        self.assertLess(took, 10, f"took {took:.1f} s")

    def test_malformed_list_is_refused(self):
        # a job entry that claims more bytes than the message holds
        rc, out, err, _, _ = self.run_against(reply([job(1)]) + b"\x0a\x7f\x0a")
        self.assertEqual(rc, 2, out + err)
        self.assertIn(f"({PROTOCOL} PROTOCOL)", err)
        self.assertIn("malformed reply", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
