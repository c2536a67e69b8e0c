#!/usr/bin/python3
"""tests/python/test_acl_backend.py — what rdevd promises on the acl backend
beyond the suites every backend passes (test_wire.py and the others run on
acl too): start-up that names what it looked for and refuses rdev's own
client library, a device that fails to come up, no built-in kernels without
--acl-kernels (900007), kernel binaries refused unless the operator allows
them (900004), and ACL errors passed through unchanged (507015 from a kernel
fault). Run against the ACL test double (tests/acl_double/).

usage: test_acl_backend.py RDEVD PROTO_DIR ACL_DOUBLE CLIENT_ACL_LIB KERNEL_DIR
"""
import os
import queue
import subprocess
import sys
import tempfile
import threading
import unittest

RDEVD, PROTO_DIR, DOUBLE, CLIENT_LIB, KERNELS = sys.argv[1:6]
del sys.argv[1:6]

import grpc  # noqa: E402

import stubs  # noqa: E402

GEN, pb, pbg, _ = stubs.generate(PROTO_DIR)

PERMISSION_DENIED = 900004
UNKNOWN_KERNEL = 900007
AICORE_EXCEPTION = 507015

# a kernel binary in the sim format, which the double runs
WRITE_BINARY = b"""rdev-sim-binary 1
kernel Write write_i32
  arg ptr out reach=blocks*4 writes
  arg i32 value
kernel Trap trap
  noargs
"""


def run_rdevd(*args, env=None):
    """Runs rdevd to its exit (it must not start): (exit status, stderr)."""
    r = subprocess.run([RDEVD, "--listen", "127.0.0.1:0", "--log-level", "warn", *args],
                       capture_output=True, text=True, timeout=60, env=env)
    return r.returncode, r.stderr


