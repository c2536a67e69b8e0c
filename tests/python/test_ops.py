"""tests/python/test_ops.py — rdev.ops and DeviceArray's arithmetic against
numpy, on a real rdevd (the sim): every operator with random inputs in the
types it takes, broadcasting, scalars on either side, strided views (.T),
negative dims, keepdim, the errors aclnn's first phase gives (161002), and
tenancy (a tensor naming another session's memory is refused).

An operator this build does not offer yet (rdev.ops.available()) is
skipped, with its name in the reason. Run by ctest as python_ops:
RDEV_TEST_RDEVD names the rdevd, PYTHONPATH the staged package.
"""
import math
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "acl"))
import rdevd as rdevd_proc  # noqa: E402  tests/acl/rdevd.py

import rdev  # noqa: E402
from rdev import ops  # noqa: E402

RDEVD = os.environ.get("RDEV_TEST_RDEVD", os.path.join(HERE, "..", "..", "build", "server", "rdevd"))
OP_PARAM_INVALID, INVALID_PARAM = 161002, 100000
RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 1e-2, np.dtype(np.float64): 1e-12}
FLOATS = [np.float32, np.float16]
NUMERIC = [np.float32, np.float16, np.int32, np.int64]


@pytest.fixture(scope="module")
def server():
    proc, addr, out = rdevd_proc.start(RDEVD, "--sim-devices", "2", "--sim-mem", "512M")
    yield addr
    assert rdevd_proc.stop(proc, out) == 0, "rdevd did not exit cleanly"


@pytest.fixture
def s(server):
    with rdev.connect(server) as session:
        yield session


@pytest.fixture
def rng(request):
    return np.random.default_rng(abs(hash(request.node.name)) % 2**32)


def need(*names):
    missing = [n for n in names if n not in ops.available()]
    if missing:
        pytest.skip(f"not in this build yet: aclnn{', aclnn'.join(missing)}")


def rand(rng, shape, dtype, lo=-3.0, hi=3.0):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.uniform(lo, hi, shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(dtype)
    return rng.integers(int(lo) * 10, int(hi) * 10 + 1, shape).astype(dtype)


def check(d, expected, dtype=None):
    """d (a device array) against expected (computed in float64 or exactly), in d's type's tolerance."""
    assert isinstance(d, rdev.DeviceArray)
    got = d.get()
    expected = np.asarray(expected)
    if dtype is not None:
        assert got.dtype == np.dtype(dtype), f"result type {got.dtype}, expected {np.dtype(dtype)}"
    assert got.shape == expected.shape, f"shape {got.shape}, expected {expected.shape}"
    if got.dtype.kind == "f":
        rtol = RTOL[got.dtype]
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))


def f64(a):
    return np.asarray(a, dtype=np.float64)


# ---- elementwise binary --------------------------------------------------------------------------

SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)), ((), (2, 2))]


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_matches_numpy(s, rng, op, dtype, shapes):
    need({"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div"}[op])
    a, b = rand(rng, shapes[0], dtype), rand(rng, shapes[1], dtype)
    if op == "div":
        b = np.where(b == 0, 1, b).astype(dtype)
    da, db = rdev.asarray(a), rdev.asarray(b)
    r = {"add": lambda: da + db, "sub": lambda: da - db, "mul": lambda: da * db, "div": lambda: da / db}[op]()
    want = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op](f64(a), f64(b))
    out_t = np.float32 if op == "div" and np.dtype(dtype).kind == "i" else dtype
    if np.dtype(out_t).kind == "i":
        want = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op](a, b)
    check(r, want, out_t)


def test_binary_promotes_as_the_c_rules(s, rng):
    need("Add")
    i32, f16 = rand(rng, (5,), np.int32), rand(rng, (5,), np.float16)
    check(rdev.asarray(i32) + rdev.asarray(f16), f64(i32) + f64(f16), np.float16)  # float over integer
    i64 = rand(rng, (5,), np.int64)
    check(rdev.asarray(i32) + rdev.asarray(i64), i32.astype(np.int64) + i64, np.int64)  # the wider integer
    f32 = rand(rng, (5,), np.float32)
    check(rdev.asarray(f16) + rdev.asarray(f32), f64(f16) + f64(f32), np.float32)
    assert ops.result_type(np.int8, np.uint8) == np.int16


