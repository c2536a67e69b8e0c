#!/usr/bin/python3
"""tests/chaos/chaos_watch.py — the chaos suite's job watch victim:
`rdev job watch` following jobs through the `chaos_proxy` program while
its connections are cut, stalled and refused (docs/reliability.md,
"Chaos"; docs/jobs.md, "Watching").

A real rdevd on a job dir and an HTTP server (tests/jobs/test_jobs.py's
harness), the chaos_proxy program in front of rdevd (one route, its
faults fired through its standard input). Four jobs, submitted directly:
a square of a slowly fetched input that succeeds, one that fails its
input's checksum after a slow fetch, one of five delay steps that
succeeds, one cancelled (directly) in its second step after 3 s. Each is watched by
`rdev job watch` through the proxy while, every 0.4 .. 0.8 s until every
job is final, one of: a cut of every connection with FIN, with RST, with
RST and 500 ms of refused connections, a stall of 1.5 s.

Each watch must end within 20 s of its job's final state (never a hang),
with the exit status of that state (0 succeeded, 1 failed or cancelled),
nothing on stderr; print no line twice and its states in their order
(queued, fetching, running, delivering, final); and end with the job's
true final state as GetJob tells it directly (a failure's code too). The
outputs are exact (fetched directly after the faults). The watches must
have been cut: each ran through 2 cuts at least, and the proxy took more
connections than there are watches (they connected again).

usage: chaos_watch.py CHAOS_PROXY RDEVD RDEV PROTO_DIR [unittest args]
"""
import os
import re
import subprocess
import sys
import time
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHAOS_PROXY = os.path.abspath(sys.argv.pop(1))
sys.path.insert(0, os.path.join(HERE, "..", "jobs"))
import test_jobs  # noqa: E402,F401  (parses and removes RDEVD RDEV PROTO_DIR from sys.argv)
from test_jobs import (CANCELLED_ST, FAILED, FINAL, RUNNING, SUCCEEDED, JobTest, read_line,  # noqa: E402
                       sname, squared)

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (.*)$")
ORDER = ["queued", "fetching", "running", "delivering", "succeeded", "failed", "cancelled"]
FAULTS = ["cut fin", "cut rst", "cut rst 500", "stall 1500"]
END_S = 20  # a watch ends within this of its job's final state


