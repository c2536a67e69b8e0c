"""rdev/acl/__init__.py — rdev.acl, the runtime part of pyACL's ``acl`` module
over rdev's ACL library: this file owns the package-level calls (init,
finalize, get_recent_err_msg, get_soc_name), the ACL constants, the lazy
loading of libacl_rt.so and the table-driven binding that acl.rt (rt.py) and
acl.util (util.py) stand on.

A pyACL program runs remotely by changing ``import acl`` to
``import rdev.acl as acl``: ``acl.init()`` opens the session to
$RDEV_TARGET. As in pyACL, pointers and handles are ints, calls that produce
values return ``(value, ret)`` or ``(value1, value2, ret)``, others ``ret``,
with ACL's error numbers; a wrong Python argument (a str for a size, a wrong
count of arguments) raises TypeError. Every call goes through ctypes, which
releases the GIL while the C library works.

The library is ``libacl_rt.so`` beside the rdev package's __init__.py (the
build copies it there), or $RDEV_ACL_LIB; it is loaded at the first call.
"""
import ctypes
import inspect
import operator
import os
import re
import threading

# ---- constants (CANN's names and values, acl_rt.h / acl_base_rt.h / rt_error_codes.h) --------------------------

ACL_SUCCESS = ACL_ERROR_NONE = 0
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_UNINITIALIZE = 100001
ACL_ERROR_REPEAT_INITIALIZE = 100002
ACL_ERROR_INVALID_FILE = 100003
ACL_ERROR_REPEAT_SUBSCRIBE = 100033
ACL_ERROR_STREAM_NOT_SUBSCRIBE = 100034
ACL_ERROR_THREAD_NOT_SUBSCRIBE = 100035
ACL_ERROR_WAIT_CALLBACK_TIMEOUT = 100036
ACL_ERROR_REPEAT_FINALIZE = 100037
ACL_ERROR_BAD_ALLOC = 200000
ACL_ERROR_API_NOT_SUPPORT = 200001
ACL_ERROR_RT_PARAM_INVALID = 107000
ACL_ERROR_RT_INVALID_DEVICEID = 107001
ACL_ERROR_RT_CONTEXT_NULL = 107002
ACL_ERROR_RT_STREAM_NO_CB_REG = 107015
ACL_ERROR_RT_INVALID_HANDLE = 107017
ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000
ACL_ERROR_RT_MEMORY_ALLOCATION = 207001
ACL_ERROR_RT_REPORT_TIMEOUT = 507012
ACL_ERROR_RT_AICORE_EXCEPTION = 507015
ACL_ERROR_RT_STREAM_SYNC_TIMEOUT = 507046
ACL_ERROR_RT_EVENT_SYNC_TIMEOUT = 507047

ACL_DEVICE, ACL_HOST = 0, 1  # aclrtRunMode
(ACL_MEMCPY_HOST_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_DEVICE_TO_DEVICE,
 ACL_MEMCPY_DEFAULT, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE,
 ACL_MEMCPY_INTER_DEVICE_TO_DEVICE) = range(8)
(ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY, ACL_MEM_MALLOC_HUGE_FIRST_P2P,
 ACL_MEM_MALLOC_HUGE_ONLY_P2P, ACL_MEM_MALLOC_NORMAL_ONLY_P2P, ACL_MEM_MALLOC_HUGE1G_ONLY,
 ACL_MEM_MALLOC_HUGE1G_ONLY_P2P) = range(8)
ACL_MEM_TYPE_LOW_BAND_WIDTH, ACL_MEM_TYPE_HIGH_BAND_WIDTH, ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100, 0x1000, 0x100000
ACL_DDR_MEM, ACL_HBM_MEM, ACL_DDR_MEM_HUGE, ACL_DDR_MEM_NORMAL, ACL_HBM_MEM_HUGE, ACL_HBM_MEM_NORMAL = range(6)
ACL_CALLBACK_NO_BLOCK, ACL_CALLBACK_BLOCK = 0, 1
ACL_EVENT_SYNC, ACL_EVENT_CAPTURE_STREAM_PROGRESS, ACL_EVENT_TIME_LINE = 0x1, 0x2, 0x8
ACL_EVENT_STATUS_COMPLETE, ACL_EVENT_STATUS_NOT_READY = 0, 1  # aclrtEventStatus (query_event)
ACL_EVENT_RECORDED_STATUS_NOT_READY, ACL_EVENT_RECORDED_STATUS_COMPLETE = 0, 1  # query_event_status
ACL_STREAM_STATUS_COMPLETE, ACL_STREAM_STATUS_NOT_READY = 0, 1
ACL_STREAM_FAST_LAUNCH, ACL_STREAM_FAST_SYNC = 0x1, 0x2
ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD, ACL_RT_BINARY_LOAD_OPT_MAGIC, ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE = 1, 2, 3
ACL_RT_BINARY_MAGIC_ELF_AICORE = 0x43554245
ACL_RT_BINARY_MAGIC_ELF_VECTOR_CORE = 0x41415246
ACL_RT_BINARY_MAGIC_ELF_CUBE_CORE = 0x41494343