def test_add_and_sub_take_alpha(s, rng):
    need("Add", "Sub")
    a, b = rand(rng, (4, 3), np.float32), rand(rng, (3,), np.float32)
    check(ops.add(rdev.asarray(a), rdev.asarray(b), alpha=2.5), f64(a) + 2.5 * f64(b), np.float32)
    check(ops.sub(rdev.asarray(a), rdev.asarray(b), alpha=-0.5), f64(a) + 0.5 * f64(b), np.float32)
    ia, ib = rand(rng, (6,), np.int32), rand(rng, (6,), np.int32)
    check(ops.add(rdev.asarray(ia), rdev.asarray(ib), alpha=3), ia + 3 * ib, np.int32)
    # torch's rule: a floating alpha with an integral result is refused, on every path
    for call in (lambda: ops.add(rdev.asarray(ia), rdev.asarray(ib), alpha=2.5),
                 lambda: ops.sub(rdev.asarray(ia), rdev.asarray(ib), alpha=0.5),
                 lambda: ops.add(rdev.asarray(ia), 2, alpha=1.5),
                 lambda: ops.sub(rdev.asarray(ia), 2, alpha=0.5),
                 lambda: ops.add(2, rdev.asarray(ia), alpha=1.5),
                 lambda: ops.sub(2, rdev.asarray(ia), alpha=0.5)):
        with pytest.raises(TypeError, match="alpha"):
            call()
    check(ops.add(rdev.asarray(ia), 0.5, alpha=2.0), ia + 1.0, np.float32)  # a float scalar: a float result


@pytest.mark.parametrize("dtype", NUMERIC)
def test_scalars_on_either_side(s, rng, dtype):
    need("Adds", "Muls")
    a = rand(rng, (3, 5), dtype)
    a = np.where(a == 0, 1, a).astype(dtype)
    d = rdev.asarray(a)
    check(d + 2, f64(a) + 2, dtype)
    check(2 + d, f64(a) + 2, dtype)
    check(d - 3, f64(a) - 3, dtype)
    check(7 - d, 7 - f64(a), dtype)
    check(d * 3, f64(a) * 3, dtype)
    check(3 * d, f64(a) * 3, dtype)
    out_f = dtype if np.dtype(dtype).kind == "f" else np.float32
    check(d + 0.5, f64(a) + 0.5, out_f)  # a float scalar makes an integer array float32, as in torch
    check(d * 1.5, f64(a) * 1.5, out_f)
    check(d / 4, f64(a) / 4, out_f)
    check(ops.add(d, 2, alpha=3), f64(a) + 6, dtype)
    check(np.float32(2) * d, f64(a) * 2, out_f)  # numpy scalars leave it to the device array (a float: float32)


def test_scalar_dividend_and_zero_divisor(s, rng):
    need("Div")
    a = rng.uniform(0.5, 3, (4,)).astype(np.float32)
    check(1 / rdev.asarray(a), 1 / f64(a), np.float32)
    got = (rdev.asarray(np.array([1, -1, 0], np.float32)) / 0).get()
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])


def test_out_and_numpy_operands(s, rng):
    need("Add")
    a, b = rand(rng, (2, 3), np.float32), rand(rng, (2, 3), np.float32)
    out = rdev.empty((2, 3))
    assert ops.add(rdev.asarray(a), b, out=out) is out  # a numpy operand is uploaded
    check(out, f64(a) + f64(b), np.float32)
    check(a + rdev.asarray(b), f64(a) + f64(b), np.float32)  # numpy array on the left: the device array's __radd__
    check(ops.add(rdev.asarray(a), rdev.asarray(b), out=rdev.empty((2, 3), np.float64)), f64(a + b),
          np.float64)  # out of a wider type: computed in float32, as torch does, then stored wider


# ---- elementwise unary ---------------------------------------------------------------------------

def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


UNARY = {
    "neg": ("Neg", np.negative, False), "abs": ("Abs", np.abs, False), "relu": ("Relu", lambda x: np.maximum(x, 0),
                                                                              False),
    "exp": ("Exp", np.exp, True), "log": ("Log", np.log, True), "sqrt": ("Sqrt", np.sqrt, True),
    "gelu": ("Gelu", gelu_tanh, True), "silu": ("Silu", lambda x: x / (1 + np.exp(-x)), True),
    "sigmoid": ("Sigmoid", lambda x: 1 / (1 + np.exp(-x)), True), "tanh": ("Tanh", np.tanh, True),
}


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_numpy(s, rng, name, dtype):
    op, ref, floats_only = UNARY[name]
    if floats_only and np.dtype(dtype).kind != "f":
        pytest.skip("a float operator")
    need(op)
    lo = 0.1 if name in ("log", "sqrt") else -3.0
    a = rand(rng, (4, 5), dtype, lo=lo)
    check(getattr(ops, name)(rdev.asarray(a)), ref(f64(a)), dtype)


