"""rdev/jobs.py — detached jobs from Python (docs/jobs.md, docs/python.md):
submit a spec (a dict, or a YAML or JSON file in the `rdev job` schema),
then look at, watch, wait for, cancel and list jobs, and fetch what they
kept, as numpy arrays or files; async variants for asyncio.

Specs are read by the `rdev` tool's own reader, inside the extension
(_rdev.Jobs.submit): a dict becomes JSON text, which that reader takes as
YAML. Calls go over a jobs connection (_rdev.Jobs: no device session),
one per target and credentials, made from the current session's (or the
environment's) target and credentials. A watch or fetch runs in a helper
thread on a connection of its own, so that Ctrl-C or a task's
cancellation interrupts it (rdev_jobs_interrupt) within 200 ms without
spoiling the shared one.
"""
import asyncio
import contextlib
import html
import json
import os
import queue
import tempfile
import threading
import time

import numpy as np

from . import _common, _progress, _rdev

_FINAL = ("succeeded", "failed", "cancelled")


class JobStatus:
    """A job's status as rdevd sent it: id, name, tenant, state ("queued",
    "fetching", "running", "delivering", "succeeded", "failed",
    "cancelled"), failed_at, code, message, fetched_bytes, fetch_total,
    steps_done, steps_total, delivered_bytes, deliver_total, submitted_ms,
    started_ms, finished_ms (Unix ms; 0: not yet), hooks and kept (lists of
    dicts: kept outputs have name, bytes, expires_ms)."""

    def __init__(self, d):
        self.__dict__.update(d)

    @property
    def final(self):
        return self.state in _FINAL

    def error(self):
        """The rdev.Error a failed or cancelled job ends with (None otherwise)."""
        if self.state == "failed":
            where = f" at {self.failed_at}" if self.failed_at else ""
            return _common.error(self.code, f"job {self.id} failed{where}: {self.message or _rdev.strerror(self.code)}")
        if self.state == "cancelled":
            return _common.error(_rdev.CANCELLED, f"job {self.id} was cancelled")
        return None

    def _phase(self):
        """(done, total, unit, what) of the phase the job is in."""
        if self.state == "fetching":
            return self.fetched_bytes, self.fetch_total or None, "B", "fetching"
        if self.state == "delivering":
            return self.delivered_bytes, self.deliver_total or None, "B", "delivering"
        if self.state in ("running",) or (self.final and self.steps_total):
            return self.steps_done, self.steps_total or None, "steps", self.state
        return 0, None, "B", self.state

    def summary(self):
        """One line: state, where it failed, steps, bytes."""
        line = f"{self.state}"
        if self.state == "failed":
            line += f" at {self.failed_at}: {self.code} {self.message}"
        line += f"; steps {self.steps_done}/{self.steps_total}"
        if self.fetch_total:
            line += f"; fetched {self.fetched_bytes}/{self.fetch_total} B"
        if self.deliver_total:
            line += f"; delivered {self.delivered_bytes}/{self.deliver_total} B"
        return line

    def __repr__(self):
        return f"<rdev.jobs.JobStatus {self.id} {self.summary()}>"