class Server:
    """rdevd on acl over the double, on a free loopback port."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([RDEVD, "--listen", "127.0.0.1:0", "--log-level", "warn", "--backend", "acl",
                                      "--acl-lib", DOUBLE, *args], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            self.proc.kill()
            raise RuntimeError(f"rdevd did not start (exit {self.proc.wait()})")
        self.addr = line.split()[-1]
        self.printed = []  # rdevd's stdout past its first line: kernel print on acl
        self.reader = threading.Thread(target=lambda: self.printed.extend(self.proc.stdout), daemon=True)
        self.reader.start()
        self.channel = grpc.insecure_channel(self.addr)
        self.stub = pbg.DeviceStub(self.channel)

    def stop(self):
        self.channel.close()
        self.proc.terminate()
        code = self.proc.wait(timeout=30)
        self.reader.join(timeout=30)  # all rdevd printed is read
        return code


class Session:
    def __init__(self, stub):
        self.q = queue.Queue()
        self.replies = stub.Session(iter(self.q.get, None))
        self.seq = 0

    def put(self, data=b"", **op):
        """Sends a request that is answered only if it fails (a launch)."""
        self.seq += 1
        self.q.put(pb.Request(seq=self.seq, data=data, **op))

    def call(self, data=b"", **op):
        self.put(data, **op)
        r = next(self.replies)
        assert r.seq == self.seq, (r.seq, self.seq)
        return r

    def close(self):
        self.q.put(None)
        for _ in self.replies:
            pass


class StartTest(unittest.TestCase):
    def test_a_missing_library_is_named(self):
        code, err = run_rdevd("--backend", "acl", "--acl-lib", "/nonexistent/libascendcl.so")
        self.assertNotEqual(code, 0)
        self.assertIn("/nonexistent/libascendcl.so", err)

    def test_without_a_path_it_names_every_place_it_looked(self):
        home = tempfile.mkdtemp(prefix="rdev-ascend-home-")
        env = dict(os.environ, ASCEND_HOME_PATH=home, LD_LIBRARY_PATH="")
        code, err = run_rdevd("--backend", "acl", env=env)
        self.assertNotEqual(code, 0)
        for place in (f"{home}/lib64/libascendcl.so", f"{home}/lib64/libacl_rt.so", "libascendcl.so"):
            self.assertIn(place, err)

    def test_rdevs_own_client_library_is_refused(self):
        code, err = run_rdevd("--backend", "acl", "--acl-lib", CLIENT_LIB)
        self.assertNotEqual(code, 0)
        self.assertIn("rdev's own ACL-compatible client library", err)

    def test_a_library_without_acl_is_named_with_what_it_lacks(self):
        code, err = run_rdevd("--backend", "acl", "--acl-lib", "libm.so.6")
        self.assertNotEqual(code, 0)
        self.assertIn("lacks aclInit", err)

    def test_a_device_that_fails_to_come_up_stops_the_start(self):
        code, err = run_rdevd("--backend", "acl", "--acl-lib", DOUBLE,
                              env=dict(os.environ, ACL_DOUBLE_FAIL_DEVICE="1"))
        self.assertNotEqual(code, 0)
        self.assertIn("507033", err)
        self.assertIn("device 1", err)

    def test_a_kernel_directory_that_cannot_be_read_is_named(self):
        code, err = run_rdevd("--backend", "acl", "--acl-lib", DOUBLE, "--acl-kernels", "/nonexistent/kernels")
        self.assertNotEqual(code, 0)
        self.assertIn("/nonexistent/kernels", err)


class KernelsTest(unittest.TestCase):
    def test_only_kernel_objects_are_read_from_the_kernel_directory(self):
        d = tempfile.mkdtemp(prefix="rdev-kernels-")
        with open(os.path.join(KERNELS, "rdev_builtin.o"), "rb") as src, \
                open(os.path.join(d, "builtin.o"), "wb") as dst:
            dst.write(src.read())
        with open(os.path.join(d, "README"), "w") as f:
            f.write("not a kernel binary\n")
        os.mkdir(os.path.join(d, "more.o"))  # a directory, whatever its name
        srv = Server("--acl-kernels", d)
        try:
            self.assertIn("square_f32", [k.name for k in srv.stub.Info(pb.InfoRequest()).kernels])
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_without_kernels_none_is_offered_and_binaries_are_refused(self):
        srv = Server()
        try:
            info = srv.stub.Info(pb.InfoRequest())
            self.assertEqual(info.backend, "acl")
            self.assertEqual(len(info.kernels), 0)
            s = Session(srv.stub)
            buf = s.call(malloc=pb.Malloc(device=0, size=64)).addr
            st = s.call(stream_create=pb.StreamCreate(device=0)).handle
            r = s.call(launch=pb.Launch(stream=st, kernel="write_i32", blocks=1,
                                        args=[pb.Arg(ptr=buf), pb.Arg(i32=1)]))
            self.assertEqual(r.status, UNKNOWN_KERNEL, r.message)
            r = s.call(binary_load=pb.BinaryLoad(), data=WRITE_BINARY)
            self.assertEqual(r.status, PERMISSION_DENIED, r.message)
            self.assertIn("--allow-uploaded-kernels", r.message)
            self.assertEqual(s.call(stream_sync=pb.StreamSync(stream=st)).status, 0)
            s.close()
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_built_in_kernels_run_and_print_on_the_server(self):
        srv = Server("--acl-kernels", KERNELS)
        try:
            info = srv.stub.Info(pb.InfoRequest())
            self.assertIn("write_i32", [k.name for k in info.kernels])
            s = Session(srv.stub)
            buf = s.call(malloc=pb.Malloc(device=1, size=64)).addr
            st = s.call(stream_create=pb.StreamCreate(device=1)).handle
            s.put(launch=pb.Launch(stream=st, kernel="write_i32", blocks=4, args=[pb.Arg(ptr=buf), pb.Arg(i32=-77)]))
            r = s.call(stream_sync=pb.StreamSync(stream=st))
            self.assertEqual((r.status, r.print), (0, ""))  # no print reaches the client...
            r = s.call(read=pb.Read(addr=buf, count=16, dest_max=16))
            self.assertEqual(r.data, (-77).to_bytes(4, "little", signed=True) * 4)
            s.close()
        finally:
            self.assertEqual(srv.stop(), 0)
        self.assertEqual("".join(srv.printed).count("Source data: -77\n"), 4)  # ...it is on rdevd's stdout

    def test_allowed_binaries_run_and_kernel_faults_pass_through(self):
        srv = Server("--allow-uploaded-kernels")
        try:
            s = Session(srv.stub)
            buf = s.call(malloc=pb.Malloc(device=0, size=64)).addr
            st = s.call(stream_create=pb.StreamCreate(device=0)).handle
            b = s.call(binary_load=pb.BinaryLoad(), data=WRITE_BINARY)
            self.assertEqual(b.status, 0, b.message)
            w = s.call(binary_function=pb.BinaryFunction(binary=b.handle, name="Write")).handle
            t = s.call(binary_function=pb.BinaryFunction(binary=b.handle, name="Trap")).handle
            blob = buf.to_bytes(8, "little") + (123).to_bytes(4, "little")
            s.put(launch_function=pb.LaunchFunction(stream=st, function=w, blocks=2), data=blob)
            self.assertEqual(s.call(stream_sync=pb.StreamSync(stream=st)).status, 0)
            self.assertEqual(s.call(read=pb.Read(addr=buf, count=8, dest_max=8)).data,
                             (123).to_bytes(4, "little") * 2)
            s.put(launch_function=pb.LaunchFunction(stream=st, function=t, blocks=1))
            r = s.call(stream_sync=pb.StreamSync(stream=st))
            self.assertEqual(r.status, AICORE_EXCEPTION, r.message)  # CANN's number, unchanged...
            self.assertIn("aclrtSynchronizeStreamWithTimeout failed (507015)", r.message)  # ...and its text,
            self.assertIn("kernel trap", r.message)  # down to the runtime's own (the double's)
            self.assertEqual(s.call(stream_sync=pb.StreamSync(stream=st)).status, 0)  # reported once
            s.close()
        finally:
            self.assertEqual(srv.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
