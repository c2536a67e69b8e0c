#!/usr/bin/python3
"""tests/jobs/test_jobs.py — detached jobs (rdev job, job.proto) end to end:
a real rdevd (--job-dir in a temporary directory, a tenants file) and a real
HTTP server (httpd.py, started by each test), driven through the `rdev job`
CLI (RDEV_TARGET, RDEV_TOKEN) and over the wire with Python stubs that
protoc generates from proto/ (tests/python/stubs.py).

  jobs_basic    a 256 MiB square verified byte for byte; signed webhooks in
                order; cancel during a fetch and during a step; a checksum
                mismatch; a submitter that goes away; fetch, list, watch
                (CLI and wire); transfers (retries, Range resume, redirects,
                HTTP errors, max_bytes, proxies ignored, timeout); the allow
                list at submit, on a redirect and at connect time
  jobs_restart  SIGKILL with jobs in every state, then a restart on the same
                job dir (a damaged one too); SIGTERM drains; the tenants' job
                limits (queued, running FIFO, fetched bytes, disk); expiry;
                a reload that removes a tenant
  jobs_hostile  tenant isolation over the wire; the list and finished-job
                caps; a slow receiver of another tenant; streams dropped
                mid-way; the watcher cap; garbage, truncated and out-of-
                contract SubmitJob requests; an unknown kernel; webhooks
                retried; no --job-dir; open mode (--job-allow)

Every rdevd a test stops with SIGTERM must exit 0 (in the ASan build: no
leak, no error). Every process a test starts is killed when it ends.

usage: test_jobs.py RDEVD RDEV PROTO_DIR [--part basic|restart|hostile] [unittest args]
"""
import atexit
import hashlib
import hmac
import json
import os
import re
import resource
import select
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

RDEVD, RDEV, PROTO_DIR = (os.path.abspath(a) for a in sys.argv[1:4])
del sys.argv[1:4]
PART = None
if len(sys.argv) > 2 and sys.argv[1] == "--part":
    PART = sys.argv[2]
    del sys.argv[1:3]

HERE = os.path.dirname(os.path.abspath(__file__))
HTTPD = os.path.join(HERE, "httpd.py")
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import grpc  # noqa: E402
import numpy as np  # noqa: E402

import stubs  # noqa: E402

GEN, pb, pbg, _health = stubs.generate(PROTO_DIR)
atexit.register(shutil.rmtree, GEN, True)
from rdev.v1 import job_pb2 as jpb  # noqa: E402

SC = grpc.StatusCode
KiB, MiB = 1 << 10, 1 << 20
U64 = 2**64 - 1

# rdev status codes (proto/include/rdev/status.h)
CANCELLED = 900001
UNAVAILABLE = 900002
PERMISSION_DENIED = 900004
QUOTA_EXCEEDED = 900005
UNKNOWN_KERNEL = 900007
CHECKSUM = 900010
INTERNAL_ERROR = 500000

S = jpb.JobState
FINAL = (S.Value("SUCCEEDED"), S.Value("FAILED"), S.Value("CANCELLED"))
QUEUED, FETCHING, RUNNING, DELIVERING = (S.Value(n) for n in ("QUEUED", "FETCHING", "RUNNING", "DELIVERING"))
SUCCEEDED, FAILED, CANCELLED_ST = FINAL


def sname(state):
    return S.Name(state)


# One token per tenant name for the whole run.
TOKENS = {}


def token(tenant):
    if tenant not in TOKENS:
        TOKENS[tenant] = "tok-" + tenant + "-" + os.urandom(16).hex()
    return TOKENS[tenant]


def bearer(tenant):
    return [("authorization", "Bearer " + token(tenant))]


def tenants_text(spec):
    out = []
    for name, settings in spec.items():
        out.append(f"[tenant {name}]")
        out.append("token = sha256:" + hashlib.sha256(token(name).encode()).hexdigest())
        for k, v in settings.items():
            for one in v if isinstance(v, (list, tuple)) else [v]:
                out.append(f"{k} = {one}")
        out.append("")
    return "\n".join(out)


def read_line(proc, timeout):
    """The first line of proc's stdout within timeout seconds, else ''."""
    fd = proc.stdout.fileno()
    buf = b""
    deadline = time.monotonic() + timeout
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return ""
        chunk = os.read(fd, 1)
        if not chunk:
            break
        buf += chunk
    return buf.decode(errors="replace")


def squared(data):
    """numpy's float32 square of data (little-endian), as bytes."""
    a = np.frombuffer(data, dtype="<f4")
    with np.errstate(all="ignore"):
        return (a * a).astype("<f4").tobytes()


# ---- the processes ------------------------------------------------------------


