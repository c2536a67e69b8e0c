"""tests/bench/rdev_bench/py_peer.py — the Python package's side of
rdev_bench (client_py.c starts it, with Debian's python3): one session of
the `rdev` package, driven line by line over a pipe so that its copies
interleave with the bench's other methods. It owns one DeviceArray and two
numpy arrays (a, the source, and out, the destination; every page touched)
of the size last asked for.

    python3 py_peer.py PKG_DIR ADDR

First line out: "ready" once the session is open; "na REASON" when numpy
or the package cannot be imported (then it exits 0); "error REASON" when
the session cannot be opened. Then per line in, one line out:
    h2d SIZE K     -> seconds of K x d.set(a)
    d2h SIZE K     -> seconds of K x d.get(out=out)
    verify SIZE    -> "ok", or "error ..." naming the first differing byte
                      (d.fill(0xa5), d.set(a), out.fill(0x5a), d.get(out=out))
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
            elif cmd[0] == "quit":
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