# ---- the library ---------------------------------------------------------------------------------------------

_lib_lock = threading.Lock()
_lib_handle = None
_bound = {}  # C symbol -> its ctypes function, argtypes and restype set


def _lib_path():
    """The ACL library rdev.acl loads: $RDEV_ACL_LIB, else libacl_rt.so in the rdev package."""
    return os.environ.get("RDEV_ACL_LIB") or os.path.join(os.path.dirname(os.path.dirname(__file__)), "libacl_rt.so")


def _c(symbol, argtypes, restype=ctypes.c_int):
    """The library's C function `symbol`, declared with argtypes and restype (at its first use)."""
    f = _bound.get(symbol)
    if f is None:
        global _lib_handle
        with _lib_lock:
            if _lib_handle is None:
                _lib_handle = ctypes.CDLL(_lib_path())
            f = getattr(_lib_handle, symbol)
            f.argtypes, f.restype = argtypes, restype
            _bound[symbol] = f
    return f


# Parameter codes of the tables: P a pointer or handle (void *), Z size_t, i int32_t (and C enums), I uint32_t,
# Q uint64_t, f float, s a string (const char *, given as str or bytes); "*X" is an output the C call writes.
_TYPES = {"P": ctypes.c_void_p, "Z": ctypes.c_size_t, "i": ctypes.c_int32, "I": ctypes.c_uint32, "Q": ctypes.c_uint64,
          "f": ctypes.c_float, "s": ctypes.c_char_p}


def _arg(code, v):
    if code == "P":  # ints (numpy's too) up to 2**64-1: device addresses keep every bit
        return None if v is None else operator.index(v)
    if code == "s":
        return None if v is None else os.fsencode(v)
    return float(v) if code == "f" else operator.index(v)


def _wrap(module, name, symbol, params):
    """The pyACL function `name` over `symbol`: params are (code, Python name) in the C parameter order; it
    takes the inputs and returns (*outputs, ret), or ret without outputs."""
    codes = [c for c, _ in params]
    names = [n for c, n in params if c[0] != "*"]
    argtypes = [ctypes.POINTER(_TYPES[c[1]]) if c[0] == "*" else _TYPES[c] for c in codes]

    def call(*args):
        if len(args) != len(names):
            raise TypeError(f"{name}() takes {len(names)} arguments ({', '.join(names)}), {len(args)} given")
        f = _bound.get(symbol) or _c(symbol, argtypes)
        it, outs, cargs = iter(args), [], []
        for c in codes:
            if c[0] == "*":
                outs.append(_TYPES[c[1]]())
                cargs.append(ctypes.byref(outs[-1]))
            else:
                cargs.append(_arg(c, next(it)))
        ret = f(*cargs)
        if not outs:
            return ret
        return (*((o.value or 0) if isinstance(o, ctypes.c_void_p) else o.value for o in outs), ret)

    call.__name__ = call.__qualname__ = name
    call.__module__ = module
    call.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in names])
    results = [n for c, n in params if c[0] == "*"] + ["ret"]
    call.__doc__ = f"{', '.join(results)} = {name}({', '.join(names)}): {symbol}"
    return call


def _define(module, table):
    """{name: pyACL function of module} per line of table: `name symbol params`, params as comma-separated
    `CODE pyname`, `*CODE pyname` for an output; nothing after the symbol for none. An indented line continues
    the one before."""
    funcs = {}
    for line in re.sub(r"\n[ \t]+", " ", table.strip()).splitlines():
        name, symbol, *rest = line.split(None, 2)
        params = [tuple(p.split()) for p in rest[0].split(",")] if rest else []
        funcs[name] = _wrap(module, name, symbol, params)
    return funcs


# ---- package-level calls -------------------------------------------------------------------------------------

finalize = _define(__name__, "finalize aclFinalize")["finalize"]
_init = _define(__name__, "init aclInit s config_path")["init"]


def init(config_path=None):
    """ret = acl.init(config_path=None): aclInit, which opens the session to $RDEV_TARGET (the configuration
    file is not read: settings come from the environment). Once per process until acl.finalize()."""
    return _init(config_path or None)


def get_recent_err_msg():
    """msg = acl.get_recent_err_msg(): the calling thread's last error message, then cleared (None if none)."""
    msg = _c("aclGetRecentErrMsg", [], ctypes.c_char_p)()
    return None if msg is None else msg.decode(errors="replace")


def get_soc_name():
    """name = acl.get_soc_name(): the SoC name the library reports (None if none)."""
    name = _c("aclrtGetSocName", [], ctypes.c_char_p)()
    return None if name is None else name.decode(errors="replace")


from . import rt, util  # noqa: E402,F401  (acl.rt and acl.util stand on the binding above)