class Httpd:
    """tests/jobs/httpd.py on 127.0.0.1, a free port; dies when its stdin closes."""

    def __init__(self, tmp):
        self.errpath = os.path.join(tmp, "httpd.stderr")
        with open(self.errpath, "wb") as err:
            self.proc = subprocess.Popen([PYTHON, HTTPD, "--port", "0"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err)
        line = read_line(self.proc, 30)
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError(f"httpd did not start: {line!r}")
        self.port = int(line)
        self.base = f"http://127.0.0.1:{self.port}"

    def url(self, path):
        return self.base + path

    def get(self, path, headers=None):
        """(HTTP status, body bytes)."""
        req = urllib.request.Request(self.url(path), headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def json(self, path):
        code, body = self.get(path)
        assert code == 200, (path, code, body)
        return json.loads(body)

    def data(self, n, seed):
        code, body = self.get(f"/data/{n}?seed={seed}")
        assert code == 200 and len(body) == n, (code, len(body))
        return body

    def log(self):
        return self.json("/log")

    def count(self):
        return self.json("/count")["requests"]

    def hooks(self, name):
        return self.json(f"/hooks/{name}")

    def uploaded(self, name):
        """{"sha256", "length", "method"} of what was uploaded to name, or None."""
        code, body = self.get(f"/uploaded/{name}/sha256")
        return json.loads(body) if code == 200 else None

    def requested(self, fragment):
        """The logged requests whose path contains fragment."""
        return [r for r in self.log() if fragment in r["path"]]

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (subprocess.TimeoutExpired, OSError):
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            if f and not f.closed:
                f.close()


class Rdevd:
    """An rdevd of a test: its address from its first stdout line, stderr to a file."""

    def __init__(self, args, errpath, env=None, preexec=None):
        self.args = args
        self.errpath = errpath
        with open(errpath, "ab") as err:
            self.proc = subprocess.Popen([RDEVD, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=err, env=dict(os.environ, **(env or {})), preexec_fn=preexec)
        line = read_line(self.proc, 60)
        if not line.startswith("rdevd listening on "):
            self.kill()
            raise RuntimeError(f"rdevd did not start: {line!r}\n{self.log()[-3000:]}")
        self.addr = line.split()[-1]
        self.killed = False
        self.channel = grpc.insecure_channel(self.addr, options=[("grpc.max_receive_message_length", 8 << 20)])
        self.stub = pbg.DeviceStub(self.channel)
        self.rc = None

    def log(self):
        with open(self.errpath, errors="replace") as f:
            return f.read()

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        """SIGKILL: nothing gets saved on the way out."""
        self.killed = True
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._close()

    def stop(self, timeout=60):
        """SIGTERM; rdevd's exit status (None when it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.rc = None
        self._close()
        return self.rc

    def _close(self):
        if getattr(self, "channel", None):
            self.channel.close()
            self.channel = None
        if self.proc.stdout and not self.proc.stdout.closed:
            self.proc.stdout.close()


# ---- the test base ------------------------------------------------------------


class JobTest(unittest.TestCase):
    """Each test: its own httpd, tenants file, job dir and rdevd."""

    RDEVD_ARGS = ()
    DRAIN_MS = 1000
    USE_TENANTS = True  # --tenants FILE (else open mode)
    USE_JOBDIR = True  # --job-dir DIR (else job calls are refused)

    def tenants(self):
        """name -> settings (lists repeat a key); self.http is up."""
        allow = self.http.url("/")
        return {
            "alice": {"allow": allow, "max_running_jobs": 8},
            "bob": {"allow": allow, "max_running_jobs": 8},
        }

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rdev-jobs-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.bg = []  # CLI processes started in the background
        self.servers = []
        self.http = Httpd(self.tmp)
        self.addCleanup(self.http.stop)
        self.addCleanup(self._stop_all)
        self.jobdir = os.path.join(self.tmp, "jobs")
        self.tenants_path = os.path.join(self.tmp, "tenants.conf")
        with open(self.tenants_path, "w") as f:
            f.write(tenants_text(self.tenants()))
        self.srv = self.start()

    def start(self, *extra, drain_ms=None, env=None, preexec=None):
        """An rdevd on the test's job dir and tenants (extra args last, so they override)."""
        args = ["--listen", "127.0.0.1:0", "--log-level", "info",
                "--drain-ms", str(drain_ms if drain_ms is not None else self.DRAIN_MS)]
        if self.USE_TENANTS:
            args += ["--tenants", self.tenants_path]
        if self.USE_JOBDIR:
            args += ["--job-dir", self.jobdir]
        args += [*self.RDEVD_ARGS, *extra]
        srv = Rdevd(args, os.path.join(self.tmp, "rdevd.stderr"), env, preexec)
        self.servers.append(srv)
        return srv

    def restart(self, *extra, kill=True, drain_ms=None):
        """SIGKILL (or SIGTERM) the current rdevd and start another on the same job dir."""
        if kill:
            self.srv.kill()
        else:
            self.assertEqual(self.srv.stop(), 0, "rdevd's exit status after SIGTERM")
        self.srv = self.start(*extra, drain_ms=drain_ms)
        return self.srv

    def _stop_all(self):
        for p in self.bg:
            if p.poll() is None:
                p.kill()
            try:
                p.communicate(timeout=10)
            except (subprocess.TimeoutExpired, ValueError):
                pass
        bad = []
        for srv in self.servers:
            if srv.killed or srv.rc is not None:
                continue  # killed on purpose, or stopped (and checked) by the test
            if not srv.alive():
                bad.append(f"died on its own with status {srv.proc.returncode}")
                srv._close()
            elif srv.stop() != 0:
                bad.append(f"exited {srv.rc} after SIGTERM")
        if bad:
            self.fail(f"rdevd {bad}; stderr tail:\n{self.srv.log()[-6000:]}")

    def ctx(self):
        return "\nrdevd stderr tail:\n" + self.srv.log()[-3000:]

    # ---- the CLI ----

    def env(self, tenant, srv=None):
        return dict(os.environ, RDEV_TARGET=(srv or self.srv).addr, RDEV_TOKEN=token(tenant))

    def cli(self, *args, tenant="alice", timeout=90, srv=None):
        return subprocess.run([RDEV, *args], env=self.env(tenant, srv), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)

    def cli_bg(self, *args, tenant="alice", srv=None):
        p = subprocess.Popen([RDEV, *args], env=self.env(tenant, srv), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.bg.append(p)
        return p

    def spec_file(self, spec):
        fd, path = tempfile.mkstemp(dir=self.tmp, suffix=".yaml")
        with os.fdopen(fd, "w") as f:
            json.dump(spec, f)  # JSON is YAML
        return path

    def submit(self, spec, tenant="alice"):
        """`rdev job submit`: (id, secret)."""
        r = self.cli("job", "submit", self.spec_file(spec), tenant=tenant)
        self.assertEqual(r.returncode, 0, f"submit: {r.stdout}{r.stderr}{self.ctx()}")
        lines = r.stdout.splitlines()
        self.assertRegex(lines[0], r"^[0-9a-f]{16}$")
        m = re.fullmatch(r"secret ([0-9a-f]{64})", lines[1])
        self.assertTrue(m, r.stdout)
        return lines[0], m.group(1)

    def fetch_cli(self, jid, output, tenant="alice"):
        path = os.path.join(self.tmp, f"fetch-{jid}-{output}")
        r = self.cli("job", "fetch", jid, output, path, tenant=tenant)
        self.assertEqual(r.returncode, 0, f"fetch: {r.stdout}{r.stderr}")
        with open(path, "rb") as f:
            return f.read()

    # ---- the wire ----

    def get(self, jid, tenant="alice", srv=None):
        return (srv or self.srv).stub.GetJob(jpb.JobRequest(id=jid), metadata=bearer(tenant), timeout=20)

    def submit_wire(self, spec, tenant="alice", srv=None):
        return (srv or self.srv).stub.SubmitJob(jpb.SubmitJobRequest(spec=spec), metadata=bearer(tenant),
                                                timeout=20)

    def fetch_wire(self, jid, output, tenant="alice", srv=None):
        chunks = list((srv or self.srv).stub.FetchOutput(jpb.FetchOutputRequest(id=jid, output=output),
                                                         metadata=bearer(tenant), timeout=60))
        return b"".join(c.data for c in chunks)

    def list_wire(self, tenant="alice", srv=None):
        return list((srv or self.srv).stub.ListJobs(jpb.ListJobsRequest(), metadata=bearer(tenant),
                                                    timeout=20).jobs)

    def wait_for(self, jid, pred, what, timeout=60, tenant="alice", srv=None):
        """Polls GetJob until pred(status); returns that status."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.get(jid, tenant, srv)
            if pred(st):
                return st
            if srv is None and not self.srv.alive():
                self.fail(f"rdevd died waiting for {jid} to be {what}{self.ctx()}")
            if time.monotonic() > deadline:
                self.fail(f"job {jid} not {what} within {timeout} s: {st}{self.ctx()}")
            time.sleep(0.02)

    def wait_state(self, jid, state, timeout=60, **kw):
        return self.wait_for(jid, lambda st: st.state == state or (st.state in FINAL and state not in FINAL),
                             sname(state), timeout, **kw)

    def wait_final(self, jid, timeout=120, **kw):
        return self.wait_for(jid, lambda st: st.state in FINAL, "final", timeout, **kw)

    def assert_state(self, st, state, failed_at=None, code=None, message=None):
        self.assertEqual(sname(st.state), sname(state), f"{st}{self.ctx()}")
        if failed_at is not None:
            self.assertEqual(st.failed_at, failed_at, str(st))
        if code is not None:
            self.assertEqual(st.code, code, str(st))
        if message is not None:
            self.assertIn(message, st.message, str(st))

    def assert_rpc(self, fn, code, details=None):
        with self.assertRaises(grpc.RpcError) as e:
            fn()
        self.assertEqual(e.exception.code(), code, e.exception.details())
        if details is not None:
            self.assertIn(details, e.exception.details() or "")
        return e.exception

    def record(self, jid):
        """The job's record in the job dir, or None."""
        try:
            with open(os.path.join(self.jobdir, jid + ".job"), "rb") as f:
                return jpb.JobRecord.FromString(f.read())
        except (OSError, Exception):  # a file being replaced: try again
            return None

    def wait_record(self, jid, state, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            rec = self.record(jid)
            if rec is not None and rec.status.state == state:
                return rec
            if time.monotonic() > deadline:
                self.fail(f"record of {jid} not {sname(state)} on disk: {rec}")
            time.sleep(0.02)

    # ---- specs ----

    def sq_spec(self, n, seed, name="sq", kept="r", url=None, callback=None, sha=None, **more):
        """Fetches n bytes of seed's stream into x, squares them into y; y kept as `kept`
        (and PUT to url when given)."""
        spec = {
            "name": name,
            "buffers": [{"name": "x", "size": n}, {"name": "y", "size": n}],
            "inputs": [dict({"buffer": "x", "url": self.http.url(f"/data/{n}?seed={seed}")},
                            **({"sha256": sha} if sha else {}))],
            "steps": [{"launch": "square_f32", "blocks": 4, "args": ["x", "y", {"u32": n // 4}], "name": "sq"}],
            "outputs": [],
        }
        if kept:
            spec["outputs"].append({"name": kept, "buffer": "y"})
        if url:
            spec["outputs"].append({"name": "put", "buffer": "y", "url": url})
        if callback:
            spec["callback_url"] = callback
        spec.update(more)
        return spec

    def delay_spec(self, us, name="delay", kept=True, **more):
        """A step of delay_us (us microseconds), then a 4 KiB kept output."""
        spec = {
            "name": name,
            "buffers": [{"name": "b", "size": 4096}],
            "steps": [{"memset": {"dst": "b", "value": 7, "count": 4096}},
                      {"launch": "delay_us", "blocks": 1, "args": [{"u32": us}], "name": "wait"}],
            "outputs": [{"name": "k", "buffer": "b"}] if kept else [],
        }
        spec.update(more)
        return spec


def wire_spec(http, n=4096, seed=1, **more):
    """A small JobSpec message (for the wire tests): fetch, inc, kept output."""
    spec = jpb.JobSpec(
        name="wire",
        buffers=[jpb.JobBuffer(name="x", size=n)],
        inputs=[jpb.JobInput(buffer="x", url=http.url(f"/data/{n}?seed={seed}"))],
        steps=[jpb.JobStep(name="inc", launch=jpb.JobLaunch(kernel="inc_u32", blocks=n // 4,
                                                            args=[jpb.JobArg(ptr=jpb.JobRef(buffer="x"))]))],
        outputs=[jpb.JobOutput(name="out", buffer="x")])
    for k, v in more.items():
        setattr(spec, k, v)
    return spec


def inc_u32(data):
    a = np.frombuffer(data, dtype="<u4")
    return (a + np.uint32(1)).astype("<u4").tobytes()


# =================================================================================
# jobs_basic
# =================================================================================


class BasicJobs(JobTest):
    def test_square_256mib_fetched_squared_and_put(self):
        """256 MiB fetched (sha256 checked), squared on the device, PUT back: byte for byte numpy's."""
        n, seed = 256 * MiB, 7
        sha = self.http.json(f"/datasha/{n}?seed={seed}")["sha256"]
        spec = self.sq_spec(n, seed, name="square-256M", kept=None, url=self.http.url("/upload/sq256"), sha=sha)
        spec["steps"][0]["blocks"] = 64
        t0 = time.monotonic()
        r = self.cli("job", "submit", self.spec_file(spec), "--wait", timeout=280)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr + self.ctx())
        self.assertRegex(r.stdout.splitlines()[-1], r" state succeeded$")
        took = time.monotonic() - t0
        jid = r.stdout.splitlines()[0]
        st = self.get(jid)
        self.assert_state(st, SUCCEEDED)
        self.assertEqual((st.fetched_bytes, st.fetch_total, st.steps_done, st.steps_total), (n, n, 1, 1))
        self.assertEqual((st.delivered_bytes, st.deliver_total), (n, n))
        # expected: the /data stream repeats its 1 MiB block
        block = self.http.data(MiB, seed)
        sq = squared(block)
        want = hashlib.sha256()
        for _ in range(n // MiB):
            want.update(sq)
        up = self.http.uploaded("sq256")
        self.assertEqual(up, {"sha256": want.hexdigest(), "length": n, "method": "PUT"},
                         "the PUT body is not numpy's square of the input")
        for off in (0, 137 * MiB, n - MiB):  # a few MiB compared directly, for a readable failure
            code, body = self.http.get("/file/sq256", {"Range": f"bytes={off}-{off + MiB - 1}"})
            self.assertEqual(code, 206)
            self.assertEqual(body, sq, f"MiB at {off} differs")
        puts = [x for x in self.http.log() if x["method"] == "PUT"]
        self.assertEqual(len(puts), 1, puts)
        print(f"\n  256 MiB job: {took:.1f} s", file=sys.stderr)

    def test_webhooks_signed_and_in_order(self):
        """Every event: HMAC-SHA256(secret, "<ts>.<body>"), a fresh timestamp, states in order, seq rising."""
        spec = self.sq_spec(64 * KiB, 3, url=self.http.url("/upload/wh"), callback=self.http.url("/hook/wh"))
        jid, secret = self.submit(spec)
        self.wait_final(jid)
        deadline = time.monotonic() + 30
        while len(self.http.hooks("wh")) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # any extra (wrong) event would arrive by now
        hooks = self.http.hooks("wh")
        now = time.time()
        events = []
        for h in hooks:
            body = bytes.fromhex(h["body_hex"])
            ts = h["timestamp"]
            self.assertRegex(ts or "", r"^\d+$", h)
            self.assertLess(abs(int(ts) - now), 300, f"timestamp {ts} is not within minutes of now")
            mac = hmac.new(secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
            self.assertEqual(h["signature"], "v1=" + mac, f"bad signature on {body!r}")
            wrong = hmac.new(secret.encode(), str(int(ts) + 1).encode() + b"." + body, hashlib.sha256).hexdigest()
            self.assertNotEqual(h["signature"], "v1=" + wrong)
            self.assertEqual(h["content_type"], "application/json")
            events.append(json.loads(body))
        self.assertEqual([e["state"] for e in events], ["queued", "fetching", "running", "delivering", "succeeded"],
                         events)
        seqs = [e["seq"] for e in events]
        self.assertEqual(seqs, sorted(set(seqs)), "seq must increase")
        self.assertTrue(all(e["id"] == jid and e["name"] == "sq" for e in events), events)
        self.assertEqual(events[-1]["delivered_bytes"], 2 * 64 * KiB)
        self.assertEqual(events[-1]["steps_done"], 1)
        # and each delivery is recorded in the job's status
        st = self.wait_for(jid, lambda s: len(s.hooks) == 5, "5 hooks recorded")
        self.assertEqual([sname(h.state) for h in st.hooks], ["QUEUED", "FETCHING", "RUNNING", "DELIVERING",
                                                              "SUCCEEDED"])
        for h in st.hooks:
            self.assertTrue(h.delivered, h)
            self.assertEqual((h.http_status, h.attempts), (200, 1), h)

    def cancel_case(self, spec, state, upload, pred=None):
        """Submits spec with --wait, waits for state (and pred), cancels: CANCELLED within
        seconds, the waiting CLI exits 1, nothing delivered."""
        p = self.cli_bg("job", "submit", self.spec_file(spec), "--wait")
        jid = read_line(p, 60).strip()
        self.assertRegex(jid, r"^[0-9a-f]{16}$")
        self.wait_for(jid, lambda st: st.state == state and (pred is None or pred(st)), sname(state))
        t0, wall0 = time.monotonic(), time.time()
        r = self.cli("job", "cancel", jid)
        took = time.monotonic() - t0
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), f"{jid} cancelled")
        self.assertLess(took, 5, "cancel was not prompt")
        out, err = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 1, out + err)
        self.assertRegex(out.splitlines()[-1], r" state cancelled$")
        st = self.get(jid)
        self.assert_state(st, CANCELLED_ST)
        self.assertLess(st.finished_ms - wall0 * 1000, 5000, "the job ended long after it was cancelled")
        self.assertEqual(st.delivered_bytes, 0)
        self.assertEqual(len(st.kept), 0)
        self.assertIsNone(self.http.uploaded(upload))
        self.assertEqual([x for x in self.http.log() if x["method"] in ("PUT", "POST")], [])
        self.assert_rpc(lambda: self.fetch_wire(jid, "r"), SC.NOT_FOUND)
        return st

    def test_cancel_during_fetch(self):
        spec = self.sq_spec(4 * MiB, 5, url=self.http.url("/upload/cf"))
        spec["inputs"][0]["url"] = self.http.url(f"/slow/200/data/{4 * MiB}?seed=5")
        st = self.cancel_case(spec, FETCHING, "cf", pred=lambda s: s.fetched_bytes > 0)
        self.assertEqual(st.steps_done, 0)
        self.assertLess(st.fetched_bytes, 4 * MiB)

    def test_cancel_during_step(self):
        spec = self.delay_spec(60_000_000)
        spec["outputs"] = [{"name": "r", "buffer": "b"}, {"name": "put", "buffer": "b",
                                                         "url": self.http.url("/upload/cs")}]
        st = self.cancel_case(spec, RUNNING, "cs", pred=lambda s: s.steps_done == 1)
        self.assertEqual(st.steps_done, 1)  # the memset; the delay never finished
        # the tenant's next job runs at once: the cancelled one holds nothing
        jid2, _ = self.submit(self.sq_spec(4096, 1))
        self.assert_state(self.wait_final(jid2, timeout=30), SUCCEEDED)

    def test_checksum_mismatch_fails_before_any_step(self):
        spec = self.sq_spec(64 * KiB, 9, sha="ab" * 32, url=self.http.url("/upload/ck"),
                            callback=self.http.url("/hook/ck"))
        r = self.cli("job", "submit", self.spec_file(spec), "--wait")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        last = r.stdout.splitlines()[-1]
        self.assertRegex(last, r" state failed at input x: 900010 \w+: ")
        jid = r.stdout.splitlines()[0]
        st = self.get(jid)
        self.assert_state(st, FAILED, failed_at="input x", code=CHECKSUM, message="sha256")
        self.assertEqual(st.fetched_bytes, 64 * KiB)  # all of it came, then the check
        self.assertEqual((st.steps_done, st.delivered_bytes, len(st.kept)), (0, 0, 0))
        self.assertIsNone(self.http.uploaded("ck"))
        deadline = time.monotonic() + 20
        while len(self.http.hooks("ck")) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        states = [json.loads(h["body"])["state"] for h in self.http.hooks("ck")]
        self.assertEqual(states, ["queued", "fetching", "failed"], "a step ran, or an event is missing")
        failed = json.loads(self.http.hooks("ck")[-1]["body"])
        self.assertEqual((failed["failed_at"], failed["code"]), ("input x", CHECKSUM))
        # the status command says so too
        r = self.cli("job", "status", jid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("state:      failed\n", r.stdout)
        self.assertIn("failed at:  input x\n", r.stdout)
        self.assertRegex(r.stdout, r"code:\s+900010 ")
        # the right sha256 passes
        spec["inputs"][0]["sha256"] = self.http.json(f"/datasha/{64 * KiB}?seed=9")["sha256"]
        spec["outputs"] = spec["outputs"][:1]
        del spec["callback_url"]
        jid, _ = self.submit(spec)
        self.assert_state(self.wait_final(jid), SUCCEEDED)
        self.assertEqual(self.fetch_cli(jid, "r"), squared(self.http.data(64 * KiB, 9)))

    def test_submitter_exits_job_runs_on(self):
        """`rdev job submit` without --wait returns at once; the job runs to the end; new
        processes see it (status, watch, fetch)."""
        n = MiB
        spec = self.sq_spec(n, 4)
        spec["inputs"][0]["url"] = self.http.url(f"/slow/100/data/{n}?seed=4")  # 16 pieces: ~1.6 s
        jid, _ = self.submit(spec)
        st = self.get(jid)
        self.assertNotIn(st.state, FINAL, "the job ended before its submitter had gone: no test")
        r = self.cli("job", "watch", jid)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout.splitlines()[-1], r"^\S+ state succeeded$")
        r = self.cli("job", "status", jid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"id:         {jid}\n", r.stdout)
        self.assertIn("state:      succeeded\n", r.stdout)
        self.assertIn(f"fetched:    {n} / {n} bytes\n", r.stdout)
        self.assertIn("steps:      1 / 1\n", r.stdout)
        self.assertRegex(r.stdout, rf"\n  r\s+1\.0 MiB \({n} bytes\)  until \d{{4}}-")
        self.assertEqual(self.fetch_cli(jid, "r"), squared(self.http.data(n, 4)))

    def test_submitter_killed_while_waiting(self):
        spec = self.sq_spec(MiB, 6)
        spec["inputs"][0]["url"] = self.http.url(f"/slow/100/data/{MiB}?seed=6")
        p = self.cli_bg("job", "submit", self.spec_file(spec), "--wait")
        jid = read_line(p, 60).strip()
        self.assertRegex(jid, r"^[0-9a-f]{16}$")
        p.kill()
        p.communicate(timeout=10)
        self.assertNotIn(self.get(jid).state, FINAL, "the job ended before its submitter was killed: no test")
        self.assert_state(self.wait_final(jid), SUCCEEDED)
        self.assertEqual(self.fetch_cli(jid, "r"), squared(self.http.data(MiB, 6)))

    def test_cli_fetch_list_watch(self):
        a, _ = self.submit(self.sq_spec(300 * KiB + 4, 21, name="first"))  # not a whole chunk
        b, _ = self.submit(self.sq_spec(4096, 22, name="second", sha="00" * 32))
        r = self.cli("job", "watch", b)  # stdout is a pipe: lines
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertNotIn("\033", r.stdout)
        lines = r.stdout.splitlines()
        for line in lines:
            self.assertRegex(line, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (state|fetching|steps|delivering|webhook) ")
        self.assertRegex(lines[-1], r" state failed at input x: 900010 ")
        self.assert_state(self.wait_final(a), SUCCEEDED)
        # a running one, watched from its start to its end
        c, _ = self.submit(self.delay_spec(1_500_000, name="third"))
        self.wait_state(c, RUNNING)
        r = self.cli("job", "watch", c)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("\033", r.stdout)
        lines = r.stdout.splitlines()
        self.assertRegex(lines[0], r" state running$")
        self.assertIn("steps 2/2", r.stdout)
        self.assertRegex(lines[-1], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ state succeeded$")
        # fetch: byte for byte, to a file and to stdout
        want = squared(self.http.data(300 * KiB + 4, 21))
        self.assertEqual(self.fetch_cli(a, "r"), want)
        out = subprocess.run([RDEV, "job", "fetch", a, "r", "-"], env=self.env("alice"), capture_output=True,
                             timeout=60, stdin=subprocess.DEVNULL)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, want)
        self.assertEqual(self.fetch_cli(c, "k"), bytes([7]) * 4096)
        # an unknown output: exit 2, no file left behind
        path = os.path.join(self.tmp, "nope")
        r = self.cli("job", "fetch", a, "nope", path)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertFalse(os.path.exists(path) or os.path.exists(path + ".tmp"))
        # list: newest first, ID STATE NAME
        r = self.cli("job", "list")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [line.split() for line in r.stdout.splitlines()]
        self.assertEqual([row[:3] for row in rows], [[c, "succeeded", "third"], [b, "failed", "second"],
                                                     [a, "succeeded", "first"]], r.stdout)
        self.assertIn("(900010", r.stdout)
        self.assertEqual(self.cli("job", "list", tenant="bob").stdout, "")
        # help prints the spec format
        r = self.cli("job", "help")
        self.assertEqual(r.returncode, 0)
        for word in ("buffers:", "inputs:", "steps:", "outputs:", "callback_url:", "submit SPEC [--wait]"):
            self.assertIn(word, r.stdout)
        # an unknown id: exit 2
        r = self.cli("job", "status", "0123456789abcdef")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)


    def test_watch_cancel_fetch_over_the_wire(self):
        h = self.http
        n = 192 * KiB  # inc_u32: a block per word, at most 65535
        spec = wire_spec(h, n=n, seed=8)
        spec.inputs[0].url = h.url(f"/slow/250/data/{n}?seed=8")  # 3 pieces, 250 ms apart: progress to see
        spec.steps.append(jpb.JobStep(launch=jpb.JobLaunch(kernel="delay_us", blocks=1, args=[jpb.JobArg(u32=300000)])))
        spec.outputs.append(jpb.JobOutput(name="empty", buffer="x", offset=n))  # 0 bytes
        spec.outputs.append(jpb.JobOutput(name="tail", buffer="x", offset=n - 10))
        rep = self.submit_wire(spec)
        self.assertRegex(rep.id, r"^[0-9a-f]{16}$")
        self.assertRegex(rep.secret, r"^[0-9a-f]{64}$")
        self.assertEqual((sname(rep.status.state), rep.status.steps_total, rep.status.deliver_total),
                         ("QUEUED", 2, n + 0 + 10))
        seen = list(self.srv.stub.WatchJob(jpb.JobRequest(id=rep.id), metadata=bearer("alice"), timeout=60))
        states = [st.state for st in seen]
        self.assertEqual(states, sorted(states), "states went backwards")
        self.assertEqual(sname(seen[-1].state), "SUCCEEDED", str(seen[-1]))
        self.assertTrue(all(st.state not in FINAL for st in seen[:-1]), "a status after the final one")
        fetched = [st.fetched_bytes for st in seen]
        self.assertEqual(fetched, sorted(fetched))
        self.assertTrue(any(0 < f < n for f in fetched), f"no progress while fetching: {fetched}")
        self.assertIn(RUNNING, states)
        # a final job: one status, then the end
        again = list(self.srv.stub.WatchJob(jpb.JobRequest(id=rep.id), metadata=bearer("alice"), timeout=20))
        self.assertEqual(len(again), 1)
        self.assertEqual(again[0], self.get(rep.id))
        # cancelling a final job changes nothing and answers at once
        st = self.srv.stub.CancelJob(jpb.JobRequest(id=rep.id), metadata=bearer("alice"), timeout=20)
        self.assertEqual(sname(st.state), "SUCCEEDED")
        self.assertEqual(self.get(rep.id), again[0])
        r = self.cli("job", "cancel", rep.id)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, f"{rep.id} succeeded"))
        want = inc_u32(h.data(n, 8))
        self.assertEqual(self.fetch_wire(rep.id, "out"), want)
        chunks = list(self.srv.stub.FetchOutput(jpb.FetchOutputRequest(id=rep.id, output="out"),
                                                metadata=bearer("alice"), timeout=20))
        self.assertTrue(all(c.total == n and len(c.data) <= MiB for c in chunks))
        self.assertEqual(self.fetch_wire(rep.id, "empty"), b"")
        self.assertEqual(self.fetch_cli(rep.id, "empty"), b"")
        self.assertEqual(self.fetch_wire(rep.id, "tail"), want[-10:])
        self.assertEqual(sorted((k.name, k.bytes) for k in self.get(rep.id).kept),
                         [("empty", 0), ("out", n), ("tail", 10)])


class BinaryJobs(JobTest):
    BINARY = (b"rdev-sim-binary 1\n"
              b"kernel DeviceWrite write_i32 entry=0x100\n  arg ptr devPtr reach=blocks*4 writes\n  arg i32 value\n")

    def put_binary(self, name, body):
        req = urllib.request.Request(self.http.url(f"/upload/{name}"), data=body, method="PUT")
        with urllib.request.urlopen(req, timeout=30) as r:
            self.assertIn(r.status, (200, 201))
        return self.http.url(f"/file/{name}"), hashlib.sha256(body).hexdigest()

    def bin_spec(self, url, sha, function="DeviceWrite", value=7):
        return {"name": "bin", "buffers": [{"name": "x", "size": 4096}],
                "binaries": [{"name": "kb", "url": url, "sha256": sha}],
                "steps": [{"function": function, "binary": "kb", "blocks": 16, "name": "w",
                           "args": [{"buffer": "x", "offset": 64}, {"i32": value}]}],
                "outputs": [{"name": "r", "buffer": "x", "size": 256}]}

    def test_function_of_a_fetched_binary(self):
        """job.proto JobBinary/JobFunction: the binary is fetched, checked, loaded, its function launched
        with the blob packed from the typed arguments; the kept bytes show what the kernel wrote."""
        url, sha = self.put_binary("kb", self.BINARY)
        jid, _ = self.submit(self.bin_spec(url, sha, value=-5))
        st = self.wait_final(jid)
        self.assert_state(st, SUCCEEDED)
        self.assertEqual(st.fetched_bytes, len(self.BINARY))
        got = self.fetch_cli(jid, "r")
        want = bytes(64) + struct.pack("<16i", *([-5] * 16)) + bytes(256 - 64 - 64)
        self.assertEqual(got, want)

    def test_binary_checksum_and_unknown_function(self):
        url, sha = self.put_binary("kb2", self.BINARY)
        st = self.wait_final(self.submit(self.bin_spec(url, "0" * 64))[0])
        self.assert_state(st, FAILED, failed_at="binary kb", code=CHECKSUM)
        self.assertEqual(st.steps_done, 0)
        st = self.wait_final(self.submit(self.bin_spec(url, sha, function="NoSuch"))[0])
        self.assert_state(st, FAILED, failed_at="step 1 (w)")
        self.assertNotEqual(st.code, 0)
        # a body that is no binary: refused by the load, at the binary
        url, sha = self.put_binary("junk", b"not a binary\n")
        st = self.wait_final(self.submit(self.bin_spec(url, sha))[0])
        self.assert_state(st, FAILED, failed_at="binary kb")
        self.assertNotEqual(st.code, 0)
        self.assertTrue(self.srv.alive())


class TransferJobs(JobTest):
    def test_transient_errors_retried_and_resumed(self):
        """503s retried; a body cut short resumed with Range (each byte once, sha256 right); POST."""
        h = self.http
        n = 64 * KiB
        sha = [h.json(f"/datasha/{n}?seed={s}")["sha256"] for s in (31, 32)]
        spec = {
            "name": "retry",
            "buffers": [{"name": "x", "size": 2 * n}],
            "inputs": [{"buffer": "x", "url": h.url(f"/flaky/2/data/{n}?seed=31"), "sha256": sha[0]},
                       {"buffer": "x", "url": h.url(f"/cut/10000/data/{n}?seed=32"), "sha256": sha[1],
                        "offset": n}],
            "outputs": [{"name": "r", "buffer": "x"},
                        {"name": "p", "buffer": "x", "url": h.url("/upload/post"), "method": "POST"}],
        }
        jid, _ = self.submit(spec)
        st = self.wait_final(jid)
        self.assert_state(st, SUCCEEDED)
        self.assertEqual((st.fetched_bytes, st.fetch_total), (2 * n, 2 * n))
        want = h.data(n, 31) + h.data(n, 32)
        self.assertEqual(self.fetch_cli(jid, "r"), want)
        self.assertEqual(h.uploaded("post"), {"sha256": hashlib.sha256(want).hexdigest(), "length": 2 * n,
                                              "method": "POST"})
        self.assertEqual(len(h.requested("/flaky/2/")), 3)
        cut = h.requested("/cut/")
        self.assertEqual([c["range"] for c in cut], [None, "bytes=10000-"], cut)
        # a server that answers a retry's Range with the whole body (200): the bytes that came
        # before are skipped, each byte once
        spec["inputs"][1]["url"] = h.url(f"/cut/20000/data/{n}?seed=32&norange=1")
        spec["outputs"] = spec["outputs"][:1]
        jid, _ = self.submit(spec)
        st = self.wait_final(jid)
        self.assert_state(st, SUCCEEDED)
        self.assertEqual(st.fetched_bytes, 2 * n)
        self.assertEqual(self.fetch_cli(jid, "r"), want)
        self.assertEqual(len(h.requested("norange=1")), 2)

    def test_redirects(self):
        """Inputs follow at most 5 redirects; deliveries only 307 and 308 (method and body kept)."""
        h = self.http
        n = 4096

        def chain(k, final):
            url = final
            for _ in range(k):
                url = h.url("/redirect/302?to=" + urllib.parse.quote(url, safe=""))
            return url

        spec = self.sq_spec(n, 41)
        spec["inputs"][0]["url"] = chain(5, h.url(f"/data/{n}?seed=41"))
        jid, _ = self.submit(spec)
        self.assert_state(self.wait_final(jid), SUCCEEDED)
        self.assertEqual(self.fetch_cli(jid, "r"), squared(h.data(n, 41)))
        spec["inputs"][0]["url"] = chain(6, h.url(f"/data/{n}?seed=42"))
        jid, _ = self.submit(spec)
        st = self.wait_final(jid)
        self.assert_state(st, FAILED, failed_at="input x", code=900009, message="redirects")
        self.assertEqual(h.requested("seed=42&"), [])
        self.assertEqual([x for x in h.log() if x["path"] == f"/data/{n}?seed=42"], [], "the 7th hop was made")
        for code, ok in ((307, True), (308, True), (302, False), (303, False), (301, False)):
            with self.subTest(code=code):
                name = f"r{code}"
                spec = self.sq_spec(n, 43, kept=None,
                                    url=h.url(f"/redirect/{code}?to=" + urllib.parse.quote(h.url(f"/upload/{name}"))))
                jid, _ = self.submit(spec)
                st = self.wait_final(jid)
                if ok:
                    self.assert_state(st, SUCCEEDED)
                    self.assertEqual(h.uploaded(name), {"sha256": hashlib.sha256(squared(h.data(n, 43))).hexdigest(),
                                                        "length": n, "method": "PUT"})
                else:
                    self.assert_state(st, FAILED, failed_at="output put", code=900009)
                    self.assertIsNone(h.uploaded(name))

    def test_environment_proxy_not_used(self):
        """rdevd started with proxy variables pointing at the httpd: every job transfer still goes
        straight to its URL (a proxied request would arrive with an absolute URI)."""
        self.srv.kill()
        env = {k: self.http.url("/") for k in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                                               "ALL_PROXY", "all_proxy")}
        self.srv = self.start(env=env)
        spec = self.sq_spec(4096, 44, url=self.http.url("/upload/px"), callback=self.http.url("/hook/px"))
        jid, _ = self.submit(spec)
        self.assert_state(self.wait_final(jid), SUCCEEDED)
        self.wait_for(jid, lambda s: len(s.hooks) == 5, "5 hooks")
        paths = [x["path"] for x in self.http.log()]
        self.assertTrue(paths and all(p.startswith("/") for p in paths), paths)
        self.assertEqual(len(self.http.hooks("px")), 5)

    def test_http_errors_fail_the_job(self):
        h = self.http
        cases = [  # (input url, retries, failed_at, code, message, requests of that path)
            (h.url("/status/404"), 0, "input x", 900009, "HTTP 404", 1),
            (h.url("/flaky/9/data/4096?seed=1"), 1, "input x", 900009, "2 tries", 2),
            (h.url("/data/8192?seed=1"), 0, "input x", 300000, "limit", 1),
            (h.url("/data/8192?seed=1&nolength=1"), 0, "input x", 300000, "limit", 1),
        ]
        for url, retries, at, code, msg, nreq in cases:
            with self.subTest(url=url):
                spec = self.sq_spec(4096, 1, url=h.url("/upload/never"))
                spec["inputs"][0]["url"] = url
                if retries:
                    spec["retries"] = retries
                jid, _ = self.submit(spec)
                st = self.wait_final(jid)
                self.assert_state(st, FAILED, failed_at=at, code=code, message=msg)
                self.assertEqual(st.steps_done, 0)
                path = url[len(h.base):]
                self.assertEqual(len([x for x in h.log() if x["path"] == path]), nreq, h.log())
        self.assertIsNone(h.uploaded("never"))
        # an output the receiver refuses: failed at that output, not retried (4xx)
        spec = self.sq_spec(4096, 1, kept=None, url=h.url("/status/403"))
        jid, _ = self.submit(spec)
        st = self.wait_final(jid)
        self.assert_state(st, FAILED, failed_at="output put", code=900009, message="HTTP 403")
        self.assertEqual(st.steps_done, 1)
        self.assertEqual(len([x for x in h.requested("/status/403") if x["method"] == "PUT"]), 1)

    def test_job_timeout(self):
        spec = self.delay_spec(30_000_000, timeout="2s")
        jid, _ = self.submit(spec)
        t0 = time.monotonic()
        st = self.wait_final(jid, timeout=30)
        self.assertLess(time.monotonic() - t0, 10)
        self.assert_state(st, FAILED, failed_at="job", code=107019, message="timeout of 2 s")
        self.assertGreaterEqual(st.finished_ms - st.started_ms, 1900)
        self.assertEqual(len(st.kept), 0)


class AllowJobs(JobTest):
    """A tenant that may reach only some paths of the httpd."""

    def tenants(self):
        return {"alice": {"allow": [self.http.url("/data/"), self.http.url("/redirect/"), self.http.url("/hook/")],
                          "max_running_jobs": 4}}

    def test_url_outside_allow_list_refused_at_submit(self):
        before = self.http.count()
        for where in ("input", "output", "callback"):
            spec = self.sq_spec(4096, 1)
            bad = self.http.url("/file/secret")
            if where == "input":
                spec["inputs"][0]["url"] = bad
            elif where == "output":
                spec["outputs"].append({"name": "o", "buffer": "y", "url": self.http.url("/upload/secret")})
            else:
                spec["callback_url"] = self.http.url("/hooks/secret")
            r = self.cli("job", "submit", self.spec_file(spec))
            self.assertEqual(r.returncode, 2, f"{where}: {r.stdout}{r.stderr}")
            self.assertEqual(r.stdout, "", "no job id for a refused job")
            self.assertIn("permission denied", r.stderr)
            self.assertIn("not allowed for this tenant", r.stderr)
        # another port, another host, user info, a path escaping by dot segments
        for bad in (f"http://127.0.0.1:{self.http.port + 1}/data/4096", f"http://localhost:{self.http.port}/data/4096",
                    f"http://u:p@127.0.0.1:{self.http.port}/data/4096", self.http.url("/data/../file/secret"),
                    f"https://127.0.0.1:{self.http.port}/data/4096", self.http.url("/data/%2e%2e/file/secret"),
                    self.http.url("/data/..%2ffile/secret"), self.http.url("/data/%2E%2E%2Ffile/secret"),
                    self.http.url("/database"), f"http://127.0.0.2:{self.http.port}/data/4096",
                    f"http://[::1]:{self.http.port}/data/4096"):
            spec = self.sq_spec(4096, 1)
            spec["inputs"][0]["url"] = bad
            r = self.cli("job", "submit", self.spec_file(spec))
            self.assertEqual(r.returncode, 2, f"{bad}: {r.stdout}{r.stderr}")
            self.assertIn("permission denied", r.stderr)
        self.assertEqual(self.http.count(), before, f"the httpd saw requests: {self.http.log()}")
        self.assertEqual(self.list_wire(), [])
        self.assertEqual([n for n in os.listdir(self.jobdir) if n.endswith(".job")], [])

    def test_redirect_to_disallowed_target_fails(self):
        target = self.http.url("/flaky/0/data/4096?seed=1")  # would be served, were it requested
        spec = self.sq_spec(4096, 1)
        spec["inputs"][0]["url"] = self.http.url("/redirect/302?to=" + urllib.parse.quote(target, safe=""))
        jid, _ = self.submit(spec)
        st = self.wait_final(jid)
        self.assert_state(st, FAILED, failed_at="input x", code=PERMISSION_DENIED, message="redirect target")
        self.assertEqual(st.steps_done, 0)
        self.assertEqual(len(self.http.requested("/redirect/302")), 1)
        self.assertEqual(self.http.requested("/flaky/"), [], "the disallowed target was requested")
        # an allowed redirect target is followed
        ok = self.http.url("/data/4096?seed=1")
        spec["inputs"][0]["url"] = self.http.url("/redirect/302?to=" + urllib.parse.quote(ok, safe=""))
        jid, _ = self.submit(spec)
        self.assert_state(self.wait_final(jid), SUCCEEDED)
        self.assertEqual(self.fetch_cli(jid, "r"), squared(self.http.data(4096, 1)))


class ResolveJobs(JobTest):
    """rdevd --job-resolve allowed.example:PORT:127.0.0.1; the tenant allows that name only."""

    def tenants(self):
        return {"alice": {"allow": f"http://allowed.example:{self.http.port}/"}}

    def start(self, *extra, **kw):
        return super().start("--job-resolve", f"allowed.example:{self.http.port}:127.0.0.1", *extra, **kw)

    def test_allowed_name_resolving_to_loopback_is_refused(self):
        before = self.http.count()
        spec = self.sq_spec(4096, 1)
        spec["inputs"][0]["url"] = f"http://allowed.example:{self.http.port}/data/4096?seed=1"
        jid, _ = self.submit(spec)  # the URL is allowed: refused only when connecting
        st = self.wait_final(jid)
        self.assert_state(st, FAILED, failed_at="input x", code=PERMISSION_DENIED)
        self.assertIn("127.0.0.1", st.message)
        self.assertEqual(st.fetched_bytes, 0)
        self.assertEqual(self.http.count(), before, f"the httpd saw requests: {self.http.log()}")
        # the same for a callback: never posted, the delivery recorded as failed
        spec = self.delay_spec(1000, callback_url=f"http://allowed.example:{self.http.port}/hook/r")
        jid, _ = self.submit(spec)
        self.assert_state(self.wait_final(jid), SUCCEEDED)
        st = self.wait_for(jid, lambda s: len(s.hooks) >= 4, "4 webhook deliveries recorded")
        self.assertTrue(all(not h.delivered for h in st.hooks), st.hooks)
        self.assertEqual(self.http.count(), before, f"the httpd saw requests: {self.http.log()}")


# =================================================================================
# jobs_restart
# =================================================================================


class RestartJobs(JobTest):
    RDEVD_ARGS = ("--job-runners", "3")

    def test_restart_with_jobs_in_every_state(self):
        h = self.http
        # final ones: succeeded (with a kept output), failed, cancelled
        s_id, _ = self.submit(self.sq_spec(64 * KiB, 11, name="s"))
        f_id, _ = self.submit(self.sq_spec(4096, 12, name="f", sha="12" * 32))
        c_id, _ = self.submit(self.delay_spec(60_000_000, name="c"))
        self.assert_state(self.wait_final(s_id), SUCCEEDED)
        self.assert_state(self.wait_final(f_id), FAILED, code=CHECKSUM)
        self.wait_for(c_id, lambda s: s.state == RUNNING and s.steps_done == 1, "running")
        self.assertEqual(self.cli("job", "cancel", c_id).returncode, 0)
        self.assert_state(self.wait_final(c_id), CANCELLED_ST)
        s_bytes = self.fetch_cli(s_id, "r")
        self.assertEqual(s_bytes, squared(h.data(64 * KiB, 11)))
        # three that hold the three runners: fetching, running, delivering
        fe = self.sq_spec(8 * MiB, 13, name="fe")
        fe["inputs"][0]["url"] = h.url(f"/slow/300/data/{8 * MiB}?seed=13")
        fe_id, _ = self.submit(fe)
        ru_id, _ = self.submit(self.delay_spec(60_000_000, name="ru"))
        de = self.sq_spec(8 * MiB, 14, name="de", kept=None, url=h.url("/slowup/300/de"))
        de_id, _ = self.submit(de)
        self.wait_for(fe_id, lambda s: s.state == FETCHING and s.fetched_bytes > 0, "fetching")
        self.wait_for(ru_id, lambda s: s.state == RUNNING and s.steps_done == 1, "running")
        self.wait_for(de_id, lambda s: s.state == DELIVERING and s.delivered_bytes > 0, "delivering")
        # and one queued behind them
        q_id, _ = self.submit(self.sq_spec(32 * KiB, 15, name="q"))
        time.sleep(0.3)
        self.assert_state(self.get(q_id), QUEUED)
        want = {s_id: SUCCEEDED, f_id: FAILED, c_id: CANCELLED_ST, fe_id: FETCHING, ru_id: RUNNING,
                de_id: DELIVERING, q_id: QUEUED}
        for jid, state in want.items():
            self.wait_record(jid, state)
        before = {j.id: j for j in self.list_wire()}
        self.assertEqual({j: sname(before[j].state) for j in want}, {j: sname(s) for j, s in want.items()})

        self.restart()  # SIGKILL, then the same job dir

        after = {j.id: j for j in self.list_wire()}
        self.assertEqual(set(after), set(want))
        for jid in (s_id, f_id, c_id):
            self.assertEqual(after[jid], before[jid], f"a final job changed across the restart: {jid}")
        for jid in (fe_id, ru_id, de_id):
            st = self.get(jid)
            self.assert_state(st, FAILED, failed_at="job", code=UNAVAILABLE)
            self.assertEqual(st.message, "server restarted")
            self.assertGreater(st.finished_ms, 0)
            self.assertEqual(self.record(jid).status.state, FAILED)
        self.assertEqual(self.fetch_cli(s_id, "r"), s_bytes, "the kept output changed across the restart")
        st = self.wait_final(q_id)
        self.assert_state(st, SUCCEEDED)
        self.assertGreater(st.started_ms, before[q_id].submitted_ms)
        self.assertEqual(self.fetch_cli(q_id, "r"), squared(h.data(32 * KiB, 15)))
        r = self.cli("job", "list")
        self.assertEqual(r.returncode, 0, r.stderr)
        listed = {row.split()[0]: row.split()[1] for row in r.stdout.splitlines()}
        self.assertEqual(listed, {s_id: "succeeded", f_id: "failed", c_id: "cancelled", fe_id: "failed",
                                  ru_id: "failed", de_id: "failed", q_id: "succeeded"})
        # the delivery that was cut never completed, and was not retried after the restart
        self.assertNotEqual((h.uploaded("de") or {}).get("length"), 8 * MiB)
        self.assertEqual(len(h.requested("/slowup/")), 1)

    def test_restart_failure_is_announced_by_webhook(self):
        """A job that fetching -> failed across a restart is a state change: its receiver hears of it."""
        spec = self.sq_spec(8 * MiB, 13, name="fe", callback=self.http.url("/hook/rs"))
        spec["inputs"][0]["url"] = self.http.url(f"/slow/300/data/{8 * MiB}?seed=13")
        jid, secret = self.submit(spec)
        self.wait_for(jid, lambda s: s.state == FETCHING and len(s.hooks) >= 2, "fetching, hooks sent")
        self.wait_record(jid, FETCHING)
        self.restart()
        self.assert_state(self.get(jid), FAILED, message="server restarted")
        deadline = time.monotonic() + 10
        while len(self.http.hooks("rs")) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        events = [json.loads(h["body"]) for h in self.http.hooks("rs")]
        self.assertEqual([e["state"] for e in events], ["queued", "fetching", "failed"])
        self.assertEqual([e["seq"] for e in events], [1, 2, 3], "seq must go on across the restart")
        self.assertEqual((events[-1]["failed_at"], events[-1]["code"], events[-1]["message"]),
                         ("job", UNAVAILABLE, "server restarted"))
        for h in self.http.hooks("rs"):  # signed with the same secret after the restart
            mac = hmac.new(secret.encode(), h["timestamp"].encode() + b"." + bytes.fromhex(h["body_hex"]),
                           hashlib.sha256).hexdigest()
            self.assertEqual(h["signature"], "v1=" + mac)
        st = self.wait_for(jid, lambda s: any(h.state == FAILED for h in s.hooks), "the failed event recorded")
        self.assertTrue([h for h in st.hooks if h.state == FAILED][0].delivered)


    def test_restart_with_damaged_job_dir(self):
        """Files in the job dir that are not whole records are skipped and left alone; a record
        under another id's file name loads once at most; a queued record whose spec breaks the
        contract never runs. rdevd starts and serves; its own records load."""
        jid, _ = self.submit(self.sq_spec(4096, 3))
        self.assert_state(self.wait_final(jid), SUCCEEDED)
        rec = self.wait_record(jid, SUCCEEDED)
        junk = {
            "00000000deadbeef.job": os.urandom(3000),
            "00000000deadbee0.job": b"",
            "0000000000000001.job": b"\x0a\xff\xff\xff\xff\x0f",
            "not-a-record.job": b"hello",
            "README": b"operator's notes",
            "0000000000000abc.job": rec.SerializeToString(),  # jid's record, under another name
        }
        for name, data in junk.items():
            with open(os.path.join(self.jobdir, name), "wb") as f:
                f.write(data)
        # a queued job whose spec names a buffer it does not declare (written by hand)
        bad = jpb.JobRecord(
            spec=jpb.JobSpec(name="evil", buffers=[jpb.JobBuffer(name="x", size=64)],
                             inputs=[jpb.JobInput(buffer="nope", url=self.http.url("/data/4?seed=77"), max_bytes=4)],
                             outputs=[jpb.JobOutput(name="o", buffer="qq", size=1 << 40)]),
            status=jpb.JobStatus(id="00000000000000ee", name="evil", state=QUEUED, tenant="alice",
                                 submitted_ms=int(time.time() * 1000)),
            secret="00" * 32)
        with open(os.path.join(self.jobdir, "00000000000000ee.job"), "wb") as f:
            f.write(bad.SerializeToString())
        self.restart()
        listed = [j.id for j in self.list_wire()]
        self.assertEqual(sorted(listed), sorted([jid, "00000000000000ee"]), listed)
        self.assertEqual(self.get(jid), rec.status)
        self.assertEqual(self.fetch_cli(jid, "r"), squared(self.http.data(4096, 3)))
        st = self.wait_final("00000000000000ee")
        self.assert_state(st, FAILED, failed_at="job", message="its record does not hold a valid spec")
        self.assertEqual(st.steps_done, 0)
        for name, data in junk.items():
            with open(os.path.join(self.jobdir, name), "rb") as f:
                self.assertEqual(f.read(), data, f"{name} was changed")
        jid2, _ = self.submit(self.sq_spec(4096, 4))
        self.assert_state(self.wait_final(jid2), SUCCEEDED)
        self.assertEqual(self.http.requested("seed=77"), [], "the invalid record's job ran")
        self.assertTrue(self.srv.alive())


def varint(n):
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def small_files_only():
    """preexec for an rdevd that may write no file past 64 bytes (RLIMIT_FSIZE; SIGXFSZ
    ignored, as the exec keeps it, so such a write fails with EFBIG): no job record fits."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))


class StoreJobs(JobTest):
    """The job directory's promises: a job is accepted only once its record is on disk, a
    state that cannot be recorded fails the job before it runs, and damaged records and
    stray files neither hide jobs nor their outputs, nor block the start."""
    RDEVD_ARGS = ("--job-runners", "1")

    def path(self, name):
        return os.path.join(self.jobdir, name)

    def test_submit_refused_when_its_record_cannot_be_written(self):
        self.srv.kill()
        self.srv = self.start(preexec=small_files_only)
        r = self.cli("job", "submit", self.spec_file(self.sq_spec(4096, 41)))
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("cannot record the job", r.stderr)
        self.assert_rpc(lambda: self.submit_wire(wire_spec(self.http, seed=42)), SC.INTERNAL,
                        "cannot record the job in the job directory: File too large")
        self.assertEqual(self.list_wire(), [])
        self.assertEqual(os.listdir(self.jobdir), [])
        self.assertEqual(self.http.requested("seed=4"), [], "a refused job ran")
        self.assertTrue(self.srv.alive())

    def test_state_that_cannot_be_recorded_fails_the_job_before_it_runs(self):
        ru_id, _ = self.submit(self.delay_spec(60_000_000, name="ru"))
        self.wait_for(ru_id, lambda s: s.state == RUNNING, "running")
        q_id, _ = self.submit(self.sq_spec(4096, 43, name="q"))  # waits for the one runner
        self.wait_record(q_id, QUEUED)
        # its record's name now holds a directory: no later state of it can be written
        os.unlink(self.path(q_id + ".job"))
        os.mkdir(self.path(q_id + ".job"))
        open(os.path.join(self.path(q_id + ".job"), "keep"), "w").close()
        self.assertEqual(self.cli("job", "cancel", ru_id).returncode, 0)
        st = self.wait_final(q_id)
        self.assert_state(st, FAILED, failed_at="job", message="cannot record the state fetching")
        self.assertEqual(st.steps_done, 0)
        self.assertEqual(self.http.requested("seed=43"), [], "it ran unrecorded")
        self.restart()  # and it does not run after a restart either
        time.sleep(0.5)
        self.assertEqual(self.http.requested("seed=43"), [])
        self.assertNotIn(q_id, [j.id for j in self.list_wire()])

    def assert_on_disk(self, jid, st):
        """What a caller heard of a job's end (st) is in its record, and no write of the record is
        under way: the job dir holds its record alone."""
        names = sorted(n for n in os.listdir(self.jobdir) if n.startswith(jid))
        rec = self.record(jid)
        self.assertEqual(names, [jid + ".job"], f"told {sname(st.state)}, a write of the record was under way")
        self.assertIsNotNone(rec, "no whole record")
        got = (sname(rec.status.state), rec.status.failed_at, rec.status.code, rec.status.message,
               rec.status.finished_ms)
        self.assertEqual(got, (sname(st.state), st.failed_at, st.code, st.message, st.finished_ms),
                         "told of an end its record does not hold yet")

    def test_an_end_heard_of_is_on_disk(self):
        # a watcher told of a failure (right away, as no poll would be)
        for i in range(8):
            spec = wire_spec(self.http, seed=60 + i)
            spec.steps.append(jpb.JobStep(name="bogus", launch=jpb.JobLaunch(kernel="no_such_kernel", blocks=1)))
            jid = self.submit_wire(spec).id
            watch = self.srv.stub.WatchJob(jpb.JobRequest(id=jid), metadata=bearer("alice"), timeout=60)
            for st in watch:
                if st.state in FINAL:
                    self.assert_on_disk(jid, st)
                    break
            watch.cancel()
            self.assert_state(st, FAILED, failed_at="step 2 (bogus)", code=UNKNOWN_KERNEL)
        # a CancelJob answered for a queued job (the one runner is busy)
        ru_id, _ = self.submit(self.delay_spec(60_000_000, name="ru"))
        self.wait_for(ru_id, lambda s: s.state == RUNNING, "running")
        for i in range(8):
            q = self.submit_wire(wire_spec(self.http, seed=70 + i)).id
            st = self.srv.stub.CancelJob(jpb.JobRequest(id=q), metadata=bearer("alice"), timeout=20)
            self.assert_on_disk(q, st)
            self.assert_state(st, CANCELLED_ST, failed_at="job", code=CANCELLED, message="cancelled before it started")
        self.assertEqual(self.cli("job", "cancel", ru_id).returncode, 0)
        self.assert_state(self.wait_final(ru_id), CANCELLED_ST)
        self.assertEqual([r for i in range(8) for r in self.http.requested(f"seed={70 + i}")], [],
                         "a cancelled queued job ran")

    def test_damaged_records_and_stray_files(self):
        a_id, _ = self.submit(self.sq_spec(4096, 44, name="a"))
        b_id, _ = self.submit(self.sq_spec(8192, 45, name="b"))
        for jid in (a_id, b_id):
            self.assert_state(self.wait_final(jid), SUCCEEDED)
        a_rec, b_rec = self.wait_record(a_id, SUCCEEDED), self.wait_record(b_id, SUCCEEDED)
        a_out, b_out = self.fetch_cli(a_id, "r"), self.fetch_cli(b_id, "r")
        self.srv.kill()
        cut = {}
        # a: cut inside its spec (its status comes first and is whole)
        n = len(a_rec.status.SerializeToString())
        with open(self.path(a_id + ".job"), "rb") as f:
            cut[a_id] = f.read()[:1 + len(varint(n)) + n + 5]
        # b: cut inside its status, past its id, name and tenant
        n = len(b_rec.status.SerializeToString())
        named = jpb.JobStatus(id=b_id, name="b", tenant="alice").SerializeToString()
        with open(self.path(b_id + ".job"), "rb") as f:
            cut[b_id] = f.read()[:1 + len(varint(n)) + len(named) + 3]
        for jid, data in cut.items():
            with open(self.path(jid + ".job"), "wb") as f:
                f.write(data)
        # an output whose record is gone, and a FIFO named like a record (opened, it would block)
        with open(self.path("00000000000000aa.r.out"), "wb") as f:
            f.write(b"orphan")
        os.mkfifo(self.path("00000000000000ff.job"))
        self.srv = self.start()
        listed = {j.id: j for j in self.list_wire()}
        self.assertEqual(set(listed), {a_id, b_id})
        self.assertEqual(listed[a_id], a_rec.status, "a whole final status stays as it was")
        b = self.get(b_id)
        self.assert_state(b, FAILED, failed_at="job", code=INTERNAL_ERROR,
                          message="its record in the job directory is damaged")
        self.assertEqual((b.name, b.tenant), ("b", "alice"))
        self.assertEqual([(k.name, k.bytes) for k in b.kept], [("r", 8192)], "its output still counts")
        self.assertGreater(b.kept[0].expires_ms, int(time.time() * 1000))
        self.assertEqual(self.fetch_cli(a_id, "r"), a_out)
        self.assertEqual(self.fetch_cli(b_id, "r"), b_out)
        self.assertFalse(os.path.exists(self.path("00000000000000aa.r.out")), "an output of no job stayed")
        self.assertTrue(stat.S_ISFIFO(os.stat(self.path("00000000000000ff.job")).st_mode))
        for jid, data in cut.items():
            with open(self.path(jid + ".job"), "rb") as f:
                self.assertEqual(f.read(), data, "a damaged record was written over")
        jid, _ = self.submit(self.sq_spec(4096, 46))
        self.assert_state(self.wait_final(jid), SUCCEEDED)
        self.assertEqual(self.srv.stop(), 0)


class DrainJobs(JobTest):
    def tenants(self):
        return {"alice": {"allow": self.http.url("/"), "max_running_jobs": 1}}

    def test_sigterm_drain_lets_running_job_finish(self):
        self.srv.kill()
        self.srv = self.start(drain_ms=20000)
        jid, _ = self.submit(self.delay_spec(1_500_000, name="drained"))
        q_id, _ = self.submit(self.delay_spec(1000, name="waits"))  # queued behind it (max_running_jobs 1)
        self.wait_for(jid, lambda s: s.state == RUNNING and s.steps_done == 1, "running")
        self.assert_state(self.get(q_id), QUEUED)
        t0 = time.monotonic()
        self.srv.proc.terminate()
        rc = self.srv.stop()
        took = time.monotonic() - t0
        self.assertEqual(rc, 0, self.ctx())
        self.assertLess(took, 15, "the drain did not end when the job did")
        self.assertEqual(self.record(jid).status.state, SUCCEEDED)
        self.assertEqual(self.record(q_id).status.state, QUEUED, "a queued job must stay queued on disk")
        self.srv = self.start()
        st = self.get(jid)
        self.assert_state(st, SUCCEEDED)
        self.assertEqual(self.fetch_cli(jid, "k"), bytes([7]) * 4096)
        self.assert_state(self.wait_final(q_id), SUCCEEDED)  # runs after the restart

    def test_submit_while_draining_is_refused(self):
        """rdev.proto: a draining rdevd takes no new job (gRPC ends the call CANCELLED on an
        open channel, UNAVAILABLE on a new one), and nothing is queued."""
        self.srv.kill()
        self.srv = self.start(drain_ms=20000)
        jid, _ = self.submit(self.delay_spec(3_000_000, name="drained"))
        self.wait_for(jid, lambda s: s.state == RUNNING and s.steps_done == 1, "running")
        self.srv.proc.terminate()
        deadline = time.monotonic() + 5
        while "draining" not in self.srv.log():
            self.assertLess(time.monotonic(), deadline, "no drain" + self.ctx())
            time.sleep(0.02)
        time.sleep(0.2)  # well inside the drain (the running job holds it for seconds)
        try:
            with self.assertRaises(grpc.RpcError) as e:
                self.submit_wire(wire_spec(self.http))
            self.assertIn(e.exception.code(), (SC.UNAVAILABLE, SC.CANCELLED), e.exception.details())
        finally:
            self.assertEqual(self.srv.stop(), 0)
        self.srv = self.start()
        self.assertEqual([j.id for j in self.list_wire()], [jid], "a job was queued during the drain")

    def test_sigterm_short_drain_fails_running_job(self):
        self.srv.kill()
        self.srv = self.start(drain_ms=300)
        jid, _ = self.submit(self.delay_spec(20_000_000, name="cut"))
        self.wait_for(jid, lambda s: s.state == RUNNING and s.steps_done == 1, "running")
        t0 = time.monotonic()
        rc = self.srv.stop()
        self.assertEqual(rc, 0, self.ctx())
        self.assertLess(time.monotonic() - t0, 10, "the drain outlasted --drain-ms by far")
        self.srv = self.start()
        st = self.get(jid)
        self.assert_state(st, FAILED, failed_at="job", code=CANCELLED)
        self.assertEqual(st.message, "the server stopped before the job finished")
        self.assertEqual(len(st.kept), 0)
        self.assert_rpc(lambda: self.fetch_wire(jid, "k"), SC.NOT_FOUND)


class LimitJobs(JobTest):
    def tenants(self):
        allow = self.http.url("/")
        return {
            "alice": {"allow": allow, "max_running_jobs": 1, "max_queued_jobs": 8},
            "bob": {"allow": allow, "max_running_jobs": 1},
            "lim": {"allow": allow, "max_queued_jobs": 2, "max_running_jobs": 1, "max_job_fetch": "64K"},
            "disk": {"allow": allow, "job_disk": "64K"},
        }

    def test_max_queued_jobs(self):
        a, _ = self.submit(self.delay_spec(30_000_000, name="a"), tenant="lim")
        b, _ = self.submit(self.delay_spec(30_000_000, name="b"), tenant="lim")
        self.wait_state(a, RUNNING, tenant="lim")
        r = self.cli("job", "submit", self.spec_file(self.delay_spec(1000, name="c")), tenant="lim")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertIn("quota exceeded", r.stderr)
        self.assertIn("max_queued_jobs 2", r.stderr)
        # the wire says RESOURCE_EXHAUSTED
        self.assert_rpc(lambda: self.submit_wire(wire_spec(self.http), tenant="lim"), SC.RESOURCE_EXHAUSTED,
                        "max_queued_jobs")
        self.assertEqual(len(self.list_wire(tenant="lim")), 2)
        # another tenant is not limited by it
        self.assert_state(self.wait_final(self.submit(self.sq_spec(4096, 1), tenant="bob")[0], tenant="bob"),
                          SUCCEEDED)
        # a final job no longer counts
        r = self.cli("job", "cancel", b, tenant="lim")
        self.assertEqual(r.stdout.strip(), f"{b} cancelled")
        c, _ = self.submit(self.delay_spec(1000, name="c"), tenant="lim")
        self.assertEqual(self.cli("job", "cancel", a, tenant="lim").returncode, 0)
        self.assert_state(self.wait_final(c, tenant="lim"), SUCCEEDED)

    def test_fifo_one_at_a_time(self):
        """max_running_jobs 1: a tenant's jobs run one at a time in submission order; another
        tenant's job does not wait for them."""
        first = self.submit_wire(self.wire_delay(2_000_000, "j1")).id
        j2 = self.submit_wire(self.wire_delay(200_000, "j2")).id
        other = self.submit_wire(self.wire_delay(1000, "b1"), tenant="bob").id
        j3 = self.submit_wire(self.wire_delay(200_000, "j3")).id
        j4 = self.submit_wire(self.wire_delay(1000, "j4")).id
        self.assert_state(self.get(j4), QUEUED)
        ids = [first, j2, j3, j4]
        sts = [self.wait_final(j) for j in ids]
        for st in sts:
            self.assert_state(st, SUCCEEDED)
        self.assertLess(sts[3].submitted_ms, sts[0].finished_ms,
                        "the first job ended before the last was submitted: ordering not shown")
        for prev, nxt in zip(sts, sts[1:]):
            self.assertLessEqual(prev.started_ms, nxt.started_ms, "not in submission order")
            self.assertLessEqual(prev.finished_ms, nxt.started_ms, f"{prev.name} and {nxt.name} overlapped")
        b = self.wait_final(other, tenant="bob")
        self.assert_state(b, SUCCEEDED)
        self.assertLess(b.started_ms, sts[0].finished_ms, "bob's job waited for alice's")
        self.assertGreater(b.submitted_ms, sts[1].submitted_ms)

    def wire_delay(self, us, name):
        return jpb.JobSpec(name=name, buffers=[jpb.JobBuffer(name="b", size=64)],
                           steps=[jpb.JobStep(launch=jpb.JobLaunch(kernel="delay_us", blocks=1,
                                                                   args=[jpb.JobArg(u32=us)]))])

    def test_max_job_fetch(self):
        ok, _ = self.submit(self.sq_spec(60 * KiB, 1), tenant="lim")
        self.assert_state(self.wait_final(ok, tenant="lim"), SUCCEEDED)
        big, _ = self.submit(self.sq_spec(128 * KiB, 1), tenant="lim")
        st = self.wait_final(big, tenant="lim")
        self.assert_state(st, FAILED, failed_at="input x", code=QUOTA_EXCEEDED, message="max_job_fetch")
        self.assertLessEqual(st.fetched_bytes, 64 * KiB + MiB)
        self.assertEqual(st.steps_done, 0)
        # the cap is on the job's inputs together
        two = self.sq_spec(80 * KiB, 1)
        two["inputs"] = [{"buffer": "x", "url": self.http.url(f"/data/{40 * KiB}?seed=1")},
                         {"buffer": "x", "url": self.http.url(f"/data/{40 * KiB}?seed=2"), "offset": 40 * KiB}]
        jid, _ = self.submit(two, tenant="lim")
        st = self.wait_final(jid, tenant="lim")
        self.assert_state(st, FAILED, code=QUOTA_EXCEEDED, message="max_job_fetch")
        self.assertRegex(st.failed_at, r"^input x$")

    def test_job_disk(self):
        a, _ = self.submit(self.sq_spec(40 * KiB, 1), tenant="disk")
        self.assert_state(self.wait_final(a, tenant="disk"), SUCCEEDED)
        b, _ = self.submit(self.sq_spec(40 * KiB, 2), tenant="disk")  # 80K kept > 64K
        st = self.wait_final(b, tenant="disk")
        self.assert_state(st, FAILED, failed_at="output r", code=QUOTA_EXCEEDED, message="job_disk")
        self.assertEqual(st.steps_done, 1)
        self.assertEqual(len(st.kept), 0)
        self.assert_rpc(lambda: self.fetch_wire(b, "r", tenant="disk"), SC.NOT_FOUND)
        self.assertEqual([n for n in os.listdir(self.jobdir) if n.startswith(b) and not n.endswith(".job")], [])
        c, _ = self.submit(self.sq_spec(100 * KiB, 3), tenant="disk")  # over the quota alone
        self.assert_state(self.wait_final(c, tenant="disk"), FAILED, failed_at="output r", code=QUOTA_EXCEEDED)
        d, _ = self.submit(self.sq_spec(24 * KiB, 3), tenant="disk")  # 40K + 24K = 64K: fits exactly
        self.assert_state(self.wait_final(d, tenant="disk"), SUCCEEDED)
        self.assertEqual(self.fetch_cli(a, "r", tenant="disk"), squared(self.http.data(40 * KiB, 1)))
        self.assertEqual(self.fetch_cli(d, "r", tenant="disk"), squared(self.http.data(24 * KiB, 3)))
        # the same size for another tenant: its own quota (none)
        e, _ = self.submit(self.sq_spec(40 * KiB, 2), tenant="bob")
        self.assert_state(self.wait_final(e, tenant="bob"), SUCCEEDED)


class ExpiryJobs(JobTest):
    RDEVD_ARGS = ("--job-keep", "4")

    def tenants(self):
        return {"alice": {"allow": self.http.url("/"), "job_disk": "64K"}}

    def test_kept_outputs_expire(self):
        jid, _ = self.submit(self.sq_spec(40 * KiB, 5))
        st = self.wait_final(jid)
        self.assert_state(st, SUCCEEDED)
        self.assertEqual(len(st.kept), 1)
        self.assertEqual((st.kept[0].name, st.kept[0].bytes), ("r", 40 * KiB))
        self.assertAlmostEqual(st.kept[0].expires_ms, st.finished_ms + 4000, delta=1500)
        self.assertEqual(self.fetch_wire(jid, "r"), squared(self.http.data(40 * KiB, 5)))
        out = os.path.join(self.jobdir, f"{jid}.r.out")
        self.assertTrue(os.path.exists(out))
        # the quota counts it now
        b, _ = self.submit(self.sq_spec(40 * KiB, 6))
        self.assert_state(self.wait_final(b), FAILED, code=QUOTA_EXCEEDED)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.fetch_wire(jid, "r")
            except grpc.RpcError as e:
                self.assertEqual(e.code(), SC.NOT_FOUND, e.details())
                break
            self.assertLess(time.monotonic(), deadline, "the kept output did not expire")
            time.sleep(0.1)
        self.assertGreaterEqual(time.time() * 1000, st.kept[0].expires_ms - 50, "expired early")
        deadline = time.monotonic() + 10
        while os.path.exists(out) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertFalse(os.path.exists(out), "the expired output's file stayed")
        r = self.cli("job", "fetch", jid, "r", os.path.join(self.tmp, "gone"))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        # and the disk it used is free again
        c, _ = self.submit(self.sq_spec(40 * KiB, 7))
        self.assert_state(self.wait_final(c), SUCCEEDED)


# =================================================================================
# jobs_hostile
# =================================================================================


class IsolationJobs(JobTest):
    def test_other_tenant_sees_not_found(self):
        jid = self.submit_wire(wire_spec(self.http)).id
        self.assert_state(self.wait_final(jid), SUCCEEDED)
        slow = self.submit_wire(self.delay_wire(3_000_000)).id
        unknown = "0123456789abcdef"

        def calls(tenant, j):
            md = bearer(tenant)
            st = self.srv.stub
            return {
                "get": lambda: st.GetJob(jpb.JobRequest(id=j), metadata=md, timeout=20),
                "watch": lambda: list(st.WatchJob(jpb.JobRequest(id=j), metadata=md, timeout=20)),
                "cancel": lambda: st.CancelJob(jpb.JobRequest(id=j), metadata=md, timeout=20),
                "fetch": lambda: list(st.FetchOutput(jpb.FetchOutputRequest(id=j, output="out"), metadata=md,
                                                     timeout=20)),
            }

        for name, fn in calls("bob", unknown).items():
            ref = self.assert_rpc(fn, SC.NOT_FOUND)
            for j in (jid, slow):
                e = self.assert_rpc(calls("bob", j)[name], SC.NOT_FOUND)
                self.assertEqual(e.details(), ref.details(), f"{name}: another tenant's job is not as unknown")
        # bob's cancel did nothing: alice's job runs on and succeeds
        self.assertNotIn(self.get(slow).state, FINAL)
        self.assert_state(self.wait_final(slow), SUCCEEDED)
        self.assertEqual(self.fetch_wire(jid, "out"), inc_u32(self.http.data(4096, 1)))
        # lists: own jobs only
        bobs = self.submit_wire(wire_spec(self.http), tenant="bob").id
        self.assertEqual({j.id for j in self.list_wire()}, {jid, slow})
        self.assertEqual({j.id for j in self.list_wire("bob")}, {bobs})
        self.assertTrue(all(j.tenant == "alice" for j in self.list_wire()))
        self.assertEqual(self.wait_final(bobs, tenant="bob").tenant, "bob")
        self.assert_rpc(lambda: self.get(bobs), SC.NOT_FOUND)
        # the CLI too
        r = self.cli("job", "status", jid, tenant="bob")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        r = self.cli("job", "fetch", jid, "out", os.path.join(self.tmp, "stolen"), tenant="bob")
        self.assertEqual(r.returncode, 2)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "stolen")))
        # no token, a wrong token
        self.assert_rpc(lambda: self.srv.stub.GetJob(jpb.JobRequest(id=jid), timeout=20), SC.UNAUTHENTICATED)
        self.assert_rpc(lambda: self.srv.stub.ListJobs(jpb.ListJobsRequest(), timeout=20,
                                                       metadata=[("authorization", "Bearer nope")]),
                        SC.UNAUTHENTICATED)

    def test_list_newest_first_at_most_128_and_256_kept(self):
        """ListJobs: the newest 128, newest first; past a tenant's 256 newest finished jobs the
        oldest go (docs/jobs.md), records included; another tenant's count is its own."""
        ids = []
        spec = jpb.JobSpec(name="m", buffers=[jpb.JobBuffer(name="b", size=64)],
                           steps=[jpb.JobStep(memset=jpb.JobMemset(dst=jpb.JobRef(buffer="b"), value=1, count=64))])
        bobs = self.submit_wire(spec, tenant="bob").id
        self.assert_state(self.wait_final(bobs, tenant="bob"), SUCCEEDED)
        for batch in range(6):
            mine = [self.submit_wire(spec).id for _ in range(45)]
            for j in mine:
                self.assert_state(self.wait_final(j), SUCCEEDED)
            ids += mine
        self.assertEqual(len(ids), 270)
        listed = self.list_wire()
        self.assertEqual(len(listed), 128)
        self.assertEqual([j.id for j in listed], ids[::-1][:128], "not the newest 128, newest first")
        self.assertTrue(all(len(j.hooks) == 0 for j in listed))
        r = self.cli("job", "list")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([line.split()[0] for line in r.stdout.splitlines()], ids[::-1][:128])
        self.assertEqual([j.id for j in self.list_wire("bob")], [bobs])
        # the 14 oldest go (within the scheduler's next rounds); the 256 newest stay
        deadline = time.monotonic() + 15
        while True:
            gone = [j for j in ids[:20] if not os.path.exists(os.path.join(self.jobdir, j + ".job"))]
            if len(gone) >= 14 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(gone, ids[:14])
        for j in ids[:14]:
            self.assert_rpc(lambda: self.get(j), SC.NOT_FOUND)
        for j in ids[14:]:
            self.assertEqual(self.get(j).id, j)
        self.assertEqual(self.get(bobs, tenant="bob").id, bobs)

    def test_slow_receiver_of_another_tenant(self):
        """bob's webhook receiver takes 1.5 s an event: alice's events still arrive at once."""
        slow = [self.submit_wire(self.delay_wire(1000, callback_url=self.http.url("/slow/1500/hook/b")),
                                 tenant="bob").id for _ in range(3)]
        for j in slow:
            self.assert_state(self.wait_final(j, tenant="bob"), SUCCEEDED)
        jid = self.submit_wire(self.delay_wire(1000, callback_url=self.http.url("/hook/a"))).id
        self.assert_state(self.wait_final(jid), SUCCEEDED)
        t0 = time.monotonic()
        while len(self.http.hooks("a")) < 5:
            self.assertLess(time.monotonic() - t0, 5, f"alice's events waited for bob's receiver: "
                                                      f"{len(self.http.hooks('a'))} of 5 arrived")
            time.sleep(0.05)
        self.assertLess(len(self.http.hooks("b")), 15, "bob's events were all sent already: no contention")
        self.assertEqual([json.loads(h["body"])["state"] for h in self.http.hooks("a")],
                         ["queued", "fetching", "running", "delivering", "succeeded"])
        # bob's own events are still each in its job's order
        per_job = {}
        for h in self.http.hooks("b"):
            e = json.loads(h["body"])
            per_job.setdefault(e["id"], []).append(e["seq"])
        for j, seqs in per_job.items():
            self.assertEqual(seqs, list(range(1, len(seqs) + 1)), j)

    def test_watchers_and_fetchers_that_go_away(self):
        """Streams a client drops mid-way (watch, fetch) leave rdevd whole; the others finish."""
        big = self.submit_wire(wire_spec(self.http, n=192 * KiB, seed=3)).id
        self.assert_state(self.wait_final(big), SUCCEEDED)
        long_spec = self.delay_wire(1_500_000)
        jid = self.submit_wire(long_spec).id
        md = bearer("alice")
        watches = [self.srv.stub.WatchJob(jpb.JobRequest(id=jid), metadata=md, timeout=60) for _ in range(10)]
        for w in watches:
            self.assertEqual(next(w).id, jid)
        for w in watches[::2]:
            w.cancel()
        fetches = [self.srv.stub.FetchOutput(jpb.FetchOutputRequest(id=big, output="out"), metadata=md, timeout=60)
                   for _ in range(6)]
        for f in fetches[::2]:
            next(f)
            f.cancel()
        want = inc_u32(self.http.data(192 * KiB, 3))
        for f in fetches[1::2]:
            self.assertEqual(b"".join(c.data for c in f), want)
        for w in watches[1::2]:
            last = list(w)[-1]
            self.assertEqual(sname(last.state), "SUCCEEDED")
        for w in watches[::2]:
            with self.assertRaises(grpc.RpcError) as e:
                list(w)
            self.assertEqual(e.exception.code(), SC.CANCELLED)
        self.assert_state(self.get(jid), SUCCEEDED)
        self.assertEqual(self.fetch_wire(big, "out"), want)

    def test_watchers_per_job_capped(self):
        """docs/jobs.md: at most 16 watchers a job (RESOURCE_EXHAUSTED); a place freed is free again."""
        jid = self.submit_wire(self.delay_wire(2_000_000)).id
        md = bearer("alice")
        watches = [self.srv.stub.WatchJob(jpb.JobRequest(id=jid), metadata=md, timeout=60) for _ in range(16)]
        for w in watches:
            self.assertEqual(next(w).id, jid)
        extra = self.srv.stub.WatchJob(jpb.JobRequest(id=jid), metadata=md, timeout=60)
        self.assert_rpc(lambda: next(extra), SC.RESOURCE_EXHAUSTED)
        watches[0].cancel()
        deadline = time.monotonic() + 10
        while True:  # the cancelled one's place comes back once rdevd has seen it go
            again = self.srv.stub.WatchJob(jpb.JobRequest(id=jid), metadata=md, timeout=60)
            try:
                self.assertEqual(next(again).id, jid)
                break
            except grpc.RpcError as e:
                self.assertEqual(e.code(), SC.RESOURCE_EXHAUSTED)
                self.assertLess(time.monotonic(), deadline, "the place of a watcher that went is not freed")
                time.sleep(0.05)
        for w in watches[1:] + [again]:
            self.assertEqual(sname(list(w)[-1].state), "SUCCEEDED")
        self.assertEqual(len(list(self.srv.stub.WatchJob(jpb.JobRequest(id=jid), metadata=md, timeout=20))), 1)

    def delay_wire(self, us, **more):
        return jpb.JobSpec(name="slow", buffers=[jpb.JobBuffer(name="b", size=64)],
                           steps=[jpb.JobStep(launch=jpb.JobLaunch(kernel="delay_us", blocks=1,
                                                                   args=[jpb.JobArg(u32=us)]))], **more)


class HostileJobs(JobTest):
    def raw(self, method):
        return self.srv.channel.unary_unary(f"/rdev.v1.Device/{method}")

    def still_serves(self):
        """A good job submitted before the attack is still answered, and a new one runs."""
        st = self.get(self.good)
        self.assertEqual(st.id, self.good)
        self.assertTrue(self.srv.alive())

    def setUp(self):
        super().setUp()
        self.good = self.submit_wire(wire_spec(self.http)).id
        self.assert_state(self.wait_final(self.good), SUCCEEDED)

    def refused(self, spec, code=SC.INVALID_ARGUMENT, details=None):
        e = self.assert_rpc(lambda: self.submit_wire(spec), code, details)
        self.still_serves()
        return e

    def test_garbage_submit_requests(self):
        import random
        rnd = random.Random(1234)
        call = self.raw("SubmitJob")
        before = len(self.list_wire())
        for i in range(300):
            n = rnd.choice([1, 2, 3, 7, 16, 100, 1000, 5000, 70000])
            data = rnd.randbytes(n)
            try:
                call(data, metadata=bearer("alice"), timeout=20)
                self.fail(f"garbage #{i} was accepted: {data[:64].hex()}")
            except grpc.RpcError as e:
                self.assertEqual(e.code(), SC.INVALID_ARGUMENT, f"#{i}: {e.code()} {e.details()}")
        # an empty request: no spec, no buffer
        self.assert_rpc(lambda: call(b"", metadata=bearer("alice"), timeout=20), SC.INVALID_ARGUMENT)
        self.assertEqual(len(self.list_wire()), before, "a garbage request made a job")
        self.still_serves()

    def test_truncated_submit_requests(self):
        whole = jpb.SubmitJobRequest(spec=wire_spec(self.http, callback_url=self.http.url("/hook/t"))
                                     ).SerializeToString()
        call = self.raw("SubmitJob")
        before = len(self.list_wire())
        for n in range(len(whole)):
            with self.assertRaises(grpc.RpcError, msg=f"{n} of {len(whole)} bytes") as e:
                call(whole[:n], metadata=bearer("alice"), timeout=20)
            self.assertEqual(e.exception.code(), SC.INVALID_ARGUMENT, f"{n} bytes: {e.exception.details()}")
        # a length prefix past the end, a varint that never ends, a wrong wire type
        for bad in (b"\x0a\xff\xff\xff\x0f", b"\x0a\x05\x12\x03", b"\x0a" + b"\xff" * 11, b"\x0d\x00\x00\x00\x00",
                    whole + b"\x0a"):
            self.assert_rpc(lambda: call(bad, metadata=bearer("alice"), timeout=20), SC.INVALID_ARGUMENT)
        self.assertEqual(len(self.list_wire()), before)
        self.assertIsNotNone(call(whole, metadata=bearer("alice"), timeout=20))
        self.still_serves()

    def test_strings_with_nul_are_refused(self):
        """A NUL would cut a C string short: a name "r\0../x" must not become "r"."""
        before = len(self.list_wire())
        for field, mutate in (("output name", lambda s: setattr(s.outputs[0], "name", "out\x00../x")),
                              ("job name", lambda s: setattr(s, "name", "a\x00b")),
                              ("input URL", lambda s: setattr(s.inputs[0], "url", s.inputs[0].url + "\x00x"))):
            spec = wire_spec(self.http)
            mutate(spec)
            e = self.assert_rpc(lambda: self.submit_wire(spec), SC.INVALID_ARGUMENT, "NUL")
            self.assertIn("a string field holds a NUL byte", e.details(), field)
        self.assertEqual(len(self.list_wire()), before)
        self.assert_rpc(lambda: self.get(self.good + "\x00"), SC.INVALID_ARGUMENT, "NUL")
        self.assert_rpc(lambda: self.fetch_wire(self.good, "out\x00x"), SC.INVALID_ARGUMENT, "NUL")
        self.still_serves()

    def test_spec_limits(self):
        h = self.http
        spec = wire_spec(h)
        spec.buffers.extend(jpb.JobBuffer(name=f"b{i}", size=64) for i in range(15))
        self.assertEqual(len(spec.buffers), 16)
        ok = self.submit_wire(spec).id  # 16 is fine
        self.assert_state(self.wait_final(ok), SUCCEEDED)
        spec.buffers.append(jpb.JobBuffer(name="b99", size=64))
        self.refused(spec)
        spec = wire_spec(h)
        spec.steps.extend(jpb.JobStep(memset=jpb.JobMemset(dst=jpb.JobRef(buffer="x"), value=1, count=4))
                          for _ in range(63))
        ok = self.submit_wire(spec).id  # 64 steps
        self.assert_state(self.wait_final(ok), SUCCEEDED)
        self.assertEqual(self.get(ok).steps_done, 64)
        spec.steps.append(jpb.JobStep(memset=jpb.JobMemset(dst=jpb.JobRef(buffer="x"), count=4)))
        self.refused(spec)
        spec = wire_spec(h)
        spec.inputs.extend(jpb.JobInput(buffer="x", url=h.url("/data/4"), offset=4 * i, max_bytes=4)
                           for i in range(1, 17))
        self.refused(spec)
        spec = wire_spec(h)
        spec.outputs.extend(jpb.JobOutput(name=f"o{i}", buffer="x") for i in range(16))
        self.refused(spec)
        spec = wire_spec(h)
        spec.steps[0].launch.args.extend(jpb.JobArg(u32=1) for _ in range(8))
        self.refused(spec)
        # names: 31 bytes fine, 32 not; only [A-Za-z0-9_.-]
        spec = wire_spec(h)
        spec.buffers.append(jpb.JobBuffer(name="n" * 31, size=8))
        self.submit_wire(spec)
        for bad in ("n" * 32, "", "a/b", "../x", "a b", "x\n", "é"):
            spec = wire_spec(h)
            spec.buffers.append(jpb.JobBuffer(name=bad, size=8))
            self.refused(spec)
            spec = wire_spec(h)
            spec.outputs.append(jpb.JobOutput(name=bad, buffer="x"))
            self.refused(spec)
        for bad in ("a/b", "../../etc"):
            spec = wire_spec(h)
            spec.steps[0].name = bad
            self.refused(spec)

    def test_long_urls(self):
        """job.proto: URLs at most 2047 bytes; longer ones refused at submission, by the CLI too."""
        h = self.http
        for n in (2048, 3000, 100000):
            for where in ("input", "callback", "output"):
                spec = wire_spec(h)
                if where == "input":
                    spec.inputs[0].url = h.url("/data/4096?seed=1&pad=")
                    spec.inputs[0].url += "a" * (n - len(spec.inputs[0].url))
                elif where == "callback":
                    spec.callback_url = h.url("/hook/")
                    spec.callback_url += "a" * (n - len(spec.callback_url))
                else:
                    u = h.url("/upload/")
                    spec.outputs.append(jpb.JobOutput(name="o", buffer="x", url=u + "a" * (n - len(u))))
                with self.subTest(n=n, where=where):
                    self.refused(spec, details="2047")
        url = h.url("/data/4096?seed=1&pad=")
        spec = wire_spec(h)
        spec.inputs[0].url = url + "a" * (2047 - len(url))  # 2047 bytes: within the contract
        jid = self.submit_wire(spec).id
        self.assert_state(self.wait_final(jid), SUCCEEDED)
        self.assertEqual(self.fetch_wire(jid, "out"), inc_u32(self.http.data(4096, 1)))
        # the CLI keeps to the same limit
        yspec = self.sq_spec(4096, 1)
        yspec["inputs"][0]["url"] = url + "a" * (2048 - len(url))
        r = self.cli("job", "submit", self.spec_file(yspec))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("2047", r.stderr)
        yspec["inputs"][0]["url"] = url + "a" * (2047 - len(url))
        self.assert_state(self.wait_final(self.submit(yspec)[0]), SUCCEEDED)

    def test_bad_ranges_and_overflow(self):
        h = self.http
        cases = []

        def case(mutate):
            spec = wire_spec(h)
            mutate(spec)
            cases.append(spec)

        case(lambda s: setattr(s.inputs[0], "offset", 4097))
        case(lambda s: setattr(s.inputs[0], "offset", U64))
        case(lambda s: (setattr(s.inputs[0], "offset", 8), setattr(s.inputs[0], "max_bytes", 4096 - 7)))
        case(lambda s: setattr(s.inputs[0], "max_bytes", U64))
        case(lambda s: (setattr(s.inputs[0], "offset", 2**64 - 8), setattr(s.inputs[0], "max_bytes", 16)))
        case(lambda s: setattr(s.outputs[0], "offset", 4097))
        case(lambda s: (setattr(s.outputs[0], "offset", 2**64 - 8), setattr(s.outputs[0], "size", 16)))
        case(lambda s: (setattr(s.outputs[0], "offset", 1), setattr(s.outputs[0], "size", 4096)))
        case(lambda s: setattr(s.outputs[0], "size", U64))
        case(lambda s: s.steps.append(jpb.JobStep(copy=jpb.JobCopy(dst=jpb.JobRef(buffer="x"),
                                                                   src=jpb.JobRef(buffer="x", offset=1),
                                                                   count=U64))))
        case(lambda s: s.steps.append(jpb.JobStep(copy=jpb.JobCopy(dst=jpb.JobRef(buffer="x", offset=2**64 - 1),
                                                                   src=jpb.JobRef(buffer="x"), count=2))))
        case(lambda s: s.steps.append(jpb.JobStep(copy=jpb.JobCopy(dst=jpb.JobRef(buffer="x", offset=4000),
                                                                   src=jpb.JobRef(buffer="x"), count=97))))
        case(lambda s: s.steps.append(jpb.JobStep(memset=jpb.JobMemset(dst=jpb.JobRef(buffer="x", offset=2**63),
                                                                       count=2**63))))
        case(lambda s: s.steps.append(jpb.JobStep(memset=jpb.JobMemset(dst=jpb.JobRef(buffer="x"), count=4097))))
        case(lambda s: s.steps[0].launch.args[0].ptr.__setattr__("offset", 4097))
        case(lambda s: s.steps[0].launch.args[0].ptr.__setattr__("offset", U64))
        for i, spec in enumerate(cases):
            with self.subTest(case=i):
                self.refused(spec)

    def test_duplicates_unknown_refs_and_bad_fields(self):
        h = self.http
        cases = {
            "duplicate buffer": lambda s: s.buffers.append(jpb.JobBuffer(name="x", size=8)),
            "duplicate output": lambda s: s.outputs.append(jpb.JobOutput(name="out", buffer="x")),
            "input: unknown buffer": lambda s: setattr(s.inputs[0], "buffer", "nope"),
            "output: unknown buffer": lambda s: setattr(s.outputs[0], "buffer", "nope"),
            "arg: unknown buffer": lambda s: s.steps[0].launch.args[0].ptr.__setattr__("buffer", "nope"),
            "copy: unknown buffer": lambda s: s.steps.append(jpb.JobStep(copy=jpb.JobCopy(
                dst=jpb.JobRef(buffer="x"), src=jpb.JobRef(buffer="nope"), count=1))),
            "memset: unknown buffer": lambda s: s.steps.append(jpb.JobStep(memset=jpb.JobMemset(
                dst=jpb.JobRef(buffer="nope"), count=1))),
            "copy without src": lambda s: s.steps.append(jpb.JobStep(copy=jpb.JobCopy(
                dst=jpb.JobRef(buffer="x"), count=1))),
            "memset without dst": lambda s: s.steps.append(jpb.JobStep(memset=jpb.JobMemset(count=1))),
            "step without op": lambda s: s.steps.append(jpb.JobStep(name="empty")),
            "launch without kernel": lambda s: setattr(s.steps[0].launch, "kernel", ""),
            "arg without value": lambda s: s.steps[0].launch.args.append(jpb.JobArg()),
            "stream 8": lambda s: setattr(s.steps[0], "stream", 8),
            "stream 2^32-1": lambda s: setattr(s.steps[0], "stream", 2**32 - 1),
            "no buffers": lambda s: (s.ClearField("buffers"), s.ClearField("inputs"), s.ClearField("steps"),
                                     s.ClearField("outputs")),
            "buffer size 0": lambda s: s.buffers.append(jpb.JobBuffer(name="z", size=0)),
            "device -1": lambda s: s.buffers.append(jpb.JobBuffer(name="z", size=8, device=-1)),
            "method GET": lambda s: s.outputs.append(jpb.JobOutput(name="o", buffer="x", url=h.url("/upload/o"),
                                                                   method="GET")),
            "retries 21": lambda s: setattr(s, "retries", 21),
            "sha256 63 digits": lambda s: setattr(s.inputs[0], "sha256", "a" * 63),
            "sha256 not hex": lambda s: setattr(s.inputs[0], "sha256", "g" * 64),
            "sha256 65 digits": lambda s: setattr(s.inputs[0], "sha256", "a" * 65),
            "input without url": lambda s: setattr(s.inputs[0], "url", ""),
            "ftp url": lambda s: setattr(s.inputs[0], "url", f"ftp://127.0.0.1:{h.port}/data/4096"),
            "kernel name 64 bytes": lambda s: setattr(s.steps[0].launch, "kernel", "k" * 64),
        }
        for what, mutate in cases.items():
            with self.subTest(what):
                spec = wire_spec(h)
                mutate(spec)
                code = SC.PERMISSION_DENIED if what == "ftp url" else SC.INVALID_ARGUMENT
                self.refused(spec, code)
        # a URL the tenant may not reach: PERMISSION_DENIED, nothing requested
        before = self.http.count()
        spec = wire_spec(h)
        spec.inputs[0].url = f"http://127.0.0.1:{h.port + 1}/data/4096"
        self.refused(spec, SC.PERMISSION_DENIED, "not allowed")
        self.assertEqual(self.http.count(), before)
        self.assertEqual(len(self.list_wire()), 1, "a refused spec left a job")

    def test_job_requests_garbage(self):
        for method in ("GetJob", "WatchJob", "CancelJob"):
            for bad in (b"\x0a\x28" + b"a" * 40, b"\x0a\xff", b"\xff\xff\xff"):
                fn = self.srv.channel.unary_stream if method == "WatchJob" else self.srv.channel.unary_unary
                c = fn(f"/rdev.v1.Device/{method}")
                self.assert_rpc(lambda: list(c(bad, metadata=bearer("alice"), timeout=20)) if method == "WatchJob"
                                else c(bad, metadata=bearer("alice"), timeout=20), SC.INVALID_ARGUMENT)
        # ids are lowercase hex, matched as they are: an id in upper case names no job. One of
        # digits alone (1 job in 1845) has no upper case: another job's id has a letter.
        cased = self.good
        while cased.upper() == cased:
            cased = self.submit_wire(wire_spec(self.http)).id
        for jid in ("", "../../../etc/passwd", cased.upper(), self.good + "x", "*"):
            self.assert_rpc(lambda: self.get(jid), SC.NOT_FOUND)
        for out in ("../" + self.good + ".job", "", "out/..", "*"):
            self.assert_rpc(lambda: self.fetch_wire(self.good, out), SC.NOT_FOUND)
        c = self.srv.channel.unary_stream("/rdev.v1.Device/FetchOutput")
        self.assert_rpc(lambda: list(c(b"\x12\x40" + b"o" * 64, metadata=bearer("alice"), timeout=20)),
                        SC.INVALID_ARGUMENT)
        self.assertEqual(self.fetch_wire(self.good, "out"), inc_u32(self.http.data(4096, 1)))
        self.still_serves()

    def test_unknown_kernel_fails_at_its_step(self):
        spec = wire_spec(self.http, callback_url=self.http.url("/hook/uk"))
        spec.steps.append(jpb.JobStep(name="bogus", launch=jpb.JobLaunch(kernel="no_such_kernel", blocks=1)))
        spec.steps.append(jpb.JobStep(memset=jpb.JobMemset(dst=jpb.JobRef(buffer="x"), value=0, count=4096)))
        jid = self.submit_wire(spec).id
        st = self.wait_final(jid)
        self.assert_state(st, FAILED, failed_at="step 2 (bogus)", code=UNKNOWN_KERNEL, message="no_such_kernel")
        self.assertEqual(st.steps_done, 1)
        self.assertEqual(len(st.kept), 0)
        r = self.cli("job", "watch", jid)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stdout.splitlines()[-1], r" state failed at step 2 \(bogus\): 900007 ")
        self.still_serves()
        # a kernel's arguments that do not match its signature: 900008 at that step
        spec = wire_spec(self.http)
        spec.steps[0].launch.args.append(jpb.JobArg(f64=1.5))
        st = self.wait_final(self.submit_wire(spec).id)
        self.assert_state(st, FAILED, failed_at="step 1 (inc)", code=900008)
        # a trap: 507015 at that step
        spec = wire_spec(self.http)
        spec.steps.append(jpb.JobStep(name="boom", launch=jpb.JobLaunch(kernel="trap", blocks=1)))
        st = self.wait_final(self.submit_wire(spec).id)
        self.assert_state(st, FAILED, failed_at="step 2 (boom)", code=507015)

    def test_webhook_retried_after_failures(self):
        spec = wire_spec(self.http, callback_url=self.http.url("/hookfail/2/hf"))
        rep = self.submit_wire(spec)
        self.assert_state(self.wait_final(rep.id), SUCCEEDED)
        st = self.wait_for(rep.id, lambda s: len(s.hooks) == 5, "5 deliveries recorded")
        first = st.hooks[0]
        self.assertEqual(sname(first.state), "QUEUED")
        self.assertTrue(first.delivered, first)
        self.assertEqual((first.http_status, first.attempts), (200, 3), first)
        self.assertEqual([h.attempts for h in st.hooks[1:]], [1, 1, 1, 1])
        got = self.http.hooks("hf")
        self.assertEqual([json.loads(h["body"])["state"] for h in got],
                         ["queued", "fetching", "running", "delivering", "succeeded"], "each event once")
        self.assertEqual(len(self.http.requested("/hookfail/")), 7)
        for h in got:
            mac = hmac.new(rep.secret.encode(), h["timestamp"].encode() + b"." + bytes.fromhex(h["body_hex"]),
                           hashlib.sha256).hexdigest()
            self.assertEqual(h["signature"], "v1=" + mac)
        # a receiver that always fails: retries spent, recorded as not delivered
        spec = wire_spec(self.http, callback_url=self.http.url("/status/500"), retries=1)
        rep = self.submit_wire(spec)
        self.assert_state(self.wait_final(rep.id), SUCCEEDED)
        st = self.wait_for(rep.id, lambda s: len(s.hooks) == 5, "5 deliveries recorded", timeout=60)
        for h in st.hooks:
            self.assertFalse(h.delivered, h)
            self.assertEqual((h.http_status, h.attempts), (500, 2), h)
            self.assertIn("HTTP 500", h.error)


