"""tests/python/rdev_pkg/test_acl_module.py — rdev.acl, pyACL's `acl` module
over rdev's libacl_rt.so: pyACL-style programs against a real rdevd (init,
devices, contexts, streams, memory and copies byte for byte, events,
callbacks on a start_thread thread, kernels from a sim binary, error
numbers, finalize and init again), and acl.util's conversions on their own.

acl.init() opens the process's one session: each test that needs one inits
and finalizes (the `res` fixture), which the library allows.
"""
import os
import struct
import threading
import time
import types

import numpy as np
import pytest

import rdev.acl as acl

HERE = os.path.dirname(os.path.abspath(__file__))
BUILTIN = os.path.normpath(os.path.join(HERE, "..", "..", "acl_double", "builtin", "rdev_builtin.o"))
H2D, D2H, D2D = acl.ACL_MEMCPY_HOST_TO_DEVICE, acl.ACL_MEMCPY_DEVICE_TO_HOST, acl.ACL_MEMCPY_DEVICE_TO_DEVICE


def ok(result):
    """The values of a (value..., ret) result, asserting ret is ACL_SUCCESS."""
    *values, ret = result
    assert ret == acl.ACL_SUCCESS, f"ret {ret}: {acl.get_recent_err_msg()}"
    return values[0] if len(values) == 1 else values


@pytest.fixture
def res(target):
    """An initialized ACL on device 0 with a context and a stream, finalized afterwards."""
    assert acl.init() == acl.ACL_SUCCESS, acl.get_recent_err_msg()
    try:
        assert acl.rt.set_device(0) == 0
        context = ok(acl.rt.create_context(0))
        stream = ok(acl.rt.create_stream())
        yield types.SimpleNamespace(context=context, stream=stream)
        assert acl.rt.destroy_stream(stream) == 0
        assert acl.rt.destroy_context(context) == 0
        assert acl.rt.reset_device(0) == 0
    finally:
        assert acl.finalize() == acl.ACL_SUCCESS


def device_bytes(ptr, size):
    """size bytes of device memory at ptr, read back with memcpy into a numpy array."""
    out = np.empty(size, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), size, ptr, size, D2H) == 0
    return out


# ---- the module's surface --------------------------------------------------------------------------------------

def test_constants_and_signatures():
    assert (acl.ACL_SUCCESS, acl.rt.ACL_MEMCPY_HOST_TO_DEVICE, acl.ACL_MEMCPY_DEVICE_TO_HOST) == (0, 1, 2)
    assert (acl.ACL_MEM_MALLOC_HUGE_FIRST, acl.ACL_MEM_MALLOC_NORMAL_ONLY, acl.rt.ACL_EVENT_TIME_LINE) == (0, 2, 8)
    assert (acl.ACL_CALLBACK_NO_BLOCK, acl.rt.ACL_CALLBACK_BLOCK) == (0, 1)
    assert acl.rt.malloc.__doc__.startswith("dev_ptr, ret = malloc(size, policy): aclrtMalloc")
    assert acl.rt.get_mem_info.__doc__.startswith("free, total, ret = get_mem_info(attr)")
    with pytest.raises(TypeError):
        acl.rt.malloc(16)  # one argument short: nothing reaches the library
    with pytest.raises(TypeError):
        acl.rt.malloc("16", 0)  # a size must be an integer
    with pytest.raises(TypeError):
        acl.rt.free(1.5)  # and so must a pointer


# ---- init and finalize -----------------------------------------------------------------------------------------

def test_init_finalize_and_init_again(target, monkeypatch):
    assert acl.init() == 0
    try:
        assert acl.init() == acl.ACL_ERROR_REPEAT_INITIALIZE
        assert ok(acl.rt.get_device_count()) >= 1
    finally:
        assert acl.finalize() == 0
    assert acl.finalize() == acl.ACL_ERROR_REPEAT_FINALIZE
    monkeypatch.delenv("RDEV_TARGET")
    assert acl.init("") == acl.ACL_ERROR_INVALID_PARAM
    assert "RDEV_TARGET" in acl.get_recent_err_msg()
    assert acl.get_recent_err_msg() is None  # obtained and cleared
    monkeypatch.setenv("RDEV_TARGET", target)
    assert acl.init() == 0  # a second session in the same process
    try:
        assert acl.rt.set_device(0) == 0
        ptr = ok(acl.rt.malloc(64, acl.ACL_MEM_MALLOC_HUGE_FIRST))
        assert acl.rt.free(ptr) == 0
    finally:
        assert acl.finalize() == 0


