"""tests/deploy/test_install.py — the installed rdev, used from outside the tree.

    test_install.py staged BUILD SRC   cmake --install BUILD --prefix into a scratch directory
    test_install.py deb BUILD SRC      cpack -G DEB into BUILD/packages (kept for deploy_container), the
                                       three packages listed (dpkg-deb -c) and unpacked (dpkg-deb -x)
                                       into a scratch root

Either way it then builds, in a scratch directory and with nothing but the
installed files and pkg-config, a C program (rdev.pc), a CANN program
(rdev-acl.pc) and CANN's aclnn hello world (rdev-aclnn.pc, C++), starts the
installed rdevd on 127.0.0.1:0 and runs each against it (device memory
round trips compared byte for byte; the vector add checked), plus the
installed `rdev` tool and Python package. The packages' tree is read with
PKG_CONFIG_SYSROOT_DIR, their libraries with LD_LIBRARY_PATH. Exit 0 when
all pass.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def pkgconfig(env, *args):
    out = subprocess.run(["pkg-config", *args], env=env, check=True, capture_output=True, text=True)
    return out.stdout.split()


def start_rdevd(rdevd, env):
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([rdevd, "--listen", "127.0.0.1:0", "--log-level", "warn"], stdout=log, env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        log.seek(0)
        line = log.readline()
        if line.endswith("\n"):
            return proc, line.split()[-1]
        time.sleep(0.02)
    proc.kill()
    raise SystemExit(f"installed rdevd did not start (exit {proc.wait()})")


def check_tree(prefix, build):
    """Files every layout has; nothing points back into the build tree."""
    want = ["sbin/rdevd", "bin/rdev", "include/rdev/rdev.h", "include/rdev/job.h", "include/rdev/v1/job.pb.h",
            "include/rdev/cann/acl/acl.h", "include/rdev/cann/aclnnop/aclnn_add.h",
            "include/rdev/cann-samples/utils.h", "lib/systemd/system/rdevd.service", "lib/sysusers.d/rdev.conf",
            "share/doc/rdevd/examples/tenants.example", "share/doc/rdevd/examples/rdevd.conf"]
    libdirs = [d for d in ("lib", "lib/x86_64-linux-gnu") if os.path.exists(os.path.join(prefix, d, "librdev.so.0"))]
    if not libdirs:
        raise SystemExit(f"no librdev.so.0 under {prefix}")
    libdir = os.path.join(prefix, libdirs[0])
    want = [os.path.join(prefix, w) for w in want]
    want += [os.path.join(libdir, f) for f in ("librdev.so", "pkgconfig/rdev.pc", "pkgconfig/rdev-acl.pc",
                                                "rdev/cann/libascendcl.so", "rdev/cann/libopapi.so",
                                                "rdev/cann/libnnopbase.so", "rdev/cann/librdev_sample_kernels.a")]
    missing = [w for w in want if not os.path.exists(w)]
    if missing:
        raise SystemExit("missing from the install: " + ", ".join(missing))
    for root, _, files in os.walk(prefix):
        for f in files:
            path = os.path.join(root, f)
            if os.path.islink(path) or not (f.endswith(".so") or ".so." in f or "bin" in root):
                continue
            dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
            if os.path.realpath(build) in dyn:
                raise SystemExit(f"{path} names the build tree: {dyn}")
    soname = subprocess.run(["readelf", "-d", os.path.join(libdir, "librdev.so.0")], capture_output=True,
                            text=True).stdout
    if "[librdev.so.0]" not in soname:
        raise SystemExit("librdev.so.0 has no SONAME librdev.so.0")
    # the public API is exported, the library's insides are not
    syms = subprocess.run(["nm", "-D", "--defined-only", os.path.join(libdir, "librdev.so.0")], capture_output=True,
                          text=True, check=True).stdout.split()
    for want in ("rdev_session_open", "rdev_memcpy_async", "rdev_strerror", "rdev_jobs_open", "rdev_op_launch"):
        if want not in syms:
            raise SystemExit(f"librdev.so.0 does not export {want}")
    inner = [s for s in syms if s.startswith(("rdev_wire_", "grpc_", "pb_", "EVP_")) or s.startswith("cl_")]
    if inner:
        raise SystemExit(f"librdev.so.0 exports its insides: {inner[:8]}")
    return libdir


def exercise(prefix, libdir, pc_env, work):
    """Builds the three programs with pkg-config, runs them and the tool and Python against rdevd."""
    cc = os.environ.get("CC", "cc")
    run([cc, "-std=c11", "-Wall", "-Werror", "-o", f"{work}/roundtrip_c", f"{HERE}/roundtrip_c.c",
         *pkgconfig(pc_env, "--cflags", "--libs", "rdev")])
    run([cc, "-std=c11", "-Wall", "-Werror", "-o", f"{work}/roundtrip_acl", f"{HERE}/roundtrip_acl.c",
         *pkgconfig(pc_env, "--cflags", "--libs", "rdev-acl")])
    run(["c++", "-std=c++17", "-Wall", "-Werror", "-o", f"{work}/hello_add", f"{HERE}/../aclnn/hello_add.cpp",
         *pkgconfig(pc_env, "--cflags", "--libs", "rdev-aclnn", "rdev-acl-samples")])
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = f"{libdir}:{libdir}/rdev/cann"
    for k in ("RDEV_TOKEN", "RDEV_CA", "RDEV_CERT", "RDEV_KEY", "PYTHONPATH"):
        env.pop(k, None)
    proc, addr = start_rdevd(os.path.join(prefix, "sbin/rdevd"), env)
    try:
        env["RDEV_TARGET"] = addr
        run([f"{work}/roundtrip_c", addr], env=env, timeout=60)
        run([f"{work}/roundtrip_acl"], env=env, timeout=60)
        run([f"{work}/hello_add"], env=env, timeout=60)
        run([os.path.join(prefix, "bin/rdev"), "--target", addr, "info"], env=env, timeout=60)
        env["PYTHONPATH"] = os.path.join(prefix, "lib/python3/dist-packages")
        run(["/usr/bin/python3", "-c", "import numpy as np, rdev\n"
             "a = np.arange(1 << 18, dtype=np.float32)\n"
             "with rdev.connect() as s:\n"
             "    d = rdev.asarray(a)\n"
             "    assert (d.get() == a).all()\n"
             "assert rdev.__file__.startswith(%r), rdev.__file__\n"
             "print('python: round trip OK from', rdev.__file__)" % env["PYTHONPATH"]],
            env=env, cwd=work, timeout=60)
    finally:
        proc.terminate()
        code = proc.wait(timeout=30)
    if code != 0:
        raise SystemExit(f"installed rdevd exited {code}")


def main():
    mode, build, src = sys.argv[1:4]
    work = tempfile.mkdtemp(prefix="rdev-install-")
    try:
        pc_env = dict(os.environ)
        if mode == "staged":
            prefix = os.path.join(work, "prefix")
            run(["cmake", "--install", build, "--prefix", prefix], stdout=subprocess.DEVNULL)
            libdir = check_tree(prefix, build)
            pc_env["PKG_CONFIG_PATH"] = os.path.join(libdir, "pkgconfig")
        else:
            # BUILD/packages, kept: deploy_container builds its image from them
            out = os.path.join(build, "packages")
            shutil.rmtree(out, ignore_errors=True)
            run(["cpack", "-G", "DEB", "--config", os.path.join(build, "CPackConfig.cmake"), "-B", out],
                stdout=subprocess.DEVNULL)
            shutil.rmtree(os.path.join(out, "_CPack_Packages"), ignore_errors=True)
            debs = sorted(f for f in os.listdir(out) if f.endswith(".deb"))
            names = sorted(f.split("_")[0] for f in debs)
            if names != ["librdev", "librdev-dev", "rdevd"]:
                raise SystemExit(f"packages: {debs}")
            root = os.path.join(work, "root")
            for deb in debs:
                listing = subprocess.run(["dpkg-deb", "-c", os.path.join(out, deb)], check=True,
                                         capture_output=True, text=True).stdout
                print(f"{deb}: {len(listing.splitlines())} entries")
                run(["dpkg-deb", "-x", os.path.join(out, deb), root])
            fields = {d.split("_")[0]: subprocess.run(["dpkg-deb", "-f", os.path.join(out, d), "Depends"],
                                                      capture_output=True, text=True).stdout for d in debs}
            for pkg, dep in (("rdevd", "libgrpc29"), ("librdev", "libgrpc29"), ("librdev-dev", "librdev (=")):
                if dep not in fields[pkg]:
                    raise SystemExit(f"{pkg}: Depends lacks {dep}: {fields[pkg]}")
            scripts = subprocess.run(["dpkg-deb", "-I", os.path.join(out, [d for d in debs if d.startswith("rdevd_")][0])],
                                     capture_output=True, text=True).stdout
            if "postinst" not in scripts or "prerm" not in scripts:
                raise SystemExit("rdevd package lacks its maintainer scripts")
            prefix = os.path.join(root, "usr")
            libdir = check_tree(prefix, build)
            pc_env["PKG_CONFIG_SYSROOT_DIR"] = root
            pc_env["PKG_CONFIG_PATH"] = os.path.join(libdir, "pkgconfig")
        exercise(prefix, libdir, pc_env, work)
        print(f"test_install {mode}: PASS")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
