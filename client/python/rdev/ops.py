"""rdev/ops.py — CANN's operators (aclnn, rdev/ops.h) on device arrays, so
a notebook computes on the device without writing kernels: one function per
operator (add, matmul, softmax, sum, ...), and DeviceArray's arithmetic
(a + b, a @ b, a.sum()) over them.

Each function works out its result's shape and data type as numpy and torch
do (broadcasting; promotion by the C rules of proto/ops/op_check.c: float
over integer, the wider of two, float16 with bfloat16 float32; a Python
scalar does not widen a tensor's type within its kind, as in torch),
allocates the result on the operands' session (unless out= names one),
and queues the operator on the stream (default: the current one) through
the extension's one generic entry point, Session.op_launch, which builds
the call from the operator's signature and checks it as aclnn's first
phase does. It returns at once: errors of the run surface at the stream's
next wait, as for any queued work. Every array the call uses is held by
the stream until a synchronize.

bfloat16 is not offered: numpy has no such type, and the package has no
representation of one.
"""
import numbers

import numpy as np

from . import _common, _rdev
from .array import DeviceArray, asarray

# aclDataType numbers of the numpy types rdev's operators know (rdev/ops.h)
_CODES = {np.dtype(t): c for t, c in ((np.float32, 0), (np.float16, 1), (np.int8, 2), (np.int32, 3), (np.uint8, 4),
                                      (np.int16, 6), (np.uint16, 7), (np.uint32, 8), (np.int64, 9), (np.uint64, 10),
                                      (np.float64, 11), (np.bool_, 12))}
_RANK = {np.dtype(t): r for t, r in ((np.bool_, 0), (np.uint8, 1), (np.int8, 1), (np.int16, 2), (np.uint16, 2),
                                     (np.int32, 3), (np.uint32, 3), (np.int64, 4), (np.uint64, 4), (np.float16, 5),
                                     (np.float32, 6), (np.float64, 7))}
_F32, _I64, _BOOL = np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_)
_CUBE_KEEP_DTYPE = 0  # cubeMathType: compute in the inputs' type (CANN's KEEP_DTYPE)

__all__ = ["add", "sub", "mul", "div", "neg", "abs", "exp", "log", "sqrt", "relu", "gelu", "silu", "sigmoid",
           "tanh", "softmax", "layer_norm", "matmul", "mm", "bmm", "sum", "mean", "amax", "cast", "astype", "copy_",
           "fill_", "permute", "cat", "contiguous", "result_type", "available"]


def _invalid(msg):
    """The Error aclnn's first phase gives a call it refuses (161002)."""
    return _common.error(_rdev.OP_PARAM_INVALID, msg)


