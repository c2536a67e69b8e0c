#!/usr/bin/python3
"""tests/bench/jobs/bench_jobs.py — what a detached job costs over curl moving
the same bytes with no device in between, measured in one run.

Starts its own HTTP server (tests/jobs/httpd.py) and rdevd (sim, 1 device,
a tenants file whose one tenant may reach that server, a job directory),
then, in rounds whose order rotates (each method goes first as often):
1. job: `rdev job submit SPEC --wait` of a spec with one buffer of SIZE
   bytes, one input (GET /data/SIZE?seed=S into it) and one output (PUT of
   the buffer to /upload/bench-job); no steps: a pure transfer through the
   device's memory. Timed two ways: the CLI's wall time (process start to
   exit: submit, the run, the watch seeing the final state), and the job's
   own started_ms -> finished_ms (GetJob over the wire: no CLI start, no
   queueing). The phases (fetch, deliver) are timed, for information, from
   the CLI's `state ...` lines as they arrive (WatchJob reports a state
   change at once; the lines trail it by the watch's hand-offs).
2. job+square (information): the same with one step, square_f32 in place
   over the whole buffer between fetch and deliver.
3. curl pipe, the baseline: `curl -sS -f URL | curl -sS -f -T - UPLOAD_URL`
   (chunked upload of the GET's body as it arrives), wall time and curl's
   own clocks (the larger of the two time_totals).
4. curl GET, a second reference: `curl -sS -f -o /dev/null URL`.
[--diagnose] 5. curl PUT of a file of SIZE bytes (Content-Length, as rdevd
   sends it) with -T FILE: the upload side alone; and the CPU seconds of
   rdevd, httpd.py and the client processes per method.

Every round uses a new seed, so every round's bytes differ; the sha256 the
server computes of each upload (GET /uploaded/NAME/sha256) must equal that
of the bytes sent (/datasha/SIZE?seed=S; for job+square the squares,
computed here with numpy from the 1 MiB block the stream repeats), or the
run fails. One warm-up round, not counted, comes first.

Ratios are throughput ratios job/curl (curl's seconds over the job's), the
median over rounds of the per-round ratios. Targets: job / curl pipe >= 0.8,
wall against wall and the job's own clock against curl's. A missed target is
printed MISS; it fails the run (exit 1) only with --strict. Errors (a job
not SUCCEEDED, a curl failing, a digest that differs, rdevd exiting non-zero
on SIGTERM) exit 1. The last line is a summary of key=value pairs
(job_pipe_ratio_wall, job_pipe_ratio, ..., targets_met).

    bench_jobs.py [--rdevd PATH] [--rdev PATH] [--quick] [--size MIB] [--rounds N]
                  [--rdevd-args "ARGS"] [--strict] [--diagnose]

--rdevd: default $RDEV_TEST_RDEVD, else build/server/rdevd; --rdev: default
$RDEV_TEST_RDEV, else client/rdev beside the rdevd's server/ directory.
--quick: 16 MiB, 1 round (CI smoke run: no timing asserted). Full: 256 MiB,
7 rounds.
"""
import argparse
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

MiB = 1 << 20
TARGET = 0.8  # job / curl pipe, throughput
TOKEN = "bench-jobs-token"
UPLOADS = {"job": "bench-job", "jobsq": "bench-jobsq", "pipe": "bench-pipe", "put": "bench-put"}


class BenchError(Exception):
    """A failure that makes the run invalid (exit 1)."""


# ---- processes ----------------------------------------------------------------------------


