#!/usr/bin/python3
"""tests/python/run_notebook.py [--without-ipywidgets] NOTEBOOK — executes an
rdev example notebook headless and asserts what it shows.

It starts an rdevd ($RDEV_TEST_RDEVD; the sim with one device of 512 MiB
and a job directory, plus $RDEV_TEST_RDEVD_ARGS, through tests/acl/rdevd.py) on a free loopback
port, runs every cell of NOTEBOOK with nbclient on the "python3" kernel
(ipykernel on this interpreter; RDEV_TARGET and PYTHONPATH reach the kernel
through its environment, RDEV_PROGRESS does not: rdev shows its progress as
in a user's notebook), then checks the outputs of the cells it finds by
their tag (cell metadata "tags"):

  every cell  no error output;
  connect     the server's description ("<rdev server ...");
  square      "max abs error: 0.0" (the session of the first cell, current);
  ops         "operators verified" (a dense layer against numpy);
  d2h         the kernel's print "Source data: 123", then "Destination data: 123";
  pipeline    "N/N arrays verified" with N > 0;
  job         a job that succeeded, its fetched output all 7;
  acl         "acl round trip: True" (pyACL's calls through rdev.acl);

and the progress of the cells tagged pipeline (rdev.track) and job
(job.wait()): with ipywidgets (required; Debian's python3-ipywidgets is 6.0),
a display_data output holding an application/vnd.jupyter.widget-view+json
view whose model is in the notebook's widget state (nbclient keeps it): an
HBox of a progress bar at its max, green, and a label with the bar's last
text; no text bar and nothing else on the cell's stderr. With
--without-ipywidgets the kernel cannot import ipywidgets (a stand-in
package on its PYTHONPATH that raises ImportError): no widget, the text
bar's last line on the cell's stderr instead.

It also checks that rdevd exits 0 on SIGTERM. Exits 1 with a message on
failure; with $RDEV_NOTEBOOK_OUT set, it writes the executed notebook there.
"""
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "acl"))
import rdevd  # noqa: E402  (tests/acl/rdevd.py)

# tag -> [(what, regex the cell's text output must match)]
EXPECT = {
    "connect": [("the server's description", r"<rdev server \S+ backend=\w+")],
    "square": [("the max-error line", r"(?m)^max abs error: 0\.0$")],
    "d2h": [("the kernel's print", r"(?m)^Source data: 123$"),
            ("the copied value", r"(?m)^Destination data: 123$"),
            ("the kernel's print before the copied value", r"(?s)Source data: 123\n.*Destination data: 123")],
    "pipeline": [("every array verified", r"(?m)^(?P<n>[1-9]\d*)/(?P=n) arrays verified$")],
    "ops": [("the dense layer checked", r"(?m)^operators verified$")],
    "job": [("the job's end", r"(?m)^job \S+ succeeded: 1024 values fetched, all 7: True$")],
    "acl": [("the round trip", r"(?m)^acl round trip: True$")],
}

# tag -> the last text of the cell's progress bar (the widget's label, or the text bar's line)
PROGRESS = {
    "pipeline": r"arrays: \[#{30}\] 100% 8/8 arrays \d+\.\ds",
    "job": r"job \S+ succeeded: \[#{30}\] 100% 1/1 steps \d+\.\ds",
}
VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"


class Failure(Exception):
    pass


def kernel_spec_dir(tmp):
    """A JUPYTER_PATH entry holding a "python3" kernelspec that runs this
    interpreter, or None when the installed one already does."""
    try:
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
        try:
            argv = KernelSpecManager().get_kernel_spec("python3").argv
            if argv and os.path.exists(argv[0]) and os.path.samefile(argv[0], sys.executable):
                return None
        except NoSuchKernel:
            pass
    except ImportError as e:
        raise Failure(f"jupyter_client is missing ({e}): install python3-nbclient and python3-ipykernel")
    path = os.path.join(tmp, "jupyter")
    os.makedirs(os.path.join(path, "kernels", "python3"))
    with open(os.path.join(path, "kernels", "python3", "kernel.json"), "w") as f:
        json.dump({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                   "display_name": "Python 3 (rdev test)", "language": "python"}, f)
    return path