class Proxy:
    """The chaos_proxy program with one route to upstream; stderr to a file."""

    def __init__(self, upstream, tmp):
        self.errpath = os.path.join(tmp, "chaos_proxy.stderr")
        with open(self.errpath, "wb") as err:
            self.proc = subprocess.Popen([CHAOS_PROXY, "--route", f"127.0.0.1:0={upstream}", "--report", "0"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        line = read_line(self.proc, 30)
        m = re.match(r"route 0 (\S+) -> ", line)
        if not m:
            self.stop()
            raise RuntimeError(f"chaos_proxy did not start: {line!r}")
        self.addr = m.group(1)

    def log(self):
        with open(self.errpath, errors="replace") as f:
            return f.read()

    def command(self, cmd):
        self.proc.stdin.write(cmd.encode() + b"\n")
        self.proc.stdin.flush()

    def cut(self, cmd):
        """A cut command: the number of connections it cut (its answer on stderr)."""
        before = self.log().count("chaos_proxy: cut ")
        self.command(cmd)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            lines = [x for x in self.log().splitlines() if x.startswith("chaos_proxy: cut ")]
            if len(lines) > before:
                return int(lines[before].split()[2])
            time.sleep(0.01)
        raise AssertionError(f"chaos_proxy did not answer {cmd!r}")

    def accepted(self):
        """Connections accepted so far (a stats line)."""
        n = self.log().count("chaos_proxy: stats:")
        self.command("stats")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            stats = [x for x in self.log().splitlines() if x.startswith("chaos_proxy: stats:")]
            if len(stats) > n:
                return int(re.search(r"accepted=(\d+)", stats[n]).group(1))
            time.sleep(0.01)
        raise AssertionError("chaos_proxy did not answer stats")

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.terminate()
                self.proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, OSError):
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


class WatchThroughChaos(JobTest):
    RDEVD_ARGS = ("--job-runners", "4")

    def test_watches_ride_out_cuts_stalls_and_refusals(self):
        proxy = Proxy(self.srv.addr, self.tmp)
        self.addCleanup(proxy.stop)
        through = types.SimpleNamespace(addr=proxy.addr)

        sq = self.sq_spec(256 * 1024, 41, name="sq")
        sq["inputs"][0]["url"] = self.http.url(f"/slow/700/data/{256 * 1024}?seed=41")
        sq["steps"].append({"launch": "delay_us", "blocks": 1, "args": [{"u32": 1_000_000}], "name": "wait"})
        bad = self.sq_spec(64 * 1024, 42, name="bad", sha="00" * 32)
        bad["inputs"][0]["url"] = self.http.url(f"/slow/2500/data/{64 * 1024}?seed=42")
        steps = self.delay_spec(600_000, name="steps")
        steps["steps"] += [{"launch": "delay_us", "blocks": 1, "args": [{"u32": 600_000}], "name": f"w{i}"}
                           for i in range(4)]
        cancel = self.delay_spec(60_000_000, name="cancel")
        jobs = {name: self.submit(spec)[0] for name, spec in
                (("sq", sq), ("bad", bad), ("steps", steps), ("cancel", cancel))}
        watches = {name: self.cli_bg("job", "watch", jid, srv=through) for name, jid in jobs.items()}
        t0 = time.monotonic()

        # faults until every job is final; the cancel once its delay step runs
        cut_conns = k = 0
        exposed = dict.fromkeys(jobs, 0)  # cuts of a watch's connection while it ran
        final_at, ended_at = {}, {}  # a job final, its watch ended (as the loop saw them)
        cancelled = False
        while len(final_at) < len(jobs):
            if time.monotonic() - t0 > 60:
                self.fail(f"the jobs were not final within 60 s: {final_at}{self.ctx()}")
            time.sleep(0.4 + 0.4 * ((k * 7919) % 10) / 10)
            fault = FAULTS[k % len(FAULTS)]
            k += 1
            running = [name for name, w in watches.items() if w.poll() is None]
            for name, w in watches.items():
                if name not in running and name not in ended_at:
                    ended_at[name] = time.monotonic()
            if fault.startswith("cut"):
                n = proxy.cut(fault)
                cut_conns += n
                for name in running:
                    exposed[name] += n > 0
            else:
                proxy.command(fault)
            for name, jid in jobs.items():
                st = self.get(jid)
                if (name == "cancel" and not cancelled and st.state == RUNNING and st.steps_done >= 1
                        and time.monotonic() - t0 > 3):
                    r = self.cli("job", "cancel", jid)
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                    cancelled = True
                if st.state in FINAL and name not in final_at:
                    final_at[name] = time.monotonic()
        proxy.command("stall 0")
        faults_s = time.monotonic() - t0

        report = []
        for name, jid in jobs.items():
            w = watches[name]
            try:
                out, err = w.communicate(timeout=max(1, final_at[name] + END_S - time.monotonic()))
            except subprocess.TimeoutExpired:
                w.kill()
                out, err = w.communicate()
                self.fail(f"the watch of {name} did not end within {END_S} s of its job's final state "
                          f"(a hang):\n{out}{err}{self.ctx()}")
            st = self.get(jid)
            want_state = sname(st.state).lower()
            ctx = f"\nwatch of {name} ({jid}), exit {w.returncode}:\n{out}{err}\nproxy:\n{proxy.log()[-2000:]}"
            lines = []
            for line in out.splitlines():
                m = LINE.match(line)
                self.assertTrue(m, f"not a watch line: {line!r}{ctx}")
                lines.append(m.group(1))
            self.assertEqual(err, "", ctx)
            self.assertEqual(w.returncode, 0 if st.state == SUCCEEDED else 1, ctx)
            twice = sorted({x for x in lines if lines.count(x) > 1})
            self.assertEqual(twice, [], f"printed more than once{ctx}")
            states = [x.split()[1] for x in lines if x.startswith("state ")]
            self.assertEqual(states, sorted(states, key=ORDER.index), f"states out of order{ctx}")
            self.assertEqual(states[-1], want_state, f"not the job's final state ({st}){ctx}")
            last = lines[-1]
            self.assertTrue(last.startswith(f"state {want_state}"), ctx)
            if st.state == FAILED:
                self.assertIn(f": {st.code} ", last, ctx)
            ended = ended_at.get(name, time.monotonic()) - t0
            report.append(f"{name} {want_state} at {final_at[name] - t0:.1f} s, watch ended by {ended:.1f} s "
                          f"({len(lines)} lines)")

        self.assert_state(self.get(jobs["sq"]), SUCCEEDED)
        self.assert_state(self.get(jobs["bad"]), FAILED, failed_at="input x", code=test_jobs.CHECKSUM)
        self.assert_state(self.get(jobs["steps"]), SUCCEEDED)
        self.assert_state(self.get(jobs["cancel"]), CANCELLED_ST)
        self.assertEqual(self.fetch_wire(jobs["sq"], "r"), squared(self.http.data(256 * 1024, 41)))
        self.assertEqual(self.fetch_wire(jobs["steps"], "k"), bytes([7]) * 4096)
        accepted = proxy.accepted()
        self.assertGreaterEqual(min(exposed.values()), 2, f"a watch ran through fewer than 2 cuts: {exposed}"
                                f"{proxy.log()}")
        self.assertGreater(accepted, len(watches), f"the watches never connected again{proxy.log()}")
        print(f"chaos_watch: {faults_s:.1f} s of faults ({k}; cuts while each watch ran: {exposed}, "
              f"{cut_conns} connections cut, {accepted} accepted); " + ", ".join(report), file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
