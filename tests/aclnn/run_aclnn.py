#!/usr/bin/python3
"""tests/aclnn/run_aclnn.py — runs the operator library's test programs
against a real rdevd (started by tests/acl/rdevd.py on a free loopback
port, on the backend $RDEV_TEST_RDEVD_ARGS names), each finding
libascendcl.so, libnnopbase.so and libopapi.so through LD_LIBRARY_PATH
alone, as a CANN program finds CANN's. A program passes when it exits 0.

usage: run_aclnn.py RDEVD LIBDIR PROGRAM...
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "acl"))
import rdevd as server  # noqa: E402

rdevd, libdir, programs = sys.argv[1], sys.argv[2], sys.argv[3:]
proc, addr, out_path = server.start(rdevd, "--sim-mem", "512M")
failed = 0
try:
    for prog in programs:
        env = dict(os.environ, RDEV_TARGET=addr, LD_LIBRARY_PATH=libdir)
        r = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=240)
        ok = r.returncode == 0
        print(f"{'ok  ' if ok else 'FAIL'} {os.path.basename(prog)}{'' if ok else f': exit {r.returncode}'}")
        if not ok:
            failed += 1
            sys.stdout.write(r.stdout + r.stderr)
finally:
    code = server.stop(proc, out_path)
sys.exit(1 if failed or code else 0)