def _code(dtype):
    """The aclDataType number of a numpy dtype; Error 161002 for one rdev's operators do not know."""
    try:
        return _CODES[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise _invalid(f"data type {dtype} is not one rdev's operators take "
                       f"({', '.join(str(d) for d in _CODES)})") from None


def available():
    """The names of the operators this build offers (CANN's: "Add", "Softmax", ...)."""
    return [name for name, _ in _rdev.op_table()]


# ---- types and shapes ----------------------------------------------------------------------------

def _is_float(dt):
    return np.dtype(dt).kind == "f"


def _promote(a, b):
    """The type two tensors compute in (op_promote's rule)."""
    a, b = np.dtype(a), np.dtype(b)
    _code(a), _code(b)
    if a == b:
        return a
    if {a, b} == {np.dtype(np.int8), np.dtype(np.uint8)}:
        return np.dtype(np.int16)
    return a if _RANK[a] >= _RANK[b] else b


def _kind(x):
    """0 bool, 1 integer, 2 float: of a dtype or of a Python/numpy scalar."""
    if isinstance(x, np.dtype):
        return 0 if x == _BOOL else 2 if x.kind == "f" else 1
    if isinstance(x, (bool, np.bool_)):
        return 0
    return 2 if isinstance(x, (float, np.floating)) else 1


def _with_scalar(dt, s):
    """The type of tensor type dt with scalar s (torch's rule: the tensor's
    type, unless the scalar is of a higher kind: then int64 or float32)."""
    dt = np.dtype(dt)
    ks = _kind(s)
    if ks <= _kind(dt):
        return dt
    return _I64 if ks == 1 else _F32


def result_type(*operands):
    """The type an elementwise operator computes the operands in (device
    arrays, dtypes, Python scalars)."""
    dts = [o.dtype if isinstance(o, DeviceArray) else o for o in operands if not _is_scalar(o)]
    dts = [np.dtype(d) for d in dts]
    if not dts:
        raise TypeError("result_type needs a device array or a dtype")
    dt = dts[0]
    for d in dts[1:]:
        dt = _promote(dt, d)
    for s in operands:
        if _is_scalar(s):
            dt = _with_scalar(dt, s)
    return dt


def _broadcast(*shapes):
    if all(sh == shapes[0] for sh in shapes[1:]):
        return tuple(shapes[0])
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise _invalid(f"shapes {' and '.join(str(tuple(s)) for s in shapes)} do not broadcast") from None


def _dim(d, ndim, what="dim"):
    """A dimension index, negative from the end, checked against ndim."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, not {type(d).__name__}")
    n = max(ndim, 1)
    if not -n <= d < n:
        raise _invalid(f"{what} {d} is out of range for {ndim} dimensions")
    return int(d) % n


def _dims(dim, ndim):
    """A reduction's dimensions: None is all of them; an int or a sequence."""
    if dim is None:
        return list(range(ndim))
    dims = [dim] if isinstance(dim, (int, np.integer)) else list(dim)
    norm = [_dim(d, ndim) for d in dims]
    if len(set(norm)) != len(norm):
        raise _invalid(f"dim {tuple(dims)} names a dimension twice")
    return norm


def _reduced(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in dims)


# ---- operands, results, launches -----------------------------------------------------------------

def _is_scalar(x):
    if isinstance(x, DeviceArray):  # the common case, before the slower checks of abstract types
        return False
    return isinstance(x, (numbers.Number, np.number, np.bool_)) or (isinstance(x, np.ndarray) and x.ndim == 0)


def _scalar_value(x):
    if isinstance(x, np.ndarray):
        x = x[()]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (numbers.Integral, np.integer)):
        return int(x)
    if isinstance(x, (numbers.Real, np.floating)):
        return float(x)
    raise TypeError(f"rdev's operators take real scalars, not {type(x).__name__}")


def _scalar(x):
    """(dtype, value): a Python scalar as an aclScalar (double, int64 or bool, as torch passes them)."""
    v = _scalar_value(x)
    if isinstance(v, bool):
        return (12, v)
    return (9, v) if isinstance(v, int) else (11, v)


def _typed_scalar(dt, x):
    """A scalar in the tensor type dt's kind: float, int64 or bool."""
    v = _scalar_value(x)
    k = _kind(np.dtype(dt))
    return (11, float(v)) if k == 2 else (9, int(v)) if k == 1 else (12, bool(v))


def _session(arrays, out=None):
    """The one session (and device) the device arrays share."""
    arrays = [a for a in arrays if isinstance(a, DeviceArray)] + ([out] if isinstance(out, DeviceArray) else [])
    if not arrays:
        return _common.current_session()
    s, dev = arrays[0].session, arrays[0].device
    for a in arrays[1:]:
        if a.session is not s:
            raise ValueError("the device arrays belong to different sessions")
        if a.device != dev:
            raise ValueError(f"the device arrays are on devices {dev} and {a.device}")
    return s


def _tensor(a):
    """A device array's tensor description (dtype, addr, shape, strides, offset), strides in elements."""
    return (_code(a.dtype), a.ptr, a.shape, a._elem_strides(), 0)


