#!/usr/bin/python3
"""tests/bench/python/bench_python.py — what the Python package `rdev` costs
over the C client it wraps, measured in one run against one rdevd.

Measures, Python (this process, the package over rdev._rdev) against the C
client (pybench_peer, a second process driven line by line over a pipe so
that the two sides' rounds interleave):
1. Launch + synchronize latency: `s.kernels.inc_u32(x, stream=st)` then
   `st.synchronize()`, and the same on the default stream
   (`s.kernels.inc_u32(x)`, `s.default_stream.synchronize()`), against
   rdev_launch(inc_u32, 1 block) + rdev_stream_synchronize. Rounds of N
   launches, C and the two Python ways in turn (who goes first rotates); a
   round's figure is the median of its N; ratio = Python/C time, the median
   over rounds of the ratio of the two medians taken side by side.
2. numpy copies of 64 MiB, 256 MiB and 1 GiB ([--quick] 64 and 256 MiB):
   H2D `d.set(a)` into an existing DeviceArray and `rdev.asarray(a)` (a new
   device allocation, zeroed by the server, plus the upload), D2H
   `d.get(out=a)` into an existing ndarray and `d.get()` (a new ndarray),
   against rdev_memcpy H2D and D2H of the same size (a page-touched host
   buffer, one device buffer). Each round runs every method k times
   (medians), C and Python alternating; ratio = Python/C throughput, the
   median over rounds of the per-round ratios. Every method's bytes are
   verified once per size (the C side verifies its own).
3. Memory: 200 [50] calls of `d.get(out=arr)` of 64 MiB after a few
   warm-up calls: the growth of tracemalloc's traced memory and of this
   process's VmRSS over them.

Targets: the copy ratios of d.set(a) and d.get(out=a), which do the C
call's work, >= 0.9 from 64 MiB on (asarray's and get()'s ratios are
information: they also allocate, device memory the server zeroes or a new
host array whose pages the kernel zeroes on first touch); launch+sync
Python/C <= 1.5; tracemalloc growth < 4096 bytes; VmRSS growth < 4 MiB. A
target missed is printed MISS; it fails the run (exit 1) only with
--strict. Errors (a failed call, wrong bytes, the peer or rdevd failing)
exit 1. The last line is a summary of key=value pairs (ratios per size:
h2d_64m_ratio, asarray_64m_ratio, d2h_64m_ratio, get_alloc_64m_ratio, ...;
launch_ratio, launch_default_ratio, tracemalloc_growth_bytes,
rss_growth_mib, targets_met).

    bench_python.py --peer PATH [--rdevd PATH | --target ADDR] [--quick] [--strict] [--diagnose]

Without --target it starts its own rdevd (--rdevd, else $RDEV_TEST_RDEVD,
else build/server/rdevd) on a free loopback port: 1 sim device with twice
the largest size + 64 MiB of memory (2112 MiB [576 MiB]: the device
reserves a few bytes more than each allocation, so two 1 GiB buffers do not
fit in 2 GiB). The peer frees its device buffer after each command; the
Python side holds one array of a size at a time. --diagnose adds, per size,
the C client's copies made the way the package makes them (rdev_memcpy_async
of 64 MiB pieces, each followed by a synchronize) against its synchronous
ones, asarray against C's rdev_malloc + rdev_memcpy, get() against C's
new host buffer + rdev_memcpy, and the Python side's page faults and CPU
time per call.
"""
import argparse
import gc
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "acl"))
import rdevd as rdevd_proc  # noqa: E402  tests/acl/rdevd.py

import rdev  # noqa: E402

MiB = 1 << 20
CHUNK = 64 * MiB  # the package's transfer piece (rdev/__init__.py _CHUNK)

TARGET_COPY = 0.9     # Python/C throughput, from 64 MiB on
TARGET_LAUNCH = 1.5   # Python/C launch+sync time
TARGET_TRACED = 4096  # bytes of tracemalloc growth
TARGET_RSS = 4.0      # MiB of VmRSS growth


class BenchError(Exception):
    """A failure that makes the run invalid (exit 1)."""


