"""tests/python/rdev_pkg/test_notebook_jobs.py — rdev.jobs against a real
rdevd started here with --job-dir (a temporary directory; open mode on
loopback, so only kept outputs): a dict spec and a YAML file read by the
`rdev` tool's own reader (its errors, with line and field), submit, wait,
watch, status, list, cancel, fetch into numpy and into a file, a failed
job's code, the async variants (and a cancelled task ending its watch),
Ctrl-C during a watch and a wait leaving the connection usable, the GIL
released during a watch, progress bars (text where asked, nothing in a
non-interactive process by default, a widget kept in a real Jupyter
kernel), and the job's repr and HTML.
"""
import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time

import numpy as np
import pytest

import rdev

MiB = 1 << 20


@pytest.fixture(scope="module")
def job_server(server):
    """A private rdevd with a job directory (as conftest's Server starts them)."""
    d = tempfile.mkdtemp(prefix="rdev-nb-jobs-")
    srv = type(server)("--sim-devices", "1", "--sim-mem", "64M", "--job-dir", d, "--job-runners", "2")
    yield srv
    assert srv.stop() == 0
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def jobs(job_server):
    c = rdev.jobs.Client(job_server.addr, timeout=10)
    yield c
    c.close()


def write_spec(value=123, blocks=16, delay_us=0, name="nb-write"):
    steps = []
    if delay_us:
        steps.append({"launch": "delay_us", "blocks": 1, "args": [{"u32": delay_us}], "name": "wait"})
    steps.append({"launch": "write_i32", "blocks": blocks, "args": ["x", {"i32": value}], "name": "write"})
    return {"name": name, "buffers": [{"name": "x", "size": 4 * blocks}], "steps": steps,
            "outputs": [{"name": "out", "buffer": "x"}]}