def _operand(x, session, dtype=None, stream=None):
    """A device array from x: itself, or an upload of an array-like (a list, a numpy array)."""
    if isinstance(x, DeviceArray):
        return x
    if isinstance(x, (list, tuple, np.ndarray)):
        return asarray(np.asarray(x, dtype=dtype), session=session, stream=stream)
    raise TypeError(f"expected an rdev.DeviceArray or an array-like, not {type(x).__name__}")


def _result(out, shape, dtype, session):
    """The output: out (checked to be a device array of the session), or a new array."""
    if out is None:
        return DeviceArray(shape, dtype, session=session)
    if not isinstance(out, DeviceArray):
        raise TypeError(f"out must be an rdev.DeviceArray, not {type(out).__name__}")
    if out.session is not session:
        raise ValueError("out belongs to another session")
    return out


def _check_device(session, arrays):
    for a in arrays:
        if isinstance(a, DeviceArray) and a.device != session.device:
            raise ValueError(f"the device array is on device {a.device}, the session's current device is "
                             f"{session.device}: set s.device = {a.device} first")


def _launch(session, name, args, arrays, stream):
    """Queues operator name with args on the stream, holding arrays' memory until a synchronize."""
    _check_device(session, arrays)
    st = session._stream_for(stream, arrays[0].device if arrays else None)
    st._queue(lambda raw: session._s.op_launch(raw, name, args), *(a._mem for a in arrays))


# ---- elementwise arithmetic ----------------------------------------------------------------------

def _pair(a, b, stream):
    """a and b as device arrays or scalars, at least one a device array; and their session."""
    sa, sb = _is_scalar(a), _is_scalar(b)
    if sa and sb:
        raise TypeError("an operator needs at least one device array")
    s = _session([a, b])
    if not sa:
        a = _operand(a, s, stream=stream)
    if not sb:
        b = _operand(b, s, stream=stream)
    return a, b, s


def _check_alpha(dt, alpha):
    """torch's rule, which aclnn's first phase also holds: an integral result takes an integral alpha."""
    if _kind(np.dtype(dt)) != 2 and _kind(_scalar_value(alpha)) == 2:
        raise TypeError("for integral operands, alpha must not be a floating point number")


def add(a, b, *, alpha=1, out=None, stream=None):
    """a + alpha * b (aclnnAdd; aclnnAdds with a scalar on either side).
    alpha does not change the result's type; a floating alpha with an
    integral result raises TypeError, as in torch."""
    a, b, s = _pair(a, b, stream)
    if _is_scalar(a):
        _check_alpha(_with_scalar(b.dtype, a), alpha)
        if _scalar_value(alpha) == 1:
            return add(b, a, out=out, stream=stream)
        return add(mul(b, alpha, stream=stream), a, out=out, stream=stream)
    if _is_scalar(b):
        dt = _with_scalar(a.dtype, b)
        _check_alpha(dt, alpha)
        r = _result(out, a.shape, dt, s)
        _launch(s, "Adds", [_tensor(a), _scalar(b), _scalar(alpha), _tensor(r)], [a, r], stream)
        return r
    dt = _promote(a.dtype, b.dtype)
    _check_alpha(dt, alpha)
    r = _result(out, _broadcast(a.shape, b.shape), dt, s)
    _launch(s, "Add", [_tensor(a), _tensor(b), _scalar(alpha), _tensor(r)], [a, b, r], stream)
    return r


def sub(a, b, *, alpha=1, out=None, stream=None):
    """a - alpha * b (aclnnSub; a scalar b as aclnnAdds with -alpha; a scalar a as -alpha*b + a)."""
    a, b, s = _pair(a, b, stream)
    if _is_scalar(a):
        _check_alpha(_with_scalar(b.dtype, a), alpha)
        return add(mul(b, -_scalar_value(alpha), stream=stream), a, out=out, stream=stream)
    if _is_scalar(b):
        return add(a, b, alpha=-_scalar_value(alpha), out=out, stream=stream)
    dt = _promote(a.dtype, b.dtype)
    _check_alpha(dt, alpha)
    r = _result(out, _broadcast(a.shape, b.shape), dt, s)
    _launch(s, "Sub", [_tensor(a), _tensor(b), _scalar(alpha), _tensor(r)], [a, b, r], stream)
    return r