def text_of(cell):
    """A code cell's stream and text/plain outputs, joined."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif out.get("output_type") in ("execute_result", "display_data"):
            parts.append(out.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def stdout_of(cell):
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


def dump(nb):
    """Every code cell's outputs, for the failure message."""
    lines = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tags = ",".join(cell.get("metadata", {}).get("tags", [])) or "-"
        lines.append(f"--- cell {i} [{tags}]")
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "error":
                lines.append(f"  error: {out.get('ename')}: {out.get('evalue')}")
                lines.extend("    " + re.sub(r"\x1b\[[0-9;]*m", "", t) for t in out.get("traceback", []))
            elif kind == "stream":
                lines.extend(f"  {out.get('name')}: {t}" for t in out.get("text", "").splitlines())
            else:
                lines.extend(f"  {kind}: {t}" for t in out.get("data", {}).get("text/plain", "").splitlines())
    return "\n".join(lines)


def stderr_of(cell):
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stderr")


def widget_bars(nb, cell):
    """The progress widgets the cell displayed, as (model id, the bar's
    state, the label's state) from the notebook's widget state; raises
    Failure when a view's model or its children are not there."""
    state = nb.metadata.get("widgets", {}).get(STATE, {}).get("state", {})
    bars = []
    for out in cell.get("outputs", []):
        view = out.get("data", {}).get(VIEW) if out.get("output_type") == "display_data" else None
        if view is None:
            continue
        model_id = view.get("model_id")
        if not model_id:
            raise Failure(f"a widget view without a model_id: {view}")
        model = state.get(model_id)
        if model is None:
            raise Failure(f"the widget view's model {model_id} is not in the notebook's widget state "
                          f"(it holds {len(state)} models)")
        if model.get("model_name") != "HBoxModel":
            raise Failure(f"the widget view's model {model_id} is a {model.get('model_name')}, not an HBoxModel")
        children = []
        for ref in model.get("state", {}).get("children", []):
            child = state.get(ref.replace("IPY_MODEL_", "", 1)) if ref.startswith("IPY_MODEL_") else None
            if child is None:
                raise Failure(f"the box {model_id}'s child {ref!r} is not in the widget state")
            children.append(child)
        names = [c.get("model_name") for c in children]
        if len(children) != 2 or not re.fullmatch(r"(Int)?ProgressModel", names[0] or "") or names[1] != "LabelModel":
            raise Failure(f"the box {model_id} holds {names}, not a progress bar and a label")
        bars.append((model_id, children[0]["state"], children[1]["state"]))
    return bars


def check_progress(nb, cell, tag, widgets):
    """The cell's progress: a widget kept at its end, or (without widgets) the text bar's line."""
    last = PROGRESS[tag]
    err = stderr_of(cell)
    bars = widget_bars(nb, cell)
    if not widgets:
        if bars:
            raise Failure(f"cell {tag!r} displayed {len(bars)} widgets without ipywidgets")
        lines = [line for line in re.split(r"[\r\n]|\x1b\[2K", err) if line]
        if not lines or not any(re.fullmatch(last, line) for line in lines):
            raise Failure(f"cell {tag!r}'s stderr lacks the text bar's last line /{last}/: {err!r}")
        return
    if err:
        raise Failure(f"cell {tag!r} wrote to stderr (a text bar, or a warning) beside its widget: {err!r}")
    labels = [label.get("value", "") for _, _, label in bars]
    kept = [(m, bar, label) for m, bar, label in bars if re.fullmatch(last, label.get("value", ""))]
    if len(kept) != 1:
        raise Failure(f"cell {tag!r}: expected one widget whose label is /{last}/, found {len(kept)} "
                      f"among {len(bars)} widget views (labels {labels})")
    model_id, bar, _ = kept[0]
    if not (bar.get("max", 0) > 0 and bar.get("value") == bar.get("max") and bar.get("bar_style") == "success"):
        raise Failure(f"cell {tag!r}: the widget {model_id}'s bar is not full and green: value={bar.get('value')} "
                      f"max={bar.get('max')} bar_style={bar.get('bar_style')!r}")


