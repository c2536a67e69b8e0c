#!/usr/bin/python3
"""tests/acl/check_sample.py — runs CANN runtime samples, compiled unmodified
against rdev's acl headers and sim kernel library, against a real rdevd
(the library found through LD_LIBRARY_PATH alone), and checks each output
as the sample's run.sh does.

usage: check_sample.py RDEVD LIBDIR KIND:PROGRAM...
  d2h   "Source data: N" (the kernel's print) equals "Destination data: N"
        (what the host read back), as 4_d2h_async_memory_copy/run.sh checks
"""
import os
import re
import subprocess
import sys

import rdevd as server

rdevd, libdir, samples = sys.argv[1], sys.argv[2], sys.argv[3:]


def check_d2h(out):
    src = re.findall(r"Source data: (-?\d+)", out)
    dst = re.findall(r"Destination data: (-?\d+)", out)
    if not src or not dst:
        return "no 'Source data' or 'Destination data' line"
    if src[-1] != dst[-1]:
        return f"Source data {src[-1]} != Destination data {dst[-1]}"
    return None


checks = {"d2h": check_d2h}
# On acl the kernel's print is on rdevd's stdout (rdevd.py): run.sh reads
# the output the kernel printed, so the check reads both.
proc, addr, out_path = server.start(rdevd, "--sim-mem", "256M")
failed = 0
try:
    for spec in samples:
        kind, prog = spec.split(":", 1)
        env = dict(os.environ, RDEV_TARGET=addr, LD_LIBRARY_PATH=libdir)
        r = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=60)
        with open(out_path) as f:
            printed = f.read()
        why = f"exit {r.returncode}" if r.returncode else checks[kind](r.stdout + printed)
        print(f"{'FAIL' if why else 'ok  '} {os.path.basename(prog)}{': ' + why if why else ''}")
        if why:
            failed += 1
            sys.stdout.write(r.stdout + r.stderr)
finally:
    code = server.stop(proc, out_path)
sys.exit(1 if failed or code else 0)