# ---- devices, memory, copies -----------------------------------------------------------------------------------

def test_devices(res):
    count = ok(acl.rt.get_device_count())
    assert count >= 1
    assert ok(acl.rt.get_device()) == 0
    assert ok(acl.rt.get_run_mode()) == acl.ACL_HOST
    assert ok(acl.rt.get_context()) == res.context
    assert acl.rt.set_device(99) == acl.ACL_ERROR_RT_INVALID_DEVICEID
    assert "99" in acl.get_recent_err_msg()
    assert isinstance(acl.get_soc_name(), str)


def test_memcpy_round_trip(res):
    n = 1 << 18
    src = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    dev = ok(acl.rt.malloc(src.nbytes, acl.ACL_MEM_MALLOC_HUGE_FIRST))
    dev2 = ok(acl.rt.malloc(src.nbytes, acl.ACL_MEM_MALLOC_NORMAL_ONLY))
    host = ok(acl.rt.malloc_host(src.nbytes))
    try:
        assert dev != 0 and dev != dev2 and host != 0
        assert acl.rt.memcpy(dev, src.nbytes, acl.util.numpy_to_ptr(src), src.nbytes, H2D) == 0
        assert acl.rt.memcpy(dev2, src.nbytes, dev, src.nbytes, D2D) == 0
        assert acl.rt.memcpy(host, src.nbytes, dev2, src.nbytes, D2H) == 0
        back = acl.util.ptr_to_numpy(host, (n,), np.dtype(np.float32).num)
        assert back.tobytes() == src.tobytes()
        # async from malloc_host memory, in stream order
        back[:] = -back
        assert acl.rt.memcpy_async(dev, src.nbytes, host, src.nbytes, H2D, res.stream) == 0
        assert acl.rt.synchronize_stream(res.stream) == 0
        assert device_bytes(dev, src.nbytes).tobytes() == (-src).tobytes()
        # async from other host memory: complete when the call returns, so the buffer may change at once
        tmp = src.copy()
        assert acl.rt.memcpy_async(dev, src.nbytes, acl.util.numpy_to_ptr(tmp), tmp.nbytes, H2D, res.stream) == 0
        tmp[:] = 0
        assert acl.rt.synchronize_stream_with_timeout(res.stream, -1) == 0
        assert device_bytes(dev, src.nbytes).tobytes() == src.tobytes()
        assert acl.rt.memcpy(dev, 0, host, 0, H2D) == 0  # count 0 succeeds before any check
    finally:
        assert acl.rt.free(dev) == 0
        assert acl.rt.free(dev2) == 0
        assert acl.rt.free_host(host) == 0


def test_memset(res):
    size = 4096
    dev = ok(acl.rt.malloc(size, acl.ACL_MEM_MALLOC_HUGE_FIRST))
    host = ok(acl.rt.malloc_host(size))
    try:
        assert acl.rt.memset(dev, size, 0xAB, size) == 0
        assert (device_bytes(dev, size) == 0xAB).all()
        assert acl.rt.memset_async(dev + 1024, size - 1024, 0x5C, 1024, res.stream) == 0
        assert acl.rt.synchronize_stream(res.stream) == 0
        got = device_bytes(dev, size)
        assert (got[:1024] == 0xAB).all() and (got[1024:2048] == 0x5C).all() and (got[2048:] == 0xAB).all()
        assert acl.rt.memset(host, size, 7, size) == 0  # malloc_host memory too
        assert acl.util.ptr_to_bytes(host, size) == b"\x07" * size
        assert acl.rt.memset(dev, 16, 0, 32) == acl.ACL_ERROR_RT_PARAM_INVALID
    finally:
        assert acl.rt.free(dev) == 0
        assert acl.rt.free_host(host) == 0