class NoJobDirJobs(JobTest):
    USE_JOBDIR = False

    def test_job_calls_refused_without_job_dir(self):
        md = bearer("alice")
        stub = self.srv.stub
        calls = {
            "submit": lambda: stub.SubmitJob(jpb.SubmitJobRequest(spec=wire_spec(self.http)), metadata=md,
                                             timeout=20),
            "get": lambda: stub.GetJob(jpb.JobRequest(id="0123456789abcdef"), metadata=md, timeout=20),
            "watch": lambda: list(stub.WatchJob(jpb.JobRequest(id="0123456789abcdef"), metadata=md, timeout=20)),
            "cancel": lambda: stub.CancelJob(jpb.JobRequest(id="0123456789abcdef"), metadata=md, timeout=20),
            "list": lambda: stub.ListJobs(jpb.ListJobsRequest(), metadata=md, timeout=20),
            "fetch": lambda: list(stub.FetchOutput(jpb.FetchOutputRequest(id="0123456789abcdef", output="o"),
                                                   metadata=md, timeout=20)),
        }
        for name, fn in calls.items():
            with self.subTest(name):
                self.assert_rpc(fn, SC.FAILED_PRECONDITION, "job-dir")
        r = self.cli("job", "submit", self.spec_file(self.sq_spec(4096, 1)))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("job-dir", r.stderr)
        self.assertEqual(self.http.count(), 0)
        self.assertFalse(os.path.exists(self.jobdir))