def mul(a, b, *, out=None, stream=None):
    """a * b (aclnnMul; aclnnMuls with a scalar on either side)."""
    a, b, s = _pair(a, b, stream)
    if _is_scalar(a):
        a, b = b, a
    if _is_scalar(b):
        r = _result(out, a.shape, _with_scalar(a.dtype, b), s)
        _launch(s, "Muls", [_tensor(a), _scalar(b), _tensor(r)], [a, r], stream)
        return r
    r = _result(out, _broadcast(a.shape, b.shape), _promote(a.dtype, b.dtype), s)
    _launch(s, "Mul", [_tensor(a), _tensor(b), _tensor(r)], [a, b, r], stream)
    return r


def div(a, b, *, out=None, stream=None):
    """a / b, true division (aclnnDiv; integers divide into float32). A
    scalar divisor is aclnnMuls by its inverse; a scalar dividend is
    uploaded as a 0-d array."""
    a, b, s = _pair(a, b, stream)
    if _is_scalar(b):
        v = _scalar_value(b)
        dt = _with_scalar(a.dtype, v)
        dt = dt if _is_float(dt) else _F32
        if v == 0:  # no inverse to multiply by: divide by a 0-d array
            return div(a, asarray(np.asarray(v, dtype=dt), session=s, stream=stream), out=out, stream=stream)
        r = _result(out, a.shape, dt, s)
        _launch(s, "Muls", [_tensor(a), (11, 1.0 / v), _tensor(r)], [a, r], stream)
        return r
    if _is_scalar(a):
        a = asarray(np.asarray(_scalar_value(a), dtype=_with_scalar(b.dtype, a)), session=s, stream=stream)
    dt = _promote(a.dtype, b.dtype)
    r = _result(out, _broadcast(a.shape, b.shape), dt if _is_float(dt) else _F32, s)
    _launch(s, "Div", [_tensor(a), _tensor(b), _tensor(r)], [a, b, r], stream)
    return r


def _unary(name, a, out, stream, to_float):
    s = _session([a], out)
    a = _operand(a, s, stream=stream)
    dt = a.dtype if not to_float or _is_float(a.dtype) else _F32
    r = _result(out, a.shape, dt, s)
    _launch(s, name, [_tensor(a), _tensor(r)], [a, r], stream)
    return r


def neg(a, *, out=None, stream=None):
    """-a (aclnnNeg)."""
    return _unary("Neg", a, out, stream, False)


def abs(a, *, out=None, stream=None):  # noqa: A001 (rdev.ops.abs, as numpy's)
    """|a| (aclnnAbs)."""
    return _unary("Abs", a, out, stream, False)


def exp(a, *, out=None, stream=None):
    """e**a (aclnnExp; integers into float32)."""
    return _unary("Exp", a, out, stream, True)


def log(a, *, out=None, stream=None):
    """The natural logarithm (aclnnLog; integers into float32)."""
    return _unary("Log", a, out, stream, True)


def sqrt(a, *, out=None, stream=None):
    """The square root (aclnnSqrt; integers into float32)."""
    return _unary("Sqrt", a, out, stream, True)


def relu(a, *, out=None, stream=None):
    """max(a, 0) (aclnnRelu)."""
    return _unary("Relu", a, out, stream, False)


def gelu(a, *, out=None, stream=None):
    """GELU, the tanh approximation 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) (aclnnGelu)."""
    return _unary("Gelu", a, out, stream, True)


def silu(a, *, out=None, stream=None):
    """x * sigmoid(x) (aclnnSilu)."""
    return _unary("Silu", a, out, stream, True)


def sigmoid(a, *, out=None, stream=None):
    """1 / (1 + e**-a) (aclnnSigmoid)."""
    return _unary("Sigmoid", a, out, stream, True)