def test_mem_info(res):
    free, total = ok(acl.rt.get_mem_info(acl.ACL_HBM_MEM))
    assert 0 < free <= total
    size = 64 << 20
    dev = ok(acl.rt.malloc(size, acl.ACL_MEM_MALLOC_HUGE_FIRST))
    free2, total2 = ok(acl.rt.get_mem_info(acl.ACL_HBM_MEM))
    assert total2 == total and free2 <= free - size
    assert acl.rt.free(dev) == 0
    assert ok(acl.rt.get_mem_info(acl.ACL_HBM_MEM))[0] == free


def test_errors(res):
    dev = ok(acl.rt.malloc(64, acl.ACL_MEM_MALLOC_HUGE_FIRST))
    host = bytearray(128)
    assert acl.rt.memcpy(dev, 64, acl.util.bytes_to_ptr(host), 128, H2D) == acl.ACL_ERROR_RT_PARAM_INVALID
    assert "exceeds" in acl.get_recent_err_msg()
    assert acl.rt.memcpy(0, 64, acl.util.bytes_to_ptr(host), 64, H2D) == acl.ACL_ERROR_INVALID_PARAM
    assert acl.rt.free(dev) == 0
    assert acl.rt.free(dev) != 0  # twice
    # a bogus pointer with every bit of 64 set reaches the library intact
    assert acl.rt.free(0xF000_0000_0000_1234) == acl.ACL_ERROR_INVALID_PARAM
    assert "0xf000000000001234" in acl.get_recent_err_msg()
    assert acl.rt.process_report(0) == acl.ACL_ERROR_INVALID_PARAM
    assert acl.rt.process_report(10) == acl.ACL_ERROR_THREAD_NOT_SUBSCRIBE
    assert acl.rt.synchronize_stream(0) == 0  # the default stream


# ---- streams and events ----------------------------------------------------------------------------------------

def test_events_and_streams(res):
    size = 8 << 20
    dev = ok(acl.rt.malloc(size, acl.ACL_MEM_MALLOC_HUGE_FIRST))
    start = ok(acl.rt.create_event_with_flag(acl.ACL_EVENT_TIME_LINE))
    end = ok(acl.rt.create_event_with_flag(acl.ACL_EVENT_TIME_LINE))
    plain = ok(acl.rt.create_event())
    other = ok(acl.rt.create_stream())
    try:
        assert ok(acl.rt.query_event_status(end)) == acl.ACL_EVENT_RECORDED_STATUS_NOT_READY
        assert acl.rt.record_event(start, res.stream) == 0
        assert acl.rt.memset_async(dev, size, 1, size, res.stream) == 0
        assert acl.rt.record_event(end, res.stream) == 0
        # the other stream waits for end, then marks plain
        assert acl.rt.stream_wait_event(other, end) == 0
        assert acl.rt.memset_async(dev, size, 2, size, other) == 0
        assert acl.rt.record_event(plain, other) == 0
        assert acl.rt.synchronize_event(end) == 0
        assert ok(acl.rt.query_event_status(end)) == acl.ACL_EVENT_RECORDED_STATUS_COMPLETE
        assert ok(acl.rt.query_event(end)) == acl.ACL_EVENT_STATUS_COMPLETE
        ms = ok(acl.rt.event_elapsed_time(start, end))
        assert isinstance(ms, float) and ms >= 0
        assert acl.rt.synchronize_event_with_timeout(plain, 10000) == 0
        assert (device_bytes(dev, size)[::4096] == 2).all()  # the second memset ran after the first
        assert acl.rt.synchronize_stream(other) == 0
        assert ok(acl.rt.stream_query(other)) == acl.ACL_STREAM_STATUS_COMPLETE
        assert acl.rt.reset_event(plain, other) == 0
        assert acl.rt.synchronize_device() == 0
    finally:
        for ev in (start, end, plain):
            assert acl.rt.destroy_event(ev) == 0
        assert acl.rt.destroy_stream_force(other) == 0
        assert acl.rt.free(dev) == 0


