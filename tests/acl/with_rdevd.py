#!/usr/bin/python3
"""tests/acl/with_rdevd.py — runs a command against a fresh rdevd on a free
loopback port (RDEV_TARGET set for it), then stops rdevd; the command's
exit status, or 1 when rdevd did not exit cleanly.

usage: with_rdevd.py RDEVD COMMAND [ARGS...]
"""
import os
import subprocess
import sys

proc = subprocess.Popen([sys.argv[1], "--listen", "127.0.0.1:0", "--sim-devices", "1", "--sim-mem", "1G",
                         "--log-level", "warn"], stdout=subprocess.PIPE, text=True)
try:
    addr = proc.stdout.readline().split()[-1]
    code = subprocess.run(sys.argv[2:], env=dict(os.environ, RDEV_TARGET=addr)).returncode
finally:
    proc.terminate()
    rdevd = proc.wait(timeout=30)
    proc.stdout.close()
sys.exit(code or (1 if rdevd else 0))
