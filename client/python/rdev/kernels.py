"""rdev/kernels.py — the kernels the server offers (its Info), as callables
whose arguments are checked against the signature before anything is
sent: s.kernels.NAME(*args, blocks=1, stream=None).
"""
import numpy as np

from . import _rdev
from .array import DeviceArray

_INT_RANGE = {"i32": (-2**31, 2**31 - 1), "u32": (0, 2**32 - 1), "i64": (-2**63, 2**63 - 1), "u64": (0, 2**64 - 1)}
_ARG_TYPE = {"ptr": _rdev.ARG_PTR, "i32": _rdev.ARG_I32, "u32": _rdev.ARG_U32, "i64": _rdev.ARG_I64,
             "u64": _rdev.ARG_U64, "f32": _rdev.ARG_F32, "f64": _rdev.ARG_F64}


def _converter(kernel, name, typ):
    """f(v) -> (wire type, value) for parameter `name` of type `typ`; raises
    TypeError or ValueError for an argument that does not fit."""
    where, code = f"{kernel.name}: argument {name}", _ARG_TYPE.get(typ)
    if typ == "ptr":
        def conv(v):
            if not isinstance(v, DeviceArray):
                raise TypeError(f"{where} must be an rdev.DeviceArray, not {type(v).__name__}")
            if v.session is not kernel.session:
                raise ValueError(f"{where} is a device array of another session")
            return code, v.ptr
    elif typ in _INT_RANGE:
        lo, hi = _INT_RANGE[typ]

        def conv(v):
            if type(v) is not int:  # bool is not int here, numpy integers are
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                    raise TypeError(f"{where} ({typ}) must be an integer, not {type(v).__name__}")
                v = int(v)
            if not lo <= v <= hi:
                raise ValueError(f"{where}={v} is out of range for {typ}")
            return code, v
    elif typ in ("f32", "f64"):
        top = float(np.finfo(np.float32 if typ == "f32" else np.float64).max)

        def conv(v):
            if type(v) is not float:
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
                    raise TypeError(f"{where} ({typ}) must be a real number, not {type(v).__name__}")
                try:
                    v = float(v)
                except OverflowError:
                    raise ValueError(f"{where}={v} is out of range for {typ}") from None
            if abs(v) > top and v == v and abs(v) != float("inf"):  # nan and inf pass as themselves
                raise ValueError(f"{where}={v} is out of range for {typ}")
            return code, v
    else:
        def conv(v):
            raise TypeError(f"{kernel.name}: parameter {name} has a type this package does not know ({typ})")
    return conv


class Kernel:
    """A kernel the server offers: call it to launch (async, on a stream)."""

    def __init__(self, session, name, doc, params):
        self.session, self.name, self.doc, self.params = session, name, doc, tuple(params)
        self.__doc__ = f"{self.signature}\n\n{doc}"
        self._convs = [_converter(self, n, t) for n, t in self.params]  # built once: a launch only runs them
        self._ptrs = [i for i, (_, t) in enumerate(self.params) if t == "ptr"]

    @property
    def signature(self):
        return f"{self.name}({', '.join(f'{n}: {t}' for n, t in self.params)})"

    def __repr__(self):
        return f"<rdev.Kernel {self.signature}>"

    def __call__(self, *args, blocks=1, stream=None):
        """Launches with `blocks` blocks on the stream (default: the current
        one); returns at once. Errors of the launch surface at the stream's
        next synchronize."""
        if type(blocks) is not int:
            if isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)):
                raise ValueError(f"{self.name}: blocks must be an integer from 1 to 2**32-1, not {blocks!r}")
            blocks = int(blocks)
        if not 1 <= blocks < 2**32:
            raise ValueError(f"{self.name}: blocks must be an integer from 1 to 2**32-1, not {blocks!r}")
        if len(args) != len(self._convs):
            raise TypeError(f"{self.signature} takes {len(self._convs)} arguments, {len(args)} given")
        packed = [conv(v) for conv, v in zip(self._convs, args)]
        st = self.session._stream_for(stream, args[self._ptrs[0]].device if self._ptrs else None)
        st._queue(lambda raw: self.session._s.launch(raw, self.name, blocks, packed),
                  *(args[i]._mem for i in self._ptrs))


class _Kernels:
    """s.kernels: attribute or item access by name; dir() lists them."""

    def __init__(self, session, table):
        self._k = {name: Kernel(session, name, doc, params) for name, doc, params in table}

    def __getattr__(self, name):
        try:
            return self.__dict__["_k"][name]
        except KeyError:
            raise AttributeError(f"the server offers no kernel {name!r}") from None

    def __getitem__(self, name):
        try:
            return self._k[name]
        except KeyError:
            raise KeyError(f"the server offers no kernel {name!r}") from None

    def __contains__(self, name):
        return name in self._k

    def __iter__(self):
        return iter(self._k.values())

    def __dir__(self):
        return sorted(self._k)

    def __repr__(self):
        return "\n".join(k.signature for k in self._k.values())