# ---- callbacks -------------------------------------------------------------------------------------------------

def test_callbacks(res):
    running = [True]
    seen = []

    def report_loop(args_list):  # as pyACL's samples: bind the context, then process reports until told to stop
        context, timeout = args_list
        acl.rt.set_context(context)
        while running[0]:
            acl.rt.process_report(timeout)

    def callback(user_data):
        seen.append((user_data, threading.get_ident()))

    data = ["payload", 1]
    assert acl.rt.launch_callback(callback, data, acl.ACL_CALLBACK_BLOCK, res.stream) == \
        acl.ACL_ERROR_STREAM_NOT_SUBSCRIBE  # no thread subscribed yet
    tid, ret = acl.util.start_thread(report_loop, [res.context, 100])
    assert ret == 0 and tid != threading.get_ident()
    try:
        assert acl.rt.subscribe_report(tid, res.stream) == 0
        assert acl.rt.subscribe_report(tid, res.stream) == acl.ACL_ERROR_REPEAT_SUBSCRIBE
        assert acl.rt.launch_callback(callback, data, acl.ACL_CALLBACK_BLOCK, res.stream) == 0
        assert acl.rt.launch_callback(callback, 42, acl.ACL_CALLBACK_NO_BLOCK, res.stream) == 0
        assert acl.rt.launch_callback(callback, None, 7, res.stream) == acl.ACL_ERROR_INVALID_PARAM
        # the callbacks need the GIL while this thread waits in the library: a bounded wait shows it is released
        assert acl.rt.synchronize_stream_with_timeout(res.stream, 10000) == 0
        deadline = time.monotonic() + 10
        while len(seen) < 2 and time.monotonic() < deadline:  # NO_BLOCK: the stream need not wait for it
            time.sleep(0.01)
        assert seen[0][0] is data and seen[1][0] == 42
        assert {t for _, t in seen} == {tid}  # on the subscribed thread
        assert not acl.rt._pending  # nothing kept once run
    finally:
        unsubscribed = acl.rt.unsubscribe_report(tid, res.stream)  # drops what never ran: the stream goes on
        running[0] = False
        assert acl.util.stop_thread(tid) == 0
    assert unsubscribed == 0
    assert acl.rt.unsubscribe_report(tid, res.stream) == acl.ACL_ERROR_STREAM_NOT_SUBSCRIBE


# ---- kernels ---------------------------------------------------------------------------------------------------

def kernel_output(on_acl, server, capfd):
    """What kernels printed since the last call: rdevd's stdout on acl, this process's on the sim."""
    if not on_acl:
        return capfd.readouterr().out
    with open(server.stdout_path) as f:
        return f.read()