def tanh(a, *, out=None, stream=None):
    """The hyperbolic tangent (aclnnTanh)."""
    return _unary("Tanh", a, out, stream, True)


# ---- normalization -------------------------------------------------------------------------------

def softmax(a, dim=-1, *, out=None, stream=None):
    """exp(a) / sum(exp(a)) along dim (aclnnSoftmax; integers into float32)."""
    s = _session([a], out)
    a = _operand(a, s, stream=stream)
    d = _dim(dim, a.ndim)
    r = _result(out, a.shape, a.dtype if _is_float(a.dtype) else _F32, s)
    _launch(s, "Softmax", [_tensor(a), d, _tensor(r)], [a, r], stream)
    return r


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, *, out=None, stream=None):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last
    len(normalized_shape) dimensions, var biased (aclnnLayerNorm)."""
    s = _session([x, weight, bias], out)
    x = _operand(x, s, stream=stream)
    ns = [int(normalized_shape)] if isinstance(normalized_shape, (int, np.integer)) else [int(n) for n in
                                                                                        normalized_shape]
    if len(ns) > x.ndim or tuple(x.shape[x.ndim - len(ns):]) != tuple(ns):
        raise _invalid(f"normalized_shape {tuple(ns)} is not the end of the input's shape {x.shape}")
    w = None if weight is None else _operand(weight, s, stream=stream)
    b = None if bias is None else _operand(bias, s, stream=stream)
    r = _result(out, x.shape, x.dtype, s)
    arrays = [t for t in (x, w, b, r) if t is not None]
    _launch(s, "LayerNorm", [_tensor(x), ns, None if w is None else _tensor(w), None if b is None else _tensor(b),
                             float(eps), _tensor(r), None, None], arrays, stream)
    return r


# ---- matrix products -----------------------------------------------------------------------------

def _matmul_shape(sa, sb):
    if not sa or not sb:
        raise _invalid("matmul takes no 0-d operands")
    a2 = (1,) + sa if len(sa) == 1 else sa
    b2 = sb + (1,) if len(sb) == 1 else sb
    if a2[-1] != b2[-2]:
        raise _invalid(f"matmul of {sa} and {sb}: {a2[-1]} columns against {b2[-2]} rows")
    shape = _broadcast(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(sb) == 1:
        shape = shape[:-1]
    if len(sa) == 1:
        shape = shape[:-2] + shape[-1:] if len(sb) > 1 else shape[:-1]
    return shape


def _product(name, a, b, out, stream, shape_rule):
    s = _session([a, b], out)
    a, b = _operand(a, s, stream=stream), _operand(b, s, stream=stream)
    shape = shape_rule(a.shape, b.shape)
    r = _result(out, shape, _promote(a.dtype, b.dtype), s)
    _launch(s, name, [_tensor(a), _tensor(b), _tensor(r), _CUBE_KEEP_DTYPE], [a, b, r], stream)
    return r


def matmul(a, b, *, out=None, stream=None):
    """a @ b with numpy's rules: 1-d operands, broadcast batches (aclnnMatmul)."""
    return _product("Matmul", a, b, out, stream, _matmul_shape)


def mm(a, b, *, out=None, stream=None):
    """The product of two matrices (aclnnMm)."""
    def rule(sa, sb):
        if len(sa) != 2 or len(sb) != 2:
            raise _invalid(f"mm takes two matrices, not {sa} and {sb}")
        return _matmul_shape(sa, sb)
    return _product("Mm", a, b, out, stream, rule)


def bmm(a, b, *, out=None, stream=None):
    """Batched products of two (batch, n, k) and (batch, k, m) arrays (aclnnBatchMatMul)."""
    def rule(sa, sb):
        if len(sa) != 3 or len(sb) != 3 or sa[0] != sb[0]:
            raise _invalid(f"bmm takes two 3-d arrays of one batch size, not {sa} and {sb}")
        return _matmul_shape(sa, sb)
    return _product("BatchMatMul", a, b, out, stream, rule)


