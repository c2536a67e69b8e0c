"""rdev/acl/rt.py — acl.rt, pyACL's runtime calls over rdev's ACL library:
devices, contexts, streams, events, memory and copies, host callbacks
(subscribe_report / launch_callback / process_report) and kernels from
binaries (binary_load_*, binary_get_function*, kernel_args_*,
launch_kernel_with_host_args / _with_config). Most are one line of the
table below (rdev.acl's binding); the few that take Python objects
(callbacks, option and place-holder lists, argument bytes) are written out.
The ACL_* constants of rdev.acl are here too.
"""
import ctypes
import itertools
import operator
import types

from rdev import acl as _acl

globals().update({k: v for k, v in vars(_acl).items() if k.startswith("ACL_")})

globals().update(_acl._define(__name__, """
set_device                      aclrtSetDevice                    i device_id
reset_device                    aclrtResetDevice                  i device_id
reset_device_force              aclrtResetDeviceForce             i device_id
get_device                      aclrtGetDevice                    *i device_id
get_device_count                aclrtGetDeviceCount               *I count
get_run_mode                    aclrtGetRunMode                   *i run_mode
synchronize_device              aclrtSynchronizeDevice
synchronize_device_with_timeout aclrtSynchronizeDeviceWithTimeout i timeout
create_context                  aclrtCreateContext                *P context, i device_id
destroy_context                 aclrtDestroyContext               P context
set_context                     aclrtSetCurrentContext            P context
get_context                     aclrtGetCurrentContext            *P context
create_stream                   aclrtCreateStream                 *P stream
create_stream_with_config       aclrtCreateStreamWithConfig       *P stream, I priority, I flag
destroy_stream                  aclrtDestroyStream                P stream
destroy_stream_force            aclrtDestroyStreamForce           P stream
synchronize_stream              aclrtSynchronizeStream            P stream
synchronize_stream_with_timeout aclrtSynchronizeStreamWithTimeout P stream, i timeout
stream_query                    aclrtStreamQuery                  P stream, *i status
stream_wait_event               aclrtStreamWaitEvent              P stream, P event
create_event                    aclrtCreateEvent                  *P event
create_event_with_flag          aclrtCreateEventWithFlag          *P event, I flag
destroy_event                   aclrtDestroyEvent                 P event
record_event                    aclrtRecordEvent                  P event, P stream
reset_event                     aclrtResetEvent                   P event, P stream
synchronize_event               aclrtSynchronizeEvent             P event
synchronize_event_with_timeout  aclrtSynchronizeEventWithTimeout  P event, i timeout
query_event                     aclrtQueryEvent                   P event, *i status
query_event_status              aclrtQueryEventStatus             P event, *i status
event_elapsed_time              aclrtEventElapsedTime             *f ms, P start, P end
malloc                          aclrtMalloc                       *P dev_ptr, Z size, i policy
malloc_host                     aclrtMallocHost                   *P host_ptr, Z size
free                            aclrtFree                         P dev_ptr
free_host                       aclrtFreeHost                     P host_ptr
memcpy                          aclrtMemcpy                       P dst, Z dest_max, P src, Z count, i kind
memcpy_async                    aclrtMemcpyAsync                  P dst, Z dest_max, P src, Z count, i kind, P stream
memset                          aclrtMemset                       P dev_ptr, Z max_count, i value, Z count
memset_async                    aclrtMemsetAsync                  P dev_ptr, Z max_count, i value, Z count, P stream
get_mem_info                    aclrtGetMemInfo                   i attr, *Z free, *Z total
subscribe_report                aclrtSubscribeReport              Q thread_id, P stream
unsubscribe_report              aclrtUnSubscribeReport            Q thread_id, P stream
process_report                  aclrtProcessReport                i timeout
binary_get_function             aclrtBinaryGetFunction            P bin_handle, s kernel_name, *P func_handle
binary_get_function_by_entry    aclrtBinaryGetFunctionByEntry     P bin_handle, Q func_entry, *P func_handle
binary_unload                   aclrtBinaryUnLoad                 P bin_handle
kernel_args_init                aclrtKernelArgsInit               P func_handle, *P args_handle
kernel_args_append              aclrtKernelArgsAppend             P args_handle, P param, Z param_size, *P param_handle
kernel_args_append_place_holder aclrtKernelArgsAppendPlaceHolder  P args_handle, *P param_handle
kernel_args_get_place_holder_buffer aclrtKernelArgsGetPlaceHolderBuffer
    P args_handle, P param_handle, Z data_size, *P buffer
kernel_args_para_update         aclrtKernelArgsParaUpdate         P args_handle, P param_handle, P param, Z param_size
kernel_args_finalize            aclrtKernelArgsFinalize           P args_handle
"""))

# the C calls of the functions written out below
_c = types.SimpleNamespace(**_acl._define(__name__, """
launch_callback               aclrtLaunchCallback            P fn, P user_data, i block_type, P stream
binary_load_from_file         aclrtBinaryLoadFromFile        s bin_path, P options, *P bin_handle
binary_load_from_data         aclrtBinaryLoadFromData        P data, Z length, P options, *P bin_handle
launch_kernel_with_config     aclrtLaunchKernelWithConfig
    P func_handle, I num_blocks, P stream, P cfg, P args_handle, P reserve
launch_kernel_with_host_args  aclrtLaunchKernelWithHostArgs
    P func_handle, I num_blocks, P stream, P cfg, P host_args, Z args_size, P place_holders, Z place_holder_num
"""))

# ---- host callbacks --------------------------------------------------------------------------------------------