def test_kernels_from_binary(res, on_acl, server, capfd):
    blocks = 4
    dev = ok(acl.rt.malloc(blocks * 4, acl.ACL_MEM_MALLOC_HUGE_FIRST))
    binary = ok(acl.rt.binary_load_from_file(BUILTIN, []))
    try:
        write = ok(acl.rt.binary_get_function(binary, "write_i32"))
        assert acl.rt.binary_get_function(binary, "no_such_kernel") == (0, 900007)  # rdev's "no such kernel"
        # write_i32(int *out, int value): the pointer at 0, the value at 8
        value = -123457
        assert acl.rt.launch_kernel_with_host_args(write, blocks, res.stream, [], struct.pack("<Qi", dev, value)) == 0
        assert acl.rt.synchronize_stream(res.stream) == 0
        assert (device_bytes(dev, blocks * 4).view(np.int32) == value).all()
        assert f"Source data: {value}" in kernel_output(on_acl, server, capfd)

        # inc_u32(uint32_t *x), entry 7, by an argument block and launch_kernel_with_config
        inc = ok(acl.rt.binary_get_function_by_entry(binary, 7))
        args = ok(acl.rt.kernel_args_init(inc))
        param = np.array([dev], np.uint64)
        ok(acl.rt.kernel_args_append(args, acl.util.numpy_to_ptr(param), param.nbytes))
        assert acl.rt.kernel_args_finalize(args) == 0
        assert acl.rt.launch_kernel_with_config(inc, blocks, res.stream, [], args, 0) == 0
        assert acl.rt.synchronize_stream(res.stream) == 0
        assert (device_bytes(dev, blocks * 4).view(np.int32) == value + 1).all()

        # read_i32(const int *in) with `in` a place holder: its data (two ints after the pointer) goes to device
        # memory of the launch's own, and the pointer slot at 0 gets that address
        read = ok(acl.rt.binary_get_function(binary, "read_i32"))
        blob = struct.pack("<Qii", 0, 8642, 9753)
        assert acl.rt.launch_kernel_with_host_args(read, 2, res.stream, [], blob, len(blob),
                                                   [{"addr_offset": 0, "data_offset": 8}], 1) == 0
        assert acl.rt.synchronize_stream(res.stream) == 0
        printed = kernel_output(on_acl, server, capfd)
        assert "Destination data: 8642" in printed and "Destination data: 9753" in printed

        # a pointer outside the session's memory is refused, at the launch or at the next wait
        ret = acl.rt.launch_kernel_with_host_args(inc, blocks, res.stream, [], struct.pack("<Q", 0x1234))
        assert (ret or acl.rt.synchronize_stream(res.stream)) == acl.ACL_ERROR_INVALID_PARAM
        assert acl.rt.synchronize_stream(res.stream) == 0  # and the stream goes on
    finally:
        assert acl.rt.binary_unload(binary) == 0
        assert acl.rt.free(dev) == 0


def test_kernel_argument_blocks(res, on_acl, server, capfd):
    dev = ok(acl.rt.malloc(8, acl.ACL_MEM_MALLOC_HUGE_FIRST))
    binary = ok(acl.rt.binary_load_from_file(BUILTIN, None))
    try:
        # write_i32(out, value), then the value updated in place and launched again
        write = ok(acl.rt.binary_get_function(binary, "write_i32"))
        args = ok(acl.rt.kernel_args_init(write))
        out, value = np.array([dev], np.uint64), np.array([11], np.int32)
        ok(acl.rt.kernel_args_append(args, acl.util.numpy_to_ptr(out), 8))
        value_param = ok(acl.rt.kernel_args_append(args, acl.util.numpy_to_ptr(value), 4))
        assert acl.rt.kernel_args_finalize(args) == 0
        assert acl.rt.launch_kernel_with_config(write, 2, res.stream, [], args, 0) == 0
        assert acl.rt.synchronize_stream(res.stream) == 0
        assert device_bytes(dev, 8).view(np.int32).tolist() == [11, 11]
        value[0] = -22
        assert acl.rt.kernel_args_para_update(args, value_param, acl.util.numpy_to_ptr(value), 4) == 0
        assert acl.rt.launch_kernel_with_config(write, 1, res.stream, [], args, 0) == 0
        assert acl.rt.synchronize_stream(res.stream) == 0
        assert device_bytes(dev, 8).view(np.int32).tolist() == [-22, 11]

        # read_i32(in) with `in` a place holder whose data the program writes into the block's buffer
        read = ok(acl.rt.binary_get_function(binary, "read_i32"))
        args = ok(acl.rt.kernel_args_init(read))
        holder = ok(acl.rt.kernel_args_append_place_holder(args))
        buf = ok(acl.rt.kernel_args_get_place_holder_buffer(args, holder, 8))
        acl.util.ptr_to_numpy(buf, (2,), np.int32)[:] = [314159, 271828]
        assert acl.rt.kernel_args_finalize(args) == 0
        assert acl.rt.launch_kernel_with_config(read, 2, res.stream, [], args, 0) == 0
        assert acl.rt.synchronize_stream(res.stream) == 0
        printed = kernel_output(on_acl, server, capfd)
        assert "Destination data: 314159" in printed and "Destination data: 271828" in printed
    finally:
        assert acl.rt.binary_unload(binary) == 0
        assert acl.rt.free(dev) == 0


