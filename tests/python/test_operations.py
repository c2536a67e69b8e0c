#!/usr/bin/python3
"""tests/python/test_operations.py — rdevd as an operator runs it.

PrometheusTest: a real Prometheus (Debian's /usr/bin/prometheus; skipped only
when it is missing) scrapes rdevd's --metrics-listen every second; two tenants
move data of known sizes with `rdev roundtrip`; Prometheus's HTTP API
(/api/v1/query) must come to report exactly those bytes and requests per
tenant. The same rdevd logs with --log-format json: every stderr line must be
one JSON object, the audit line of a wrong token included.

LogfmtTest: --log-format logfmt lines are key=value pairs, values with spaces
or quotes quoted.

JobMetricsTest: a detached job's state shows in rdev_jobs, and its session's
requests count to its tenant.

usage: test_operations.py RDEVD_BINARY RDEV_CLI_BINARY [unittest args]
"""
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

RDEVD, RDEV_CLI = sys.argv[1], sys.argv[2]
del sys.argv[1:3]
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


def token_pair():
    t = secrets.token_urlsafe(32)
    return t, "sha256:" + hashlib.sha256(t.encode()).hexdigest()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rdevd:
    """rdevd with two tenants (alpha, beta), metrics on a port it picks, stderr to a file."""

    def __init__(self, tmp, log_format, *extra):
        self.tokens = {}
        lines = []
        for name in ("alpha", "beta"):
            t, h = token_pair()
            self.tokens[name] = t
            lines += [f"[tenant {name}]", f"token = {h}"]
        tenants = os.path.join(tmp, "tenants")
        with open(tenants, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.err_path = os.path.join(tmp, f"rdevd-{log_format}.err")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(
            [RDEVD, "--listen", "127.0.0.1:0", "--tenants", tenants, "--metrics-listen", "127.0.0.1:0",
             "--log-format", log_format, "--sim-mem", "64M", "--drain-ms", "2000", *extra],
            stdout=subprocess.PIPE, stderr=self.err, text=True)
        first = self.proc.stdout.readline()
        m = re.match(r"rdevd listening on (\S+)", first)
        assert m, f"rdevd's first line: {first!r}"
        self.target = m.group(1)
        second = self.proc.stdout.readline()
        m = re.match(r"rdevd metrics on port (\d+)", second)
        assert m, f"rdevd's second line: {second!r}"
        self.metrics_port = int(m.group(1))

    def rdev(self, tenant, *args):
        env = dict(os.environ, RDEV_TARGET=self.target)
        env.pop("RDEV_CA", None)
        env["RDEV_TOKEN"] = self.tokens.get(tenant, tenant)
        return subprocess.run([RDEV_CLI, *args], env=env, capture_output=True, text=True, timeout=60)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=30)
        self.proc.stdout.close()
        self.err.close()
        with open(self.err_path) as f:
            return rc, f.read()


# Method names a client chooses, which rdevd logs ("unknown method M"): quotes,
# backslashes, '=', a tab and a control character, and UTF-8.
ODD_METHODS = ['/a"b\\c/d=e f', '/x\tq/\x01y', '/caf\u00e9/z']


def call_odd_methods(target):
    import grpc
    with grpc.insecure_channel(target) as ch:
        for m in ODD_METHODS:
            try:
                ch.unary_unary(m)(b"", timeout=5)
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.UNIMPLEMENTED, (m, e)


def roundtrip(srv, tmp, tenant, size):
    path = os.path.join(tmp, f"{tenant}-{size}.bin")
    with open(path, "wb") as f:
        f.write(os.urandom(size))
    r = srv.rdev(tenant, "roundtrip", path)
    assert r.returncode == 0 and "OK" in r.stdout, f"rdev roundtrip as {tenant}: {r.stdout} {r.stderr}"


