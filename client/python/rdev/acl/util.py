"""rdev/acl/util.py — acl.util, pyACL's helpers: host addresses of Python
objects and back (bytes_to_ptr, ptr_to_bytes, numpy_to_ptr, ptr_to_numpy),
and start_thread / stop_thread for the thread a program subscribes to a
stream for its callbacks. A thread's id is threading.get_ident() of it,
which is its pthread_self(): what aclrtSubscribeReport and
aclrtProcessReport compare.
"""
import ctypes
import math
import threading

import numpy as np

from rdev import acl as _acl

# numpy's type numbers (pyACL's np_type, e.g. 11 for float32) -> dtype, for the fixed-size types
_DTYPES = {np.dtype(c).num: np.dtype(c) for c in np.typecodes["All"] if c not in "OSUVMm"}


def bytes_to_ptr(data):
    """ptr = acl.util.bytes_to_ptr(data): the address of the buffer of a bytes-like object (bytes, bytearray, a
    contiguous memoryview or array), not of a copy: valid while the object lives and keeps its size."""
    return np.frombuffer(data, np.uint8).ctypes.data


def ptr_to_bytes(ptr, size):
    """data = acl.util.ptr_to_bytes(ptr, size): a bytes copy of size bytes of host memory at ptr."""
    if size and not ptr:
        raise ValueError("ptr_to_bytes: NULL pointer")
    return ctypes.string_at(ptr, size) if size else b""


def numpy_to_ptr(arr):
    """ptr = acl.util.numpy_to_ptr(arr): the address of an ndarray's data (valid while the array lives)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"numpy_to_ptr: an ndarray, not {type(arr).__name__}")
    return arr.ctypes.data


def _dtype(np_type):
    if isinstance(np_type, (int, np.integer)) and not isinstance(np_type, bool):
        if int(np_type) not in _DTYPES:
            raise ValueError(f"ptr_to_numpy: {np_type} is not the number of a numpy type of fixed size")
        return _DTYPES[int(np_type)]
    return np.dtype(np_type)


def ptr_to_numpy(ptr, shape, np_type):
    """arr = acl.util.ptr_to_numpy(ptr, shape, np_type): an ndarray viewing host memory at ptr (no copy: valid
    while that memory is); np_type is a numpy type number (np.dtype(np.float32).num, pyACL's NPY_FLOAT32 = 11) or
    anything np.dtype takes."""
    dtype = _dtype(np_type)
    shape = tuple(shape) if np.iterable(shape) else (shape,)
    count = math.prod(shape)
    if count == 0:
        return np.empty(shape, dtype)
    if not ptr:
        raise ValueError("ptr_to_numpy: NULL pointer")
    buf = (ctypes.c_char * (count * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(buf, dtype, count).reshape(shape)


_threads = {}  # id -> threading.Thread, until stop_thread


def start_thread(func, args_list):
    """tid, ret = acl.util.start_thread(func, args_list): runs func(args_list) on a new thread (a daemon: it does
    not hold up the interpreter's exit); tid is what subscribe_report takes. The new thread has no context: it calls
    acl.rt.set_context itself."""
    if not callable(func):
        raise TypeError("start_thread: func must be callable")
    t = threading.Thread(target=func, args=(args_list,), name="acl.util.start_thread", daemon=True)
    try:
        t.start()
    except RuntimeError:  # no thread could be made
        return 0, _acl.ACL_ERROR_BAD_ALLOC
    _threads[t.ident] = t
    return t.ident, _acl.ACL_SUCCESS


def stop_thread(tid):
    """ret = acl.util.stop_thread(tid): waits until the thread start_thread made returned from its function (it
    must be told to, e.g. by a flag its process_report loop checks)."""
    t = _threads.get(tid)
    if t is None or t is threading.current_thread() or _threads.pop(tid, None) is None:
        return _acl.ACL_ERROR_INVALID_PARAM
    t.join()
    return _acl.ACL_SUCCESS
