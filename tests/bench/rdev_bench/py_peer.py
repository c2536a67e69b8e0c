"""tests/bench/rdev_bench/py_peer.py — the Python package's side of
rdev_bench (client_py.c starts it, with Debian's python3): one session of
the `rdev` package, driven line by line over a pipe so that its copies
interleave with the bench's other methods. It owns one DeviceArray and two
numpy arrays (a, the source, and out, the destination; every page touched)
of the size last asked for; for the operators phase, the device arrays of
Add (two float32 vectors and their sum) and Matmul (two float32 matrices
and their product), with oper.h's inputs, and a stream of its own.

    python3 py_peer.py PKG_DIR ADDR

First line out: "ready" once the session is open; "na REASON" when numpy
or the package cannot be imported (then it exits 0); "error REASON" when
the session cannot be opened. Then per line in, one line out:
    h2d SIZE K     -> seconds of K x d.set(a)
    d2h SIZE K     -> seconds of K x d.get(out=out)
    verify SIZE    -> "ok", or "error ..." naming the first differing byte
                      (d.fill(0xa5), d.set(a), out.fill(0x5a), d.get(out=out))
    opsinit N M K L -> "ok", or "na REASON" when the package has no rdev.ops:
                      Add's vectors of N, Matmul's M x K and K x L matrices
    opprobe OP     -> OP (add, matmul) run once: "ok", or "na REASON" when
                      it is not offered (not in rdev.ops.available(), or
                      rdevd answered 900007, unknown kernel)
    op OP K        -> seconds of K x (rdev.ops.OP(a, b, out=c, stream=st) +
                      st.synchronize())
    opverify OP    -> "ok", or "error ..." naming a wrong element (c set to
                      NaN, one run, c.get() against numpy: Add every
                      element, Matmul a 16 x 16 grid, as oper.c)
    quit           -> "bye", and exit 0
Any failure: "error REASON" and exit 1. End of input (the bench is gone):
exit 1. The child also dies with the bench (PR_SET_PDEATHSIG).
"""
import ctypes
import os
import sys
import time


