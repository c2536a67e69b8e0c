"""tests/bench/rdev_bench/py_step.py — rdev_latency's notebook-style step
(latency.c runs it with Debian's python3, copied next to the binary as
rdev_latency_py_step.py): in one session of the `rdev` package, upload
1 MiB, run three kernels on it, download 1 MiB, as a notebook cell does,
and check the result. The session's open and a first step are not timed.

    python3 py_step.py PKG_DIR ADDR STEPS

Prints "step_ms=X" (the median of STEPS timed steps) and exits 0; "na
REASON" and exit 0 when numpy or the package cannot be imported; exit 1
with a reason on stderr on any failure.
"""
import statistics
import sys
import time


def main():
    pkg_dir, addr, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sys.path.insert(0, pkg_dir)
    try:
        import numpy as np
        import rdev
    except ImportError as e:
        print(f"na {e}", flush=True)
        return 0
    rdev.set_progress(False)
    n = (1 << 20) // 4
    a = np.arange(n, dtype=np.float32) % 7
    want = ((a * a) * (a * a)) * ((a * a) * (a * a))  # squared three times
    out = np.empty_like(a)
    with rdev.connect(addr) as s:
        x = rdev.empty(n, dtype=np.float32)
        y = rdev.empty(n, dtype=np.float32)
        times = []
        for i in range(steps + 1):
            t0 = time.perf_counter()
            x.set(a)
            s.kernels.square_f32(x, y, n, blocks=8)
            s.kernels.square_f32(y, x, n, blocks=8)
            s.kernels.square_f32(x, y, n, blocks=8)
            y.get(out=out)
            t = time.perf_counter() - t0
            if not np.array_equal(out, want):
                print(f"step {i}: wrong result", file=sys.stderr)
                return 1
            if i:
                times.append(t)
    print(f"step_ms={statistics.median(times) * 1e3:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