def cpu_s(pid):
    """utime + stime of a live process, seconds (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Httpd:
    """tests/jobs/httpd.py; dies when our end of its stdin closes."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "jobs", "httpd.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.kill()
            raise BenchError(f"httpd.py did not start (said {line!r})")
        self.port = int(line)
        self.base = f"http://127.0.0.1:{self.port}"

    def get(self, path):
        with urllib.request.urlopen(self.base + path, timeout=120) as r:
            return r.read()

    def json(self, path):
        return json.loads(self.get(path))

    def stop(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Rdevd:
    """An rdevd of this run: a tenants file admitting TOKEN to reach the httpd, a job directory."""

    def __init__(self, path, tmp, httpd, sim_mem, extra):
        tenants = os.path.join(tmp, "tenants")
        with open(tenants, "w") as f:
            f.write("[tenant bench]\n"
                    f"token = sha256:{hashlib.sha256(TOKEN.encode()).hexdigest()}\n"
                    f"allow = {httpd.base}/\n"
                    "max_running_jobs = 1\n")
        self.errpath = os.path.join(tmp, "rdevd.stderr")
        self.args = [path, "--listen", "127.0.0.1:0", "--log-level", "warn", "--sim-devices", "1", "--sim-mem",
                     sim_mem, "--tenants", tenants, "--job-dir", os.path.join(tmp, "jobs"), *extra]
        with open(self.errpath, "w") as err:
            self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=err, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("rdevd listening on "):
            self.kill()
            raise BenchError(f"rdevd did not start: {line!r}\n{self.log()}")
        self.addr = line.split()[-1]

    def log(self):
        with open(self.errpath, errors="replace") as f:
            return f.read()[-4000:]

    def stop(self):
        """SIGTERM; its exit status."""
        self.proc.terminate()
        code = self.proc.wait(timeout=60)
        self.proc.stdout.close()
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


class Wire:
    """GetJob over gRPC (stubs generated from proto/ by tests/python/stubs.py)."""

    def __init__(self, addr):
        import grpc  # noqa: E402  (python3-grpcio)
        import stubs  # noqa: E402  tests/python/stubs.py
        self.gen, _, rdev_pb2_grpc, _ = stubs.generate(os.path.join(ROOT, "proto"))
        from rdev.v1 import job_pb2  # noqa: E402  generated
        self.job_pb2 = job_pb2
        self.channel = grpc.insecure_channel(addr)
        self.stub = rdev_pb2_grpc.DeviceStub(self.channel)

    def status(self, job_id):
        return self.stub.GetJob(self.job_pb2.JobRequest(id=job_id), metadata=[("authorization", "Bearer " + TOKEN)],
                                timeout=30)

    def close(self):
        self.channel.close()
        shutil.rmtree(self.gen, ignore_errors=True)


# ---- the methods ----------------------------------------------------------------------------


class Bench:
    def __init__(self, args, tmp, httpd, rdevd, wire):
        self.args, self.tmp, self.httpd, self.rdevd, self.wire = args, tmp, httpd, rdevd, wire
        self.size = args.size_bytes
        self.curl = shutil.which("curl") or "/usr/bin/curl"
        if not os.access(self.curl, os.X_OK):
            raise BenchError("no curl binary (deploy/install-deps.sh installs Debian's curl)")
        self.env = dict(os.environ, RDEV_TARGET=rdevd.addr, RDEV_TOKEN=TOKEN)
        self.env.pop("RDEV_CA", None)
        self.env.pop("RDEV_CERT", None)
        self.env.pop("RDEV_KEY", None)
        self.want = {}  # seed -> (sha256 of the bytes, of their squares)
        self.putfile = None

    def data_url(self, seed):
        return f"{self.httpd.base}/data/{self.size}?seed={seed}"

    def upload_url(self, method):
        return f"{self.httpd.base}/upload/{UPLOADS[method]}"

    def prepare(self, seed):
        """The digests a round's uploads must have; warms the httpd's block of seed (outside any timing)."""
        if seed in self.want:
            return
        got = self.httpd.json(f"/datasha/{self.size}?seed={seed}")
        import numpy as np  # only here: the squares' digest
        block = self.httpd.get(f"/data/{MiB}?seed={seed}")
        with np.errstate(all="ignore"):
            a = np.frombuffer(block, np.float32)
            sq = (a * a).astype(np.float32).tobytes()
        h, mine = hashlib.sha256(), hashlib.sha256()
        for _ in range(self.size // MiB):
            h.update(sq)
            mine.update(block)
        if mine.hexdigest() != got["sha256"] or got["length"] != self.size:
            raise BenchError(f"httpd's /datasha for seed {seed} is not that of its /data block repeated")
        self.want[seed] = (got["sha256"], h.hexdigest())
        if self.args.diagnose:
            self.putfile = os.path.join(self.tmp, "put.bin")
            with open(self.putfile, "wb") as f:
                for _ in range(self.size // MiB):
                    f.write(block)

    def verify(self, method, seed, what):
        want = self.want[seed][1 if method == "jobsq" else 0]
        got = self.httpd.json(f"/uploaded/{UPLOADS[method]}/sha256")
        if got["length"] != self.size or got["sha256"] != want or got["method"] != "PUT":
            raise BenchError(f"{what}, seed {seed}: the upload is {got['length']} bytes by {got['method']}, sha256 "
                             f"{got['sha256']}; expected {self.size} bytes by PUT, sha256 {want}")

    def spec(self, method, seed):
        path = os.path.join(self.tmp, f"{method}.yaml")
        steps = ""
        if method == "jobsq":
            steps = (f"steps: [{{launch: square_f32, blocks: 64, args: [x, x, {{u32: {self.size // 4}}}], "
                     "name: square}]\n")
        with open(path, "w") as f:
            f.write(f"name: bench-{method}\n"
                    f"buffers: [{{name: x, size: {self.size}}}]\n"
                    f"inputs: [{{buffer: x, url: \"{self.data_url(seed)}\"}}]\n"
                    + steps +
                    f"outputs: [{{name: out, buffer: x, url: \"{self.upload_url(method)}\", method: PUT}}]\n"
                    "timeout: 10m\n")
        return path

    def run_job(self, method, seed):
        """{wall, own, fetch, steps, deliver, ...} of one job run by `rdev job submit --wait`."""
        spec = self.spec(method, seed)
        what = "job" if method == "job" else "job+square"
        c0, d0 = children_cpu_s(), cpu_s(self.rdevd.proc.pid)
        h0 = cpu_s(self.httpd.proc.pid)
        t0 = time.perf_counter()
        p = subprocess.Popen([self.args.rdev, "job", "submit", spec, "--wait"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=self.env, bufsize=1)
        lines, states = [], {}
        for line in p.stdout:
            t = time.perf_counter()
            lines.append(line.rstrip("\n"))
            m = re.match(r"\S+ state (\w+)", line)
            if m and m.group(1) not in states:
                states[m.group(1)] = t
        err = p.stderr.read()
        code = p.wait()
        t1 = time.perf_counter()
        res = {"wall": t1 - t0, "cpu_rdevd": cpu_s(self.rdevd.proc.pid) - d0,
               "cpu_httpd": cpu_s(self.httpd.proc.pid) - h0, "cpu_client": children_cpu_s() - c0}
        p.stdout.close()
        p.stderr.close()
        if code != 0 or not lines:
            raise BenchError(f"{what}, seed {seed}: rdev job submit --wait exited {code}:\n"
                             + "\n".join(lines[-12:]) + ("\n" + err.strip() if err.strip() else "")
                             + f"\nrdevd stderr tail:\n{self.rdevd.log()}")
        st = self.wire.status(lines[0].strip())
        if st.state != self.wire.job_pb2.SUCCEEDED:
            raise BenchError(f"{what}, seed {seed}: job {st.id} is {st.state} ({st.failed_at}: {st.message})")
        if st.fetched_bytes != self.size or st.delivered_bytes != self.size:
            raise BenchError(f"{what}, seed {seed}: fetched {st.fetched_bytes}, delivered {st.delivered_bytes} "
                             f"bytes; expected {self.size}")
        res["own"] = (st.finished_ms - st.started_ms) / 1e3
        res["queued"] = (st.started_ms - st.submitted_ms) / 1e3
        for a, b, k in (("fetching", "running", "fetch"), ("running", "delivering", "steps"),
                        ("delivering", "succeeded", "deliver")):
            if a in states and b in states:
                res[k] = states[b] - states[a]
        self.verify(method, seed, what)
        return res

    def curl_cmd(self, *args):
        return [self.curl, "-sS", "-f", "--noproxy", "*", *args]

    def run_pipe(self, seed):
        """curl URL | curl -T - UPLOAD_URL: wall, and curl's own clocks."""
        c0, h0 = children_cpu_s(), cpu_s(self.httpd.proc.pid)
        t0 = time.perf_counter()
        get = subprocess.Popen(self.curl_cmd("-w", "%{stderr}%{time_total} %{size_download} %{http_code}\n",
                                             self.data_url(seed)),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        put = subprocess.Popen(self.curl_cmd("-T", "-", "-o", "/dev/null", "-w",
                                             "%{time_total} %{size_upload} %{http_code}\n", self.upload_url("pipe")),
                               stdin=get.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        get.stdout.close()  # the pipe is put's now
        put_out, put_err = put.communicate()
        get_err = get.stderr.read()
        get.stderr.close()
        gcode, pcode = get.wait(), put.returncode
        t1 = time.perf_counter()
        res = {"wall": t1 - t0, "cpu_rdevd": 0.0, "cpu_httpd": cpu_s(self.httpd.proc.pid) - h0,
               "cpu_client": children_cpu_s() - c0}
        g, p = get_err.decode().split("\n")[-2:-1], put_out.decode().split()
        if gcode or pcode or not g or len(p) != 3:
            raise BenchError(f"curl pipe, seed {seed}: GET exited {gcode}, PUT {pcode}: "
                             f"{get_err.decode().strip()} {put_err.decode().strip()}")
        g = g[0].split()
        if int(g[1]) != self.size or p[2] != "201":  # size_upload counts the chunks' framing too
            raise BenchError(f"curl pipe, seed {seed}: GET {g[1]} bytes (HTTP {g[2]}), PUT HTTP {p[2]}")
        res["own"] = max(float(g[0]), float(p[0]))
        self.verify("pipe", seed, "curl pipe")
        return res

    def run_get(self, seed):
        c0, h0 = children_cpu_s(), cpu_s(self.httpd.proc.pid)
        t0 = time.perf_counter()
        p = subprocess.run(self.curl_cmd("-o", "/dev/null", "-w", "%{time_total} %{size_download}",
                                         self.data_url(seed)), capture_output=True, text=True)
        t1 = time.perf_counter()
        out = p.stdout.split()
        if p.returncode or len(out) != 2 or int(out[1]) != self.size:
            raise BenchError(f"curl GET, seed {seed}: exit {p.returncode}, {p.stdout!r} {p.stderr.strip()}")
        return {"wall": t1 - t0, "own": float(out[0]), "cpu_rdevd": 0.0,
                "cpu_httpd": cpu_s(self.httpd.proc.pid) - h0, "cpu_client": children_cpu_s() - c0}

    def run_put(self, seed):
        """curl -T FILE (Content-Length known, as rdevd's PUT): the upload side alone."""
        c0, h0 = children_cpu_s(), cpu_s(self.httpd.proc.pid)
        t0 = time.perf_counter()
        p = subprocess.run(self.curl_cmd("-T", self.putfile, "-o", "/dev/null", "-w",
                                         "%{time_total} %{size_upload} %{http_code}", self.upload_url("put")),
                           capture_output=True, text=True)
        t1 = time.perf_counter()
        out = p.stdout.split()
        if p.returncode or len(out) != 3 or int(out[1]) != self.size or out[2] != "201":
            raise BenchError(f"curl PUT, seed {seed}: exit {p.returncode}, {p.stdout!r} {p.stderr.strip()}")
        # put.bin holds the seed prepare() wrote last: the round's own seed
        self.verify("put", seed, "curl PUT")
        return {"wall": t1 - t0, "own": float(out[0]), "cpu_rdevd": 0.0,
                "cpu_httpd": cpu_s(self.httpd.proc.pid) - h0, "cpu_client": children_cpu_s() - c0}

    def run(self, method, seed):
        if method in ("job", "jobsq"):
            return self.run_job(method, seed)
        return {"pipe": self.run_pipe, "get": self.run_get, "put": self.run_put}[method](seed)


# ---- the table ----------------------------------------------------------------------------


class Table:
    HEAD = f"{'what':<44} {'rounds':>6} | {'median':>9} {'GB/s':>6} | {'ratio':>6} {'target':>7} {'':4}"

    def __init__(self):
        self.summary = {}
        self.met = self.total = 0
        self.misses = []

    def head(self):
        print(self.HEAD)
        print("-" * len(self.HEAD))

    def time_row(self, what, ts, size):
        if not ts:
            return
        m = statistics.median(ts)
        print(f"{what:<44} {len(ts):>6} | {m:>7.3f} s {size / m / 1e9:>6.2f} |", flush=True)

    def ratio_row(self, what, name, base, job, target):
        pairs = [(b, j) for b, j in zip(base, job) if b is not None and j is not None]
        if not pairs:
            return
        ratio = statistics.median(b / j for b, j in pairs)
        verdict = ""
        if target:
            self.total += 1
            ok = ratio >= TARGET
            self.met += ok
            verdict = "PASS" if ok else "MISS"
            if not ok:
                self.misses.append(name)
        print(f"{what:<44} {len(pairs):>6} | {'':>9} {'':>6} | {ratio:>6.2f} "
              f"{('>= ' + str(TARGET)) if target else 'info':>7} {verdict:4}", flush=True)
        self.summary[name] = f"{ratio:.2f}"


# ---- the run ------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rdevd", help="the rdevd to start (default: $RDEV_TEST_RDEVD, else build/server/rdevd)")
    ap.add_argument("--rdev", help="the rdev tool (default: $RDEV_TEST_RDEV, else client/rdev beside rdevd's server/)")
    ap.add_argument("--quick", action="store_true", help="16 MiB, 1 round (CI smoke run)")
    ap.add_argument("--size", type=int, help="MiB moved per run (default 256; --quick 16)")
    ap.add_argument("--rounds", type=int, help="rounds counted, after one warm-up (default 7; --quick 1)")
    ap.add_argument("--rdevd-args", default="", help="more rdevd arguments, e.g. \"--sim-host-view off\"")
    ap.add_argument("--no-square", action="store_true", help="leave out the job+square_f32 variant")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--diagnose", action="store_true",
                    help="also curl -T FILE (the upload side alone) and CPU seconds per method")
    args = ap.parse_args()
    size_mib = args.size or (16 if args.quick else 256)
    rounds = args.rounds or (1 if args.quick else 7)
    if size_mib < 1 or rounds < 1 or size_mib * MiB // 4 >= 1 << 32:
        ap.error("--size: 1..16383 MiB; --rounds: at least 1")
    args.size_bytes = size_mib * MiB
    args.rdevd = args.rdevd or os.environ.get("RDEV_TEST_RDEVD") or os.path.join(ROOT, "build", "server", "rdevd")
    args.rdev = args.rdev or os.environ.get("RDEV_TEST_RDEV") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(args.rdevd))), "client", "rdev")
    for p in (args.rdevd, args.rdev):
        if not os.access(p, os.X_OK):
            print(f"bench_jobs: error: no executable {p}", file=sys.stderr)
            return 1

    methods = ["job"] + ([] if args.no_square else ["jobsq"]) + ["pipe", "get"] + (["put"] if args.diagnose else [])
    t = {m: [] for m in methods}
    tmp = tempfile.mkdtemp(prefix="bench-jobs-")
    httpd = rdevd = wire = None
    table = Table()
    t_start = time.perf_counter()
    try:
        httpd = Httpd()
        rdevd = Rdevd(args.rdevd, tmp, httpd, f"{(2 * args.size_bytes >> 20) + 64}M", shlex.split(args.rdevd_args))
        wire = Wire(rdevd.addr)
        bench = Bench(args, tmp, httpd, rdevd, wire)
        print(f"rdev jobs bench ({'quick' if args.quick else 'full'}): {size_mib} MiB per run, {rounds} round(s) "
              f"after 1 warm-up; rdevd {rdevd.addr} (sim, 1 device{', ' + args.rdevd_args if args.rdevd_args else ''}),"
              f" httpd.py {httpd.base}; {os.cpu_count()} CPUs; curl {bench.curl}")
        print("job = rdev job submit SPEC --wait (GET into a device buffer, then PUT of it); curl pipe = curl URL | "
              "curl -T - URL.\nSeconds are medians; GB/s = bytes / median (1 GB = 1e9 B); ratio = job/curl "
              "throughput, the median\nof per-round ratios (rounds interleaved, who goes first rotates). Every "
              "upload's sha256 verified.\n", flush=True)
        for r in range(rounds + 1):  # round 0: warm-up
            seed = r + 1
            bench.prepare(seed)
            order = methods[r % len(methods):] + methods[:r % len(methods)]
            for m in order:
                res = bench.run(m, seed)
                if r:
                    t[m].append(res)
        if rdevd.proc.poll() is not None:
            raise BenchError(f"rdevd exited ({rdevd.proc.returncode}) during the run:\n{rdevd.log()}")

        size = args.size_bytes

        def col(m, k):
            return [x.get(k) for x in t.get(m, [])]

        def have(m, k):
            return [v for v in col(m, k) if v is not None]

        table.head()
        table.time_row("job: submit -> final, rdev CLI wall", have("job", "wall"), size)
        table.time_row("job: started_ms -> finished_ms (server)", have("job", "own"), size)
        table.time_row("  fetch phase (GET into the device)", have("job", "fetch"), size)
        table.time_row("  deliver phase (PUT from the device)", have("job", "deliver"), size)
        if "jobsq" in t:
            table.time_row("job+square_f32: CLI wall", have("jobsq", "wall"), size)
            table.time_row("job+square_f32: started -> finished", have("jobsq", "own"), size)
            table.time_row("  square_f32 step (in place)", have("jobsq", "steps"), size)
        table.time_row("curl | curl -T -: wall", have("pipe", "wall"), size)
        table.time_row("curl | curl -T -: curl's time_total", have("pipe", "own"), size)
        table.time_row("curl -o /dev/null (GET): wall", have("get", "wall"), size)
        table.time_row("curl -o /dev/null (GET): time_total", have("get", "own"), size)
        if "put" in t:
            table.time_row("curl -T FILE (PUT, Content-Length): wall", have("put", "wall"), size)
            table.time_row("curl -T FILE: time_total", have("put", "own"), size)
        print()
        table.ratio_row("job / curl pipe, wall", "job_pipe_ratio_wall", col("pipe", "wall"), col("job", "wall"),
                        True)
        table.ratio_row("job / curl pipe, own clocks (server / curl)", "job_pipe_ratio", col("pipe", "own"),
                        col("job", "own"), True)
        if "jobsq" in t:
            table.ratio_row("job+square / curl pipe, wall", "jobsq_pipe_ratio_wall", col("pipe", "wall"),
                            col("jobsq", "wall"), False)
            table.ratio_row("job+square / curl pipe, own clocks", "jobsq_pipe_ratio", col("pipe", "own"),
                            col("jobsq", "own"), False)
        table.ratio_row("job / curl GET, own clocks", "job_get_ratio", col("get", "own"), col("job", "own"), False)
        table.ratio_row("  fetch phase / curl GET (time_total)", "fetch_get_ratio", col("get", "own"),
                        col("job", "fetch"), False)
        if "put" in t:
            table.ratio_row("  deliver phase / curl -T FILE (time_total)", "deliver_put_ratio", col("put", "own"),
                            col("job", "deliver"), False)
        if args.diagnose:
            print("\nCPU seconds per run (medians): rdevd / httpd.py / client processes (rdev or curl)")
            for m in methods:
                print(f"  {m:<6} " + " / ".join(f"{statistics.median(have(m, k)):.2f}"
                                                  for k in ("cpu_rdevd", "cpu_httpd", "cpu_client")))
            print(f"  job queued (submitted -> started), median: {statistics.median(have('job', 'queued')) * 1e3:.0f}"
                  " ms")
        for k, m, f in (("job_wall_s", "job", "wall"), ("job_server_s", "job", "own"), ("pipe_wall_s", "pipe", "wall"),
                        ("pipe_curl_s", "pipe", "own"), ("get_curl_s", "get", "own")):
            table.summary[k] = f"{statistics.median(have(m, f)):.3f}"
        wire.close()
        wire = None
        code = rdevd.stop()
        rdevd = None
        if code != 0:
            raise BenchError(f"rdevd exited with {code} on SIGTERM")
    except (BenchError, OSError, subprocess.SubprocessError, ValueError) as e:
        print(f"bench_jobs: error: {e}", file=sys.stderr, flush=True)
        return 1
    except Exception as e:  # a gRPC error, above all
        print(f"bench_jobs: error: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    finally:
        if wire is not None:
            wire.close()
        if rdevd is not None:
            rdevd.kill()
        if httpd is not None:
            httpd.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    missed = f" (missed: {', '.join(table.misses)})" if table.misses else ""
    print(f"\nTargets met: {table.met}/{table.total}{missed}; run time {time.perf_counter() - t_start:.0f} s.")
    table.summary = {"size_mib": str(size_mib), **table.summary, "targets_met": f"{table.met}/{table.total}"}
    print(" ".join(f"{k}={v}" for k, v in table.summary.items()), flush=True)
    return 1 if args.strict and table.misses else 0


if __name__ == "__main__":
    sys.exit(main())
