#!/usr/bin/python3
"""tests/acl/with_rdevd.py — runs a command against a fresh rdevd on a free
loopback port (RDEV_TARGET set for it), then stops rdevd; the command's
exit status, or 1 when rdevd did not exit cleanly.

usage: with_rdevd.py RDEVD COMMAND [ARGS...]
"""
import os
import subprocess
import sys

import rdevd as server

proc, addr, out_path = server.start(sys.argv[1], "--sim-devices", "1", "--sim-mem", "1G")
try:
    code = subprocess.run(sys.argv[2:], env=dict(os.environ, RDEV_TARGET=addr)).returncode
finally:
    rdevd = server.stop(proc, out_path)
sys.exit(code or (1 if rdevd else 0))
