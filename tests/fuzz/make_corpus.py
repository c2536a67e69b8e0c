#!/usr/bin/python3
"""tests/fuzz/make_corpus.py — seed corpora for the fuzz harnesses, made
from the current proto (protoc's Python code for rdev.proto), so that the
seeds follow every change of the wire. The finds worth keeping are checked
in under tests/fuzz/corpus/<harness>/ instead.

usage: make_corpus.py PROTO_DIR OUT_DIR    (writes OUT_DIR/<harness>/*)
"""
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile

PROTO_DIR, OUT = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))

gen = tempfile.mkdtemp(prefix="rdev-fuzz-")
subprocess.run(["protoc", "-I", PROTO_DIR, "--python_out", gen,
                os.path.join(PROTO_DIR, "rdev/v1/rdev.proto"), os.path.join(PROTO_DIR, "rdev/v1/job.proto")],
               check=True)
sys.path.insert(0, gen)
from rdev.v1 import rdev_pb2 as pb  # noqa: E402
from rdev.v1 import job_pb2 as jpb  # noqa: E402


def save(harness, data):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(num, wt, body):
    return varint(num << 3 | wt) + body


# ---- fuzz_wire: [k][k x u16 split][stop][message] ----

def wire(msg, cuts=(), stop=255):
    head = bytes([len(cuts)]) + b"".join(struct.pack("<H", c) for c in cuts) + bytes([stop])
    save("fuzz_wire", head + msg)


