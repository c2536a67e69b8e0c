#!/usr/bin/python3
"""tests/acl/run_acl.py — runs programs linked against libascendcl.so (and
built without a run path) against a real rdevd: the library is found through
LD_LIBRARY_PATH alone, and the target through RDEV_TARGET. Each program must
exit 0 and print its OK line; each C build is also run against an address
where nothing listens, with the argument "unreachable", where aclInit must
fail clearly (within RDEV_CONNECT_TIMEOUT_MS, set to 1 s for it).

usage: run_acl.py RDEVD LIBDIR PROGRAM...
"""
import os
import subprocess
import sys

import rdevd as server

rdevd, libdir, programs = sys.argv[1], sys.argv[2], sys.argv[3:]
proc, addr, out_path = server.start(rdevd, "--sim-mem", "256M")
failed = 0
try:
    for prog in programs:
        runs = [(addr, [])]
        if prog.endswith("_c"):  # the C++ build of the same program fails the same way: once is enough
            runs.append(("127.0.0.1:1", ["unreachable"]))
        for target, args in runs:
            env = dict(os.environ, RDEV_TARGET=target, LD_LIBRARY_PATH=libdir, RDEV_TEST_SERVER_STDOUT=out_path)
            if args:  # nothing listens there: no need to wait the default 10 s for it
                env["RDEV_CONNECT_TIMEOUT_MS"] = "1000"
            r = subprocess.run([prog, *args], env=env, capture_output=True, text=True, timeout=120)
            ok = r.returncode == 0 and (args or r.stdout.rstrip().endswith(": OK"))
            print(f"{'ok  ' if ok else 'FAIL'} {os.path.basename(prog)} {' '.join(args)}".rstrip())
            if not ok:
                failed += 1
                sys.stdout.write(r.stdout + r.stderr)
        # without LD_LIBRARY_PATH the program must not start: nothing else would find the library
        r = subprocess.run([prog], env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"},
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0 or "libascendcl.so" not in r.stderr:
            print(f"FAIL {os.path.basename(prog)} ran without LD_LIBRARY_PATH")
            failed += 1
finally:
    code = server.stop(proc, out_path)
if code != 0:
    print(f"FAIL rdevd exited {code}")
    failed += 1
sys.exit(1 if failed else 0)