def main():
    pkg_dir, addr = sys.argv[1], sys.argv[2]
    parent = os.getppid()
    try:  # never outlive the bench (prctl(PR_SET_PDEATHSIG, SIGKILL))
        ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        return 1
    sys.path.insert(0, pkg_dir)
    try:
        import numpy as np
        import rdev
    except ImportError as e:
        print(f"na {e} (python3 {sys.version.split()[0]}, package path {pkg_dir})", flush=True)
        return 0
    rdev.set_progress(False)
    try:
        s = rdev.connect(addr)
    except Exception as e:  # noqa: BLE001  said to the bench, which fails
        print(f"error cannot open a session with {addr}: {e}", flush=True)
        return 1
    print("ready", flush=True)

    st = {"size": 0, "d": None, "a": None, "out": None}
    ops = {}  # opsinit: "add"/"matmul" -> (a, b, c) device arrays; "stream"; "ops" the module

    def oper_input(which, n):
        """oper.h's oper_input(which, 0..n) as float32."""
        i = np.arange(n, dtype=np.int64)
        v = i % 17 - 8 if which == 0 else i * 5 % 13 - 6
        return v.astype(np.float32)

    def oper_want(name):
        """What oper_check compares: Add's whole sum; Matmul's 16 x 16 grid (rows, cols, values)."""
        a, b, c = ops[name]
        if name == "add":
            return oper_input(0, a.shape[0]) + oper_input(1, b.shape[0])
        m, k = a.shape
        n = b.shape[1]
        rows = [r * (m - 1) // 15 if m > 1 else 0 for r in range(16)]
        cols = [q * (n - 1) // 15 if n > 1 else 0 for q in range(16)]
        ai = oper_input(0, m * k).reshape(m, k)[rows].astype(np.int64)
        bi = oper_input(1, k * n).reshape(k, n)[:, cols].astype(np.int64)
        return rows, cols, ai @ bi

    def op_run(name, k):
        a, b, c = ops[name]
        f = getattr(ops["ops"], name)
        stream = ops["stream"]
        t0 = time.perf_counter()
        for _ in range(k):
            f(a, b, out=c, stream=stream)
            stream.synchronize()
        return time.perf_counter() - t0

    def arrays(size):
        if st["size"] != size:
            if st["d"] is not None:
                st["d"].free()
            st["d"] = st["a"] = st["out"] = None
            w = np.arange(size // 8 + 1, dtype=np.uint64)  # a pattern per 8-byte word
            w *= np.uint64(0x9E3779B97F4A7C15)
            w ^= np.uint64(0xD1342543DE82EF95)
            st["a"] = w.view(np.uint8)[:size].copy()
            st["out"] = np.zeros(size, np.uint8)
            st["out"].fill(0x22)  # every page touched, as the bench's buffers
            st["d"] = rdev.empty(size, np.uint8, session=s)
            st["size"] = size
        return st["d"], st["a"], st["out"]

    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] in ("h2d", "d2h") and len(cmd) == 3:
                d, a, out = arrays(int(cmd[1]))
                k = int(cmd[2])
                if cmd[0] == "h2d":
                    t0 = time.perf_counter()
                    for _ in range(k):
                        d.set(a)
                else:
                    t0 = time.perf_counter()
                    for _ in range(k):
                        d.get(out=out)
                answer = f"{time.perf_counter() - t0:.9f}"
            elif cmd[0] == "verify" and len(cmd) == 2:
                d, a, out = arrays(int(cmd[1]))
                d.fill(0xA5)
                d.set(a)
                out.fill(0x5A)
                d.get(out=out)
                if np.array_equal(a, out):
                    answer = "ok"
                else:
                    i = int(np.flatnonzero(a != out)[0])
                    answer = f"error d.set(a) + d.get(out=) of {a.size} bytes: data differ at byte {i} " \
                             f"(sent {a[i]:#04x}, got {out[i]:#04x})"
            elif cmd[0] == "opsinit" and len(cmd) == 5:
                n, m, k, l_ = (int(x) for x in cmd[1:])
                if not hasattr(rdev, "ops"):
                    answer = "na the package has no rdev.ops (operators)"
                else:
                    ops["ops"] = rdev.ops
                    ops["stream"] = s.stream()
                    ops["add"] = (rdev.asarray(oper_input(0, n), session=s), rdev.asarray(oper_input(1, n), session=s),
                                  rdev.empty(n, np.float32, session=s))
                    ops["matmul"] = (rdev.asarray(oper_input(0, m * k).reshape(m, k), session=s),
                                     rdev.asarray(oper_input(1, k * l_).reshape(k, l_), session=s),
                                     rdev.empty((m, l_), np.float32, session=s))
                    s.synchronize()
                    answer = "ok"
            elif cmd[0] == "opprobe" and len(cmd) == 2 and cmd[1] in ("add", "matmul"):
                cann = {"add": "Add", "matmul": "Matmul"}[cmd[1]]
                if cann not in rdev.ops.available():
                    answer = f"na this build's operator table has no {cann} (rdev.ops.available())"
                else:
                    try:
                        op_run(cmd[1], 1)
                        answer = "ok"
                    except rdev.Error as e:
                        if e.code != 900007:
                            raise
                        answer = f"na rdevd does not offer aclnn{cann} ({e})"
            elif cmd[0] == "op" and len(cmd) == 3 and cmd[1] in ("add", "matmul"):
                answer = f"{op_run(cmd[1], int(cmd[2])):.9f}"
            elif cmd[0] == "opverify" and len(cmd) == 2 and cmd[1] in ("add", "matmul"):
                name = cmd[1]
                a, b, c = ops[name]
                c.set(np.full(c.shape, np.nan, np.float32), stream=ops["stream"])
                op_run(name, 1)
                got = c.get(stream=ops["stream"])
                want = oper_want(name)
                if name == "add":
                    bad = np.flatnonzero(got != want)
                    answer = "ok" if bad.size == 0 else \
                        f"error rdev.ops.add of {got.size} float32: out[{bad[0]}] is {got[bad[0]]}, not {want[bad[0]]}"
                else:
                    rows, cols, w = want
                    g = got[rows][:, cols]
                    bad = np.argwhere(g != w)
                    if bad.size == 0:
                        answer = "ok"
                    else:
                        i, j = bad[0]
                        answer = f"error rdev.ops.matmul {a.shape} @ {b.shape}: out[{rows[i]}][{cols[j]}] is " \
                                 f"{g[i, j]}, not {w[i, j]}"
            elif cmd[0] == "quit":
                for name in ("add", "matmul"):
                    for d in ops.get(name, ()):
                        d.free()
                if st["d"] is not None:
                    st["d"].free()
                s.close()
                print("bye", flush=True)
                return 0
            else:
                answer = f"error unknown command {line.strip()!r}"
        except Exception as e:  # noqa: BLE001  said to the bench, which fails
            answer = f"error {cmd[0]}: {type(e).__name__}: {e}"
        print(answer, flush=True)
        if answer.startswith("error"):
            return 1
    return 1


if __name__ == "__main__":
    sys.exit(main())