# ---- reductions ----------------------------------------------------------------------------------

def sum(a, dim=None, keepdim=False, *, dtype=None, out=None, stream=None):  # noqa: A001
    """The sum over dim (None: all), as torch.sum: integers and bools sum
    into int64 unless dtype says (aclnnReduceSum)."""
    s = _session([a], out)
    a = _operand(a, s, stream=stream)
    dims = _dims(dim, a.ndim)
    dt = np.dtype(dtype) if dtype is not None else (a.dtype if _is_float(a.dtype) else _I64)
    r = _result(out, _reduced(a.shape, dims, keepdim), dt, s)
    _launch(s, "ReduceSum", [_tensor(a), dims, bool(keepdim), _code(r.dtype), _tensor(r)], [a, r], stream)
    return r


def mean(a, dim=None, keepdim=False, *, dtype=None, out=None, stream=None):
    """The mean over dim (None: all) (aclnnMean; integers into float32)."""
    s = _session([a], out)
    a = _operand(a, s, stream=stream)
    dims = _dims(dim, a.ndim)
    dt = np.dtype(dtype) if dtype is not None else (a.dtype if _is_float(a.dtype) else _F32)
    r = _result(out, _reduced(a.shape, dims, keepdim), dt, s)
    _launch(s, "Mean", [_tensor(a), dims, bool(keepdim), _code(r.dtype), _tensor(r)], [a, r], stream)
    return r


def amax(a, dim=None, keepdim=False, *, out=None, stream=None):
    """The maximum over dim (None: all) (aclnnAmax)."""
    s = _session([a], out)
    a = _operand(a, s, stream=stream)
    dims = _dims(dim, a.ndim)
    r = _result(out, _reduced(a.shape, dims, keepdim), a.dtype, s)
    _launch(s, "Amax", [_tensor(a), dims, bool(keepdim), _tensor(r)], [a, r], stream)
    return r


# ---- types, copies, layout -----------------------------------------------------------------------

def cast(a, dtype, *, out=None, stream=None):
    """a converted to dtype, a new array (aclnnCast)."""
    s = _session([a], out)
    a = _operand(a, s, stream=stream)
    dt = np.dtype(dtype)
    r = _result(out, a.shape, dt, s)
    _launch(s, "Cast", [_tensor(a), _code(dt), _tensor(r)], [a, r], stream)
    return r


astype = cast


def copy_(dst, src, *, stream=None):
    """Copies src into dst in place, broadcasting and converting (aclnnInplaceCopy); returns dst."""
    s = _session([dst, src])
    if not isinstance(dst, DeviceArray):
        raise TypeError(f"copy_ writes into a device array, not {type(dst).__name__}")
    src = _operand(np.asarray(_scalar_value(src), dtype=dst.dtype) if _is_scalar(src) else src, s, stream=stream)
    _broadcast(src.shape, dst.shape)
    _launch(s, "InplaceCopy", [_tensor(dst), _tensor(src)], [dst, src], stream)
    return dst


def fill_(a, value, *, stream=None):
    """Sets every element of a to value in place (aclnnInplaceFillScalar); returns a."""
    if not isinstance(a, DeviceArray):
        raise TypeError(f"fill_ writes into a device array, not {type(a).__name__}")
    _launch(a.session, "InplaceFillScalar", [_tensor(a), _typed_scalar(a.dtype, value)], [a], stream)
    return a


def permute(a, dims, *, out=None, stream=None):
    """A new array, a's dimensions reordered by dims (aclnnPermute). d.permute(...) is the view."""
    s = _session([a], out)
    a = _operand(a, s, stream=stream)
    dims = [int(d) for d in dims]
    norm = [_dim(d, a.ndim) for d in dims]  # the operators get dims from 0 up, as numpy and torch normalize them
    if sorted(norm) != list(range(a.ndim)):
        raise _invalid(f"dims {tuple(dims)} is not a permutation of {a.ndim} dimensions")
    r = _result(out, tuple(a.shape[d] for d in norm), a.dtype, s)
    _launch(s, "Permute", [_tensor(a), norm, _tensor(r)], [a, r], stream)
    return r