@contextlib.contextmanager
def sigint_after(delay):
    """SIGINT to the main thread `delay` seconds into the block, as Ctrl-C does."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(delay, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()
        signal.signal(signal.SIGINT, old)


# ---- specs: one reader, the tool's ---------------------------------------------------------------


def test_check_uses_the_tools_reader():
    assert rdev.jobs.check(write_spec()) is True
    # a bare number needs the server's signatures: the reader says so
    bare = write_spec()
    bare["steps"][-1]["args"] = ["x", 5]
    assert rdev.jobs.check(bare) is False
    with pytest.raises(rdev.Error) as ei:
        rdev.jobs.check({"buffers": 3})
    assert ei.value.code == rdev.jobs._rdev.INVALID_PARAM
    assert "buffers: must be a list" in str(ei.value) and "line 1, column" in str(ei.value)


def test_yaml_file_errors_name_line_and_field(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: bad\nbuffers:\n  - {name: x, size: 12Q}\n")
    with pytest.raises(rdev.Error) as ei:
        rdev.jobs.check(p)
    assert "line 3" in str(ei.value) and "buffers[0]" in str(ei.value), str(ei.value)


# ---- submit, wait, fetch, list, status ----------------------------------------------------------


def test_submit_dict_wait_fetch(jobs):
    job = jobs.submit(write_spec(value=77, blocks=32))
    assert job.id and job.secret and job.name == "nb-write"
    st = job.wait(timeout=60)
    assert st.state == "succeeded" and st.final
    assert st.steps_done == st.steps_total == 1
    assert [k["name"] for k in st.kept] == ["out"] and st.kept[0]["bytes"] == 128
    a = job.fetch("out", dtype=np.int32)
    assert a.dtype == np.int32 and a.tolist() == [77] * 32
    assert job.fetch("out", dtype=np.int32, shape=(4, 8)).shape == (4, 8)
    assert job.status.state == "succeeded"
    assert any(s.id == job.id for s in jobs.list())
    assert rdev.jobs.get(job.id, client=jobs).last.state == "succeeded"


def test_submit_yaml_file_bare_numbers_and_fetch_to_file(jobs, tmp_path):
    spec = tmp_path / "job.yaml"
    spec.write_text("name: from-yaml\nbuffers:\n  - {name: x, size: 64}\n"
                    "steps:\n  - {launch: write_i32, blocks: 16, args: [x, 9]}\n"  # 9 typed by the server's Info
                    "outputs:\n  - {name: out, buffer: x}\n")
    job = jobs.submit(str(spec))
    job.wait(timeout=60)
    path = job.fetch("out", tmp_path / "out.bin")
    assert os.fspath(path) == os.fspath(tmp_path / "out.bin")
    assert np.fromfile(path, np.int32).tolist() == [9] * 16
    assert sorted(os.listdir(tmp_path)) == ["job.yaml", "out.bin"], "a temporary file was left"


def test_failed_job_raises_with_the_servers_code(jobs):
    spec = {"name": "trap", "buffers": [{"name": "x", "size": 64}],
            "steps": [{"launch": "trap", "blocks": 1, "args": [], "name": "boom"}]}
    job = jobs.submit(spec)
    with pytest.raises(rdev.Error) as ei:
        job.wait(timeout=60)
    assert ei.value.code == 507015 and "step 1 (boom)" in str(ei.value), str(ei.value)
    st = job.wait(timeout=60, check=False)
    assert st.state == "failed" and st.code == 507015 and st.failed_at.startswith("step")


def test_bad_spec_from_server_and_unknown_job(jobs):
    with pytest.raises(rdev.Error) as ei:  # parsed fine; rdevd refuses an output past its buffer
        jobs.submit({"buffers": [{"name": "x", "size": 64}],
                     "outputs": [{"name": "o", "buffer": "x", "offset": 4096, "size": 64}]})
    assert ei.value.code == rdev.jobs._rdev.INVALID_PARAM
    with pytest.raises(rdev.Error) as ei:
        jobs.job("nosuchjob")
    assert ei.value.code == rdev.jobs._rdev.INVALID_RESOURCE_HANDLE
    job = jobs.submit(write_spec())
    job.wait(timeout=60)
    with pytest.raises(rdev.Error) as ei:
        job.fetch("nosuchoutput")
    assert ei.value.code == rdev.jobs._rdev.INVALID_RESOURCE_HANDLE


def test_watch_yields_each_change_until_final(jobs):
    job = jobs.submit(write_spec(delay_us=600_000))
    seen = [st.state for st in job.watch()]
    assert seen[-1] == "succeeded" and "running" in seen, seen
    assert job.last.state == "succeeded"


def test_cancel(jobs):
    job = jobs.submit(write_spec(delay_us=3_000_000))
    time.sleep(0.3)
    st = job.cancel()
    assert st.state in ("cancelled", "succeeded") and st.final
    with pytest.raises(rdev.Error) as ei:
        job.wait(timeout=60)
    assert ei.value.code == rdev.jobs._rdev.CANCELLED or st.state == "succeeded"


def test_wait_timeout_leaves_the_job_running(jobs):
    job = jobs.submit(write_spec(delay_us=2_000_000))
    t0 = time.monotonic()
    with pytest.raises(rdev.Error) as ei:
        job.wait(timeout=0.5)
    assert ei.value.code == rdev.jobs._rdev.RT_WAIT_TIMEOUT
    assert time.monotonic() - t0 < 1.5
    assert job.wait(timeout=60).state == "succeeded"


def test_default_client_follows_the_current_session(job_server, monkeypatch):
    monkeypatch.delenv("RDEV_TARGET", raising=False)
    with rdev.connect(job_server.addr) as s:
        c = rdev.jobs.client()
        assert c.target == s.target and rdev.jobs.client() is c
        job = rdev.jobs.submit(write_spec(value=5))
        assert job.client is c
        assert job.wait(timeout=60).state == "succeeded"
        assert any(st.id == job.id for st in rdev.jobs.list())


# ---- asyncio ------------------------------------------------------------------------------------


def test_async_submit_wait_fetch(jobs):
    async def main():
        job = await rdev.jobs.submit_async(write_spec(value=3), client=jobs)
        st = await job.wait_async(timeout=60)
        a = await job.fetch_async("out", dtype=np.int32)
        listed = await rdev.jobs.list_async(client=jobs)
        return st, a, listed, job

    st, a, listed, job = asyncio.run(main())
    assert st.state == "succeeded" and a.tolist() == [3] * 16
    assert any(s.id == job.id for s in listed)


def test_async_cancelled_task_ends_its_watch(jobs):
    job = jobs.submit(write_spec(delay_us=3_000_000))

    async def main():
        task = asyncio.create_task(job.wait_async())
        await asyncio.sleep(0.3)
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - t0

    took = asyncio.run(main())
    assert took < 1.0, f"the cancelled wait took {took:.2f} s to end"
    assert job.wait(timeout=60).state == "succeeded"  # the job itself goes on


# ---- Ctrl-C, threads ----------------------------------------------------------------------------


def test_ctrl_c_during_wait_leaves_the_client_usable(jobs):
    job = jobs.submit(write_spec(delay_us=3_000_000))
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with sigint_after(0.4):
            job.wait()
    took = time.monotonic() - t0
    assert took < 1.5, f"KeyboardInterrupt after {took:.2f} s"
    assert job.status.state in ("queued", "running")  # the same connection answers
    assert job.wait(timeout=60).state == "succeeded"  # and a new watch works
    assert job.fetch("out", dtype=np.int32).tolist() == [123] * 16


def test_ctrl_c_during_watch_generator(jobs):
    job = jobs.submit(write_spec(delay_us=3_000_000))
    seen = []
    with pytest.raises(KeyboardInterrupt):
        with sigint_after(0.4):
            for st in job.watch():
                seen.append(st.state)
    assert seen, "no status before the interrupt"
    assert job.wait(timeout=60).state == "succeeded"


def test_watch_releases_the_gil(jobs):
    job = jobs.submit(write_spec(delay_us=1_000_000))
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.01)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        job.wait(timeout=60)
    finally:
        stop.set()
        t.join()
    assert len(ticks) > 30, f"another thread ran only {len(ticks)} times during a 1 s wait"


# ---- progress, display --------------------------------------------------------------------------


@pytest.fixture
def progress_auto():
    before = rdev.set_progress(None)
    yield
    rdev.set_progress(before)


def test_wait_progress_text_when_asked(jobs, capsys, progress_auto):
    job = jobs.submit(write_spec(delay_us=500_000))
    capsys.readouterr()
    job.wait(timeout=60, progress=True)
    err = capsys.readouterr().err
    assert f"job {job.id}" in err and "succeeded" in err and "[" in err, repr(err)


def test_wait_progress_quiet_when_not_interactive(jobs, capsys, progress_auto):
    job = jobs.submit(write_spec(delay_us=300_000))
    capsys.readouterr()
    job.wait(timeout=60)
    assert capsys.readouterr().err == ""


def test_wait_progress_widget_in_a_notebook(kernel, job_server):
    """A real kernel with the installed ipywidgets (Debian's is 6.0): one
    widget, kept when the job ends, its bar full and green, its label the
    job's last state."""
    pytest.importorskip("ipywidgets")
    cell = kernel.run(f"""
        import rdev
        jobs = rdev.jobs.Client({job_server.addr!r})
        job = jobs.submit({write_spec(delay_us=300_000)!r})
        job.wait(timeout=60)
        print(job.id)
    """)
    assert cell.ok, cell.describe()
    job_id = cell.stdout.strip()
    assert cell.stderr == "" and len(cell.views) == 1, cell.describe()
    box = cell.views[0]
    assert cell.state(box)["_model_name"] == "HBoxModel" and "state" in cell.opens[box]
    bar, label = (cell.state(m) for m in cell.children(box))
    assert bar["bar_style"] == "success" and bar["value"] == bar["max"] == 2, bar  # steps: wait, write
    assert label["value"].startswith(f"job {job_id} succeeded: ["), label["value"]
    assert box not in cell.closed, "the job's widget was removed"


def test_job_repr_and_html(jobs):
    job = jobs.submit(write_spec())
    job.wait(timeout=60)
    r, h = repr(job), job._repr_html_()
    assert job.id in r and "succeeded" in r and "steps 1/1" in r
    assert job.id in h and "succeeded" in h and "<progress" in h and "out" in h
