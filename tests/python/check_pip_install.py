#!/usr/bin/python3
"""tests/python/check_pip_install.py — README's install path for the Python
package: a virtual environment made with --system-site-packages, then
`pip install --no-build-isolation --no-index ./client/python` (the build
reuses the build tree named by RDEV_BUILD_DIR); the installed package, run
from outside the source tree, does a round trip on a real rdevd and loads
rdev.acl's library.

usage: check_pip_install.py RDEVD BUILD_DIR
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "acl"))
import rdevd as server  # noqa: E402

CHECK = r"""
import numpy as np, os, rdev, rdev.acl as acl
assert not rdev.__file__.startswith(os.environ["RDEV_SOURCE"]), rdev.__file__
with rdev.connect() as s:
    a = np.arange(1000, dtype=np.float32)
    assert np.array_equal(rdev.asarray(a).get(), a)
assert acl.init() == 0, acl.get_recent_err_msg()
count, ret = acl.rt.get_device_count()
assert ret == 0 and count == 1, (count, ret)
assert acl.finalize() == 0
print("installed package ok:", rdev.__file__)
"""

with tempfile.TemporaryDirectory(prefix="rdev-venv-") as tmp:
    env_dir = os.path.join(tmp, "env")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", env_dir], check=True)
    py = os.path.join(env_dir, "bin", "python")
    env = dict(os.environ, RDEV_BUILD_DIR=os.path.abspath(sys.argv[2]), RDEV_SOURCE=ROOT)
    env.pop("PYTHONPATH", None)
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index",
                    os.path.join(ROOT, "client", "python")], check=True, env=env)
    proc, addr, out = server.start(sys.argv[1], "--sim-devices", "1", "--sim-mem", "64M")
    try:
        code = subprocess.run([py, "-c", CHECK], cwd=tmp, env=dict(env, RDEV_TARGET=addr)).returncode
    finally:
        stopped = server.stop(proc, out)
    sys.exit(code or (1 if stopped else 0))