def test_kernel_from_data_with_host_address(res):
    with open(BUILTIN, "rb") as f:
        image = f.read()
    dev = ok(acl.rt.malloc(8, acl.ACL_MEM_MALLOC_HUGE_FIRST))
    binary = ok(acl.rt.binary_load_from_data(acl.util.bytes_to_ptr(image), len(image),
                                             [{"type": acl.ACL_RT_BINARY_LOAD_OPT_MAGIC,
                                               "value": acl.ACL_RT_BINARY_MAGIC_ELF_AICORE}]))
    try:
        assert acl.rt.memset(dev, 8, 0, 8) == 0
        inc = ok(acl.rt.binary_get_function(binary, "inc_u32"))
        blob = np.zeros(1, np.uint64)
        blob[0] = dev
        for _ in range(3):  # host args by address and size, as pyACL programs pass them
            assert acl.rt.launch_kernel_with_host_args(inc, 2, res.stream, [], acl.util.numpy_to_ptr(blob), 8,
                                                       [], 0) == 0
        assert acl.rt.synchronize_stream(res.stream) == 0
        assert device_bytes(dev, 8).view(np.uint32).tolist() == [3, 3]
        # a place-holder count past the list given is refused, not read past its end
        assert acl.rt.launch_kernel_with_host_args(inc, 2, res.stream, [], acl.util.numpy_to_ptr(blob), 8,
                                                   [], 2) == acl.ACL_ERROR_INVALID_PARAM
        assert acl.rt.synchronize_stream(res.stream) == 0
        assert device_bytes(dev, 8).view(np.uint32).tolist() == [3, 3]
    finally:
        assert acl.rt.binary_unload(binary) == 0
        assert acl.rt.binary_unload(binary) == acl.ACL_ERROR_INVALID_PARAM
        assert acl.rt.free(dev) == 0


# ---- acl.util on its own ---------------------------------------------------------------------------------------

def test_util_pointers():
    data = bytes(range(256)) * 4
    ptr = acl.util.bytes_to_ptr(data)
    assert ptr != 0 and acl.util.ptr_to_bytes(ptr, len(data)) == data
    buf = bytearray(b"abcdef")
    acl.util.ptr_to_numpy(acl.util.bytes_to_ptr(buf), (3,), np.uint8)[:] = [88, 89, 90]  # a view: writes through
    assert buf == bytearray(b"XYZdef")
    assert acl.util.ptr_to_bytes(0, 0) == b""

    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    p = acl.util.numpy_to_ptr(arr)
    assert p == arr.ctypes.data
    for np_type in (np.dtype(np.float32).num, 11, np.float32, "float32"):
        view = acl.util.ptr_to_numpy(p, (3, 4), np_type)
        assert view.dtype == np.float32 and view.shape == (3, 4) and (view == arr).all()
    view[1, 1] = 100
    assert arr[1, 1] == 100
    assert acl.util.ptr_to_numpy(p, 2, np.dtype(np.int64).num).tolist() == arr.view(np.int64).ravel()[:2].tolist()
    with pytest.raises(ValueError):
        acl.util.ptr_to_numpy(p, (2,), 17)  # object arrays do not view memory
    with pytest.raises(TypeError):
        acl.util.numpy_to_ptr([1, 2, 3])


def test_util_threads():
    seen = []
    gate = threading.Event()

    def body(args_list):
        gate.wait(10)
        seen.append((args_list, threading.get_ident()))

    tid, ret = acl.util.start_thread(body, ["a", 2])
    assert ret == 0 and tid != threading.get_ident()
    assert not seen
    gate.set()
    assert acl.util.stop_thread(tid) == 0  # waits for body to return
    assert seen == [(["a", 2], tid)]
    assert acl.util.stop_thread(tid) == acl.ACL_ERROR_INVALID_PARAM
    assert acl.util.stop_thread(12345) == acl.ACL_ERROR_INVALID_PARAM
