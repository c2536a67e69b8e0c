"""tests/python/rdev_pkg/conftest.py — fixtures of the Python package's tests
(pytest): one real rdevd for the whole run on a free loopback port, on the
backend under test ($RDEV_TEST_RDEVD_ARGS, as for the other contract
suites), started with tests/acl/rdevd.py; a session on it per test; a
Jupyter kernel (ipykernel on this interpreter, started with jupyter_client
as a notebook's is) that runs code as a cell and hands back what the cell
sent: its streams, its displays, its widgets' comm messages.

Environment (tests/CMakeLists.txt sets it): RDEV_TEST_RDEVD, the rdevd to
start; PYTHONPATH with the staged package (build/python).
"""
import json
import os
import sys
import textwrap
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "acl"))
import rdevd as rdevd_proc  # noqa: E402  tests/acl/rdevd.py

import rdev  # noqa: E402

RDEVD = os.environ.get("RDEV_TEST_RDEVD", os.path.join(HERE, "..", "..", "..", "build", "server", "rdevd"))
SERVER_ARGS = ("--sim-devices", "2", "--sim-mem", "512M")


class Server:
    """A running rdevd: addr, and stdout_path (its stdout, where kernel print
    goes on the acl backend)."""

    def __init__(self, *args):
        self.proc, self.addr, self.stdout_path = rdevd_proc.start(RDEVD, *args)

    def stop(self):
        """SIGTERM; rdevd's exit status."""
        return rdevd_proc.stop(self.proc, self.stdout_path)


@pytest.fixture(scope="session")
def server():
    srv = Server(*SERVER_ARGS)
    yield srv
    assert srv.stop() == 0, "rdevd did not exit cleanly"


@pytest.fixture
def target(server, monkeypatch):
    """The server's address, also as $RDEV_TARGET."""
    monkeypatch.setenv("RDEV_TARGET", server.addr)
    return server.addr


@pytest.fixture
def session(target):
    with rdev.connect(target) as s:
        yield s


@pytest.fixture
def on_acl():
    """Whether the server runs the acl backend (over the ACL test double)."""
    return "--backend acl" in os.environ.get("RDEV_TEST_RDEVD_ARGS", "")


# ---- a Jupyter kernel ---------------------------------------------------------------------------

VIEW = "application/vnd.jupyter.widget-view+json"


class Cell:
    """What one execution sent on the kernel's iopub channel: ok (the
    reply's status), error, stdout, stderr, views (the model ids of the
    widget views it displayed), states (comm id -> the widget's state after
    each of its messages, the comm_open's first), opens (comm id -> the
    comm_open's data), closed (the comm ids it closed)."""

    def __init__(self, msgs, reply):
        self.msgs = msgs
        self.ok = reply["content"]["status"] == "ok"
        self.error = None if self.ok else f"{reply['content'].get('ename')}: {reply['content'].get('evalue')}"
        streams = {"stdout": [], "stderr": []}
        self.views, self.states, self.opens, self.closed = [], {}, {}, set()
        for m in msgs:
            kind, c = m["msg_type"], m["content"]
            if kind == "stream":
                streams[c["name"]].append(c["text"])
            elif kind == "display_data" and VIEW in c["data"]:
                self.views.append(c["data"][VIEW]["model_id"])
            elif kind == "comm_open" and c.get("target_name") == "jupyter.widget":
                self.opens[c["comm_id"]] = c["data"]
                self.states[c["comm_id"]] = [dict(c["data"].get("state", c["data"]))]
            elif kind == "comm_msg" and c["comm_id"] in self.states and c["data"].get("method") == "update":
                history = self.states[c["comm_id"]]
                history.append(dict(history[-1], **c["data"]["state"]))
            elif kind == "comm_close":
                self.closed.add(c["comm_id"])
        self.stdout, self.stderr = "".join(streams["stdout"]), "".join(streams["stderr"])

    def state(self, model_id):
        """The widget's last state."""
        return self.states[model_id][-1]

    def children(self, model_id):
        """The model ids of a box's children, in its last state."""
        return [ref[len("IPY_MODEL_"):] for ref in self.state(model_id)["children"]]

    def describe(self):
        return json.dumps({"error": self.error, "stdout": self.stdout, "stderr": self.stderr,
                           "messages": [(m["msg_type"], m["content"]) for m in self.msgs]}, default=str)[:4000]


class Kernel:
    """A python3 kernel on this interpreter: the environment of this process
    (PYTHONPATH: the staged package), less RDEV_PROGRESS (the kernel's rdev
    shows progress as in a user's notebook); run(code) executes code (dedented)
    as a cell and returns its Cell."""

    def __init__(self, tmp):
        from jupyter_client import KernelManager
        env = {k: v for k, v in os.environ.items() if k != "RDEV_PROGRESS"}
        env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
        if env.get("PYTHONPATH"):
            env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
        spec = os.path.join(tmp, "kernels", "python3")
        os.makedirs(spec)
        with open(os.path.join(spec, "kernel.json"), "w") as f:
            json.dump({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                       "display_name": "Python 3 (rdev test)", "language": "python"}, f)
        self.km = KernelManager(kernel_name="python3")
        self.km.kernel_spec_manager.kernel_dirs.insert(0, os.path.join(tmp, "kernels"))
        self.km.start_kernel(env=env, cwd=tmp)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def run(self, code, timeout=120):
        msg_id = self.kc.execute(textwrap.dedent(code))
        deadline = time.monotonic() + timeout
        msgs = []
        while True:
            m = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
            msgs.append(m)
        while True:
            reply = self.kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                return Cell(msgs, reply)

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


@pytest.fixture
def kernel(tmp_path):
    pytest.importorskip("jupyter_client", reason="python3-ipykernel and python3-nbclient are not installed")
    k = Kernel(str(tmp_path))
    yield k
    k.close()
