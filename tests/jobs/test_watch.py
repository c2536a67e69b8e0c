#!/usr/bin/python3
"""tests/jobs/test_watch.py — `rdev job watch` across a server restart
(docs/jobs.md, "Watching"): when rdevd goes away while a watch runs, the
watch reconnects with backoff and goes on from where it was, printing no
state twice, and ends as usual when the job is final; a server that does
not come back within the bound (`--reconnect SECONDS`, 60 by default) ends
the watch with 900002 UNAVAILABLE, never a hang. `--reconnect 0` ends it at
the loss, as before. A SIGTERM (drain) and restart is ridden out as well.

Reuses test_jobs.py's harness (a real rdevd on a job dir, httpd.py, the
CLI), which takes the same arguments.

usage: test_watch.py RDEVD RDEV PROTO_DIR [unittest args]
"""
import collections
import os
import re
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_jobs  # noqa: E402,F401  (parses and removes RDEVD RDEV PROTO_DIR from sys.argv)
from test_jobs import (FAILED, QUEUED, RUNNING, SUCCEEDED, UNAVAILABLE, JobTest,  # noqa: E402
                       squared)

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (.*)$")


def events(stdout):
    """The watch's lines without their times; each must have one."""
    out = []
    for line in stdout.splitlines():
        m = LINE.match(line)
        assert m, f"not a watch line: {line!r}\n{stdout}"
        out.append(m.group(1))
    return out


