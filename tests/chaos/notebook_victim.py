#!/usr/bin/python3
"""tests/chaos/notebook_victim.py — the chaos suite's notebook victim
(tests/chaos/chaos.c runs it): a loop of notebook-style cells through the
rdev Python package, one session at a time, each cell checked against
numpy byte for byte.

  notebook_victim.py TARGET [--seed S] [--max-bytes N] [--cell-s T] [--cells K]

A cell uploads a random numpy array (4 B .. N bytes, log-uniform; default
4 MiB), runs one thing on it on the device (rdev.ops.add of two int32
arrays; the square_f32 kernel; the inc_u32 kernel, one block an element),
downloads the result and compares it with numpy's. It either succeeds
with exactly numpy's bytes, or raises rdev.Error with code UNAVAILABLE
(900002): then the session is closed and the next cell opens another
(rdev.connect(TARGET); a session resumes across connection breaks by
itself, so this is rare). Anything else is a violation: another
exception or code, different bytes, or a cell that took longer than T
seconds (default 45).

With --cells K it runs K cells and exits (0: no violation; 1). Without,
it is driven by chaos.c over standard input and output, one line each:
  in:  go    run cells until told to stop
       stop  finish the cell, close the session, answer "stopped"
       (end of input: exit 0)
  out: ready                    imported, waiting for "go"
       start                    a cell begins
       ok BYTES                 it succeeded with exact data
       failed CODE MESSAGE      it raised rdev.Error UNAVAILABLE
       violation MESSAGE        anything else (the loop goes on)
       stopped                  the session is closed
"""
import argparse
import math
import os
import select
import sys
import time

import numpy as np

import rdev

UNAVAILABLE = 900002


class Victim:
    def __init__(self, target, seed, max_bytes, cell_s):
        self.target, self.max_bytes, self.cell_s = target, max_bytes, cell_s
        self.rng = np.random.default_rng(seed)
        self.s = None
        self.cells = 0
        self.have_add = "Add" in rdev.ops.available()

    def close(self):
        s, self.s = self.s, None
        if s is not None:
            try:
                s.close()
            except rdev.Error:
                pass  # a session that broke for good closes all the same

    def elements(self, itemsize):
        """A log-uniform size in bytes, 4 .. max_bytes, as a count of items."""
        n = math.exp(self.rng.uniform(math.log(4), math.log(self.max_bytes)))
        return max(1, int(n) // itemsize)

    def cell(self):
        """One cell: (bytes moved, None) or (0, violation message); rdev.Error propagates."""
        if self.s is None:
            self.s = rdev.connect(self.target, timeout=5, keepalive=1)  # as the C victims' (chaos.c)
        kind = self.cells % (3 if self.have_add else 2)
        self.cells += 1
        if kind == 0:  # the square_f32 kernel: out[i] = in[i] * in[i]
            n = self.elements(4)
            a = self.rng.standard_normal(n, dtype=np.float32)
            x = rdev.asarray(a)
            y = rdev.empty_like(x)
            self.s.kernels.square_f32(x, y, n, blocks=1)
            want, what = a * a, f"square_f32 of {n} floats"
        elif kind == 1:  # inc_u32, one block an element: x[b] += 1
            n = min(self.elements(4), 65535)  # blocks: 1 .. 65535
            a = self.rng.integers(0, 2**32, n, dtype=np.uint32)
            y = rdev.asarray(a)
            self.s.kernels.inc_u32(y, blocks=n)
            want, what = a + np.uint32(1), f"inc_u32 of {n} words"
        else:  # the Add operator on int32 (no overflow: |a|, |b| < 2**30)
            n = self.elements(8)
            a = self.rng.integers(-2**30, 2**30, n, dtype=np.int32)
            b = self.rng.integers(-2**30, 2**30, n, dtype=np.int32)
            y = rdev.ops.add(rdev.asarray(a), rdev.asarray(b))
            want, what = a + b, f"ops.add of {n} int32"
        got = y.get()
        if got.dtype != want.dtype or got.shape != want.shape:
            return 0, f"{what}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}"
        if got.tobytes() != want.tobytes():
            i = int(np.flatnonzero(got.view(np.uint8) != want.view(np.uint8))[0])
            return 0, f"{what}: the result differs from numpy's from byte {i}"
        return want.nbytes, None

    def run_cell(self, say):
        """Runs a cell and reports it with say(line): True when it was no violation."""
        say("start")
        t0 = time.monotonic()
        try:
            nbytes, bad = self.cell()
        except rdev.Error as e:
            if e.code != UNAVAILABLE:
                say(f"violation rdev.Error {e.code}: {e}")
                self.close()
                return False
            self.close()
            took = time.monotonic() - t0
            if took > self.cell_s:
                say(f"violation a cell took {took:.1f} s (bound {self.cell_s} s), then failed: {e}")
                return False
            say(f"failed {e.code} {e}".replace("\n", " "))
            return True
        except Exception as e:  # noqa: BLE001 (anything but rdev.Error UNAVAILABLE is a violation)
            say(f"violation {type(e).__name__}: {e}".replace("\n", " "))
            self.close()
            return False
        took = time.monotonic() - t0
        if bad is None and took > self.cell_s:
            bad = f"a cell took {took:.1f} s (bound {self.cell_s} s)"
        say(f"violation {bad}" if bad else f"ok {nbytes}")
        return bad is None


def driven(v):
    """chaos.c's loop: commands on stdin, a line per event on stdout."""
    def say(line):
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    buf, running = b"", False
    say("ready")
    while True:
        # a command waits while stopped; between cells it is only looked for
        ready = select.select([0], [], [], None if not running else 0)[0]
        if ready:
            chunk = os.read(0, 4096)
            if not chunk:
                v.close()
                return 0
            buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            cmd = line.decode().strip()
            if cmd == "go":
                running = True
            elif cmd == "stop":
                running = False
                v.close()
                say("stopped")
        if running:
            v.run_cell(say)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("target")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-bytes", type=int, default=4 << 20)
    ap.add_argument("--cell-s", type=float, default=45)
    ap.add_argument("--cells", type=int, default=0)
    a = ap.parse_args()
    rdev.set_progress(False)
    v = Victim(a.target, a.seed, a.max_bytes, a.cell_s)
    if not a.cells:
        return driven(v)
    bad = 0
    for _ in range(a.cells):
        bad += not v.run_cell(print)
    v.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