def test_unary_operators_of_device_arrays(s, rng):
    need("Neg", "Abs")
    a = rand(rng, (7,), np.float32)
    d = rdev.asarray(a)
    check(-d, -f64(a), np.float32)
    check(abs(d), np.abs(f64(a)), np.float32)
    check(d.abs(), np.abs(f64(a)), np.float32)
    assert +d is d


# ---- softmax, layer_norm -------------------------------------------------------------------------

def softmax_ref(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", [-1, 0, 1, -3])
def test_softmax(s, rng, dtype, dim):
    need("Softmax")
    a = rand(rng, (3, 4, 5), dtype)
    check(ops.softmax(rdev.asarray(a), dim=dim), softmax_ref(f64(a), dim), dtype)
    if dim == -1:
        check(rdev.asarray(a).softmax(), softmax_ref(f64(a), -1), dtype)


def layer_norm_ref(x, n, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - n, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)  # biased
    y = (x - mu) / np.sqrt(var + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm(s, rng, dtype):
    need("LayerNorm")
    x = rand(rng, (2, 3, 8), dtype)
    w, b = rand(rng, (8,), dtype), rand(rng, (8,), dtype)
    check(ops.layer_norm(rdev.asarray(x), 8), layer_norm_ref(f64(x), 1), dtype)
    check(ops.layer_norm(rdev.asarray(x), (8,), rdev.asarray(w), rdev.asarray(b)),
          layer_norm_ref(f64(x), 1, f64(w), f64(b)), dtype)
    w2 = rand(rng, (3, 8), dtype)
    check(ops.layer_norm(rdev.asarray(x), (3, 8), w2, eps=1e-3), layer_norm_ref(f64(x), 2, f64(w2), eps=1e-3), dtype)
    with pytest.raises(rdev.Error) as e:
        ops.layer_norm(rdev.asarray(x), (4,))
    assert e.value.code == OP_PARAM_INVALID


# ---- matrix products -----------------------------------------------------------------------------

MATMUL_SHAPES = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((4,), (4, 3)), ((3, 4), (4,)),
                 ((4,), (4,))]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(s, rng, dtype, shapes):
    need("Matmul")
    a, b = rand(rng, shapes[0], dtype), rand(rng, shapes[1], dtype)
    check(rdev.asarray(a) @ rdev.asarray(b), f64(a) @ f64(b), dtype)


def test_mm_and_bmm(s, rng):
    need("Mm", "BatchMatMul")
    a, b = rand(rng, (5, 7), np.float32), rand(rng, (7, 3), np.float32)
    check(ops.mm(rdev.asarray(a), rdev.asarray(b)), f64(a) @ f64(b), np.float32)
    a, b = rand(rng, (4, 5, 7), np.float16), rand(rng, (4, 7, 3), np.float16)
    check(ops.bmm(rdev.asarray(a), rdev.asarray(b)), f64(a) @ f64(b), np.float16)
    for bad in (lambda: ops.mm(rdev.asarray(a), rdev.asarray(b)), lambda: ops.bmm(rdev.empty((2, 3)), rdev.empty((3, 2)))):
        with pytest.raises(rdev.Error) as e:
            bad()
        assert e.value.code == OP_PARAM_INVALID


def test_matmul_shape_mismatch(s):
    need("Matmul")
    with pytest.raises(rdev.Error) as e:
        rdev.empty((3, 4)) @ rdev.empty((5, 2))
    assert e.value.code == OP_PARAM_INVALID


# ---- reductions ----------------------------------------------------------------------------------

DIMS = [None, 0, -1, (0, 2), (-1, 1)]


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", DIMS, ids=str)
def test_sum(s, rng, dtype, dim, keepdim):
    need("ReduceSum")
    a = rand(rng, (3, 4, 5), dtype)
    axis = dim if not isinstance(dim, list) else tuple(dim)
    want_t = dtype if np.dtype(dtype).kind == "f" else np.int64  # integers sum into int64, as in torch
    want = f64(a).sum(axis=axis, keepdims=keepdim) if np.dtype(dtype).kind == "f" else \
        a.astype(np.int64).sum(axis=axis, keepdims=keepdim)
    check(rdev.asarray(a).sum(dim, keepdim), want, want_t)


def test_sum_with_dtype(s, rng):
    need("ReduceSum")
    a = rand(rng, (6, 7), np.float16)
    check(ops.sum(rdev.asarray(a), 1, dtype=np.float32), f64(a).sum(axis=1), np.float32)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", DIMS, ids=str)
def test_mean(s, rng, dtype, dim, keepdim):
    need("Mean")
    a = rand(rng, (3, 4, 5), dtype)
    check(rdev.asarray(a).mean(dim, keepdim), f64(a).mean(axis=dim, keepdims=keepdim), dtype)


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", DIMS, ids=str)
def test_amax(s, rng, dtype, dim, keepdim):
    need("Amax")
    a = rand(rng, (3, 4, 5), dtype)
    check(rdev.asarray(a).max(dim, keepdim), a.max(axis=dim, keepdims=keepdim), dtype)


def test_reduction_dim_out_of_range(s):
    need("ReduceSum")
    with pytest.raises(rdev.Error) as e:
        rdev.empty((2, 3)).sum(2)
    assert e.value.code == OP_PARAM_INVALID


# ---- types, copies, layout -----------------------------------------------------------------------

@pytest.mark.parametrize("src,dst", [(np.float32, np.float16), (np.float16, np.float32), (np.int32, np.float32),
                                     (np.int64, np.int32), (np.float32, np.int32), (np.int32, np.int64),
                                     (np.float32, np.bool_)])
def test_cast(s, rng, src, dst):
    need("Cast")
    a = rand(rng, (4, 6), src)
    d = rdev.asarray(a)
    check(ops.cast(d, dst), a.astype(dst), dst)  # float to integer truncates toward zero, as numpy
    check(d.astype(dst), a.astype(dst), dst)


def test_copy_and_fill_in_place(s, rng):
    need("InplaceCopy", "InplaceFillScalar")
    dst = rdev.empty((3, 4), np.float32)
    row = rand(rng, (4,), np.float32)
    assert ops.copy_(dst, rdev.asarray(row)) is dst  # broadcast
    check(dst, np.broadcast_to(f64(row), (3, 4)), np.float32)
    src = rand(rng, (3, 4), np.int32)
    dst.copy_(rdev.asarray(src))  # converting
    check(dst, src.astype(np.float32), np.float32)
    assert ops.fill_(dst, 2.5) is dst
    check(dst, np.full((3, 4), 2.5), np.float32)
    i = rdev.empty((5,), np.int64).fill_(-7)
    check(i, np.full(5, -7), np.int64)


def test_permute_and_cat(s, rng):
    need("Permute", "Cat")
    a = rand(rng, (2, 3, 4), np.float32)
    check(ops.permute(rdev.asarray(a), (2, 0, 1)), a.transpose(2, 0, 1), np.float32)
    check(ops.permute(rdev.asarray(a), (-1, 1, 0)), a.transpose(2, 1, 0), np.float32)
    b, c = rand(rng, (2, 5, 4), np.float32), rand(rng, (2, 1, 4), np.float32)
    check(ops.cat([rdev.asarray(a), rdev.asarray(b), rdev.asarray(c)], dim=1), np.concatenate([a, b, c], 1),
          np.float32)
    check(ops.cat([rdev.asarray(a), rdev.asarray(a)], dim=-1), np.concatenate([a, a], -1), np.float32)
    with pytest.raises(rdev.Error) as e:
        ops.cat([rdev.asarray(a), rdev.asarray(b)], dim=0)
    assert e.value.code == OP_PARAM_INVALID


# ---- strided views -------------------------------------------------------------------------------

def test_transposed_views_are_taken_as_they_are(s, rng):
    need("Add")
    a, b = rand(rng, (4, 3), np.float32), rand(rng, (3, 4), np.float32)
    da = rdev.asarray(a)
    t = da.T
    assert t.shape == (3, 4) and not t.is_contiguous and t.strides == (4, 12) and t.base is not None
    assert rdev.empty((4, 1)).T.is_contiguous and rdev.empty((3,)).T.is_contiguous  # nothing moves
    check(ops.add(t, rdev.asarray(b), out=rdev.empty((3, 4))), f64(a).T + f64(b), np.float32)
    x = rand(rng, (2, 3, 4), np.float32)
    p = rdev.asarray(x).permute(2, 0, 1)
    check(ops.add(p, p, out=rdev.empty(p.shape)), f64(x).transpose(2, 0, 1) * 2, np.float32)
    y = rand(rng, (2, 3, 4), np.float32)
    check(ops.add(p, rdev.asarray(y).permute(-1, 0, 1), out=rdev.empty(p.shape)),  # two views
          f64(x).transpose(2, 0, 1) + f64(y).transpose(2, 0, 1), np.float32)


def test_transposed_views_in_matmul(s, rng):
    need("Matmul")
    a = rand(rng, (4, 3), np.float32)
    da = rdev.asarray(a)
    check(da.T @ da, f64(a).T @ f64(a), np.float32)


def test_views_in_reductions_and_transfers(s, rng):
    need("ReduceSum", "InplaceCopy")
    a = rand(rng, (4, 3), np.float32)
    d = rdev.asarray(a)
    t = d.T
    check(t.sum(-1), f64(a).T.sum(-1), np.float32)
    np.testing.assert_array_equal(t.get(), a.T)  # through a contiguous copy
    c = t.contiguous()
    assert c.is_contiguous and c.shape == (3, 4)
    np.testing.assert_array_equal(c.get(), a.T)
    new = rand(rng, (3, 4), np.float32)
    t.set(new)  # into the view, through a contiguous copy: d becomes new.T
    np.testing.assert_array_equal(d.get(), new.T)
    np.testing.assert_array_equal(t.get(), new)
    with pytest.raises(ValueError):
        t.reshape(12)


# ---- streams, sessions, errors -------------------------------------------------------------------

def test_ops_queue_on_the_current_stream(s, rng):
    need("Add")
    a = rand(rng, (1000,), np.float32)
    with s.stream() as st:
        d = rdev.asarray(a, stream=st)
        r = d + d
        assert len(st._held) >= 1
    check(r, 2 * f64(a), np.float32)


def test_shape_mismatch_is_161002(s):
    need("Add")
    with pytest.raises(rdev.Error) as e:
        rdev.empty((3, 4)) + rdev.empty((5,))
    assert e.value.code == OP_PARAM_INVALID
    with pytest.raises(rdev.Error) as e:  # a wrong out: refused by the C check, before anything is sent
        ops.add(rdev.empty((3, 4)), rdev.empty((4,)), out=rdev.empty((3, 5)))
    assert e.value.code == OP_PARAM_INVALID and "out has shape" in e.value.message


def test_unknown_dtype(s):
    need("Add")
    c = rdev.empty((4,), np.complex64)
    with pytest.raises(rdev.Error) as e:
        c + c
    assert e.value.code == OP_PARAM_INVALID
    d = rdev.empty((4,))
    with pytest.raises(rdev.Error) as e:  # an aclDataType number rdev does not know, through the generic entry
        s._s.op_launch(s.default_stream._raw, "Add",
                       [(99, d.ptr, (4,), (1,), 0), ops._tensor(d), (9, 1), ops._tensor(d)])
    assert e.value.code == OP_PARAM_INVALID


def test_generic_entry_point_checks_its_arguments(s):
    d = rdev.empty((4,))
    raw = s.default_stream._raw
    t = ops._tensor(d)
    with pytest.raises(TypeError):
        s._s.op_launch(raw, "Add", [t, t, (9, 1)])  # one argument short
    with pytest.raises(TypeError):
        s._s.op_launch(raw, "Add", [t, "x", (9, 1), t])
    with pytest.raises(rdev.Error) as e:
        s._s.op_launch(raw, "NoSuchOp", [])
    assert e.value.code == 900007
    with pytest.raises(rdev.Error) as e:  # NULL for a required tensor
        s._s.op_launch(raw, "Add", [t, None, (9, 1), t])
    assert e.value.code == 161001
    assert ("Add", (("self", 1, 2), ("other", 1, 2), ("alpha", 3, 0), ("out", 1, 1))) in rdev._rdev.op_table()


def test_arrays_of_two_sessions_do_not_mix(s, server):
    need("Add")
    with rdev.connect(server) as other:
        a, b = rdev.empty((4,), session=s), rdev.empty((4,), session=other)
        with pytest.raises(ValueError):
            a + b


def test_a_tensor_in_another_sessions_memory_is_refused(s, server):
    need("Add")
    with rdev.connect(server) as other:
        victim = rdev.asarray(np.arange(4, dtype=np.float32), session=other)
        other.synchronize()
        mine, out = rdev.asarray(np.ones(4, np.float32), session=s), rdev.empty((4,), session=s)
        foreign = (0, victim.ptr, (4,), (1,), 0)
        for args in ([foreign, ops._tensor(mine), (9, 1), ops._tensor(out)],  # reading it
                     [ops._tensor(mine), ops._tensor(mine), (9, 1), foreign]):  # writing it
            with pytest.raises(rdev.Error) as e:
                s.default_stream._queue(lambda r: s._s.op_launch(r, "Add", args))
                s.synchronize()
            assert e.value.code in (INVALID_PARAM, OP_PARAM_INVALID)
        np.testing.assert_array_equal(victim.get(), np.arange(4, dtype=np.float32))
        check(mine + mine, np.full(4, 2.0), np.float32)  # the session goes on
