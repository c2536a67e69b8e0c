#!/usr/bin/python3
"""tests/python/test_mute_server.py — the client library against a server
that takes the connection and then never answers the session's open (a
hung or hostile rdevd). rdev_session_open returns once the connection is up
(the open rides with the first requests), so the open's deadline must bound
the wait for the answer: `rdev ping` (one session round trip) fails with
RDEV_UNAVAILABLE within the connect timeout, instead of hanging. The same
ping against a server that refuses the session fails with its code.

usage: test_mute_server.py RDEV_CLI
"""
import os
import subprocess
import sys
import threading
import time
import unittest
from concurrent import futures

RDEV_CLI = sys.argv[1]
del sys.argv[1:2]

import grpc  # noqa: E402

SESSION = "Session"
SERVICE = "rdev.v1.Device"  # RDEV_WIRE_METHOD_SESSION


class MuteServer:
    """A gRPC server whose Session call never sends its initial metadata
    (mode 'mute') or refuses it at once (mode 'refuse')."""

    def __init__(self, mode):
        self.release = threading.Event()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))

        def session(request_iterator, context):
            if mode == "refuse":
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "no such token")
            self.release.wait(60)  # answers nothing: no metadata, no message
            return iter(())

        handler = grpc.method_handlers_generic_handler(
            SERVICE, {SESSION: grpc.stream_stream_rpc_method_handler(session)})
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def stop(self):
        self.release.set()
        self.server.stop(0)


def ping(port, timeout_ms):
    env = dict(os.environ, RDEV_CONNECT_TIMEOUT_MS=str(timeout_ms))
    env.pop("RDEV_TOKEN", None)
    t0 = time.monotonic()
    p = subprocess.run([RDEV_CLI, "--target", f"127.0.0.1:{port}", "ping", "-n", "1"], env=env,
                       capture_output=True, text=True, timeout=60)
    return p, time.monotonic() - t0


class MuteServerTest(unittest.TestCase):
    def test_unanswered_open_fails_within_the_connect_timeout(self):
        srv = MuteServer("mute")
        try:
            p, took = ping(srv.port, 1500)
        finally:
            srv.stop()
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("no answer from rdevd", p.stderr + p.stdout)
        self.assertIn("UNAVAILABLE", p.stderr + p.stdout)
        self.assertGreater(took, 1.2, f"took {took:.1f} s: not the open's deadline that ended it")
        self.assertLess(took, 15, f"took {took:.1f} s with a 1.5 s connect timeout")

    def test_refused_open_fails_the_first_call_with_its_code(self):
        srv = MuteServer("refuse")
        try:
            p, took = ping(srv.port, 5000)
        finally:
            srv.stop()
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("refused", p.stderr + p.stdout)
        self.assertIn("no such token", p.stderr + p.stdout)
        self.assertLess(took, 15)


if __name__ == "__main__":
    unittest.main(verbosity=2)