def check(nb, widgets=True):
    """Raises Failure naming the first thing the outputs lack."""
    errors = [(i, o) for i, c in enumerate(nb.cells) if c.cell_type == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        i, o = errors[0]
        raise Failure(f"cell {i} raised {o.get('ename')}: {o.get('evalue')}")
    tagged = {}
    for cell in nb.cells:
        for tag in cell.get("metadata", {}).get("tags", []):
            tagged.setdefault(tag, []).append(cell)
    for tag, wanted in EXPECT.items():
        cells = tagged.get(tag, [])
        if len(cells) != 1:
            raise Failure(f"expected one code cell tagged {tag!r}, found {len(cells)}")
        cell = cells[0]
        if cell.cell_type != "code" or cell.get("execution_count") is None:
            raise Failure(f"the cell tagged {tag!r} is not an executed code cell")
        # the kernel print is a stream write of this cell: look only at its stdout there
        text = stdout_of(cell) if tag == "d2h" else text_of(cell)
        for what, regex in wanted:
            if not re.search(regex, text):
                raise Failure(f"cell {tag!r} lacks {what} (/{regex}/); its output:\n{text}")
        if tag in PROGRESS:
            check_progress(nb, cell, tag, widgets)


def hide_ipywidgets(tmp):
    """A PYTHONPATH entry whose ipywidgets package raises ImportError."""
    path = os.path.join(tmp, "no-ipywidgets")
    os.makedirs(os.path.join(path, "ipywidgets"))
    with open(os.path.join(path, "ipywidgets", "__init__.py"), "w") as f:
        f.write('raise ImportError("ipywidgets is hidden (run_notebook.py --without-ipywidgets)")\n')
    return path


def main():
    args = sys.argv[1:]
    widgets = "--without-ipywidgets" not in args
    args = [a for a in args if a != "--without-ipywidgets"]
    if len(args) != 1:
        sys.exit(f"usage: {sys.argv[0]} [--without-ipywidgets] NOTEBOOK.ipynb")
    notebook = os.path.abspath(args[0])
    server = os.environ.get("RDEV_TEST_RDEVD")
    if not server:
        sys.exit("run_notebook: set RDEV_TEST_RDEVD to the rdevd to test")
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # debugpy's notice, here and in the kernel
    os.environ.pop("RDEV_PROGRESS", None)  # the kernel shows progress where people look, as a user's does
    try:
        import nbclient
        import nbformat
    except ImportError as e:
        sys.exit(f"run_notebook: {e} (install python3-nbclient, python3-nbformat and python3-ipykernel)")
    if widgets:
        try:
            import ipywidgets  # noqa: F401  (the kernel runs this interpreter, so it imports the same)
        except ImportError as e:
            sys.exit(f"run_notebook: {e} (install python3-ipywidgets, or pass --without-ipywidgets)")

    nb = nbformat.read(notebook, as_version=4)
    tmp = tempfile.mkdtemp(prefix="rdev-notebook-")
    proc, addr, stdout_path = rdevd.start(server, "--sim-devices", "1", "--sim-mem", "512M",
                                          "--job-dir", os.path.join(tmp, "jobs"))
    failure, code = None, None
    try:
        spec = kernel_spec_dir(tmp)
        if spec:
            os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (spec, os.environ.get("JUPYTER_PATH")) if p)
        # the kernel inherits this process's environment (PYTHONPATH: the staged package);
        # it runs in tmp, so relative PYTHONPATH entries are made absolute
        os.environ["RDEV_TARGET"] = addr
        if os.environ.get("PYTHONPATH"):
            os.environ["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) if p else p
                                                        for p in os.environ["PYTHONPATH"].split(os.pathsep))
        if not widgets:
            os.environ["PYTHONPATH"] = os.pathsep.join(
                p for p in (hide_ipywidgets(tmp), os.environ.get("PYTHONPATH")) if p)
        client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                         resources={"metadata": {"path": tmp}})
        try:
            client.execute()
        except nbclient.exceptions.CellExecutionError:
            pass  # the error output is in the notebook: check() reports it with the others
        except nbclient.exceptions.CellTimeoutError as e:
            failure = f"a cell ran past 120 s: {e}"
        except Exception as e:  # the kernel did not start, or died
            failure = f"the notebook did not run: {type(e).__name__}: {e}"
        if failure is None:
            try:
                check(nb, widgets)
            except Failure as e:
                failure = str(e)
    finally:
        code = rdevd.stop(proc, stdout_path)
        out = os.environ.get("RDEV_NOTEBOOK_OUT")
        if out:
            nbformat.write(nb, out)
        shutil.rmtree(tmp, ignore_errors=True)
    if failure is None and code != 0:
        failure = f"rdevd exited {code}, not 0"
    if failure is not None:
        print(dump(nb), file=sys.stderr)
        print(f"FAIL {os.path.basename(notebook)}: {failure}", file=sys.stderr)
        return 1
    print(f"ok {os.path.basename(notebook)}: {sum(c.cell_type == 'code' for c in nb.cells)} code cells ran, "
          f"outputs as expected ({'widget' if widgets else 'text'} progress); rdevd exited 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