class PrometheusTest(unittest.TestCase):
    @unittest.skipUnless(os.access(PROMETHEUS, os.X_OK), "no prometheus binary (Debian package prometheus)")
    def test_prometheus_sees_what_the_tenants_moved(self):
        tmp = tempfile.mkdtemp(prefix="rdev-prom-")
        self.addCleanup(shutil.rmtree, tmp, True)
        srv = Rdevd(tmp, "json")
        prom = None
        try:
            web = free_port()
            cfg = os.path.join(tmp, "prometheus.yml")
            with open(cfg, "w") as f:
                f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                        "scrape_configs:\n  - job_name: rdevd\n    static_configs:\n"
                        f"      - targets: ['127.0.0.1:{srv.metrics_port}']\n")
            prom = subprocess.Popen(
                [PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={os.path.join(tmp, 'data')}",
                 f"--web.listen-address=127.0.0.1:{web}", "--log.level=warn"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

            call_odd_methods(srv.target)
            # a wrong token first (its refused calls are counted before the workload's bytes)
            bad = srv.rdev("not-a-token", "info")
            self.assertNotEqual(bad.returncode, 0, "a wrong token was let in")
            # the workload: alpha two roundtrips, beta one; each moves its size each way
            moved = {"alpha": 300000 + 70000, "beta": 12345}
            roundtrip(srv, tmp, "alpha", 300000)
            roundtrip(srv, tmp, "alpha", 70000)
            roundtrip(srv, tmp, "beta", 12345)

            def query(q):
                url = f"http://127.0.0.1:{web}/api/v1/query?" + urllib.parse.urlencode({"query": q})
                with urllib.request.urlopen(url, timeout=5) as r:
                    body = json.load(r)
                self.assertEqual(body["status"], "success", body)
                return {tuple(sorted(x["metric"].items())): float(x["value"][1]) for x in body["data"]["result"]}

            want = {}
            for t, n in moved.items():
                for d in ("h2d", "d2h"):
                    want[f'sum(rdev_copy_bytes_total{{tenant="{t}",direction="{d}"}})'] = n
                want[f'sum(rdev_copy_bytes_total{{tenant="{t}",direction="d2d"}})'] = 0
            want['sum(rdev_requests_total{tenant="alpha",kind="malloc"})'] = 2
            want['sum(rdev_requests_total{tenant="alpha",kind="write"})'] = 2
            want['sum(rdev_requests_total{tenant="alpha",kind="read"})'] = 2
            want['sum(rdev_requests_total{tenant="beta",kind="malloc"})'] = 1
            want['sum(rdev_requests_total{tenant="beta",kind="write"})'] = 1
            want['sum(rdev_requests_total{tenant="beta",kind="read"})'] = 1
            got = {}
            deadline = time.monotonic() + 25
            while True:
                try:
                    got = {}
                    for q in want:
                        v = query(q)
                        got[q] = sum(v.values()) if v else None
                except OSError:
                    got = {}  # Prometheus is still starting
                if got == want:
                    break
                self.assertLess(time.monotonic(), deadline,
                                f"Prometheus never saw what was moved: got {got}, want {want}")
                time.sleep(0.25)
            # every refused call of the wrong token's (checked against the audit lines below)
            auth_failures = sum(query('rdev_auth_failures_total{reason="unknown_token"}').values())
            self.assertGreaterEqual(auth_failures, 1)
            # the process's own series came through too
            self.assertTrue(query("process_resident_memory_bytes{job='rdevd'}"), "no process_* series")
            up = query("up{job='rdevd'}")
            self.assertEqual(list(up.values()), [1.0])
        finally:
            if prom:
                prom.terminate()
                try:
                    prom.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    prom.kill()
                    prom.wait()
            rc, err = srv.stop()
        self.assertEqual(rc, 0, err)
        lines = err.splitlines()
        self.assertTrue(lines, "rdevd logged nothing")
        objs = []
        for line in lines:
            try:
                obj = json.loads(line)
            except ValueError as e:
                self.fail(f"not a JSON line ({e}): {line!r}")
            self.assertIsInstance(obj, dict, line)
            for k in ("time", "level", "msg"):
                self.assertIn(k, obj, line)
            objs.append(obj)
        audits = [o for o in objs if o.get("audit") == "authentication failed"]
        self.assertEqual(len(audits), auth_failures, err)
        self.assertEqual(audits[0]["tenant"], "-")
        self.assertEqual(audits[0]["level"], "warn")
        self.assertEqual(audits[0]["msg"], "reason=unknown token")
        self.assertTrue(any(o.get("audit") == "session opened" and o.get("tenant") == "beta" for o in objs), err)
        msgs = [o["msg"] for o in objs]
        for m in ODD_METHODS:
            self.assertIn("unknown method " + m, msgs)


# key=value, the value bare (no space, quote or '=') or quoted with \" and \\ escaped
LOGFMT_PAIR = r'[a-z]+=(?:[^\s"=]+|"(?:[^"\\]|\\.)*")'


class LogfmtTest(unittest.TestCase):
    def test_logfmt_lines(self):
        tmp = tempfile.mkdtemp(prefix="rdev-logfmt-")
        self.addCleanup(shutil.rmtree, tmp, True)
        srv = Rdevd(tmp, "logfmt")
        bad = srv.rdev("not-a-token", "info")
        self.assertNotEqual(bad.returncode, 0)
        roundtrip(srv, tmp, "alpha", 1000)
        call_odd_methods(srv.target)
        rc, err = srv.stop()
        self.assertEqual(rc, 0, err)
        for line in err.splitlines():
            self.assertRegex(line, rf"^{LOGFMT_PAIR}(?: {LOGFMT_PAIR})*$")
            self.assertRegex(line, r"^time=\S+ level=(error|warn|info|debug) ")
        self.assertRegex(err, r'(?m)^time=\S+ level=warn audit="authentication failed" tenant=- '
                              r'peer=ipv4:127\.0\.0\.1:\d+ msg="reason=unknown token"$')
        self.assertRegex(err, r'(?m) audit="session opened" tenant=alpha ')
        self.assertIn(r'msg="unknown method /a\"b\\c/d=e f"', err)
        self.assertIn(r'msg="unknown method /x\tq/\x01y"', err)
        self.assertIn('msg="unknown method /caf\u00e9/z"', err)

class JobMetricsTest(unittest.TestCase):
    def test_jobs_by_state(self):
        """A detached job's state shows in rdev_jobs, and its session's work counts to its tenant."""
        tmp = tempfile.mkdtemp(prefix="rdev-jobmetrics-")
        self.addCleanup(shutil.rmtree, tmp, True)
        srv = Rdevd(tmp, "logfmt", "--job-dir", os.path.join(tmp, "jobs"))
        try:
            spec = os.path.join(tmp, "job.json")
            with open(spec, "w") as f:
                json.dump({"name": "m", "buffers": [{"name": "b", "size": 4096}],
                           "steps": [{"memset": {"dst": "b", "value": 7, "count": 4096}}],
                           "outputs": [{"name": "k", "buffer": "b"}]}, f)
            r = srv.rdev("beta", "job", "submit", spec, "--wait")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            url = f"http://127.0.0.1:{srv.metrics_port}/metrics"
            with urllib.request.urlopen(url, timeout=5) as resp:
                self.assertIn("text/plain; version=0.0.4", resp.headers["Content-Type"])
                text = resp.read().decode()
            self.assertIn('\nrdev_jobs{tenant="beta",state="succeeded"} 1\n', text)
            self.assertIn('\nrdev_jobs{tenant="beta",state="queued"} 0\n', text)
            self.assertNotIn('rdev_jobs{tenant="alpha"', text)
            self.assertIn('\nrdev_requests_total{tenant="beta",kind="memset"} 1\n', text)
        finally:
            rc, err = srv.stop()
        self.assertEqual(rc, 0, err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
