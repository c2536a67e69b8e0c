#!/usr/bin/python3
"""tests/python/test_hostile.py — proves from outside, at the wire, that rdevd
stands hostile input and keeps the limits rdev.proto states.

Messages are encoded by hand (varint tags), so every field of Request, of
each op's message and of Arg can be sent with every wrong wire type,
truncated, past its end, duplicated or nested deeply. Each is answered by
one Reply (900006 PROTOCOL for a malformed request, its seq when the seq
came before the fault, else 0; a normal status for what proto3 allows) and
the same session serves on, as does a session next to it. The original
crash (Request.data sent as a varint: SIGSEGV) is one of these cases.

Then the limits: a Write payload over 1 MiB is 100000; a batch runs in order,
refuses its 129th request and on, and any request that would move more than
8 MiB of Read and Write data in one message (its own request included); a
batch alone gets no reply of its own; batches do not nest; a message of the
largest size the contract allows (8 MiB + 129 * 512 bytes) is served, one
byte more ends only that call (RESOURCE_EXHAUSTED); kernel names over 63
bytes are 900007, more than 8 arguments 900008, both naming the stream; a
misaligned device-to-device Copy is 200003; kernel print past 64 KiB per
launch is cut and marked. Every reply is parsed, with its strings checked
for UTF-8 on the raw bytes too: a reply proto3 refuses is a failure.

rdevd must be alive after all of it and exit 0 on SIGTERM.

usage: test_hostile.py RDEVD_BINARY PROTO_DIR
"""
import os
import queue
import random
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

RDEVD, PROTO_DIR = sys.argv[1], sys.argv[2]
del sys.argv[1:3]

import grpc  # noqa: E402

import stubs  # noqa: E402

GEN, pb, pbg, health_pb2 = stubs.generate(PROTO_DIR)

# rdev status codes (proto/include/rdev/status.h)
INVALID_PARAM = 100000
MEMORY_ADDRESS_UNALIGNED = 200003
MEMORY_ALLOCATION = 207001
INVALID_RESOURCE_HANDLE = 200005
PROTOCOL = 900006
UNKNOWN_KERNEL = 900007
KERNEL_ARGS = 900008

# the limits of rdev.proto (proto/include/rdev/wire.h)
MAX_CHUNK = 1 << 20
MAX_BATCH = 128
MAX_BATCH_XFER = 8 * MAX_CHUNK
MAX_KERNEL_NAME = 63
MAX_ARGS = 8
MAX_MESSAGE = MAX_BATCH_XFER + (MAX_BATCH + 1) * 512  # 8454656
# kernel print (runtime/include/rdev/runtime.h, runtime/runtime.c)
PRINT_LIMIT = 65536
PRINT_NOTE = "[kernel print truncated]\n"

SIM_MEM = 64 << 20
SESSION = "/rdev.v1.Device/Session"
REPLY_TIMEOUT = 15  # seconds any one reply may take
BOGUS = 0x5EED00000000C0DE  # a handle or device address no session has (handles are unguessable)

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5

# ---- hand encoding -----------------------------------------------------------


def varint(v):
    v &= (1 << 64) - 1  # negative numbers as ten-byte two's complement, as proto does
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if not v:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def key(field, wt):
    return varint(field << 3 | wt)


def f_varint(field, v):
    return key(field, VARINT) + varint(v)


def f_bytes(field, b):
    return key(field, LEN) + varint(len(b)) + b


def f_fixed32(field, v):
    return key(field, I32) + struct.pack("<I", v)


def f_fixed64(field, v):
    return key(field, I64) + struct.pack("<Q", v)


def field_as(field, wt):
    """field with wire type wt and a body of that type (6 and 7 are no wire type)."""
    k = key(field, wt)
    if wt == VARINT:
        return k + varint(1)
    if wt == I64:
        return k + struct.pack("<Q", 1)
    if wt == LEN:
        return k + varint(2) + b"\x08\x01"
    if wt == SGROUP:
        return k + f_varint(1, 1) + key(field, EGROUP)  # a whole group
    if wt == EGROUP:
        return k  # an end-group with no start
    if wt == I32:
        return k + struct.pack("<I", 1)
    return k + b"\x01" * 8


def field_cut(field, wt):
    """field with wire type wt whose body runs past the end of its message."""
    k = key(field, wt)
    return k + {VARINT: b"\x80", I64: b"\x01\x02\x03", LEN: varint(5) + b"ab", I32: b"\x01"}[wt]


# wire types a parser must refuse whatever it does with unknown or mistyped fields
ALWAYS_MALFORMED = (EGROUP, 6, 7)


def req(seq=None, *parts):
    return (f_varint(1, seq) if seq is not None else b"") + b"".join(parts)


def elem(raw):
    """raw as one request of Request.batch."""
    return f_bytes(30, raw)


def mem_info(seq):
    return f_varint(1, seq) + f_bytes(20, b"")


def launch_raw(seq, stream, kernel, blocks=1, args=()):
    """A Launch request; kernel is raw bytes, args raw Arg messages."""
    body = f_varint(1, stream) + f_bytes(2, kernel) + f_varint(3, blocks) + b"".join(f_bytes(4, a) for a in args)
    return req(seq, f_bytes(12, body))


def arg_ptr(addr):
    return f_varint(1, addr)


def arg_i32(v):
    return f_varint(2, v)


def write_raw(seq, addr, data, stream=0, dest_max=None, quiet=False):
    body = (f_varint(1, stream) if stream else b"") + f_varint(2, addr) + \
        f_varint(4, len(data) if dest_max is None else dest_max) + (f_varint(5, 1) if quiet else b"")
    return req(seq, f_bytes(8, body)) + f_bytes(100, data)


def read_raw(seq, addr, count, stream=0):
    body = (f_varint(1, stream) if stream else b"") + f_varint(2, addr) + \
        f_varint(4, count) + f_varint(5, count)
    return req(seq, f_bytes(9, body))


# ---- reading replies -----------------------------------------------------------