# device addresses as the sim hands them out (1 << 60 and up: slot, device,
# offset), one a host address, and sums that pass 2**64
A = (1 << 60) + (1 << 46)
B = A + (1 << 20)
ops = [
    pb.Request(seq=1, malloc=pb.Malloc(device=0, size=4096)),
    pb.Request(seq=2, free=pb.Free(addr=A)),
    pb.Request(seq=3, stream_create=pb.StreamCreate(device=1)),
    pb.Request(seq=4, stream_sync=pb.StreamSync(stream=7)),
    pb.Request(seq=5, write=pb.Write(stream=7, addr=A + 64, dest_max=100, quiet=True), data=b"x" * 100),
    pb.Request(seq=6, read=pb.Read(stream=0, addr=A, count=1 << 20, dest_max=1 << 20)),
    pb.Request(seq=7, copy=pb.Copy(stream=7, dst=A + 64, src=B, count=128, dest_max=128)),
    pb.Request(seq=8, memset=pb.Memset(addr=A, value=255, count=10, dest_max=10)),
    pb.Request(seq=9, launch=pb.Launch(stream=7, kernel="square_f32", blocks=4, args=[
        pb.Arg(ptr=A), pb.Arg(ptr=B), pb.Arg(u32=16)])),
    pb.Request(seq=10, launch=pb.Launch(stream=7, kernel="k" * 70, args=[pb.Arg(i32=i) for i in range(10)])),
    pb.Request(seq=11, event_record=pb.EventRecord(event=3, stream=7)),
    pb.Request(seq=12, event_elapsed=pb.EventElapsed(start=3, end=4)),
    pb.Request(seq=13, mem_info=pb.MemInfo(device=0)),
    pb.Request(seq=14, stream_wait_event=pb.StreamWaitEvent(stream=7, event=3)),
    pb.Request(seq=15),
    pb.Request(seq=16, read=pb.Read(addr=0x7FFF_DEAD_B000, count=64, dest_max=64)),
    pb.Request(seq=17, memset=pb.Memset(addr=A + 1, value=1, count=2**64 - 1, dest_max=2**64 - 1)),
    pb.Request(seq=18, copy=pb.Copy(dst=2**64 - 64, src=A, count=128, dest_max=128)),
    pb.Request(seq=19, launch=pb.Launch(stream=7, kernel="write_i32", blocks=1, args=[
        pb.Arg(ptr=2**64 - 4), pb.Arg(i32=1)])),
]
for q in ops:
    b = q.SerializeToString()
    wire(b)
    wire(b, cuts=(1, len(b) // 2), stop=0)
batch = pb.Request(seq=100, batch=ops[:8]).SerializeToString()
wire(batch)
wire(batch, cuts=(3, 17, 40, 41), stop=2)
wire(pb.Request(batch=ops).SerializeToString(), stop=5)
wire(pb.Request(batch=[pb.Request(seq=i, mem_info=pb.MemInfo()) for i in range(130)]).SerializeToString())
wire(pb.Request(seq=1, write=pb.Write(addr=A, dest_max=1 << 21), data=b"\0" * ((1 << 20) + 1)).SerializeToString())
# the wire types a field may not have, on the payload, a string and a batch
wire(varint(1 << 3) + varint(5) + field(100, 0, varint(7)))
wire(varint(1 << 3) + varint(5) + field(100, 5, b"\1\2\3\4"))
wire(field(30, 0, varint(1)))
wire(field(12, 2, varint(3) + field(2, 0, varint(1))))
wire(field(30, 2, varint(4) + field(30, 2, varint(0))))

# ---- fuzz_session: programs (see fuzz_session.c for the encoding) ----

def prog(*steps):
    save("fuzz_session", b"".join(bytes(s) for s in steps))

MALLOC = [0x00, 0, 255, 0, 0, 0, 100, 0x20]       # malloc 4 KiB-ish on device 0
STREAM = [0x00, 2, 0, 0, 0, 0]
prog(MALLOC, STREAM)
prog(MALLOC, STREAM, [0x00, 6, 0, 0, 0, 0, 10, 200, 0x10, 0, 0, 0x41],
     [0x40, 7, 0, 0, 0, 0, 10, 200, 0x10, 0, 0], [0x00, 6, 0, 0, 0, 0, 0, 10, 0, 0, 0x42])
prog(MALLOC, MALLOC, STREAM, [0x87] + [10, 0, 1, 0, 0, 1, 3, 0, 0, 0, 0, 0, 2, 16] * 8)
prog(STREAM, [0x00, 12, 0, 0, 0, 0], [0x00, 14, 0, 1, 0, 0, 0], [0x00, 16, 0, 0, 0, 0], [0x00, 4, 0, 0, 0])
prog(MALLOC, STREAM, [0x00, 10, 0, 1, 0, 0, 5, 1, 1, 1, 2, 200, 1])

# ---- the file parsers: the example tenants file ----
for name in ("tenants.example",):
    p = os.path.join(HERE, "..", "..", "deploy", name)
    if os.path.exists(p):
        with open(p, "rb") as f:
            save("fuzz_tenants", f.read())
save("fuzz_config", b"listen = 127.0.0.1:0\nbackend = sim\nsim-devices = 2\nsim-mem = 64M\n"
     b"sim-slots = 4\nmax-inflight = 32M\nthreads = 1\ndrain-ms = 100\nlog-level = warn\n"
     b"allow-open = no\n# comment\n")

# ---- fuzz_job: [0|1|2][a SubmitJobRequest | a JobRecord | prefixes and a URL] ----
U = "http://127.0.0.1:8080/data/"
spec = jpb.JobSpec(
    name="sq", buffers=[jpb.JobBuffer(name="x", size=1 << 20), jpb.JobBuffer(name="y", size=1 << 20, device=1)],
    inputs=[jpb.JobInput(buffer="x", url=U + "in", sha256="ab" * 32, offset=64, max_bytes=4096)],
    steps=[jpb.JobStep(name="square", stream=1, launch=jpb.JobLaunch(kernel="square_f32", blocks=4, args=[
               jpb.JobArg(ptr=jpb.JobRef(buffer="x")), jpb.JobArg(ptr=jpb.JobRef(buffer="y", offset=64)),
               jpb.JobArg(u32=1024)])),
           jpb.JobStep(copy=jpb.JobCopy(dst=jpb.JobRef(buffer="y"), src=jpb.JobRef(buffer="x", offset=128), count=64)),
           jpb.JobStep(memset=jpb.JobMemset(dst=jpb.JobRef(buffer="y", offset=2**64 - 1), value=7, count=2)),
           jpb.JobStep(function=jpb.JobFunction(binary="kb", name="DeviceWrite", blocks=2, args=[
               jpb.JobArg(ptr=jpb.JobRef(buffer="x")), jpb.JobArg(i32=-1)]))],
    binaries=[jpb.JobBinary(name="kb", url=U + "kb.bin", sha256="cd" * 32)],
    outputs=[jpb.JobOutput(name="out", buffer="y", url=U + "out", method="POST"), jpb.JobOutput(name="k", buffer="x")],
    callback_url=U + "hook", timeout_s=60, retries=2)
save("fuzz_job", b"\0" + jpb.SubmitJobRequest(spec=spec).SerializeToString())
save("fuzz_job", b"\1" + jpb.JobRecord(spec=spec, secret="00" * 32, status=jpb.JobStatus(
    id="0123456789abcdef", state=jpb.FAILED, kept=[jpb.JobKept(name="k", bytes=5)],
    hooks=[jpb.JobHook(state=jpb.QUEUED, delivered=True, http_status=200, attempts=1)])).SerializeToString())
save("fuzz_job", b"\2https://a.example:8443/x/\nhttp://127.0.0.1/\nhttps://a.example:8443/x/%2e%2e/y")
save("fuzz_job", b"\2http://[::1]:80/\n::ffff:127.0.0.1")

# ---- fuzz_job_yaml: a job spec as people write it ----
save("fuzz_job_yaml", b"""name: square
buffers:
  - {name: x, size: 1MiB}
  - {name: y, size: 1048576, device: 0}
inputs:
  - {buffer: x, url: "http://h/data", sha256: "%s", max_bytes: 4K}
steps:
  - {launch: square_f32, blocks: 4, args: [x, {buffer: y, offset: 64}, 1024], stream: 1, name: sq}
  - {copy: {dst: y, src: {buffer: x, offset: 64}, count: 128}}
  - {memset: {dst: y, value: 0, count: 100}}
  - {function: DeviceWrite, binary: kb, blocks: 2, args: [x, {i32: 7}]}
binaries:
  - {name: kb, url: "http://h/kb.bin"}
outputs:
  - {name: result, buffer: y, url: "http://h/upload/r", method: PUT}
  - {name: head, buffer: y, offset: 0, size: 4096}
callback_url: "http://h/hook/j1"
timeout: 10m
retries: 3
""" % (b"ab" * 32))
save("fuzz_job_yaml", b'{"name": "j", "buffers": [{"name": "x", "size": 64}], "steps": '
     b'[{"launch": "axpy_f32", "blocks": 1, "args": [2.5, "x", "x", {"u64": 16}]}]}')
# ---- fuzz_bulk: [flags: local, resumable] then steps (see fuzz_bulk.c for the encoding) ----
def bulk(flags, *steps):
    save("fuzz_bulk", bytes([flags]) + b"".join(steps))


def u16(v):
    return struct.pack(">H", v)


page = bytes(range(256)) * 16
bulk(1, b"\4" + u16(0) + u16(4096) + b"\0", b"\1\0" + u16(4096) + page)      # Write, then its DATA
bulk(1, b"\1\2" + u16(4096) + page, b"\4" + u16(512) + u16(4096) + b"\0")  # DATA before its Write
bulk(1, b"\4" + u16(0) + u16(4096) + b"\0")                                # a Write whose DATA never comes
bulk(0, b"\5" + u16(0) + u16(65535) + b"\0", b"\5" + u16(7) + u16(300) + b"\0")  # bulk Reads
bulk(1, b"\2\1" + u16(64) + u16(64) + b"\1",                                 # a region, copies both ways
     b"\6" + u16(0) + u16(4096) + b"\1\1" + u16(0), b"\7" + u16(64) + u16(2048) + b"\0\1" + u16(3),
     b"\3\1", b"\6" + u16(0) + u16(16) + b"\1\1" + u16(0))
bulk(1, b"\0\x10" + bytes([9, 0, 0, 0, 0, 0, 0, 0]) + b"\xff" * 8)          # an unknown kind
bulk(1, b"\4" + u16(0) + u16(4096) + b"\0", b"\1\0" + u16(4096) + page,      # a Write gone direct, then
     b"\0\x18" + bytes([3, 0, 0, 0, 0, 0, 0, 0]) + struct.pack("<Q", 4096) + bytes(8))  # DATA for seq 0
# a resumable session (flags bit 1): DATA counted and answered with RECEIPTs, bulk Reads' frames kept and
# acknowledged, a Write whose DATA never comes waiting across the connection's end
bulk(3, b"\4" + u16(0) + u16(4096) + b"\0", b"\1\0" + u16(4096) + page, b"\5" + u16(0) + u16(4096) + b"\0",
     b"\7\3", b"\4" + u16(8) + u16(4096) + b"\0")
bulk(2, b"\1\2" + u16(4096) + page, b"\4" + u16(512) + u16(4096) + b"\0", b"\1\1" + u16(100) + page[:100])
# the client's next connection (readopt): DATA in before it, its Write after; bulk Reads' frames across it
bulk(3, b"\1\3" + u16(4096) + page, b"\x08", b"\4" + u16(0) + u16(4096) + b"\0")
bulk(2, b"\5" + u16(0) + u16(4096) + b"\0", b"\x08", b"\7\4", b"\x08", b"\5" + u16(64) + u16(512) + b"\0")

shutil.rmtree(gen)


# ---- fuzz_op: operator call blobs (rdev/ops.h's layout) ----
def op_tensor(dtype, dims, strides, offset=0, storage=(), addr=0x1000):
    b = struct.pack("<iiBB", dtype, 2, len(dims), len(storage))
    b += struct.pack(f"<{len(dims)}q", *dims) + struct.pack(f"<{len(dims)}q", *strides)
    b += struct.pack("<q", offset) + struct.pack(f"<{len(storage)}q", *storage) + struct.pack("<Q", addr)
    return b


def op_call(name, *args):
    return bytes([len(name)]) + name.encode() + bytes([len(args)]) + b"".join(args)


T = lambda *a, **k: bytes([1, 1]) + op_tensor(*a, **k)  # noqa: E731
NONE_T = bytes([1, 0])
SCALAR = lambda dt, v: bytes([3, 1]) + struct.pack("<i", dt) + (struct.pack("<d", v) if dt in (0, 1, 11, 27) else struct.pack("<q", v))  # noqa: E501,E731
INTS = lambda *v: bytes([4, 1]) + struct.pack("<I", len(v)) + struct.pack(f"<{len(v)}q", *v)  # noqa: E731
I64 = lambda v: bytes([8, 1]) + struct.pack("<q", v)  # noqa: E731
I8 = lambda v: bytes([9, 1]) + struct.pack("<b", v)  # noqa: E731
BOOL = lambda v: bytes([10, 1, int(v)])  # noqa: E731
DT = lambda v: bytes([11, 1]) + struct.pack("<i", v)  # noqa: E731
F64 = lambda v: bytes([7, 1]) + struct.pack("<d", v)  # noqa: E731

save("fuzz_op", op_call("Add", T(0, [2, 3], [3, 1]), T(0, [3], [1], addr=0x2000), SCALAR(0, 2.0),
                        T(0, [2, 3], [3, 1], addr=0x3000)))
save("fuzz_op", op_call("Add", T(1, [4, 1], [1, 1]), T(3, [1, 5], [5, 1]), SCALAR(3, 1), T(0, [4, 5], [5, 1])))
save("fuzz_op", op_call("Mul", T(0, [3, 2], [1, 3]), T(0, [3, 2], [2, 1]), T(0, [3, 2], [2, 1])))
save("fuzz_op", op_call("Softmax", T(0, [2, 8], [8, 1]), I64(-1), T(0, [2, 8], [8, 1])))
save("fuzz_op", op_call("Matmul", T(0, [4, 3], [3, 1]), T(0, [3, 5], [5, 1]), T(0, [4, 5], [5, 1]), I8(0)))
save("fuzz_op", op_call("ReduceSum", T(0, [2, 3, 4], [12, 4, 1]), INTS(1, -1), BOOL(True), DT(0),
                        T(0, [2, 1, 1], [1, 1, 1])))
save("fuzz_op", op_call("LayerNorm", T(0, [2, 4], [4, 1]), INTS(4), NONE_T, NONE_T, F64(1e-5),
                        T(0, [2, 4], [4, 1]), NONE_T, NONE_T))
save("fuzz_op", op_call("Cat", bytes([2, 1]) + struct.pack("<I", 2) + b"\1" + op_tensor(0, [2, 2], [2, 1]) + b"\1"
                        + op_tensor(0, [3, 2], [2, 1]), I64(0), T(0, [5, 2], [2, 1])))
# and as OpRun requests rdevd decodes (fuzz_wire)
ADD = op_call("Add", T(0, [4], [1], addr=A), T(0, [4], [1], addr=A + 16), SCALAR(0, 1.0), T(0, [4], [1], addr=B))
wire(pb.Request(seq=20, op_run=pb.OpRun(stream=7), data=ADD).SerializeToString())
wire(pb.Request(seq=21, op_run=pb.OpRun(stream=7), data=ADD[:-5]).SerializeToString())
