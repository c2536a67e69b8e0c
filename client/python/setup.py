"""client/python/setup.py — how pip builds the rdev package: the C extension
(rdev._rdev) and rdev's libacl_rt.so come from the project's CMake build
(target rdev_python), run on the repository this file lives in, in
$RDEV_BUILD_DIR (an existing build tree) or else client/python/build/cmake.
The pure-Python modules are pyproject.toml's."""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("RDEV_BUILD_DIR") or os.path.join(HERE, "build", "cmake")
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            subprocess.run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                            f"-DPython3_EXECUTABLE={sys.executable}"], check=True)
        subprocess.run(["cmake", "--build", build, "--target", "rdev_python", "-j", str(os.cpu_count() or 2)],
                       check=True)
        staged = os.path.join(build, "python", "rdev")
        built = [f for f in os.listdir(staged) if f.startswith("_rdev.") and f.endswith(".so")]
        if len(built) != 1:
            raise RuntimeError(f"expected one built extension in {staged}, found {built}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(staged, built[0]), target)
        shutil.copy2(os.path.join(staged, "libacl_rt.so"), os.path.join(os.path.dirname(target), "libacl_rt.so"))


setup(ext_modules=[Extension("rdev._rdev", sources=[])], cmdclass={"build_ext": CMakeBuild})