def read_varint(b, i):
    v = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            raise ValueError("bad varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def check_strings(raw, strings=(4, 10)):
    """Walks a reply's fields on the raw bytes: the string fields must be UTF-8."""
    i = 0
    while i < len(raw):
        k, i = read_varint(raw, i)
        field, wt = k >> 3, k & 7
        if wt == VARINT:
            _, i = read_varint(raw, i)
        elif wt == I64:
            i += 8
        elif wt == I32:
            i += 4
        elif wt == LEN:
            n, i = read_varint(raw, i)
            if field in strings:
                raw[i:i + n].decode("utf-8")  # strict: no surrogates, no overlongs
            i += n
        else:
            raise ValueError(f"field {field} has wire type {wt}")
        if i > len(raw):
            raise ValueError("a field runs past the end")


def parse_reply(raw):
    try:
        check_strings(raw)
        return pb.Reply.FromString(raw)
    except Exception as e:  # noqa: BLE001 — any refusal is the finding
        raise AssertionError(f"reply is not valid proto3 ({type(e).__name__}: {e}): {raw[:160]!r}") from None


def show(replies):
    return [(r.seq, r.kind, r.status, r.stream, r.message[:60]) for r in replies]


_END = object()


class Session:
    """A Session call that sends raw bytes and parses each reply, with a
    deadline on every wait (a thread drains the call)."""

    def __init__(self, channel):
        self.q = queue.Queue()
        self.out = queue.Queue()
        self.seq = 1 << 40  # seqs of its own: above those the tests pick by hand
        self.ended = False
        rpc = channel.stream_stream(SESSION, request_serializer=None, response_deserializer=None)
        self.call = rpc(iter(self.q.get, None))
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        try:
            for raw in self.call:
                self.out.put(raw)
        except Exception as e:  # noqa: BLE001 — grpc.RpcError mostly; handed to the reader
            self.out.put(e)
            return
        self.out.put(_END)

    def next_seq(self):
        self.seq += 1
        return self.seq

    def send(self, raw):
        self.q.put(bytes(raw))

    def recv_item(self, timeout=REPLY_TIMEOUT):
        try:
            return self.out.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no reply within {timeout} s") from None

    def recv(self, timeout=REPLY_TIMEOUT):
        if self.ended:  # nothing more will come
            raise AssertionError(f"the call ended earlier: {self.ended}")
        item = self.recv_item(timeout)
        if item is _END:
            self.ended = "the call ended: the session does not serve on"
        elif isinstance(item, grpc.RpcError):
            self.ended = f"the call failed: {item.code()}: {item.details()}"
        elif isinstance(item, Exception):
            self.ended = f"the call failed: {item!r}"
        else:
            return parse_reply(item)
        raise AssertionError(self.ended)

    def close(self):
        self.q.put(None)
        if self.ended:
            return
        deadline = time.monotonic() + 10
        while True:
            try:
                item = self.out.get(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                self.call.cancel()
                return
            if item is _END or isinstance(item, Exception):
                return


def start_rdevd(*extra):
    """A real rdevd on a free loopback port: (process, address, stderr file)."""
    err = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([RDEVD, "--listen", "127.0.0.1:0", "--sim-mem", "64M", "--log-level", "warn", *extra],
                            stdout=subprocess.PIPE, stderr=err, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    line = proc.stdout.readline() if ready else ""
    if not line.strip():
        proc.kill()
        proc.wait()
        err.seek(0)
        raise RuntimeError(f"rdevd did not start: {err.read()[-2000:]}")
    return proc, line.split()[-1], err


class HostileTest(unittest.TestCase):
    deaths = []  # how rdevd ended, each time it died during the suite

    @classmethod
    def setUpClass(cls):
        cls._start()

    @classmethod
    def _start(cls):
        cls.proc, cls.addr, cls.err = start_rdevd()
        cls.channel = grpc.insecure_channel(cls.addr)
        # a bystander: a session next to every hostile one, holding data of its own
        cls.by = Session(cls.channel)
        cls.by_data = os.urandom(4096)
        cls.by.send(pb.Request(seq=1, malloc=pb.Malloc(device=0, size=4096)).SerializeToString())
        r = cls.by.recv()
        assert r.status == 0, r.message
        cls.by_buf = r.addr
        cls.by.send(write_raw(2, cls.by_buf, cls.by_data))
        r = cls.by.recv()
        assert r.status == 0, r.message
        cls.by.seq = 2

    @classmethod
    def _stderr_tail(cls):
        cls.err.seek(0)
        return cls.err.read()[-3000:]

    @classmethod
    def _stop_channel(cls):
        try:
            cls.by.close()
        finally:
            cls.channel.close()

    @classmethod
    def tearDownClass(cls):
        alive = cls.proc.poll() is None
        try:
            cls._stop_channel()
        finally:
            if alive:
                cls.proc.terminate()
                try:
                    rc = cls.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    cls.proc.kill()
                    cls.proc.wait()
                    rc = "no exit within 30 s of SIGTERM"
            cls.proc.stdout.close()
            tail = cls._stderr_tail()
            cls.err.close()
        assert not cls.deaths, f"rdevd died during the suite: exit {cls.deaths}"
        assert alive, f"rdevd was not alive at the end of the suite (exit {cls.proc.returncode}): {tail}"
        assert rc == 0, f"rdevd exited {rc} on SIGTERM: {tail}"

    def setUp(self):
        if self.proc.poll() is None:
            try:
                self.assert_bystander()
            except AssertionError:  # dying of an earlier test (a core dump takes a while)
                try:
                    self.proc.wait(20)
                except subprocess.TimeoutExpired:
                    pass
        if self.proc.poll() is not None:  # an earlier test killed it: start afresh for this one
            type(self).deaths.append(self.proc.returncode)
            try:
                self._stop_channel()
            except Exception:  # noqa: BLE001
                pass
            self.proc.stdout.close()
            self.err.close()
            type(self)._start()

    def tearDown(self):
        rc = self.proc.poll()
        if rc is None:
            try:
                self.assert_bystander()
            except AssertionError:
                try:
                    rc = self.proc.wait(20)  # dying? then that is what to report
                except subprocess.TimeoutExpired:
                    raise
        if rc is not None:
            self.fail(f"rdevd died during this test (exit {rc}): {self._stderr_tail()}")

    # ---- helpers ---------------------------------------------------------------

    def open(self):
        s = Session(self.channel)
        self.addCleanup(s.close)
        return s

    def put(self, s, **op):
        seq = s.next_seq()
        s.send(pb.Request(seq=seq, **op).SerializeToString())
        return seq

    def call(self, s, **op):
        seq = self.put(s, **op)
        r = s.recv()
        self.assertEqual(r.seq, seq, show([r]))
        return r

    def ok(self, s, **op):
        r = self.call(s, **op)
        self.assertEqual(r.status, 0, r.message)
        return r

    def probe(self, s):
        """Sends a MemInfo: returns the replies that came before its answer,
        which must be right."""
        seq = s.next_seq()
        s.send(mem_info(seq))
        got = []
        while True:
            r = s.recv()
            if r.seq == seq and r.kind == pb.FINAL:
                break
            got.append(r)
            self.assertLess(len(got), 10000, f"replies keep coming: {show(got[-5:])}")
        self.assertEqual((r.status, r.value2), (0, SIM_MEM), f"MemInfo after it: {r.message}")
        return got

    def exchange(self, s, raw):
        """Sends raw, then a MemInfo: the replies raw got."""
        s.send(raw)
        return self.probe(s)

    def expect_one(self, s, raw, seq, statuses=None):
        got = self.exchange(s, raw)
        self.assertEqual(len(got), 1, f"want one reply, got {show(got)}")
        r = got[0]
        self.assertEqual((r.seq, r.kind), (seq, pb.FINAL), show(got))
        if statuses is not None:
            self.assertIn(r.status, statuses, r.message)
        late = self.probe(s)  # a second one: nothing of raw's may come after the first
        self.assertEqual(late, [], f"replies after the next request's: {show(late)}")
        return r

    def run_cases(self, cases):
        """Each case (what, raw, seq, statuses or None) on one session: one reply,
        seq as given, status among statuses; then the session must serve on.
        Reports every case that fails; a session that ends is replaced."""
        failures = []
        s = self.open()
        for what, raw, seq, statuses in cases:
            try:
                self.expect_one(s, raw, seq, statuses)
            except AssertionError as e:
                failures.append(f"{what}: {e}")
                if self.proc.poll() is not None:
                    failures.append(f"rdevd died (exit {self.proc.returncode})")
                    break
                if "no reply within" in str(e):
                    break
                s = self.open()  # a fresh session, so that this case's leftovers do not blame the next
        if self.proc.poll() is None:
            self.assert_serves(s)
        if failures:
            self.fail(f"{len(failures)} of {len(cases)} cases failed:\n  " + "\n  ".join(failures[:25]))

    def assert_serves(self, s):
        """A Malloc, Write, Read, Free round trip on s."""
        data = os.urandom(1000)
        buf = self.ok(s, malloc=pb.Malloc(device=0, size=1000)).addr
        seq = s.next_seq()
        s.send(write_raw(seq, buf, data))
        r = s.recv()
        self.assertEqual((r.seq, r.status), (seq, 0), r.message)
        self.assertEqual(self.ok(s, read=pb.Read(addr=buf, count=1000, dest_max=1000)).data, data)
        self.ok(s, free=pb.Free(addr=buf))

    def assert_bystander(self):
        by = type(self).by
        seq = by.next_seq()
        by.send(read_raw(seq, self.by_buf, 4096))
        r = by.recv()
        self.assertEqual((r.seq, r.status), (seq, 0), f"the bystander session: {r.message}")
        self.assertTrue(r.data == self.by_data, "the bystander session's data changed")

    def stream(self, s):
        return self.ok(s, stream_create=pb.StreamCreate(device=0)).handle

    def buffer(self, s, size, fill=b"\0"):
        buf = self.ok(s, malloc=pb.Malloc(device=0, size=size)).addr
        seq = s.next_seq()
        data = (fill * size)[:size]
        for off in range(0, size, MAX_CHUNK):
            s.send(write_raw(seq, buf + off, data[off:off + MAX_CHUNK], dest_max=size - off, quiet=True))
        self.assertEqual(self.probe(s), [])  # quiet writes that land: no reply
        return buf

    def read_back(self, s, buf, size):
        out = b""
        for off in range(0, size, MAX_CHUNK):
            n = min(MAX_CHUNK, size - off)
            out += self.ok(s, read=pb.Read(addr=buf + off, count=n, dest_max=n)).data
        return out

    # ---- 1. every field, every wire type ----------------------------------------

    # Request's fields and their wire types
    REQUEST_FIELDS = dict([(1, VARINT)] + [(f, LEN) for f in range(2, 21)] + [(30, LEN), (100, LEN)])

    def test_request_fields_with_wrong_wire_types_are_answered_and_the_session_serves_on(self):
        cases = []
        for f, right in self.REQUEST_FIELDS.items():
            for wt in range(8):
                if wt == right:
                    continue
                bad = field_as(f, wt)
                what = f"Request field {f} as wire type {wt}"
                if f == 1:  # the seq itself: never decoded, so 0
                    cases.append((what, bad + f_bytes(20, b""), 0,
                                  (PROTOCOL,) if wt in ALWAYS_MALFORMED else None))
                elif f == 100:  # a MemInfo with a mistyped payload: malformed, or the field ignored
                    cases.append((what, mem_info(77) + bad, 77,
                                  (PROTOCOL,) if wt in ALWAYS_MALFORMED else (PROTOCOL, 0)))
                else:  # an op or the batch: malformed, or no op at all — PROTOCOL either way
                    cases.append((what, req(77, bad), 77, (PROTOCOL,)))
        self.run_cases(cases)

    def test_request_fields_cut_short_are_protocol_errors(self):
        cases = []
        for f, right in self.REQUEST_FIELDS.items():
            if f == 1:
                cases.append(("seq cut", f_bytes(20, b"") + field_cut(1, VARINT), 0, (PROTOCOL,)))
                cases.append(("seq as an 11-byte varint", f_bytes(20, b"") + key(1, VARINT) + b"\xff" * 10 + b"\x01",
                              0, (PROTOCOL,)))
            else:
                cases.append((f"Request field {f} cut", req(78, f_bytes(20, b""), field_cut(f, LEN)) if f == 100
                              else req(78, field_cut(f, LEN)), 78, (PROTOCOL,)))
        self.run_cases(cases)

    def test_batch_element_fields_with_wrong_wire_types_are_answered(self):
        # each element broken one field at a time, between two good ones
        cases = []
        for f, right in self.REQUEST_FIELDS.items():
            for wt in range(8):
                if wt == right:
                    continue
                bad = field_as(f, wt)
                what = f"batch element field {f} as wire type {wt}"
                strict = wt in ALWAYS_MALFORMED
                if f == 1:
                    e, seq, st = bad + f_bytes(20, b""), 0, (PROTOCOL,) if strict else None
                elif f == 100:
                    e, seq, st = mem_info(81) + bad, 81, (PROTOCOL,) if strict else (PROTOCOL, 0)
                else:  # an op, or a batch in a batch: PROTOCOL whichever way it is read
                    e, seq, st = req(81, bad), 81, (PROTOCOL,)
                cases.append((what, elem(mem_info(80)) + elem(e) + elem(mem_info(82)), seq, st))
        s = self.open()
        failures = []
        for what, raw, seq, statuses in cases:
            try:
                got = self.exchange(s, raw)
                self.assertEqual([(r.seq, r.status) for r in got if r.seq in (80, 82)], [(80, 0), (82, 0)],
                                 show(got))
                mid = [r for r in got if r.seq not in (80, 82)]
                self.assertEqual(len(mid), 1, show(got))
                self.assertEqual(got[1], mid[0], f"out of order: {show(got)}")
                self.assertEqual(mid[0].seq, seq, show(got))
                if statuses:
                    self.assertIn(mid[0].status, statuses, mid[0].message)
                late = self.probe(s)
                self.assertEqual(late, [], f"replies after the next request's: {show(late)}")
            except AssertionError as e:
                failures.append(f"{what}: {e}")
                if self.proc.poll() is not None or "no reply within" in str(e):
                    break
                s = self.open()  # a fresh session, so that this case's leftovers do not blame the next
        if self.proc.poll() is None:
            self.assert_serves(s)
        if failures:
            self.fail(f"{len(failures)} of {len(cases)} cases failed:\n  " + "\n  ".join(failures[:25]))

    # Each op's message: its fields as (field, wire type, value), all of them
    # bogus handles or harmless values, so that whichever way a mistyped field
    # is read the request is answered (fails, or runs synchronously).
    OPS = {
        2: ("malloc", [(1, VARINT, 0), (2, VARINT, 64), (3, VARINT, 0)]),
        3: ("free", [(1, VARINT, BOGUS)]),
        4: ("stream_create", [(1, VARINT, 0)]),
        5: ("stream_destroy", [(1, VARINT, BOGUS)]),
        6: ("stream_sync", [(1, VARINT, BOGUS)]),
        7: ("stream_query", [(1, VARINT, BOGUS)]),
        8: ("write", [(1, VARINT, BOGUS), (2, VARINT, BOGUS), (4, VARINT, 8), (5, VARINT, 1)]),
        9: ("read", [(1, VARINT, BOGUS), (2, VARINT, BOGUS), (4, VARINT, 8), (5, VARINT, 8)]),
        10: ("copy", [(1, VARINT, BOGUS), (2, VARINT, BOGUS), (4, VARINT, BOGUS), (6, VARINT, 64), (7, VARINT, 64)]),
        11: ("memset", [(1, VARINT, BOGUS), (2, VARINT, BOGUS), (4, VARINT, 7), (5, VARINT, 8), (6, VARINT, 8)]),
        12: ("launch", [(1, VARINT, BOGUS), (2, LEN, b"write_i32"), (3, VARINT, 1),
                        (4, LEN, arg_ptr(BOGUS)), (4, LEN, arg_i32(5))]),
        13: ("event_create", [(1, VARINT, 0)]),
        14: ("event_destroy", [(1, VARINT, BOGUS)]),
        15: ("event_record", [(1, VARINT, BOGUS), (2, VARINT, BOGUS)]),
        16: ("stream_wait_event", [(1, VARINT, BOGUS), (2, VARINT, BOGUS)]),
        17: ("event_sync", [(1, VARINT, BOGUS)]),
        18: ("event_query", [(1, VARINT, BOGUS)]),
        19: ("event_elapsed", [(1, VARINT, BOGUS), (2, VARINT, BOGUS)]),
        20: ("mem_info", [(1, VARINT, 0)]),
    }

    @staticmethod
    def encode_fields(fields):
        out = b""
        for f, wt, v in fields:
            out += f_varint(f, v) if wt == VARINT else f_bytes(f, v) if wt == LEN else \
                f_fixed32(f, v) if wt == I32 else f_fixed64(f, v)
        return out

    def sub_message_cases(self, fields, wrap, label):
        """Cases for one message given as fields; wrap(body) makes the request
        (seq 90) that carries it. Each field in turn: every other wire type in
        its place, then cut short at the end of the message, then (varints)
        an 11-byte varint; the others stay."""
        cases = []
        for f in sorted({f for f, _, _ in fields}):
            right = next(wt for g, wt, _ in fields if g == f)
            first = next(i for i, (g, _, _) in enumerate(fields) if g == f)
            others = fields[:first] + fields[first + 1:]
            for wt in range(8):
                if wt == right:
                    continue
                body = self.encode_fields(fields[:first]) + field_as(f, wt) + self.encode_fields(fields[first + 1:])
                cases.append((f"{label} field {f} as wire type {wt}", wrap(body), 90,
                              (PROTOCOL,) if wt in ALWAYS_MALFORMED else None))
            cases.append((f"{label} field {f} cut", wrap(self.encode_fields(others) + field_cut(f, right)), 90,
                          (PROTOCOL,)))
            if right == VARINT:
                cases.append((f"{label} field {f} as an 11-byte varint",
                              wrap(self.encode_fields(others) + key(f, VARINT) + b"\xff" * 10 + b"\x01"), 90,
                              (PROTOCOL,)))
                big = self.encode_fields(fields[:first]) + f_varint(f, (1 << 64) - 1) + \
                    self.encode_fields(fields[first + 1:])
                cases.append((f"{label} field {f} = 2**64-1", wrap(big), 90, None))
        return cases

    def test_op_fields_with_wrong_wire_types_are_answered(self):
        cases = []
        for op, (name, fields) in self.OPS.items():
            extra = f_bytes(100, b"12345678") if name == "write" else b""
            cases += self.sub_message_cases(fields, lambda body, op=op, extra=extra: req(90, f_bytes(op, body), extra),
                                            name)
        self.run_cases(cases)

    def test_arg_fields_with_wrong_wire_types_are_answered(self):
        def launch(first_arg):
            return launch_raw(90, BOGUS, b"write_i32", 1, [first_arg, arg_i32(5)])
        arg = [(1, VARINT, BOGUS), (2, VARINT, 1), (3, VARINT, 1), (4, VARINT, 1), (5, VARINT, 1),
               (6, I32, 0x3F800000), (7, I64, 0x3FF0000000000000)]
        cases = []
        for f, wt, v in arg:  # Arg is a oneof: one field at a time
            cases += self.sub_message_cases([(f, wt, v)], launch, f"Arg.{f}")
        # a pointer as the message it used to be (buffer handle, offset): a mistyped field
        cases.append(("Arg.ptr as the old Ptr message", launch(f_bytes(1, f_varint(1, BOGUS) + f_varint(2, 64))),
                      90, None))
        self.run_cases(cases)

    def test_payload_as_varint_is_answered_not_a_crash(self):
        # the original crash: Request.data (field 100) as a varint killed rdevd
        s = self.open()
        buf = self.buffer(s, 64)
        shapes = [
            ("alone", req(91, f_varint(100, 1)), 91, (PROTOCOL,)),
            ("alone, no seq", f_varint(100, 0), 0, (PROTOCOL,)),
            ("huge", req(91, f_varint(100, (1 << 64) - 1)), 91, (PROTOCOL,)),
            ("on a Write", req(91, f_bytes(8, f_varint(2, buf) + f_varint(4, 64)), f_varint(100, 8)), 91,
             (PROTOCOL, 0)),
            ("on a Write, before it", req(91, f_varint(100, 1 << 20), f_bytes(8, f_varint(2, buf) + f_varint(4, 64))),
             91, (PROTOCOL, 0)),
            ("twice", req(91, f_varint(100, 5), f_varint(100, 6)), 91, (PROTOCOL,)),
            ("as fixed64", req(91, f_fixed64(100, 1 << 40)), 91, (PROTOCOL,)),
            ("as fixed32", req(91, f_fixed32(100, 1 << 20)), 91, (PROTOCOL,)),
            ("after a real payload", req(91, f_bytes(8, f_varint(2, buf) + f_varint(4, 64)), f_bytes(100, b"x"),
                                         f_varint(100, 1)), 91, None),
        ]
        for what, raw, seq, statuses in shapes:
            with self.subTest(what):
                self.expect_one(s, raw, seq, statuses)
                self.assertEqual(self.proc.poll(), None, "rdevd died")
        # in a batch: the element is answered, the others run
        for what, raw, seq, statuses in shapes:
            with self.subTest("in a batch: " + what):
                got = self.exchange(s, elem(raw) + elem(mem_info(92)))
                self.assertEqual(len(got), 2, show(got))
                self.assertEqual(got[0].seq, seq, show(got))
                if statuses:
                    self.assertIn(got[0].status, statuses, show(got))
                self.assertEqual((got[1].seq, got[1].status), (92, 0), show(got))
        self.assertTrue(self.read_back(s, buf, 64) in (b"\0" * 64, b"x" + b"\0" * 63))
        self.assert_serves(s)

    def test_a_fault_before_the_seq_is_answered_with_seq_zero(self):
        cases = [
            ("end-group, then seq", key(50, EGROUP) + mem_info(93), 0, (PROTOCOL,)),
            ("wire type 7, then seq", key(50, 7) + mem_info(93), 0, (PROTOCOL,)),
            ("op cut before seq", f_bytes(20, field_cut(1, VARINT)) + f_varint(1, 93), 0, (PROTOCOL,)),
            ("seq, then end-group", mem_info(93) + key(50, EGROUP), 93, (PROTOCOL,)),
            ("seq, then a cut op", req(93, f_bytes(20, field_cut(1, VARINT))), 93, (PROTOCOL,)),
            ("empty message", b"", 0, (PROTOCOL,)),
            ("seq alone", req(93), 93, (PROTOCOL,)),
        ]
        self.run_cases(cases)

    def test_lengths_past_the_end_or_overlong_are_protocol_errors(self):
        cases = []
        for f in (8, 12, 20, 30, 100, 77):
            k = key(f, LEN)
            cases += [
                (f"field {f}: length past the end", req(94, k + varint(1000) + b"abc"), 94, (PROTOCOL,)),
                (f"field {f}: length 2**64-1", req(94, k + varint((1 << 64) - 1) + b"abc"), 94, (PROTOCOL,)),
                (f"field {f}: length 2**32+1", req(94, k + varint((1 << 32) + 1) + b"abc"), 94, (PROTOCOL,)),
                (f"field {f}: length as 11-byte varint", req(94, k + b"\x83" + b"\x80" * 9 + b"\x00abc"), 94,
                 (PROTOCOL,)),
                (f"field {f}: no length", req(94, k), 94, (PROTOCOL,)),
            ]
        self.run_cases(cases)

    def test_every_prefix_of_a_request_is_answered(self):
        # a Write with its payload and a Launch with arguments, cut after each
        # byte: a cut inside a field is PROTOCOL; every cut is answered once
        s = self.open()
        buf = self.buffer(s, 64)
        st = self.stream(s)
        write = [f_varint(1, 95), f_bytes(8, f_varint(2, buf) + f_varint(4, 64)), f_bytes(100, b"abcdefgh")]
        launch = [f_varint(1, 95), launch_raw(None, st, b"write_i32", 4, [arg_ptr(buf), arg_i32(-7)])]
        cases = []
        for parts in (write, launch):
            whole = b"".join(parts)
            bounds = {sum(len(p) for p in parts[:i]) for i in range(len(parts) + 1)}
            for n in range(len(whole)):
                seq = 95 if n >= len(parts[0]) else 0
                cases.append((f"prefix of {n} bytes", whole[:n], seq, None if n in bounds else (PROTOCOL,)))
        self.run_cases(cases)
        self.assertEqual(self.read_back(s, buf, 64), b"\0" * 64)  # no Launch ran, no payload landed

    def test_op_fields_of_any_length_and_content_are_answered(self):
        rnd = random.Random(20240601)
        cases = []
        for op, (name, _) in self.OPS.items():
            cases.append((f"{name} empty", req(96, f_bytes(op, b"")), 96, None))
            padded = f_bytes(op, f_bytes(99, b"\0" * 102400))  # an unknown field of 100 KiB
            cases.append((f"{name} padded with 100 KiB unknown field", req(96, padded), 96, None))
            for i in range(12):
                junk = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 48)))
                if name in ("malloc", "stream_create", "event_create"):  # no allocations of random size
                    junk = f_varint(1, 7) + junk  # device 7: none; may still be overridden (then it fails or is small)
                cases.append((f"{name} random {i}: {junk.hex()}", req(96, f_bytes(op, junk)), 96, None))
        self.run_cases(cases)

    def test_duplicated_fields_last_one_wins(self):
        s = self.open()
        buf = self.buffer(s, 64)
        # the seq twice: the last one
        r = self.expect_one(s, f_varint(1, 1000) + f_varint(1, 97) + f_bytes(20, b""), 97, (0,))
        # two ops: the last one (oneof)
        r = self.expect_one(s, req(97, f_bytes(2, f_varint(2, 1 << 62)), f_bytes(20, b"")), 97, (0,))
        self.assertEqual(r.value2, SIM_MEM)
        # the payload twice: the last one
        w = f_bytes(8, f_varint(2, buf) + f_varint(4, 64))
        self.expect_one(s, req(97, w, f_bytes(100, b"A" * 8), f_bytes(100, b"B" * 4)), 97, (0,))
        # a Write's address twice: the last one
        w2 = f_bytes(8, f_varint(2, buf) + f_varint(4, 64) + f_varint(2, buf + 32))
        self.expect_one(s, req(97, w2, f_bytes(100, b"C" * 4)), 97, (0,))
        self.assertEqual(self.read_back(s, buf, 64), b"B" * 4 + b"\0" * 28 + b"C" * 4 + b"\0" * 28)
        self.assert_serves(s)

    def test_unknown_fields_of_every_wire_type_are_ignored(self):
        unknown = f_varint(50, 1) + f_fixed64(51, 1) + f_bytes(52, b"junk") + f_fixed32(53, 1) + \
            f_bytes(536870911, b"x")  # the largest field number
        s = self.open()
        self.expect_one(s, req(98, f_bytes(20, b""), unknown), 98, (0,))
        self.expect_one(s, unknown + req(98, f_bytes(20, unknown)), 98, (0,))
        got = self.exchange(s, elem(unknown + mem_info(98) + unknown) + unknown)
        self.assertEqual([(r.seq, r.status) for r in got], [(98, 0)])
        # a group is proto2's, long deprecated: skipped, or malformed
        self.expect_one(s, req(98, f_bytes(20, b""), field_as(54, SGROUP)), 98, (0, PROTOCOL))
        self.assert_serves(s)

    def test_deeply_nested_batches_are_one_protocol_error(self):
        # 100000 batches inside one another, each element with a seq first:
        # the outermost element holds a batch, so it is malformed, and
        # nothing inside it runs
        s = self.open()
        buf = self.buffer(s, 64)
        depth = 100000
        inner = write_raw(200000, buf, b"\xee" * 8)
        heads, n = [], len(inner)
        for i in range(depth):
            seq_field = f_varint(1, 100000 + i)
            head = seq_field + key(30, LEN) + varint(n)
            heads.append(head)
            n += len(head)
        raw = key(30, LEN) + varint(n) + b"".join(reversed(heads)) + inner
        got = self.exchange(s, raw + elem(mem_info(99)))
        self.assertEqual([(r.seq, r.status) for r in got], [(100000 + depth - 1, PROTOCOL), (99, 0)], show(got))
        self.assertEqual(self.read_back(s, buf, 64), b"\0" * 64)
        self.assert_serves(s)

    def test_deeply_nested_groups_are_answered(self):
        s = self.open()
        depth = 100000
        groups = key(50, SGROUP) * depth + key(50, EGROUP) * depth
        self.expect_one(s, mem_info(100) + groups, 100, (0, PROTOCOL))
        self.expect_one(s, req(100, f_bytes(20, groups)), 100, (0, PROTOCOL))
        self.expect_one(s, mem_info(100) + key(50, SGROUP) * depth, 100, (PROTOCOL,))  # never closed
        self.assert_serves(s)

    def test_the_bystanders_addresses_reach_nothing_from_a_hostile_session(self):
        # the bystander's real, live address (and ones inside it, and sums
        # that wrap to it), named by another session in every request that
        # names memory, alone and in a batch: each refused with 100000
        # (asynchronous ones naming their stream); the bystander's data is
        # checked after the test as after every other
        s = self.open()
        mine = self.buffer(s, 4096)
        st = self.stream(s)
        by = self.by_buf
        addrs = [by, by + 64, by + 4032, (by - 64) & (2**64 - 1)]
        for addr in addrs:
            sync = [pb.Request(seq=s.next_seq(), **op) for op in (
                dict(write=pb.Write(addr=addr, dest_max=4), data=b"evil"),
                dict(read=pb.Read(addr=addr, count=64, dest_max=64)),
                dict(memset=pb.Memset(addr=addr, value=0x66, count=64, dest_max=64)),
                dict(copy=pb.Copy(dst=mine, src=addr, count=64, dest_max=64)),
                dict(copy=pb.Copy(dst=addr, src=mine, count=64, dest_max=64)),
                dict(free=pb.Free(addr=addr)))]
            on_st = [pb.Request(seq=s.next_seq(), **op) for op in (
                dict(write=pb.Write(stream=st, addr=addr, dest_max=4), data=b"evil"),
                dict(read=pb.Read(stream=st, addr=addr, count=64, dest_max=64)),
                dict(memset=pb.Memset(stream=st, addr=addr, value=0x66, count=64, dest_max=64)),
                dict(copy=pb.Copy(stream=st, dst=addr, src=mine, count=64, dest_max=64)),
                dict(launch=pb.Launch(stream=st, kernel="write_i32", blocks=1, args=[pb.Arg(ptr=addr), pb.Arg(i32=7)])),
                dict(launch=pb.Launch(stream=st, kernel="square_f32", blocks=1,
                                      args=[pb.Arg(ptr=addr), pb.Arg(ptr=mine), pb.Arg(u32=16)])))]
            want = [(q.seq, INVALID_PARAM, 0) for q in sync] + [(q.seq, INVALID_PARAM, st) for q in on_st]
            for q in sync + on_st:  # one at a time
                got = self.exchange(s, q.SerializeToString())
                self.assertEqual([(r.seq, r.status, r.stream) for r in got], [w for w in want if w[0] == q.seq],
                                 f"{addr:#x}: {show(got)}")
            got = self.exchange(s, pb.Request(batch=sync + on_st).SerializeToString())  # all in one batch
            self.assertEqual([(r.seq, r.status, r.stream) for r in got], want, f"{addr:#x}: {show(got)}")
        # sums that wrap to the bystander's memory: address + count past 2**64
        for q in (pb.Request(seq=s.next_seq(), memset=pb.Memset(addr=by + 64, value=0x66, count=2**64 - 64,
                                                                dest_max=2**64 - 1)),
                  pb.Request(seq=s.next_seq(), copy=pb.Copy(dst=mine, src=by + 64, count=2**64 - 64,
                                                            dest_max=2**64 - 1)),
                  pb.Request(seq=s.next_seq(), memset=pb.Memset(addr=mine + 64, value=0x66, count=2**64 - 64,
                                                                dest_max=2**64 - 1))):
            got = self.exchange(s, q.SerializeToString())
            self.assertEqual([(r.seq, r.status) for r in got], [(q.seq, INVALID_PARAM)], show(got))
        self.assertEqual(self.ok(s, stream_sync=pb.StreamSync(stream=st)).print, "")  # nothing ran
        self.assertEqual(self.read_back(s, mine, 4096), b"\0" * 4096)
        self.assert_bystander()
        self.assert_serves(s)

    def test_a_concurrent_session_is_unaffected_by_a_hostile_one(self):
        stop, errors, rounds = threading.Event(), [], [0]

        def honest():
            t = Session(self.channel)
            try:
                buf = None
                t.send(pb.Request(seq=1, malloc=pb.Malloc(device=0, size=4096)).SerializeToString())
                buf = t.recv().addr
                seq = 1
                while not stop.is_set():
                    data = os.urandom(4096)
                    t.send(write_raw(seq + 1, buf, data))
                    t.send(read_raw(seq + 2, buf, 4096))
                    a, b = t.recv(), t.recv()
                    if (a.seq, a.status, b.seq, b.status) != (seq + 1, 0, seq + 2, 0) or b.data != data:
                        errors.append(show([a, b]))
                        return
                    seq += 2
                    rounds[0] += 1
            except AssertionError as e:
                errors.append(str(e))
            finally:
                t.close()

        th = threading.Thread(target=honest, daemon=True)
        th.start()
        s = self.open()
        bad = [field_as(f, wt) for f in (1, 2, 8, 12, 30, 100) for wt in (0, 1, 3, 4, 5, 7) if (f, wt) != (1, 0)]
        t0, sent = time.monotonic(), 0
        while sent < 300 or (time.monotonic() - t0 < 1 and not errors):  # a second at least
            for i in range(100):
                s.send(req(101 + sent, bad[sent % len(bad)]))
                sent += 1
            got = self.probe(s)
            self.assertEqual([r.seq for r in got], list(range(101 + sent - 100, 101 + sent)), show(got[:5]))
            self.assertEqual({r.status for r in got}, {PROTOCOL})
        stop.set()
        th.join(30)
        self.assertFalse(th.is_alive(), "the honest session hung")
        self.assertEqual(errors, [])
        self.assertGreater(rounds[0], 10)

    # ---- 2. Write payloads over 1 MiB ---------------------------------------------

    def test_write_payload_over_1mib_is_invalid_param(self):
        s = self.open()
        buf = self.buffer(s, 2 * MAX_CHUNK)
        seq = s.next_seq()
        s.send(write_raw(seq, buf, b"\x11" * (MAX_CHUNK + 1), dest_max=2 * MAX_CHUNK))
        r = s.recv()
        self.assertEqual((r.seq, r.status, r.stream), (seq, INVALID_PARAM, 0), r.message)
        self.assertEqual(self.read_back(s, buf, 64), b"\0" * 64)  # nothing written
        seq = s.next_seq()  # exactly 1 MiB is fine
        s.send(write_raw(seq, buf, b"\x22" * MAX_CHUNK, dest_max=2 * MAX_CHUNK))
        r = s.recv()
        self.assertEqual((r.seq, r.status), (seq, 0), r.message)
        self.assert_serves(s)

    def test_async_write_payload_over_1mib_is_invalid_param_naming_its_stream(self):
        s = self.open()
        buf = self.buffer(s, 2 * MAX_CHUNK)
        st = self.stream(s)
        seq = s.next_seq()
        s.send(write_raw(seq, buf, b"\x11" * (2 * MAX_CHUNK), stream=st, dest_max=2 * MAX_CHUNK))
        r = s.recv()
        self.assertEqual((r.seq, r.status, r.stream), (seq, INVALID_PARAM, st), r.message)
        self.assertEqual(self.ok(s, stream_sync=pb.StreamSync(stream=st)).status, 0)
        self.assertEqual(self.read_back(s, buf, 64), b"\0" * 64)
        self.assert_serves(s)

    # ---- 3. batches ------------------------------------------------------------------

    def test_batch_runs_in_order_each_as_if_alone(self):
        # synchronous requests are answered in order; a stream's in its order
        # (a StreamSync's answer may come after later synchronous ones')
        s = self.open()
        buf = self.buffer(s, 256)
        st = self.stream(s)
        raw = elem(write_raw(10, buf, b"\x01" * 16)) + \
            elem(pb.Request(seq=11, memset=pb.Memset(stream=st, addr=buf + 4, value=2, count=4,
                                                     dest_max=4)).SerializeToString()) + \
            elem(read_raw(12, buf, 16, stream=st)) + \
            elem(pb.Request(seq=13, stream_sync=pb.StreamSync(stream=st)).SerializeToString()) + \
            elem(write_raw(14, buf + 32, b"\x03" * 2)) + \
            elem(read_raw(15, buf + 32, 4))
        s.send(raw)
        got = {}
        order = []
        while len(got) < 5:
            r = s.recv()
            self.assertNotIn(r.seq, got, f"answered twice: {r.seq}")
            got[r.seq] = r
            order.append(r.seq)
        self.assertEqual(sorted(got), [10, 12, 13, 14, 15])
        self.assertEqual({q: r.status for q, r in got.items()}, {q: 0 for q in got}, show(got.values()))
        sync_order = [q for q in order if q in (10, 14, 15)]
        self.assertEqual(sync_order, [10, 14, 15])
        self.assertLess(order.index(12), order.index(13))
        self.assertEqual(got[12].data, b"\x01" * 4 + b"\x02" * 4 + b"\x01" * 8)
        self.assertEqual(got[15].data, b"\x03" * 2 + b"\0" * 2)
        self.assertEqual(self.probe(s), [])

    def test_batch_past_128_requests_refuses_the_129th_and_runs_no_more_of_it(self):
        s = self.open()
        buf = self.buffer(s, 256)
        st = self.stream(s)
        batch = [pb.Request(seq=1000 + i, memset=pb.Memset(stream=st, addr=buf + i, value=i + 1, count=1,
                                                           dest_max=1)) for i in range(MAX_BATCH)]
        batch += [
            pb.Request(seq=2000, memset=pb.Memset(stream=st, addr=buf + 200, value=9, count=1, dest_max=1)),
            pb.Request(seq=2001, mem_info=pb.MemInfo(device=0)),
            pb.Request(seq=2002, launch=pb.Launch(stream=st, kernel="write_i32", blocks=1,
                                                  args=[pb.Arg(ptr=buf + 192), pb.Arg(i32=7)])),
            pb.Request(seq=2003, write=pb.Write(addr=buf + 240, dest_max=16), data=b"\xff" * 16),
            pb.Request(seq=2004, read=pb.Read(stream=st, addr=buf, count=1, dest_max=1)),
        ]
        # the message's own request still runs after the batch was cut
        own = pb.Request(seq=3000, batch=batch, mem_info=pb.MemInfo(device=0))
        got = self.exchange(s, own.SerializeToString())
        self.assertEqual([(r.seq, r.status, r.stream) for r in got],
                         [(2000, INVALID_PARAM, st), (3000, 0, 0)], show(got))
        self.ok(s, stream_sync=pb.StreamSync(stream=st))
        self.assertEqual(self.read_back(s, buf, 256), bytes(range(1, 129)) + b"\0" * 128)  # the first 128 ran, no more
        self.assert_serves(s)

    def test_a_message_of_tiny_malformed_requests_gets_at_most_129_replies(self):
        # 3 bytes each (an empty batch request): 2.8 million of them fit in the largest
        # message; they count toward the 128 like any request, so the 129th ends the batch
        s = self.open()
        raw = b"\xf2\x01\x00" * ((MAX_MESSAGE - 16) // 3)
        got = self.exchange(s, raw)
        self.assertEqual(len(got), MAX_BATCH + 1, show(got[-3:]))
        self.assertTrue(all(r.status == PROTOCOL for r in got[:MAX_BATCH]), show(got[:3]))
        self.assertEqual(got[-1].status, INVALID_PARAM, show(got[-1:]))
        self.assert_serves(s)

    def test_batch_refuses_each_request_that_would_pass_8mib_and_runs_the_others(self):
        s = self.open()
        src = self.buffer(s, MAX_CHUNK, b"\x5a")
        dst = self.buffer(s, MAX_CHUNK)
        st = self.stream(s)
        raw = b"".join(elem(read_raw(10 + i, src, MAX_CHUNK)) for i in range(7))       # 7 MiB
        raw += elem(write_raw(17, dst, b"\x33" * (MAX_CHUNK - 10)))                        # 8 MiB - 10
        raw += elem(read_raw(18, src, 11, stream=st))                                     # would pass it
        raw += elem(read_raw(19, src, 10))                                                # fits exactly
        raw += elem(write_raw(20, dst, b"\x44"))                                          # would pass it
        raw += elem(mem_info(21))                                                         # moves nothing
        got = self.exchange(s, raw)
        self.assertEqual([(r.seq, r.status, r.stream) for r in got],
                         [(10 + i, 0, 0) for i in range(8)] + [(18, INVALID_PARAM, st), (19, 0, 0),
                                                               (20, INVALID_PARAM, 0), (21, 0, 0)], show(got))
        self.assertTrue(all(r.data == b"\x5a" * MAX_CHUNK for r in got[:7]))
        self.assertEqual(got[9].data, b"\x5a" * 10)
        self.assertEqual(self.read_back(s, dst, 16), b"\x33" * 16)
        self.assertEqual(self.read_back(s, dst, MAX_CHUNK)[-10:], b"\0" * 10)
        self.assert_serves(s)

    def test_batch_data_limit_counts_the_messages_own_request(self):
        s = self.open()
        buf = self.buffer(s, MAX_BATCH_XFER)
        data = os.urandom(MAX_BATCH_XFER)
        # 8 MiB of quiet writes, then its own Read of one byte: refused
        raw = b"".join(elem(write_raw(10 + i, buf + i * MAX_CHUNK, data[i * MAX_CHUNK:(i + 1) * MAX_CHUNK],
                                      quiet=True)) for i in range(8))
        got = self.exchange(s, raw + read_raw(30, buf, 1))
        self.assertEqual([(r.seq, r.status) for r in got], [(30, INVALID_PARAM)], show(got))
        self.assertTrue(self.read_back(s, buf, MAX_BATCH_XFER) == data, "the batch's writes did not land")
        # 8 MiB of reads, then its own Write of one byte: refused
        raw = b"".join(elem(read_raw(40 + i, buf + i * MAX_CHUNK, MAX_CHUNK)) for i in range(8))
        got = self.exchange(s, raw + write_raw(50, buf, b"\0"))
        self.assertEqual([(r.seq, r.status) for r in got], [(40 + i, 0) for i in range(8)] + [(50, INVALID_PARAM)],
                         show(got))
        self.assertEqual(self.read_back(s, buf, 1), data[:1])
        self.assert_serves(s)

    def test_batch_alone_gets_no_reply_of_its_own(self):
        s = self.open()
        buf = self.buffer(s, 64)
        st = self.stream(s)
        memsets = [pb.Request(seq=10 + i, memset=pb.Memset(stream=st, addr=buf + i, value=0x61, count=1,
                                                           dest_max=1)) for i in range(3)]
        self.assertEqual(self.exchange(s, pb.Request(batch=memsets).SerializeToString()), [])
        # with a seq of its own but no op: still none
        self.assertEqual(self.exchange(s, pb.Request(seq=20, batch=memsets).SerializeToString()), [])
        self.ok(s, stream_sync=pb.StreamSync(stream=st))
        self.assertEqual(self.read_back(s, buf, 4), b"aaa\0")

    def test_batch_of_malformed_elements_answers_each_and_nothing_more(self):
        s = self.open()
        # one whose seq came before its fault, one without a seq, one with its seq after the fault
        raw = elem(req(501, field_cut(9, LEN))) + elem(key(50, EGROUP)) + elem(key(50, 7) + f_varint(1, 502))
        got = self.exchange(s, raw)
        self.assertEqual([(r.seq, r.status) for r in got], [(501, PROTOCOL), (0, PROTOCOL), (0, PROTOCOL)], show(got))
        # malformed and good ones mixed, with a seq of the message's own
        raw = f_varint(1, 510) + elem(mem_info(511)) + elem(req(512, f_varint(8, 1))) + elem(mem_info(513))
        got = self.exchange(s, raw)
        self.assertEqual([(r.seq, r.status) for r in got], [(511, 0), (512, PROTOCOL), (513, 0)], show(got))
        # an element cut by the end of the message: the one malformed thing, answered once
        got = self.exchange(s, elem(mem_info(521)) + key(30, LEN) + varint(40) + mem_info(522))
        self.assertEqual([r.seq for r in got], [521, 0], show(got))
        self.assertEqual(got[1].status, PROTOCOL)
        self.assert_serves(s)

    def test_a_batch_in_a_batch_element_is_malformed(self):
        s = self.open()
        buf = self.buffer(s, 64)
        inner = elem(write_raw(602, buf, b"\x77" * 8))
        raw = elem(f_varint(1, 601) + inner) + elem(mem_info(603)) + elem(inner + f_varint(1, 604)) + \
            elem(f_varint(1, 605) + f_bytes(20, b"") + inner)
        got = self.exchange(s, raw)
        self.assertEqual([(r.seq, r.status) for r in got], [(601, PROTOCOL), (603, 0), (0, PROTOCOL), (605, PROTOCOL)],
                         show(got))
        self.assertEqual(self.read_back(s, buf, 64), b"\0" * 64)  # the nested Write never ran
        self.assert_serves(s)

    # ---- 4. the largest message -------------------------------------------------

    def test_full_size_batch_is_accepted_and_answered(self):
        s = self.open()
        size = MAX_BATCH_XFER
        buf = self.buffer(s, size)
        small = self.buffer(s, 64)
        st = self.stream(s)
        data = os.urandom(size)
        top = 1 << 63  # seqs of ten-byte varints
        raw = b"".join(elem(write_raw(top + i, buf + i * MAX_CHUNK, data[i * MAX_CHUNK:(i + 1) * MAX_CHUNK],
                                      dest_max=size - i * MAX_CHUNK, quiet=True)) for i in range(8))
        names = [(b"k%02d_" % i + b"n" * MAX_KERNEL_NAME)[:MAX_KERNEL_NAME] for i in range(MAX_BATCH - 8)]
        raw += b"".join(elem(launch_raw(top + 8 + i, st, name, 1, [arg_ptr(small)] * MAX_ARGS))
                        for i, name in enumerate(names))
        raw += pb.Request(seq=top + 999, stream_sync=pb.StreamSync(stream=st)).SerializeToString()
        self.assertGreater(len(raw), MAX_BATCH_XFER + 120 * 190)  # launches of ~190 bytes (8 addresses of 9)
        self.assertLessEqual(len(raw), MAX_MESSAGE)
        got = self.exchange(s, raw)
        self.assertEqual([(r.seq, r.status, r.stream) for r in got],
                         [(top + 8 + i, UNKNOWN_KERNEL, st) for i in range(120)] + [(top + 999, 0, 0)],
                         show(got[:3] + got[-3:]))
        self.assertTrue(self.read_back(s, buf, size) == data, "the batch's 8 MiB did not land")
        self.assert_serves(s)

    def max_size_write(self, seq, buf, total):
        """A Write message of exactly total bytes, its payload over 1 MiB."""
        head = req(seq, f_bytes(8, f_varint(2, buf) + f_varint(4, 1 << 62)))
        n = total - len(head) - len(key(100, LEN)) - 4  # a 4-byte length
        raw = head + key(100, LEN) + varint(n) + b"\0" * n
        self.assertEqual(len(raw), total)
        return raw

    def test_message_of_the_largest_allowed_size_is_accepted(self):
        s = self.open()
        buf = self.buffer(s, 64)
        s.send(self.max_size_write(700, buf, MAX_MESSAGE))
        r = s.recv()
        self.assertEqual((r.seq, r.status), (700, INVALID_PARAM), r.message)  # a payload over 1 MiB
        self.assert_serves(s)

    def test_message_one_byte_over_the_largest_ends_only_that_call(self):
        s = self.open()
        other = self.open()
        self.ok(other, mem_info=pb.MemInfo(device=0))
        buf = self.buffer(s, 64)
        s.send(self.max_size_write(701, buf, MAX_MESSAGE + 1))
        item = s.recv_item()
        self.assertIsInstance(item, grpc.RpcError, f"want the call ended, got {item!r:.200}")
        self.assertEqual(item.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        s.ended = "ended by RESOURCE_EXHAUSTED"
        self.assert_serves(other)  # a session open meanwhile
        self.assert_serves(self.open())  # and a new one

    # ---- 5. and 6. Launch limits and strings ------------------------------------------

    def launch_reply(self, s, name, args, stream):
        seq = s.next_seq()
        s.send(launch_raw(seq, stream, name, 1, args))
        got = self.probe(s)
        self.assertEqual(len(got), 1, f"{name[:80]!r}: {show(got)}")
        self.assertEqual(got[0].seq, seq)
        return got[0]

    def launch_env(self):
        """A session of its own for one case (so one case's leftovers do not
        blame the next): (session, a zeroed 64-byte buffer, a stream)."""
        s = self.open()
        return s, self.buffer(s, 64), self.stream(s)

    def assert_not_run(self, s, buf, st):
        self.ok(s, stream_sync=pb.StreamSync(stream=st))
        self.assertEqual(self.read_back(s, buf, 4), b"\0" * 4, "write_i32 ran")

    def test_kernel_name_over_63_bytes_is_unknown_kernel_naming_the_stream(self):
        for name in (b"write_i32" + b"x" * 55, b"write_i32" + b" " * 100, b"write_i32" + b"\0" * 55,
                     b"k" * 1000, b"write_i32" * 11112):
            with self.subTest(len=len(name), start=name[:12]):
                s, buf, st = self.launch_env()
                r = self.launch_reply(s, name, [arg_ptr(buf), arg_i32(9)], st)
                self.assertEqual((r.status, r.stream), (UNKNOWN_KERNEL, st), r.message)
                self.assert_not_run(s, buf, st)

    def test_kernel_name_with_a_nul_byte_is_unknown_kernel(self):
        for name in (b"write_i32\0", b"write_i32\0junk", b"\0write_i32"):
            with self.subTest(name=name):
                s, buf, st = self.launch_env()
                r = self.launch_reply(s, name, [arg_ptr(buf), arg_i32(9)], st)
                self.assertEqual((r.status, r.stream), (UNKNOWN_KERNEL, st), r.message)
                self.assert_not_run(s, buf, st)

    def test_more_than_8_kernel_args_is_kernel_args_naming_the_stream(self):
        cases = {"9 arguments": lambda buf: [arg_ptr(buf), arg_i32(9)] + [arg_i32(1)] * 7,
                 "9 pointers": lambda buf: [arg_ptr(buf)] * 9,
                 "9 empty ones": lambda buf: [b""] * 9,
                 "10000 arguments": lambda buf: [arg_ptr(buf), arg_i32(9)] * 5000}
        for what, args in cases.items():
            with self.subTest(what):
                s, buf, st = self.launch_env()
                r = self.launch_reply(s, b"write_i32", args(buf), st)
                self.assertEqual((r.status, r.stream), (KERNEL_ARGS, st), r.message)
                self.assert_not_run(s, buf, st)

    INVALID_UTF8 = [
        b"\xff\xfe" + b"x" * 70,              # long and invalid
        b"\xff\xfeab",                        # short unknown and invalid
        b"\x80", b"\xc0\x80", b"\xed\xa0\x80", b"\xf5\x80\x80\x80", b"\xf4\x90\x80\x80",
        b"ok\xe2\x82", b"\xe2\x82ok",         # a sequence cut short
        b"x" * 62 + "\u20ac".encode(),        # valid, but cut at 63 bytes it is not
        "\u00e9".encode() * 32,               # 64 valid bytes; 63 end inside a character
        "\U0001F600".encode() * 20,
        b"zz\xffqq_hostile",
    ]

    def test_invalid_utf8_kernel_names_come_back_in_replies_that_parse(self):
        for name in self.INVALID_UTF8:
            with self.subTest(name=name[:20]):
                s, buf, st = self.launch_env()
                r = self.launch_reply(s, name, [arg_ptr(buf), arg_i32(1)], st)  # parsed: proto3 took it
                self.assertEqual((r.status, r.stream), (UNKNOWN_KERNEL, st), r.message)
                r = self.launch_reply(s, name, [arg_i32(1)] * 9, st)
                self.assertIn(r.status, (UNKNOWN_KERNEL, KERNEL_ARGS), r.message)
                self.assertEqual(r.stream, st)
                r = self.launch_reply(s, name, [arg_i32(1)], BOGUS)
                self.assertEqual(r.status, INVALID_RESOURCE_HANDLE, r.message)

    def test_invalid_utf8_in_a_kernel_name_comes_back_as_question_marks(self):
        s, buf, st = self.launch_env()
        r = self.launch_reply(s, b"zz\xff\xfeqq_hostile", [], st)
        self.assertEqual((r.status, r.stream), (UNKNOWN_KERNEL, st), r.message)
        if "qq_hostile" in r.message:  # when the message names the kernel
            self.assertIn("zz??qq_hostile", r.message)

    def test_invalid_utf8_in_a_batch_element_name_comes_back_parseable(self):
        s = self.open()
        st = self.stream(s)
        raw = b"".join(elem(launch_raw(800 + i, st, name, 1, [])) for i, name in enumerate(self.INVALID_UTF8))
        got = self.exchange(s, raw)
        self.assertEqual([(r.seq, r.status, r.stream) for r in got],
                         [(800 + i, UNKNOWN_KERNEL, st) for i in range(len(self.INVALID_UTF8))], show(got))

    # ---- 7. Copy alignment ----------------------------------------------------------

    def copy(self, s, dst, dst_offset, src, src_offset, stream=0, count=64):
        return pb.Request(seq=s.next_seq(), copy=pb.Copy(stream=stream, dst=dst + dst_offset, src=src + src_offset,
                                                           count=count, dest_max=count))

    # ---- client-placed allocations (Malloc.addr) ---------------------------------

    @staticmethod
    def window(tag, dev):
        return (1 << 59) + (tag << 46) + (dev << 40)

    def test_placed_mallocs_are_checked_and_map_onto_the_sessions_own_memory(self):
        s, t = self.open(), self.open()
        a = self.window(5, 0)
        self.assertEqual(self.ok(s, malloc=pb.Malloc(device=0, size=1000, addr=a)).addr, a)
        seq = s.next_seq()
        s.send(write_raw(seq, a + 100, b"\x11" * 200, dest_max=900))
        self.assertEqual(s.recv().status, 0)
        self.assertEqual(self.read_back(s, a, 400), b"\0" * 100 + b"\x11" * 200 + b"\0" * 100)
        bad = [("overlapping", a + 64, 10, 0), ("misaligned", a + 4096 + 8, 64, 0),
               ("another device's window", self.window(5, 1), 64, 0), ("below the windows", (1 << 59) - 4096, 64, 0),
               ("past the window's end", a + (1 << 40) - 64, 128, 0), ("past the last tag", self.window(4096, 0), 64, 0),
               ("size 0", a + 8192, 0, 0), ("a device the tenant lacks", self.window(5, 63), 64, 63)]
        for what, addr, size, dev in bad:
            with self.subTest(what):
                r = self.call(s, malloc=pb.Malloc(device=dev, size=size, addr=addr, quiet=True))
                self.assertIn(r.status, (INVALID_PARAM, 107001), r.message)
        # the other session: nothing of s at that address, then memory of its own there
        self.assertEqual(self.call(t, read=pb.Read(addr=a, count=4, dest_max=4)).status, INVALID_PARAM)
        self.put(t, malloc=pb.Malloc(device=0, size=1000, addr=a, quiet=True))
        self.assertEqual(self.probe(t), [])  # a quiet placement that works: no reply
        self.assertEqual(self.read_back(t, a, 400), b"\0" * 400)
        self.assertEqual(self.read_back(s, a, 400), b"\0" * 100 + b"\x11" * 200 + b"\0" * 100)
        # a quiet placement the device cannot back: 207001 with its address,
        # then what names it fails the same way, and its free is fine
        big = a + (1 << 30)
        r = self.call(s, malloc=pb.Malloc(device=0, size=1 << 39, addr=big, quiet=True))
        self.assertEqual((r.status, r.addr), (MEMORY_ALLOCATION, big), r.message)
        r = self.call(s, read=pb.Read(addr=big + 4096, count=4, dest_max=4))
        self.assertEqual(r.status, MEMORY_ALLOCATION, r.message)
        self.ok(s, free=pb.Free(addr=big))
        self.assertEqual(self.call(s, read=pb.Read(addr=big, count=4, dest_max=4)).status, INVALID_PARAM)
        self.ok(s, free=pb.Free(addr=a))
        self.ok(t, free=pb.Free(addr=a))
        self.assert_serves(s)

    def test_misaligned_device_copy_is_unaligned(self):
        s = self.open()
        a = self.buffer(s, 4096, b"\x0a")
        b = self.buffer(s, 4096, b"\x0b")
        for d, o in ((1, 0), (0, 1), (32, 64), (64, 32), (63, 63), (4000, 0)):
            with self.subTest(dst_offset=d, src_offset=o):
                q = self.copy(s, a, d, b, o)
                s.send(q.SerializeToString())
                r = s.recv()
                self.assertEqual((r.seq, r.status, r.stream), (q.seq, MEMORY_ADDRESS_UNALIGNED, 0), r.message)
        self.assertEqual(self.read_back(s, a, 4096), b"\x0a" * 4096)  # nothing copied
        q = self.copy(s, a, 128, b, 64)  # aligned: copies
        s.send(q.SerializeToString())
        r = s.recv()
        self.assertEqual((r.seq, r.status), (q.seq, 0), r.message)
        self.assertEqual(self.read_back(s, a, 256), b"\x0a" * 128 + b"\x0b" * 64 + b"\x0a" * 64)

    def test_misaligned_async_device_copy_is_unaligned_naming_its_stream(self):
        s = self.open()
        a = self.buffer(s, 4096, b"\x0a")
        b = self.buffer(s, 4096, b"\x0b")
        st = self.stream(s)
        for d, o in ((1, 0), (0, 1), (32, 64), (64, 32), (63, 63)):
            with self.subTest(dst_offset=d, src_offset=o):
                q = self.copy(s, a, d, b, o, stream=st)
                got = self.exchange(s, q.SerializeToString())
                self.assertEqual([(r.seq, r.status, r.stream) for r in got],
                                 [(q.seq, MEMORY_ADDRESS_UNALIGNED, st)], show(got))
        q = self.copy(s, a, 128, b, 64, stream=st)  # aligned: queued, no reply
        self.assertEqual(self.exchange(s, q.SerializeToString()), [])
        self.assertEqual(self.ok(s, stream_sync=pb.StreamSync(stream=st)).status, 0)
        self.assertEqual(self.read_back(s, a, 256), b"\x0a" * 128 + b"\x0b" * 64 + b"\x0a" * 64)

    # ---- 8. kernel print ----------------------------------------------------------------

    def test_kernel_print_past_64kib_is_truncated_with_a_note(self):
        s = self.open()
        blocks = 65535
        buf = self.ok(s, malloc=pb.Malloc(device=0, size=blocks * 4)).addr
        st = self.stream(s)
        self.put(s, launch=pb.Launch(stream=st, kernel="write_i32", blocks=blocks,
                                     args=[pb.Arg(ptr=buf), pb.Arg(i32=7)]))
        sync = self.put(s, stream_sync=pb.StreamSync(stream=st))
        text, kinds = "", []
        while True:
            r = s.recv()
            text += r.print
            kinds.append((r.seq, r.kind, r.status))
            if r.kind == pb.FINAL:
                break
            self.assertEqual((r.seq, r.kind), (0, pb.PRINT), kinds)
        self.assertEqual((r.seq, r.status), (sync, 0), r.message)
        self.assertLessEqual(len(text), PRINT_LIMIT + len(PRINT_NOTE))
        self.assertTrue(text.endswith(PRINT_NOTE), text[-80:])
        line = "Source data: 7\n"
        body = text[:-len(PRINT_NOTE)]
        self.assertEqual(body, line * (len(body) // len(line)))
        self.assertGreater(len(body), PRINT_LIMIT - len(line) - 1)  # cut only at the limit
        # the kernel itself ran every block; and nothing is held over
        r = self.ok(s, read=pb.Read(addr=buf + (blocks - 1) * 4, count=4, dest_max=4))
        self.assertEqual(r.data, (7).to_bytes(4, "little"))
        self.assertEqual(r.print, "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