# ---- helpers ------------------------------------------------------------------------------


def size_label(n):
    if n >= 1 << 30 and n % (1 << 30) == 0:
        return f"{n >> 30} GiB"
    return f"{n >> 20} MiB"


def size_key(n):
    return f"{n >> 30}g" if n >= 1 << 30 else f"{n >> 20}m"


def pattern(n, seed):
    """n bytes that differ per seed and per 8-byte word."""
    w = np.arange(n // 8, dtype=np.uint64)
    w *= np.uint64(0x9E3779B97F4A7C15)
    w ^= np.uint64((seed + 1) * 0xD1342543DE82EF95 & (2**64 - 1))
    return w.view(np.uint8)


def expect_same(want, got, what):
    """Raises BenchError naming the first differing byte unless want == got."""
    if want.nbytes != got.nbytes:
        raise BenchError(f"{what}: {got.nbytes} bytes, expected {want.nbytes}")
    w, g = want.reshape(-1).view(np.uint8), got.reshape(-1).view(np.uint8)
    for i in range(0, w.size, CHUNK):  # pieces: no temporary the size of the array
        if not np.array_equal(w[i:i + CHUNK], g[i:i + CHUNK]):
            j = i + int(np.flatnonzero(w[i:i + CHUNK] != g[i:i + CHUNK])[0])
            raise BenchError(f"{what}: data differ at byte {j} of {w.size} (sent {w[j]:#04x}, got {g[j]:#04x})")


def vm_rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise BenchError("no VmRSS in /proc/self/status")


def timed(fn, k, costs=None):
    """Median seconds of k calls of fn(); fn may return its own figure (seconds).
    costs, a list: gets (page faults, CPU seconds) of this process per call."""
    t = []
    for _ in range(k):
        r0 = resource.getrusage(resource.RUSAGE_SELF) if costs is not None else None
        t0 = time.perf_counter()
        v = fn()
        t.append(time.perf_counter() - t0 if v is None else v)
        if costs is not None:
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            costs.append((r1.ru_minflt - r0.ru_minflt, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime))
    return statistics.median(t)


class Peer:
    """pybench_peer: one command line in, one answer line out."""

    def __init__(self, path, addr):
        self.proc = subprocess.Popen([path, "--target", addr], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        if not answer:
            raise BenchError(f"pybench_peer ended (exit {self.proc.wait()}) at {line!r}")
        if answer.startswith("error"):
            self.proc.wait()
            raise BenchError(f"pybench_peer, {line!r}: {answer}")
        return answer

    def seconds(self, line):
        return float(self.ask(line))

    def quit(self):
        if self.proc.poll() is None:
            self.ask("quit")
        if self.proc.wait(timeout=30) != 0:
            raise BenchError(f"pybench_peer exited with {self.proc.returncode}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# ---- the table ----------------------------------------------------------------------------


class Table:
    """Rows of (what, size, C, Python, ratio, target, verdict); the summary's figures; targets met."""

    HEAD = f"{'what':<34} {'size':>8} | {'C':>12} {'Python':>12} | {'ratio':>6} {'target':>8} {'':4}"

    def __init__(self):
        self.summary = {}
        self.met = self.total = 0
        self.misses = []
        print(self.HEAD)
        print("-" * len(self.HEAD))

    def verdict(self, ok, name):
        if ok is None:
            return ""
        self.total += 1
        self.met += ok
        if not ok:
            self.misses.append(name)
        return "PASS" if ok else "MISS"

    def row(self, what, size, c, py, ratio, target, ok, name):
        r = "-" if ratio is None else f"{ratio:.2f}"
        print(f"{what:<34} {size:>8} | {c:>12} {py:>12} | {r:>6} {target:>8} {self.verdict(ok, name):4}", flush=True)


# ---- phases -------------------------------------------------------------------------------


def phase_launch(s, peer, table, rounds, n):
    """Launch + synchronize latency, Python (own stream, default stream) against C."""
    kernels = s.kernels
    if "inc_u32" not in kernels:
        raise BenchError("the server offers no inc_u32 kernel")
    x = rdev.zeros(1, np.uint32, session=s)
    st = s.stream()
    ds = s.default_stream
    ds.synchronize()  # the memset is queued on the default stream: done before st's launches

    def py_stream():
        s.kernels.inc_u32(x, stream=st)
        st.synchronize()

    def py_default():
        s.kernels.inc_u32(x)
        ds.synchronize()

    launches = 0
    for fn in (py_stream, py_default):  # warm-up
        timed(fn, 20)
        launches += 20
    peer.seconds("launch 20")
    c_t, st_t, ds_t, st_r, ds_r = [], [], [], [], []
    for r in range(rounds):
        order = ["c", "st", "ds"][r % 3:] + ["c", "st", "ds"][:r % 3]  # each goes first as often
        got = {}
        for m in order:
            if m == "c":
                got[m] = peer.seconds(f"launch {n}")
            else:
                got[m] = timed(py_stream if m == "st" else py_default, n)
                launches += n
        c_t.append(got["c"])
        st_t.append(got["st"])
        ds_t.append(got["ds"])
        st_r.append(got["st"] / got["c"])
        ds_r.append(got["ds"] / got["c"])
    count = int(x.get()[0])
    if count != launches:
        raise BenchError(f"inc_u32 counted {count} launches from Python, expected {launches}")
    st.close()
    x.free()
    c_us = statistics.median(c_t) * 1e6
    res = {}
    for label, name, ts, rs in (("launch+sync, own stream", "launch", st_t, st_r),
                                ("launch+sync, default stream", "launch_default", ds_t, ds_r)):
        ratio = statistics.median(rs)
        py_us = statistics.median(ts) * 1e6
        table.row(label, "-", f"{c_us:.1f} us", f"{py_us:.1f} us", ratio, f"<= {TARGET_LAUNCH}",
                  ratio <= TARGET_LAUNCH, f"{name}_ratio")
        table.summary[f"{name}_ratio"] = f"{ratio:.2f}"
        res[name] = (py_us, ratio)
    table.summary["launch_c_us"] = f"{c_us:.1f}"
    table.summary["launch_py_us"] = f"{res['launch'][0]:.1f}"
    return res


def phase_copies(s, peer, table, size, rounds, k, diagnose):
    """H2D (set, asarray) and D2H (get(out=), get()) against the C client's rdev_memcpy, one size."""
    a = pattern(size, size >> 20)
    out = np.empty(size, np.uint8)
    out.fill(0)  # pages touched, as the C side's
    holder = {"d": rdev.empty(size, np.uint8, session=s)}

    def py_set():
        holder["d"].set(a)

    def py_asarray():
        holder["d"].free()  # one Python array of this size at a time (the arena's size)
        holder["d"] = None
        t0 = time.perf_counter()
        holder["d"] = rdev.asarray(a, session=s)
        return time.perf_counter() - t0  # the free before is not asarray's cost

    def py_get_out():
        holder["d"].get(out=out)

    def py_get():
        holder["d"].get()  # the new array is dropped (freed) inside the timed call

    # each Python method verified once, outside the timed calls
    py_set()
    expect_same(a, holder["d"].get(), f"d.set(a) of {size_label(size)}")
    py_asarray()  # into new device memory, which the server zeroed
    expect_same(a, holder["d"].get(), f"rdev.asarray(a) of {size_label(size)}")
    out.fill(0)
    py_get_out()
    expect_same(a, out, f"d.get(out=) of {size_label(size)}")
    expect_same(a, holder["d"].get(), f"d.get() of {size_label(size)}")

    py = {"set": py_set, "asarray": py_asarray, "get_out": py_get_out, "get": py_get}
    c = {"c_h2d": f"h2d {size} {k}", "c_d2h": f"d2h {size} {k}"}
    if diagnose:
        c.update({"c_h2da": f"h2da {size} {k} {CHUNK}", "c_d2ha": f"d2ha {size} {k} {CHUNK}",
                  "c_h2dm": f"h2dm {size} {k}", "c_d2hm": f"d2hm {size} {k}"})
    c_h2d = [m for m in c if m.startswith("c_h2d")]
    c_d2h = [m for m in c if m.startswith("c_d2h")]
    t = {m: [] for m in list(py) + list(c)}
    costs = {m: [] for m in py}
    for r in range(rounds):  # C first in even rounds, Python first in odd ones
        h2d, d2h = [c_h2d, ["set", "asarray"]], [c_d2h, ["get_out", "get"]]
        if r % 2:
            h2d.reverse()
            d2h.reverse()
        for m in [m for group in h2d + d2h for m in group]:
            t[m].append(peer.seconds(c[m]) if m in c else timed(py[m], k, costs[m] if diagnose else None))
    # the last asarray left a's bytes; get(out=) checked again after the timed rounds
    out.fill(0)
    py_get_out()
    expect_same(a, out, f"d.get(out=) of {size_label(size)} after the rounds")
    holder["d"].free()

    gbps = {m: size / statistics.median(v) / 1e9 for m, v in t.items()}
    lbl, key = size_label(size), size_key(size)

    def row(what, cm, pm, name, target):
        ratio = statistics.median(tc / tp for tc, tp in zip(t[cm], t[pm]))
        table.row(what, lbl, f"{gbps[cm]:.2f} GB/s", f"{gbps[pm]:.2f} GB/s", ratio,
                  f">= {TARGET_COPY}" if target else ("info" if name else "-"),
                  ratio >= TARGET_COPY if target else None, f"{name}_{key}_ratio")
        if name:
            table.summary[f"{name}_{key}_ratio"] = f"{ratio:.2f}"

    # targets where Python does the C call's work; asarray also allocates device
    # memory (zeroed by the server), get() a new host array (fresh pages, zeroed by the kernel)
    row("H2D  d.set(a)", "c_h2d", "set", "h2d", True)
    row("H2D  rdev.asarray(a)", "c_h2d", "asarray", "asarray", False)
    row("D2H  d.get(out=a)", "c_d2h", "get_out", "d2h", True)
    row("D2H  d.get()", "c_d2h", "get", "get_alloc", False)
    if diagnose:
        row("  C: async 64 MiB pieces, H2D", "c_h2d", "c_h2da", None, False)
        row("  C: async 64 MiB pieces, D2H", "c_d2h", "c_d2ha", None, False)
        row("  asarray / C malloc+memcpy", "c_h2dm", "asarray", None, False)
        row("  get() / C new buffer+memcpy", "c_d2hm", "get", None, False)
        print("  Python, per call (medians; this process, all threads): "
              + "; ".join(f"{m} {statistics.median(f for f, _ in costs[m]):.0f} page faults, "
                          f"{statistics.median(x for _, x in costs[m]) * 1e3:.0f} ms CPU" for m in costs), flush=True)
    return gbps


def phase_memory(s, table, calls, warmup):
    """calls x d.get(out=arr) of 64 MiB: tracemalloc's and VmRSS's growth."""
    size = 64 * MiB
    a = pattern(size, 7)
    arr = np.zeros(size, np.uint8)
    d = rdev.asarray(a, session=s)
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(warmup):
            d.get(out=arr)
        gc.collect()
        traced0 = tracemalloc.get_traced_memory()[0]
        rss0 = vm_rss_mib()
        t0 = time.perf_counter()
        for _ in range(calls):
            d.get(out=arr)
        elapsed = time.perf_counter() - t0
        gc.collect()
        traced1 = tracemalloc.get_traced_memory()[0]
        rss1 = vm_rss_mib()
    finally:
        tracemalloc.stop()
    expect_same(a, arr, f"{calls} x d.get(out=) of 64 MiB")
    d.free()
    growth, rss_growth = traced1 - traced0, rss1 - rss0
    print(f"Memory: {calls} x d.get(out=arr) of 64 MiB after {warmup} warm-up calls "
          f"({calls * size / elapsed / 1e9:.2f} GB/s with tracemalloc on; VmRSS {rss0:.0f} MiB before)")
    table.row("  tracemalloc traced growth", "64 MiB", "-", f"{growth} B", None, f"< {TARGET_TRACED}",
              growth < TARGET_TRACED, "tracemalloc_growth_bytes")
    table.row("  VmRSS growth", "64 MiB", "-", f"{rss_growth:.2f} MiB", None, f"< {TARGET_RSS:g}M",
              rss_growth < TARGET_RSS, "rss_growth_mib")
    table.summary["tracemalloc_growth_bytes"] = str(growth)
    table.summary["rss_growth_mib"] = f"{rss_growth:.2f}"


# ---- the run ------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", required=True, help="the pybench_peer binary (the C client side)")
    ap.add_argument("--rdevd", help="the rdevd to start (default: $RDEV_TEST_RDEVD, else build/server/rdevd)")
    ap.add_argument("--target", help="a running rdevd to measure instead of starting one")
    ap.add_argument("--quick", action="store_true", help="64 and 256 MiB, fewer rounds (CI)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--diagnose", action="store_true",
                    help="also time the C client's copies made as the package makes them")
    args = ap.parse_args()
    rdev.set_progress(False)

    if args.quick:
        sizes = [(64 * MiB, 5, 2), (256 * MiB, 3, 1)]  # (size, rounds, calls per round and method)
        launch_rounds, launch_n, mem_calls, mem_warmup = 10, 200, 50, 3
    else:
        sizes = [(64 * MiB, 9, 3), (256 * MiB, 7, 2), (1 << 30, 7, 1)]
        launch_rounds, launch_n, mem_calls, mem_warmup = 20, 300, 200, 5

    server = path = None
    peer = None
    t_start = time.perf_counter()
    try:
        if args.target:
            addr = args.target
        else:
            rdevd = args.rdevd or os.environ.get("RDEV_TEST_RDEVD") or os.path.join(HERE, "..", "..", "..", "build",
                                                                                   "server", "rdevd")
            # the peer's buffer and one Python array of the largest size; each reserves 64 B more
            sim_mem = f"{(2 * max(n for n, _, _ in sizes) >> 20) + 64}M"
            server, addr, path = rdevd_proc.start(rdevd, "--sim-devices", "1", "--sim-mem", sim_mem)
        peer = Peer(args.peer, addr)
        with rdev.connect(addr) as s:
            info = s.info
            print(f"rdev Python bench ({'quick' if args.quick else 'full'}): {'own' if server else 'running'} "
                  f"rdevd {info.version} ({info.backend} backend) at {addr}; Python {sys.version.split()[0]}, "
                  f"numpy {np.__version__}; {os.cpu_count()} CPUs")
            print("Python = the rdev package in this process; C = pybench_peer (rdev_memcpy, rdev_launch) in "
                  "another, rounds interleaved.\nCopies: GB/s (1 GB = 1e9 B), ratio = Python/C throughput; "
                  "latency: us, ratio = Python/C time;\nmedians; ratios are medians of per-round ratios.\n")
            table = Table()
            phase_launch(s, peer, table, launch_rounds, launch_n)
            for size, rounds, k in sizes:
                phase_copies(s, peer, table, size, rounds, k, args.diagnose)
            phase_memory(s, table, mem_calls, mem_warmup)
        peer.quit()
        peer = None
        if server is not None:
            code = rdevd_proc.stop(server, path)
            server = None
            if code != 0:
                raise BenchError(f"rdevd exited with {code}")
    except (BenchError, rdev.Error, OSError, subprocess.SubprocessError) as e:
        print(f"bench_python: error: {e}", file=sys.stderr, flush=True)
        return 1
    finally:
        if peer is not None:
            peer.kill()
        if server is not None:
            server.kill()
            server.wait()
            os.unlink(path)

    print(f"\nEvery copy verified byte for byte (Python: each method once per size, and after the rounds; "
          f"C: every command).\nTargets met: {table.met}/{table.total}"
          + (f" (missed: {', '.join(table.misses)})" if table.misses else "")
          + f"; run time {time.perf_counter() - t_start:.0f} s.")
    table.summary["targets_met"] = f"{table.met}/{table.total}"
    print(" ".join(f"{k}={v}" for k, v in table.summary.items()), flush=True)
    return 1 if args.strict and table.misses else 0


if __name__ == "__main__":
    sys.exit(main())