class OpenModeJobs(JobTest):
    """No tenants file: --job-allow gives the anonymous tenant its prefixes."""
    USE_TENANTS = False

    def start(self, *extra, **kw):
        return super().start("--job-allow", self.http.url("/data/") + " " + self.http.url("/upload/"), *extra,
                             **kw)

    def test_job_allow(self):
        spec = self.sq_spec(4096, 2, url=self.http.url("/upload/open"))
        jid, _ = self.submit(spec)
        st = self.wait_final(jid)
        self.assert_state(st, SUCCEEDED)
        self.assertEqual(st.tenant, "anonymous")
        want = squared(self.http.data(4096, 2))
        self.assertEqual(self.fetch_cli(jid, "r"), want)
        self.assertEqual(self.http.uploaded("open")["sha256"], hashlib.sha256(want).hexdigest())
        before = self.http.count()
        spec["callback_url"] = self.http.url("/hook/open")
        r = self.cli("job", "submit", self.spec_file(spec))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("permission denied", r.stderr)
        self.assertEqual(self.http.count(), before)


class TenantRemovedJobs(JobTest):
    def tenants(self):
        allow = self.http.url("/")
        t = {"alice": {"allow": allow}, "gone": {"allow": allow, "max_running_jobs": 1}}
        if getattr(self, "without_gone", False):
            del t["gone"]
        return t

    def reload(self, without_gone):
        self.without_gone = without_gone
        n = len(re.findall(r"tenants loaded", self.srv.log()))
        with open(self.tenants_path + ".tmp", "w") as f:
            f.write(tenants_text(self.tenants()))
        os.replace(self.tenants_path + ".tmp", self.tenants_path)
        self.srv.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while len(re.findall(r"tenants loaded", self.srv.log())) <= n:
            self.assertLess(time.monotonic(), deadline, "no reload" + self.ctx())
            time.sleep(0.05)

    def removed_with_jobs(self):
        """A running and a queued job of tenant gone; a reload removes gone, waits, brings it back."""
        run_id, _ = self.submit(self.delay_spec(30_000_000, name="running"), tenant="gone")
        q_id, _ = self.submit(self.sq_spec(4096, 1, name="queued"), tenant="gone")
        self.wait_for(run_id, lambda s: s.state == RUNNING and s.steps_done == 1, "running", tenant="gone")
        self.assert_state(self.get(q_id, tenant="gone"), QUEUED)
        self.reload(without_gone=True)
        self.assert_rpc(lambda: self.get(q_id, tenant="gone"), SC.UNAUTHENTICATED)
        time.sleep(2.5)  # the scheduler looks at least once a second
        self.reload(without_gone=False)  # the same name and token again
        return run_id, q_id

    def test_reload_removing_a_tenant_fails_its_queued_job(self):
        run_id, q_id = self.removed_with_jobs()
        st = self.get(q_id, tenant="gone")
        self.assert_state(st, FAILED, failed_at="job", message="its tenant was removed before it started")
        self.assertEqual(st.steps_done, 0)
        self.assertEqual(self.http.requested("seed=1"), [], "the removed tenant's queued job fetched")

    def test_queued_job_failed_by_removal_stays_failed_after_restart(self):
        """Found: start_jobs_locked failed the job in memory only; after a restart it ran (fixed)."""
        run_id, q_id = self.removed_with_jobs()
        self.assert_state(self.get(q_id, tenant="gone"), FAILED)
        self.assertEqual(self.record(q_id).status.state, FAILED, "the FAILED state is not on disk")
        self.restart()
        time.sleep(1.5)
        self.assert_state(self.get(q_id, tenant="gone"), FAILED, message="its tenant was removed")
        self.assertEqual(self.http.requested("seed=1"), [], "a job reported FAILED ran after the restart")

    def test_reload_removing_a_tenant_ends_its_running_job(self):
        """tenants.example: removing a tenant ends its open sessions; job.proto: a running job is
        a session of its tenant. So a reload that removes the tenant ends its running job."""
        run_id, q_id = self.removed_with_jobs()
        st = self.get(run_id, tenant="gone")
        self.assert_state(st, FAILED, failed_at="job", message="its tenant was removed")
        self.assertEqual(len(st.kept), 0)
        self.assertEqual(self.record(run_id).status.state, FAILED)


PARTS = {
    "basic": [BasicJobs, TransferJobs, AllowJobs, ResolveJobs],
    "restart": [RestartJobs, StoreJobs, DrainJobs, LimitJobs, ExpiryJobs, TenantRemovedJobs],
    "hostile": [IsolationJobs, HostileJobs, NoJobDirJobs, OpenModeJobs, BinaryJobs],
}


def load_tests(loader, standard_tests, pattern):
    if PART is None:
        return standard_tests
    suite = unittest.TestSuite()
    for cls in PARTS[PART]:
        suite.addTests(loader.loadTestsFromTestCase(cls))
    return suite


if __name__ == "__main__":
    unittest.main(verbosity=2)