def _html_status(st, secret=None):
    e = html.escape
    color = {"succeeded": "green", "failed": "red", "cancelled": "gray"}.get(st.state, "blue")
    rows = [("state", f"<b style='color:{color}'>{e(st.state)}</b>"
                      + (f" at {e(st.failed_at)}: {st.code} {e(st.message)}" if st.state == "failed" else "")),
            ("steps", f"{st.steps_done} / {st.steps_total} "
                      f"<progress value='{st.steps_done}' max='{max(st.steps_total, 1)}'></progress>")]
    if st.fetch_total:
        rows.append(("fetched", f"{st.fetched_bytes:,} / {st.fetch_total:,} bytes"))
    if st.deliver_total:
        rows.append(("delivered", f"{st.delivered_bytes:,} / {st.deliver_total:,} bytes"))
    if st.kept:
        rows.append(("outputs", ", ".join(f"<code>{e(k['name'])}</code> ({k['bytes']:,} bytes"
                                          f"{'' if k['expires_ms'] else ', gone'})" for k in st.kept)))
    body = "".join(f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>" for k, v in rows)
    name = f" {e(st.name)}" if st.name else ""
    return f"<div><b>rdev job</b> <code>{e(st.id)}</code>{name}<table>{body}</table></div>"


# ---- connections --------------------------------------------------------------------------------


class Client:
    """A jobs connection to rdevd (no device session). Arguments left None
    come from the environment, as for rdev.connect()."""

    def __init__(self, target=None, token=None, *, ca=None, cert=None, key=None, timeout=None):
        self.target = target or os.environ.get("RDEV_TARGET") or "127.0.0.1:50051"
        ms = 0 if timeout is None else max(1, int(timeout * 1000))
        self._args = (self.target, token, ca, cert, key, ms)
        self._raw = _rdev.Jobs(*self._args)

    def _own(self):
        """A connection of its own, for one watch or fetch."""
        return _rdev.Jobs(*self._args)

    def close(self):
        self._raw.close()

    def __repr__(self):
        return f"<rdev.jobs.Client {self.target}{' closed' if self._raw.closed else ''}>"

    def submit(self, spec):
        """Queues the job spec describes: a dict in the `rdev job` schema, or
        the path of a YAML or JSON file (bytes: the spec's text). The spec
        is read by the `rdev` tool's reader; a bad one raises rdev.Error
        (INVALID_PARAM) naming line, column and field. Returns a Job."""
        job_id, secret, status = self._raw.submit(_spec_text(spec))
        return Job(self, job_id, JobStatus(status), secret)

    def job(self, job_id):
        """The Job of an id (its status asked of the server)."""
        return Job(self, job_id, JobStatus(self._raw.get(job_id)))

    def list(self):
        """The tenant's jobs, newest first, as JobStatus."""
        return [JobStatus(d) for d in self._raw.list()]


def _spec_text(spec):
    if isinstance(spec, dict):
        return json.dumps(spec).encode()
    if isinstance(spec, (bytes, bytearray, memoryview)):
        return bytes(spec)
    if isinstance(spec, (str, os.PathLike)):
        with open(spec, "rb") as f:
            return f.read()
    raise TypeError(f"a job spec is a dict, a path or bytes, not {type(spec).__name__}")


_clients = {}
_clients_lock = threading.Lock()


def client(session=None):
    """The jobs connection for `session`'s target and credentials (default:
    the current session's; without one, the environment's), made once."""
    s = session
    if s is None:
        s = _common.cur_session.get() or _common.default_session()
    key = (s.target, *s._credentials) if s is not None else (None, None, None, None, None, 0)
    with _clients_lock:
        c = _clients.get(key)
        if c is None or c._raw.closed:
            target, token, ca, cert, keyf, ms = key
            c = _clients[key] = Client(target, token, ca=ca, cert=cert, key=keyf,
                                       timeout=ms / 1000 if ms else None)
        return c


def check(spec):
    """Checks a spec (dict, path or bytes) with the `rdev` tool's reader,
    asking no server: raises rdev.Error (INVALID_PARAM) naming its first
    problem. Returns False when only the server's kernel signatures can
    type a bare number in it (submit asks for them), else True."""
    return _rdev.job_parse(_spec_text(spec))


def submit(spec, *, client=None):
    """Queues a job (see Client.submit) on `client` (default: the current
    session's target); returns its Job."""
    return (client or _default_client()).submit(spec)


def get(job_id, *, client=None):
    """The Job of an id."""
    return (client or _default_client()).job(job_id)


def list(*, client=None):  # noqa: A001 - rdev.jobs.list(), as `rdev job list`
    """The tenant's jobs, newest first, as JobStatus."""
    return (client or _default_client()).list()


def _default_client():
    return client()


# ---- running blocking calls: interruptible, or in an executor -----------------------------------


def _interruptibly(conn, fn):
    """Runs fn() in a helper thread while this thread waits (Ctrl-C
    interrupts the wait and conn, so the helper ends within 200 ms)."""
    box, done = {}, threading.Event()

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the waiting thread
            box["error"] = e
        finally:
            done.set()

    threading.Thread(target=run, name="rdev-job", daemon=True).start()
    try:
        while not done.wait(0.1):
            pass
    except BaseException:
        conn.interrupt()
        done.wait(5)
        raise
    if "error" in box:
        raise box.pop("error")
    return box.get("value")


async def _in_executor(conn, fn):
    """Runs fn() in the loop's executor; cancelling the awaiting task
    interrupts conn (when given) and waits for fn to end."""
    fut = asyncio.get_running_loop().run_in_executor(None, fn)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        if conn is not None:
            conn.interrupt()
        with contextlib.suppress(BaseException):
            await fut
        raise


async def submit_async(spec, *, client=None):
    c = client or _default_client()
    return await _in_executor(None, lambda: c.submit(spec))


async def list_async(*, client=None):
    c = client or _default_client()
    return await _in_executor(None, c.list)


# ---- jobs ---------------------------------------------------------------------------------------


class Job:
    """A detached job: id, secret (the key of its webhooks' signatures; only
    a Job from submit has it), name, and its latest status seen (last)."""

    def __init__(self, client, job_id, status, secret=None):
        self.client, self.id, self.secret, self.last = client, job_id, secret, status
        self.name = status.name

    def __repr__(self):
        return f"<rdev.jobs.Job {self.id} {self.name!r} {self.last.summary()}>"

    def _repr_html_(self):
        return _html_status(self.last)

    @property
    def status(self):
        """The status now (asks the server)."""
        self.last = JobStatus(self.client._raw.get(self.id))
        return self.last

    @property
    def state(self):
        return self.status.state

    def cancel(self):
        """Cancels the job unless it is final; returns its final status."""
        self.last = JobStatus(self.client._raw.cancel(self.id))
        return self.last

    def _watch(self, conn, on_status, reconnect):
        conn.watch(self.id, on_status, int(reconnect * 1000))

    def watch(self, *, progress=None, reconnect=60):
        """Yields the job's status now and at each change, until it is final
        (the final status last), with a progress bar where people look
        (progress: True anywhere, False never). A lost rdevd is watched
        again for `reconnect` seconds. Ctrl-C, or closing the generator,
        ends the watch within 200 ms."""
        return self._watch_gen(progress, reconnect, None)

    def _watch_gen(self, progress, reconnect, deadline):
        """watch(), raising Error RT_WAIT_TIMEOUT once the monotonic deadline (None: none) passed."""
        conn = self.client._own()
        q = queue.SimpleQueue()
        end = object()

        def run():
            try:
                self._watch(conn, q.put, reconnect)
                q.put(end)
            except BaseException as e:
                q.put((end, e))
            finally:
                conn.close()

        t = threading.Thread(target=run, name="rdev-job-watch", daemon=True)
        bar = _JobBar(self, progress)
        t.start()
        ok = False
        try:
            while True:
                try:
                    item = q.get(timeout=0.1)
                except queue.Empty:
                    bar.tick()
                    if deadline is not None and time.monotonic() >= deadline:
                        raise _common.error(_rdev.RT_WAIT_TIMEOUT, f"job {self.id} is not final yet") from None
                    continue
                if item is end:
                    ok = True
                    return
                if isinstance(item, tuple) and item and item[0] is end:
                    raise item[1]
                self.last = JobStatus(item)
                bar.show(self.last)
                yield self.last
        finally:
            if not ok:
                conn.interrupt()
            bar.close(ok and self.last.state == "succeeded")

    def wait(self, timeout=None, *, progress=None, check=True, reconnect=60):
        """Waits until the job is final (with a progress bar where people
        look) and returns its final status; with check, a failed job raises
        rdev.Error with the job's code (where it failed and why in the
        message), a cancelled one Error CANCELLED. timeout in seconds (None:
        for ever), else Error RT_WAIT_TIMEOUT with the job still running."""
        deadline = None if timeout is None else time.monotonic() + timeout
        watch = self._watch_gen(progress, reconnect, deadline)
        try:
            for _ in watch:
                pass
        finally:
            watch.close()
        if check and self.last.error() is not None:
            raise self.last.error()
        return self.last

    async def wait_async(self, timeout=None, *, check=True, reconnect=60):
        """wait() for asyncio (no progress bar): runs the watch in the loop's
        executor; cancelling the task ends the watch within 200 ms."""
        conn = self.client._own()

        def run():
            try:
                self._watch(conn, lambda d: setattr(self, "last", JobStatus(d)), reconnect)
            finally:
                conn.close()

        if timeout is None:
            await _in_executor(conn, run)
        else:
            try:
                await asyncio.wait_for(_in_executor(conn, run), timeout)
            except asyncio.TimeoutError:
                raise _common.error(_rdev.RT_WAIT_TIMEOUT, f"job {self.id} not final after {timeout} s") from None
        if check and self.last.error() is not None:
            raise self.last.error()
        return self.last

    async def status_async(self):
        self.last = JobStatus(await _in_executor(None, lambda: self.client._raw.get(self.id)))
        return self.last

    async def cancel_async(self):
        self.last = JobStatus(await _in_executor(None, lambda: self.client._raw.cancel(self.id)))
        return self.last

    def _fetch(self, conn, name, sink):
        conn.fetch(self.id, name, sink)

    def fetch(self, name, path=None, *, dtype=np.uint8, shape=None, progress=None):
        """Fetches the output `name` the job kept: without path, as a numpy
        array of dtype (and shape, when given; else 1-d); with path, into
        that file (written beside it and renamed over it once whole;
        returns the path). Ctrl-C ends it within 200 ms (no file is left)."""
        conn = self.client._own()
        bar = _progress.bar(None, f"fetch {name}", progress=progress)
        try:
            if path is None:
                sink = _ArraySink(bar)
                _interruptibly(conn, lambda: self._fetch(conn, name, sink))
                return sink.array(dtype, shape)
            return _interruptibly(conn, lambda: _fetch_file(self, conn, name, path, bar))
        finally:
            bar.close()
            conn.close()

    async def fetch_async(self, name, path=None, *, dtype=np.uint8, shape=None):
        """fetch() for asyncio (no progress bar); cancelling the task ends it."""
        conn = self.client._own()
        try:
            if path is None:
                sink = _ArraySink(_progress.NONE)
                await _in_executor(conn, lambda: self._fetch(conn, name, sink))
                return sink.array(dtype, shape)
            return await _in_executor(conn, lambda: _fetch_file(self, conn, name, path, _progress.NONE))
        finally:
            conn.close()


class _ArraySink:
    """fetch's chunks into one numpy buffer, made at the first chunk."""

    def __init__(self, bar):
        self.buf, self.got, self.bar = None, 0, bar

    def __call__(self, chunk, total):
        if self.buf is None:
            self.buf = np.empty(total, np.uint8)
            self.bar.set(0, total)
        n = len(chunk)
        self.buf[self.got:self.got + n] = np.frombuffer(chunk, np.uint8)
        self.got += n
        self.bar.update(n)

    def array(self, dtype, shape):
        buf = self.buf if self.buf is not None else np.empty(0, np.uint8)
        a = buf.view(np.dtype(dtype))
        return a.reshape(shape) if shape is not None else a


def _fetch_file(job, conn, name, path, bar):
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", dir=os.path.dirname(path) or ".")
    ok = False
    try:
        with os.fdopen(fd, "wb") as f:
            def sink(chunk, total):
                if bar.total is None:
                    bar.set(0, total)
                f.write(chunk)
                bar.update(len(chunk))

            job._fetch(conn, name, sink)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
        ok = True
        return path
    finally:
        if not ok:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


class _JobBar:
    """A job's progress bar: the phase it is in (fetching: bytes, running:
    steps, delivering: bytes), kept when the job ends."""

    def __init__(self, job, progress):
        self.bar = _progress.bar(None, f"job {job.id}", progress=progress, delay=0.0, leave=True)

    def show(self, st):
        done, total, unit, what = st._phase()
        self.bar.unit = unit
        self.bar.set(done, total, f"job {st.id} {what}")

    def tick(self):
        self.bar.update(0)

    def close(self, ok):
        self.bar.close(ok)

