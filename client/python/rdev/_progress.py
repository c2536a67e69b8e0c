"""rdev/_progress.py — progress bars where people look: in Jupyter an
ipywidgets bar (6 or later, imported only then; a text bar without it),
on a terminal (stderr a tty) a text bar on stderr, in any other process
nothing unless asked. The setting (set_progress, $RDEV_PROGRESS) and a
call's own `progress=` argument choose: True shows bars in any process,
False none, None (the default) where people look. track() (rdev.track)
shows such a bar over an iterable.

A bar appears only once its work has lasted `delay` seconds (1 s), so
quick transfers and waits stay quiet.
"""
import os
import sys
import threading
import time


def _from_env():
    v = os.environ.get("RDEV_PROGRESS", "").strip().lower()
    if v in ("0", "off", "no", "false"):
        return False
    if v in ("1", "on", "yes", "true"):
        return True
    return None


_setting = _from_env()
_lock = threading.Lock()


def set_progress(on):
    """Progress bars for transfers, waits and jobs: True in any process,
    False never, None where people look (a notebook, a terminal). Returns
    the setting before."""
    global _setting
    if on not in (True, False, None):
        raise ValueError(f"set_progress takes True, False or None, not {on!r}")
    with _lock:
        before, _setting = _setting, on
    return before


def in_notebook():
    """Whether this process is a Jupyter kernel (IPython's ZMQ shell)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # an IPython too old or half imported: no notebook
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _isatty(f):
    try:
        return bool(f.isatty())
    except Exception:  # a closed or replaced stream
        return False


def kind(progress=None):
    """'widget', 'text' or None: the bar a call with this `progress`
    argument shows (None: the setting)."""
    on = _setting if progress is None else bool(progress)
    if on is False:
        return None
    if in_notebook():
        return "widget"
    if on is True or _isatty(sys.stderr):
        return "text"
    return None


def _bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


class _Null:
    """No bar."""
    shown, total, unit = False, None, "B"

    def update(self, n=1):
        pass

    def set(self, n, total=None, desc=None):
        pass

    def close(self, ok=True):
        pass


NONE = _Null()


class Bar:
    """A bar of `total` units (None: unknown, the elapsed time shows),
    drawn as a text line or an ipywidgets bar once it has lasted delay
    seconds; `leave` keeps its last drawing after close."""

    _WIDTH = 30

    def __init__(self, total, desc, kind, *, unit="B", delay=1.0, leave=False, file=None):
        self.total, self.desc, self.kind, self.unit, self.leave = total, desc, kind, unit, leave
        self.n, self.shown, self.closed = 0, False, False
        self.file = file if file is not None else sys.stderr
        self._t0 = time.monotonic()
        self._delay, self._drawn_at = delay, 0.0
        self._widget = None

    def update(self, n=1):
        self.n += n
        self._draw()

    def set(self, n, total=None, desc=None):
        """Sets the count (and the total and description, when given)."""
        changed = (total is not None and total != self.total) or (desc is not None and desc != self.desc)
        self.n = n
        if total is not None:
            self.total = total
        if desc is not None:
            self.desc = desc
        self._draw(force=changed)

    def text(self):
        """The bar as one line of text."""
        elapsed = time.monotonic() - self._t0
        if self.total:
            frac = min(1.0, self.n / self.total)
            fill = int(frac * self._WIDTH)
            amount = (f"{_bytes(self.n)}/{_bytes(self.total)}" if self.unit == "B"
                      else f"{self.n}/{self.total} {self.unit}")
            return f"{self.desc}: [{'#' * fill}{'.' * (self._WIDTH - fill)}] {frac * 100:3.0f}% {amount} {elapsed:.1f}s"
        amount = "" if not self.n else (_bytes(self.n) if self.unit == "B" else f"{self.n} {self.unit}") + " "
        return f"{self.desc}: {amount}{elapsed:.1f}s"

    def _draw(self, force=False):
        if self.closed:
            return
        now = time.monotonic()
        if now - self._t0 < self._delay:
            return
        if self.shown and not force and now - self._drawn_at < 0.1:
            return
        self._drawn_at = now
        if self.kind == "widget" and self._draw_widget():
            return
        self.kind = "text"
        try:
            self.file.write("\r\033[2K" + self.text())
            self.file.flush()
        except Exception:  # a closed stderr: no bar
            pass
        self.shown = True

    def _draw_widget(self):
        """Draws as an ipywidgets bar; False when ipywidgets cannot (then text)."""
        if self._widget is None:
            try:
                classes = _widget_classes()
                from IPython.display import display
            except ImportError:
                return False
            if classes is None:
                return False
            box_cls, bar_cls, label_cls = classes
            bar = bar_cls(min=0, max=1, value=0, description="")
            label = label_cls("")
            self._widget = (box_cls([bar, label]), bar, label)
            display(self._widget[0])
        box, bar, label = self._widget
        if self.total:
            bar.max, bar.value, bar.bar_style = int(self.total), int(min(self.n, self.total)), ""
        else:
            bar.max, bar.value, bar.bar_style = 1, 1, "info"
        label.value = self.text()
        self.shown = True
        return True

    def close(self, ok=True):
        """Ends the bar: a text bar's line is cleared (or, with leave,
        ended with a newline); a widget is removed (with leave: kept, green
        when ok, red otherwise)."""
        if self.closed:
            return
        if self.leave and self.shown:
            self._draw(force=True)
        self.closed = True
        if not self.shown:
            return
        if self._widget is not None:
            box, bar, _ = self._widget
            if self.leave:
                bar.bar_style = "success" if ok else "danger"
            else:
                _close_widgets(self._widget)  # closing a box leaves its bar and label open
            return
        try:
            self.file.write("\n" if self.leave else "\r\033[2K")
            self.file.flush()
        except Exception:
            pass


_v6_classes = {}


def _widget_classes():
    """(HBox, IntProgress, Label) of the installed ipywidgets (imported
    now; ImportError without it), None when it is older than 6. For
    ipywidgets 6 they are subclasses that nbclient takes too (_v6)."""
    import ipywidgets
    try:
        major = int(str(getattr(ipywidgets, "__version__", "0")).split(".")[0])
    except ValueError:
        major = 0
    if major < 6:
        return None
    if major >= 7:
        return ipywidgets.HBox, ipywidgets.IntProgress, ipywidgets.Label
    with _lock:
        if ipywidgets not in _v6_classes:
            _v6_classes.clear()
            _v6_classes[ipywidgets] = _v6(ipywidgets)
        return _v6_classes[ipywidgets]


def _v6(ipywidgets):
    """ipywidgets 6's HBox, IntProgress and Label as subclasses that differ
    in two things:

    - a widget's comm_open carries its state at the top of its data, where
      6's own frontend (Debian's jupyter-js-widgets 6) reads it, and again
      under "state", where nbclient (so nbconvert --execute, papermill)
      reads it: with 6's open, nbclient's handler of a widget's comm_open
      raises KeyError 'state' and the notebook's run stops there;
    - display() leaves out 6's warning on stderr that no frontend checked
      its JavaScript's version (only 6's own frontend does: under nbclient
      and later frontends the warning would land in every cell that shows
      a bar); it still sends 6's "display" message and the
      application/vnd.jupyter.widget-view+json output with the model id.

    A DOM widget's layout and a bar's style are widgets of their own, with
    their own comm_open: they are made from such subclasses too, and passed
    in instead of 6's defaults."""
    from IPython.display import display
    from ipywidgets.widgets import widget as widget_module
    from ipywidgets.widgets.widget_int import ProgressStyle

    class Open:
        def open(self):
            if self.comm is None:
                state, _, buffers = self._split_state_buffers(self.get_state())
                data = dict(state, state=dict(state))
                self.comm = widget_module.Comm(target_name="jupyter.widget", data=data)
                if buffers:  # as 6 does: binary parts follow in an update
                    self.send_state()

    class Layout6(Open, ipywidgets.Layout):
        pass

    class ProgressStyle6(Open, ProgressStyle):
        pass

    class IntProgress6(Open, ipywidgets.IntProgress):
        def __init__(self, **kw):
            super().__init__(layout=Layout6(), style=ProgressStyle6(), **kw)

    class Label6(Open, ipywidgets.Label):
        def __init__(self, value, **kw):
            super().__init__(value, layout=Layout6(), **kw)

    class HBox6(Open, ipywidgets.HBox):
        def __init__(self, children, **kw):
            super().__init__(children, layout=Layout6(), **kw)

        def _ipython_display_(self, **kwargs):
            self._send({"method": "display"})
            display({"application/vnd.jupyter.widget-view+json": {"model_id": self.model_id}}, raw=True)
            self._handle_displayed(**kwargs)

    return HBox6, IntProgress6, Label6