def cat(tensors, dim=0, *, out=None, stream=None):
    """The arrays joined along dim (aclnnCat)."""
    tensors = list(tensors)
    if not tensors:
        raise _invalid("cat of no arrays")
    s = _session(tensors, out)
    ts = [_operand(t, s, stream=stream) for t in tensors]
    first = ts[0].shape
    d = _dim(dim, len(first))
    for t in ts[1:]:
        if len(t.shape) != len(first) or any(n != m for i, (n, m) in enumerate(zip(t.shape, first)) if i != d):
            raise _invalid(f"cat of shapes {first} and {t.shape} along dim {dim}")
    shape = first[:d] + (int(np.sum([t.shape[d] for t in ts])),) + first[d + 1:]
    dt = ts[0].dtype
    for t in ts[1:]:
        dt = _promote(dt, t.dtype)
    r = _result(out, shape, dt, s)
    _launch(s, "Cat", [[_tensor(t) for t in ts], d, _tensor(r)], ts + [r], stream)
    return r


def contiguous(a, *, stream=None):
    """a itself when C-contiguous, else a C-contiguous copy (aclnnInplaceCopy)."""
    if a.is_contiguous:
        return a
    return copy_(DeviceArray(a.shape, a.dtype, session=a.session), a, stream=stream)


# ---- DeviceArray's operator methods (array.py stands below this module) ----------------------------

def _install(cls):
    """Gives the device array class rdev.ops's methods and arithmetic."""
    def contiguous(self, *, stream=None):
        """This array when C-contiguous, else a C-contiguous copy (queued on the stream)."""
        return globals()["contiguous"](self, stream=stream)

    def abs_(self, **kw):
        return abs(self, **kw)

    def sum_(self, dim=None, keepdim=False, **kw):
        """rdev.ops.sum: the sum over dim (None: all)."""
        return sum(self, dim, keepdim, **kw)

    def mean_(self, dim=None, keepdim=False, **kw):
        """rdev.ops.mean: the mean over dim (None: all)."""
        return mean(self, dim, keepdim, **kw)

    def max_(self, dim=None, keepdim=False, **kw):
        """The maximum over dim (None: all), rdev.ops.amax (values only)."""
        return amax(self, dim, keepdim, **kw)

    def astype(self, dtype, **kw):
        """A new array of dtype (rdev.ops.cast)."""
        return cast(self, dtype, **kw)

    def softmax_(self, dim=-1, **kw):
        return softmax(self, dim, **kw)

    def fill__(self, value, **kw):
        """Sets every element to value (the operator; fill() is a byte memset)."""
        return fill_(self, value, **kw)

    def copy__(self, src, **kw):
        """Copies src into this array, broadcasting and converting."""
        return copy_(self, src, **kw)

    methods = {
        "contiguous": contiguous, "abs": abs_, "sum": sum_, "mean": mean_, "max": max_, "amax": max_,
        "astype": astype, "softmax": softmax_, "fill_": fill__, "copy_": copy__,
        "__add__": lambda self, o: add(self, o), "__radd__": lambda self, o: add(o, self),
        "__sub__": lambda self, o: sub(self, o), "__rsub__": lambda self, o: sub(o, self),
        "__mul__": lambda self, o: mul(self, o), "__rmul__": lambda self, o: mul(o, self),
        "__truediv__": lambda self, o: div(self, o), "__rtruediv__": lambda self, o: div(o, self),
        "__matmul__": lambda self, o: matmul(self, o), "__rmatmul__": lambda self, o: matmul(o, self),
        "__neg__": lambda self: neg(self), "__abs__": lambda self: abs(self), "__pos__": lambda self: self,
    }
    for name, fn in methods.items():
        if not name.startswith("__"):
            fn.__name__ = fn.__qualname__ = name
        setattr(cls, name, fn)


_install(DeviceArray)