class WatchAcrossRestart(JobTest):
    RDEVD_ARGS = ("--job-runners", "1")  # a second job waits, queued

    def restart_same_port(self, after_s):
        """SIGKILL rdevd; after after_s seconds, a new one on the same address and job dir."""
        addr = self.srv.addr
        self.srv.kill()
        time.sleep(after_s)
        self.srv = self.start("--listen", addr)
        self.assertEqual(self.srv.addr, addr)

    def assert_no_repeats(self, out):
        seen = events(out)
        twice = [e for e, n in collections.Counter(seen).items() if n > 1]
        self.assertEqual(twice, [], f"printed more than once:\n{out}")
        return seen

    def test_watch_goes_on_across_a_restart(self):
        """A running job (failed by the restart: `server restarted`) and a queued one (run by the
        new rdevd) are watched across SIGKILL and a restart on the same port: each watch prints
        the later states, each state once, and exits as for the final state."""
        ru, _ = self.submit(self.delay_spec(60_000_000, name="ru"))
        self.wait_for(ru, lambda s: s.state == RUNNING and s.steps_done == 1, "running")
        qs = self.sq_spec(64 * 1024, 31, name="q")  # slow enough to be seen fetching and running
        qs["inputs"][0]["url"] = self.http.url(f"/slow/1500/data/{64 * 1024}?seed=31")
        qs["steps"].append({"launch": "delay_us", "blocks": 1, "args": [{"u32": 500_000}], "name": "wait"})
        q, _ = self.submit(qs)
        self.assert_state(self.get(q), QUEUED)
        w_ru = self.cli_bg("job", "watch", ru)
        w_q = self.cli_bg("job", "watch", q)
        t0 = time.monotonic()
        time.sleep(1)  # both watches have printed the state they started in
        self.assertIsNone(w_ru.poll())
        self.assertIsNone(w_q.poll())
        self.wait_record(ru, RUNNING)
        self.wait_record(q, QUEUED)
        self.restart_same_port(2)  # long enough for several reconnect attempts

        out, err = w_ru.communicate(timeout=60)
        self.assertEqual(w_ru.returncode, 1, out + err + self.ctx())
        seen = self.assert_no_repeats(out)
        self.assertEqual(seen[0], "state running", out)
        self.assertEqual(seen[-1], f"state failed at job: {UNAVAILABLE} UNAVAILABLE: server restarted", out)
        self.assertEqual(err, "")

        out, err = w_q.communicate(timeout=60)
        self.assertEqual(w_q.returncode, 0, out + err + self.ctx())
        seen = self.assert_no_repeats(out)
        states = [e for e in seen if e.startswith("state ")]
        self.assertEqual(states[0], "state queued", out)
        self.assertEqual(states[-1], "state succeeded", out)
        # the states it ran through after the restart, in order (the watch may come back late
        # for the first of them: it fetches for 1.5 s, then runs for 0.5 s)
        order = ["state " + n for n in ("queued", "fetching", "running", "delivering", "succeeded")]
        self.assertEqual(states, sorted(states, key=order.index), out)
        self.assertGreaterEqual(len(states), 3, out)
        self.assertIn(f"fetching {64 * 1024}/{64 * 1024} bytes", seen, out)
        self.assertIn("steps 2/2", seen, out)
        self.assertEqual(err, "")
        self.assertLess(time.monotonic() - t0, 30)
        self.assert_state(self.get(q), SUCCEEDED)
        self.assert_state(self.get(ru), FAILED, code=UNAVAILABLE, message="server restarted")
        self.assertEqual(self.fetch_cli(q, "r"), squared(self.http.data(64 * 1024, 31)))

    def test_watch_goes_on_across_a_drain(self):
        """SIGTERM: rdevd drains (the running job is stopped, 900001; the queued one stays queued
        on disk) and ends the watches; a new rdevd on the same port runs the queued job, and its
        watch follows it to the end."""
        ru, _ = self.submit(self.delay_spec(60_000_000, name="ru"))
        self.wait_for(ru, lambda s: s.state == RUNNING and s.steps_done == 1, "running")
        q, _ = self.submit(self.delay_spec(300_000, name="q"))
        self.assert_state(self.get(q), QUEUED)
        w_ru = self.cli_bg("job", "watch", ru)
        w_q = self.cli_bg("job", "watch", q)
        time.sleep(1)
        addr = self.srv.addr
        self.assertEqual(self.srv.stop(), 0, "rdevd's exit status after SIGTERM")
        out, err = w_ru.communicate(timeout=30)  # final before rdevd went: no reconnecting
        self.assertEqual(w_ru.returncode, 1, out + err)
        self.assertRegex(events(out)[-1], r"^state failed at job: 900001 ", out)
        self.assertIsNone(w_q.poll(), "the queued job's watch ended with its server")
        self.srv = self.start("--listen", addr)
        out, err = w_q.communicate(timeout=60)
        self.assertEqual(w_q.returncode, 0, out + err + self.ctx())
        states = [e for e in self.assert_no_repeats(out) if e.startswith("state ")]
        self.assertEqual((states[0], states[-1]), ("state queued", "state succeeded"), out)
        self.assertEqual(err, "")

    def test_watch_gives_up_when_the_server_stays_away(self):
        """No rdevd comes back: the watch ends within its bound with 900002 UNAVAILABLE, saying
        so; with --reconnect 0 it ends at the loss."""
        ru, _ = self.submit(self.delay_spec(60_000_000, name="ru"))
        self.wait_for(ru, lambda s: s.state == RUNNING and s.steps_done == 1, "running")
        bounded = self.cli_bg("job", "watch", ru, "--reconnect", "3")
        at_once = self.cli_bg("job", "watch", "--reconnect", "0", ru)
        time.sleep(1)  # both have printed the running state
        self.assertIsNone(bounded.poll())
        self.assertIsNone(at_once.poll())
        t0 = time.monotonic()
        self.srv.kill()

        out, err = at_once.communicate(timeout=30)
        took = time.monotonic() - t0
        self.assertEqual(at_once.returncode, 2, out + err)
        self.assertEqual(events(out), ["state running", "steps 1/2"], out)
        self.assertIn(f"({UNAVAILABLE} UNAVAILABLE)", err)
        self.assertLess(took, 2.5, f"--reconnect 0 took {took:.1f} s to give up")

        out, err = bounded.communicate(timeout=30)
        took = time.monotonic() - t0
        self.assertEqual(bounded.returncode, 2, out + err)
        self.assertEqual(events(out), ["state running", "steps 1/2"], out)
        self.assertIn(f"({UNAVAILABLE} UNAVAILABLE)", err)
        self.assertIn("no rdevd answered within 3 s", err)
        self.assertGreaterEqual(took, 3, f"gave up after {took:.1f} s, before its 3 s")
        self.assertLess(took, 3 + 5, f"gave up after {took:.1f} s with a 3 s bound")

    def test_bad_reconnect_argument(self):
        for bad in (["--reconnect"], ["--reconnect", "-1"], ["--reconnect", "x"], ["--reconnect", "1e9"]):
            r = self.cli("job", "watch", "0123456789abcdef", *bad)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn("rdev: job watch", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
