#!/usr/bin/python3
"""tests/acl/run_acl_multi.py — runs an ACL program (linked against
libascendcl.so, built without a run path) against two rdevd at once: A
with 2 devices, B with 1 device of 48 MiB, RDEV_TARGET="A,B" (the library
opens one session over both). The program must exit 0 and print its OK
line; both rdevd must then exit 0 on SIGTERM.

usage: run_acl_multi.py RDEVD LIBDIR PROGRAM [ARGS...]
"""
import os
import subprocess
import sys

import rdevd as server

rdevd, libdir, program = sys.argv[1], sys.argv[2], sys.argv[3:]
a = server.start(rdevd, "--sim-devices", "2", "--sim-mem", "64M")
try:
    b = server.start(rdevd, "--sim-devices", "1", "--sim-mem", "48M")
except Exception:
    server.stop(a[0], a[2])
    raise
failed = 0
try:
    env = dict(os.environ, RDEV_TARGET=f"{a[1]},{b[1]}", LD_LIBRARY_PATH=libdir)
    r = subprocess.run(program, env=env, capture_output=True, text=True, timeout=240)
    ok = r.returncode == 0 and r.stdout.rstrip().endswith(": OK")
    print(f"{'ok  ' if ok else 'FAIL'} {os.path.basename(program[0])} {' '.join(program[1:])} "
          f"(RDEV_TARGET={env['RDEV_TARGET']}, exit {r.returncode})")
    if not ok:
        failed += 1
        sys.stdout.write(r.stdout + r.stderr)
finally:
    for name, (proc, _, out_path) in (("A", a), ("B", b)):
        code = server.stop(proc, out_path)
        if code != 0:
            print(f"FAIL rdevd {name} exited {code}")
            failed += 1
sys.exit(1 if failed else 0)