def _close_widgets(widgets):
    """Closes widgets and the widgets they hold (a layout, a style):
    closing one leaves those open."""
    for w in widgets:
        held = [getattr(w, name, None) for name in ("layout", "style")]
        w.close()
        for h in held:
            if h is not None and hasattr(h, "close"):
                h.close()


def bar(total, desc, *, progress=None, unit="B", delay=1.0, leave=False):
    """A bar for work of `total` units (None: unknown) where people look
    (see kind); an object that draws nothing when there is none."""
    k = kind(progress)
    if k is None:
        return NONE
    return Bar(total, desc, k, unit=unit, delay=delay, leave=leave)


def track(iterable, total=None, desc="", *, unit="it", progress=None):
    """Yields the items of `iterable` with a progress bar where people look
    (progress: True in any process, False never, None the setting) of
    `total` items (None: len(iterable) when it has one, else unknown). The
    bar shows at once and stays when the iteration ends; a widget turns
    green when the iteration ran to its end, red when it stopped early or
    raised."""
    if total is None:
        try:
            total = len(iterable)
        except TypeError:
            pass
    b = bar(total, desc, progress=progress, unit=unit, delay=0.0, leave=True)
    ok = False
    try:
        b.set(0)
        for item in iterable:
            yield item
            b.update(1)
        ok = True
    finally:
        b.close(ok)