# One C trampoline for every callback; the C userData is a key into _pending, which holds the Python function and
# its user data until the subscribed thread ran it in process_report.
_pending = {}
_keys = itertools.count(1)


def _run_callback(key):
    fn, user_data = _pending.pop(key)
    fn(user_data)


_trampoline = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_run_callback)
_trampoline_ptr = ctypes.cast(_trampoline, ctypes.c_void_p).value


def launch_callback(fn, user_data, block_type, stream):
    """ret = acl.rt.launch_callback(fn, user_data, block_type, stream): aclrtLaunchCallback; fn(user_data) runs on
    the thread subscribed to the stream (subscribe_report), in its process_report, when the stream reaches it;
    with ACL_CALLBACK_BLOCK the stream waits until fn returned."""
    if not callable(fn):
        raise TypeError("launch_callback: fn must be callable")
    key = next(_keys)
    _pending[key] = (fn, user_data)
    ret = _c.launch_callback(_trampoline_ptr, key, block_type, stream)
    if ret != 0:
        _pending.pop(key, None)
    return ret


# ---- kernels from binaries -------------------------------------------------------------------------------------

class _LoadOption(ctypes.Structure):  # aclrtBinaryLoadOption: the type, and its value in a union of 16 bytes
    _fields_ = [("type", ctypes.c_int), ("value", ctypes.c_uint32 * 4)]


class _LoadOptions(ctypes.Structure):  # aclrtBinaryLoadOptions
    _fields_ = [("options", ctypes.POINTER(_LoadOption)), ("numOpt", ctypes.c_size_t)]


class _PlaceHolder(ctypes.Structure):  # aclrtPlaceHolderInfo
    _fields_ = [("addrOffset", ctypes.c_uint32), ("dataOffset", ctypes.c_uint32)]


def _pairs(items, keys):
    """(a, b) per item of a pyACL list: dicts with keys, or pairs."""
    return [(d[keys[0]], d[keys[1]]) if isinstance(d, dict) else tuple(d) for d in items or ()]


def _load_options(options):
    """(address or None, what must stay alive) of an aclrtBinaryLoadOptions for pyACL's options list:
    [{"type": ACL_RT_BINARY_LOAD_OPT_*, "value": n}, ...] (or (type, value) pairs); [] or None for none."""
    pairs = _pairs(options, ("type", "value"))
    if not pairs:
        return None, None
    arr = (_LoadOption * len(pairs))()
    for o, (t, v) in zip(arr, pairs):
        o.type, o.value[0] = t, v & 0xFFFFFFFF
    opts = _LoadOptions(arr, len(pairs))
    return ctypes.addressof(opts), (arr, opts)


def _host(data, size):
    """(address, size, what must stay alive) of host data given as an address (with its size) or as a
    bytes-like object (copied; its size by default)."""
    if data is None:
        return None, size or 0, None
    try:
        addr = operator.index(data)
    except TypeError:
        pass
    else:
        if size is None:
            raise TypeError("the size of host data given by address is needed")
        return addr, size, None
    raw = memoryview(data).cast("B")
    if size is not None and size > len(raw):
        raise ValueError(f"{size} bytes of host data asked from an object of {len(raw)}")
    buf = (ctypes.c_char * len(raw)).from_buffer_copy(raw)
    return ctypes.addressof(buf), len(raw) if size is None else size, buf


def binary_load_from_file(bin_path, options=None):
    """bin_handle, ret = acl.rt.binary_load_from_file(bin_path, options): aclrtBinaryLoadFromFile."""
    addr, _keep = _load_options(options)
    return _c.binary_load_from_file(bin_path, addr)


def binary_load_from_data(data, length=None, options=None):
    """bin_handle, ret = acl.rt.binary_load_from_data(mem_addr, length, options): aclrtBinaryLoadFromData; the data
    is a host address, or bytes-like (its length by default)."""
    addr, _keep = _load_options(options)
    data, length, _buf = _host(data, length)
    return _c.binary_load_from_data(data, length, addr)


def launch_kernel_with_host_args(func_handle, num_blocks, stream, cfg, host_args, host_args_size=None,
                                 place_holder_list=None, place_holder_num=None):
    """ret = acl.rt.launch_kernel_with_host_args(func_handle, num_blocks, stream, cfg, host_args_ptr,
    host_args_size, place_holder_list, place_holder_num): aclrtLaunchKernelWithHostArgs. host_args is a host
    address or bytes-like (then its size by default); place holders are dicts with "addr_offset" and "data_offset"
    (or pairs). cfg (launch attributes) is accepted and not passed: they change nothing on rdev's devices."""
    args, size, _buf = _host(host_args, host_args_size)
    pairs = _pairs(place_holder_list, ("addr_offset", "data_offset"))
    ph = (_PlaceHolder * len(pairs))(*pairs) if pairs else None
    n = len(pairs) if place_holder_num is None else operator.index(place_holder_num)
    if not 0 <= n <= len(pairs):  # the C call would read past the list
        return _acl.ACL_ERROR_INVALID_PARAM
    return _c.launch_kernel_with_host_args(func_handle, num_blocks, stream, None, args, size,
                                           None if ph is None else ctypes.addressof(ph), n)


def launch_kernel_with_config(func_handle, num_blocks, stream, cfg, args_handle, reserve=None):
    """ret = acl.rt.launch_kernel_with_config(func_handle, num_blocks, stream, cfg, args_handle, reserve):
    aclrtLaunchKernelWithConfig over an argument block (kernel_args_*). cfg is accepted and not passed, as above."""
    return _c.launch_kernel_with_config(func_handle, num_blocks, stream, None, args_handle, reserve or None)
