"""Differentiable operations on Tensors (chapters 01 and 02).

Each primitive computes its result on raw arrays and, right beside it,
defines ``backward(grad)``: given ``g = ∂ℓ/∂out`` it returns ``∂ℓ/∂input`` for
each input, in order. A backward may return a gradient at the *broadcast*
shape; `Tensor.backward` folds it back with `unbroadcast`, in one place.

Derived operations (sub, div, mean, masked_fill, ...) are one line each on
top of the primitives, with the identity they use in a comment.

The softmax, which deserves a module of its own, is in `minitorch.softmax`.
"""

from __future__ import annotations

import builtins
import copy
import decimal
import numbers
import reprlib

import numpy as np

from minitorch import checks, tensor_checks
from minitorch.tensor import Tensor, as_tensor


def _broadcast_shape(op: str, a: Tensor, b: Tensor) -> tuple:
    """The shape `a` and `b` broadcast to, or a ValueError naming `op`."""
    try:
        return np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(
            f"{op}: shapes {a.shape} and {b.shape} cannot be broadcast together "
            f"(aligned from the right, each pair of sizes must be equal or one of them 1)"
        ) from None


def _binary_inputs(op: str, a, b) -> tuple[Tensor, Tensor]:
    """Turn numbers and arrays into Tensors, matching the other side's dtype."""
    like = a if isinstance(a, Tensor) else b
    a, b = as_tensor(a, like, op), as_tensor(b, like, op)
    if a._data.shape != b._data.shape and a._data.ndim and b._data.ndim:  # equal shapes and scalars always broadcast
        shape = _broadcast_shape(op, a, b)  # (10**6, 1) and (1, 10**6) broadcast to 7 TiB
        checks.memory(op, "the result", shape, builtins.max(a.dtype.itemsize, b.dtype.itemsize))
    return a, b


# ----------------------------------------------------------------------
# elementwise arithmetic


def add(a, b) -> Tensor:
    """a + b, with broadcasting."""
    a, b = _binary_inputs("add", a, b)

    def backward(grad):
        return grad, grad  # ∂(a+b)/∂a = ∂(a+b)/∂b = 1

    return Tensor.from_op(a._data + b._data, (a, b), backward, "add")


@checks.inputs_checked_by(checks.mul_backward_inputs)
def mul_backward(grad: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exercise 1.2: mul's backward rule. Given ``g = ∂ℓ/∂(ab)`` and the inputs' values, return
    ``(∂ℓ/∂a, ∂ℓ/∂b)`` as arrays (at the broadcast shape is fine: `unbroadcast` folds them)."""
    return grad * b, grad * a  # ∂(ab)/∂a = b, ∂(ab)/∂b = a


def mul(a, b) -> Tensor:
    """a * b (elementwise), with broadcasting."""
    a, b = _binary_inputs("mul", a, b)
    return Tensor.from_op(a._data * b._data, (a, b), lambda grad: mul_backward(grad, a.data, b.data), "mul")


def neg(a) -> Tensor:
    """-a."""
    a = as_tensor(a)
    return Tensor.from_op(-a._data, (a,), lambda grad: (-grad,), "neg")


def pow(a, exponent) -> Tensor:
    """a ** exponent, for a constant (Python number) exponent."""
    a = as_tensor(a)
    exponent = float(exponent) if isinstance(exponent, decimal.Decimal) else exponent  # as the optimizers take it
    if not checks.is_exponent(exponent):
        raise TypeError(
            f"pow: the exponent must be a Python number, got {type(exponent).__name__}; "
            f"for a tensor exponent write exp(b * log(a))"
        )
    try:  # a NumPy float64 exponent would make float32 data float64, where x * np.float64(2) stays float32
        exponent = int(exponent) if isinstance(exponent, numbers.Integral) else float(exponent)
        if isinstance(exponent, numbers.Integral) and builtins.abs(exponent) > 2**63 - 1:
            exponent = float(exponent)  # NumPy takes integer exponents up to 64 bits; beyond, a float
    except OverflowError:
        raise OverflowError(f"pow: the exponent, an integer of {exponent.bit_length()} bits, is too large for a "
                            f"float (at most about 1.8e308)") from None

    def backward(grad):
        if exponent == 0:  # a^0 = 1 is constant: 0 everywhere, also at a = 0, where p a^(p-1) would be 0 * inf
            return (np.zeros_like(a._data),)
        return (grad * exponent * a._data ** (exponent - 1),)  # d(a^p)/da = p a^(p-1)

    return Tensor.from_op(a._data**exponent, (a,), backward, "pow")


def sub(a, b) -> Tensor:
    """a - b = a + (-b)."""
    a, b = _binary_inputs("sub", a, b)
    return add(a, neg(b))


def div(a, b) -> Tensor:
    """a / b = a * b^(-1)."""
    a, b = _binary_inputs("div", a, b)
    return mul(a, pow(b, -1.0))


@checks.inputs_checked_by(checks.exp_backward_inputs)
def exp_backward(grad: np.ndarray, out: np.ndarray) -> tuple[np.ndarray]:
    """Exercise 1.3: exp's backward rule. Given ``g = ∂ℓ/∂out`` and the forward's result ``out = e^a``,
    return ``(∂ℓ/∂a,)``."""
    return (grad * out,)  # d(e^a)/da = e^a, which the forward already computed


def exp(a) -> Tensor:
    """e ** a (elementwise)."""
    a = as_tensor(a)
    out = np.exp(a._data)
    return Tensor.from_op(out, (a,), lambda grad: exp_backward(grad, out), "exp")


@checks.inputs_checked_by(checks.log_backward_inputs)
def log_backward(grad: np.ndarray, a: np.ndarray) -> tuple[np.ndarray]:
    """Exercise 1.4: log's backward rule. Given ``g = ∂ℓ/∂(log a)`` and the input's value, return ``(∂ℓ/∂a,)``."""
    return (grad / a,)  # d(log a)/da = 1/a


def log(a) -> Tensor:
    """Natural logarithm (elementwise)."""
    a = as_tensor(a)
    return Tensor.from_op(np.log(a._data), (a,), lambda grad: log_backward(grad, a.data), "log")


def relu(a) -> Tensor:
    """max(a, 0) (elementwise). Its derivative at 0 is taken to be 0."""
    a = as_tensor(a)

    def backward(grad):
        return (grad * (a._data > 0),)

    return Tensor.from_op(np.maximum(a._data, 0), (a,), backward, "relu")


def abs(a) -> Tensor:
    """|a| (elementwise), also ``abs(t)``. Its derivative at 0 is taken to be 0."""
    a = as_tensor(a)
    return Tensor.from_op(np.abs(a._data), (a,), lambda grad: (grad * np.sign(a._data),), "abs")  # d|a|/da = sign(a)


def sigmoid(a) -> Tensor:
    """σ(a) = 1 / (1 + e^(-a)) (elementwise), with no overflow for any a.

    Written with ``e^(-|a|) ≤ 1``, which never overflows:
    σ(a) = 1 / (1 + e^(-|a|)) for a ≥ 0 and e^(-|a|) / (1 + e^(-|a|)) for a < 0.
    (The textbook form overflows at a ≈ -710 in float64, a ≈ -89 in float32.)
    """
    a = as_tensor(a)
    small = np.exp(-np.abs(a._data))  # e^(-|a|), in (0, 1]
    out = np.where(a._data >= 0, 1.0, small) / (1.0 + small)

    def backward(grad):
        return (grad * out * (1.0 - out),)  # dσ/da = σ (1 - σ), which we already computed

    return Tensor.from_op(out, (a,), backward, "sigmoid")


# ----------------------------------------------------------------------
# matrix product


@checks.inputs_checked_by(checks.matmul_backward_inputs)
def matmul_backward(grad: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exercise 2.2: matmul's backward rule. For ``out = a @ b`` (NumPy's shapes: a 1-D operand is a
    vector) and ``G = ∂ℓ/∂out``, return ``(∂ℓ/∂a, ∂ℓ/∂b) = (G bᵀ, aᵀ G)``; batch axes may stay
    (`unbroadcast` sums them away)."""
    # Treat vectors as matrices: (p,) on the left is (1, p), on the right (p, 1).
    a_mat = a[None, :] if a.ndim == 1 else a
    b_mat = b[:, None] if b.ndim == 1 else b
    # b's axis goes back first: for (p,) @ (p,) the gradient is 0-d, () -> (1,) -> (1, 1)
    if b.ndim == 1:
        grad = np.expand_dims(grad, -1)  # (..., m) -> (..., m, 1)
    if a.ndim == 1:
        grad = np.expand_dims(grad, -2)  # (..., n) -> (..., 1, n)
    grad_a = grad @ np.swapaxes(b_mat, -1, -2)  # (..., m, n) @ (..., n, p) -> (..., m, p)
    grad_b = np.swapaxes(a_mat, -1, -2) @ grad  # (..., p, m) @ (..., m, n) -> (..., p, n)
    if a.ndim == 1:
        grad_a = grad_a[..., 0, :]  # (..., 1, p) -> (..., p)
    if b.ndim == 1:
        grad_b = grad_b[..., 0]  # (..., p, 1) -> (..., p)
    return grad_a, grad_b  # batch axes are summed away by unbroadcast


def matmul(a, b) -> Tensor:
    """a @ b: matrix product over the last two axes, batch axes broadcast.

    Shapes follow NumPy: (..., m, p) @ (..., p, n) -> (..., m, n); a 1-D
    operand is a vector (a row vector on the left, a column on the right).
    """
    like = a if isinstance(a, Tensor) else b
    a, b = as_tensor(a, like), as_tensor(b, like)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands must have at least 1 dimension, got shapes {a.shape} and {b.shape}")
    inner_a = a.shape[-1]
    inner_b = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if inner_a != inner_b:
        raise ValueError(
            f"matmul: shapes {a.shape} and {b.shape} are not aligned: the last axis "
            f"of the first ({inner_a}) must equal the "
            f"{'second-to-last' if b.ndim > 1 else 'only'} axis of the second ({inner_b})"
        )
    try:
        if a.ndim > 2 and b.ndim > 2 and a.shape[:-2] != b.shape[:-2]:  # (equal ones, a matrix, a vector: fine)
            np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(
            f"matmul: batch axes of shapes {a.shape} and {b.shape} cannot be broadcast together"
        ) from None

    try:
        out = a._data @ b._data
    except MemoryError:  # (1e5, 1) @ (1, 1e5): NumPy's words would not name matmul
        raise checks.result_too_large("matmul", f"shapes {a.shape} and {b.shape}") from None
    return Tensor.from_op(out, (a, b), lambda grad: matmul_backward(grad, a.data, b.data), "matmul")


# ----------------------------------------------------------------------
# reductions


def _axis_index(op: str, axis, ndim: int) -> int:
    """One axis (negatives allowed) as an index in 0..ndim-1, or an error naming `op`."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{op}: an axis must be an integer, got {axis!r} ({type(axis).__name__})")
    if not -ndim <= axis < builtins.max(ndim, 1):  # a 0-d tensor accepts axis 0, as in PyTorch
        raise ValueError(f"{op}: axis {axis} is out of range for a tensor with {ndim} dimensions")
    return int(axis) % builtins.max(ndim, 1)


def _normalise_axes(axis, ndim: int, op: str) -> tuple[int, ...]:
    """`axis` (None, int or tuple, negatives allowed) as a sorted tuple."""
    if axis is None:
        return tuple(range(ndim))
    axes = sorted(_axis_index(op, ax, ndim) for ax in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: axis {axis} names the same axis twice")
    return tuple(axes) if ndim else ()  # a 0-d tensor has nothing to reduce


@checks.inputs_checked_by(checks.sum_backward_inputs)
def sum_backward(grad: np.ndarray, shape: tuple, axes: tuple, keepdims: bool) -> tuple[np.ndarray]:
    """Exercise 2.3: sum's backward rule. For ``out = a.sum(axes, keepdims)`` with ``a`` of `shape`
    (`axes` a sorted tuple of axis indices) and ``g = ∂ℓ/∂out``, return ``(∂ℓ/∂a,)``, of `shape`."""
    # every summed element receives the gradient of the sum it went into
    grad = grad if keepdims else np.expand_dims(grad, axes)  # the summed axes back, as size 1
    return (np.broadcast_to(grad, shape),)


def sum(a, axis=None, keepdims: bool = False) -> Tensor:
    """Sum over `axis` (all axes by default)."""
    a = as_tensor(a)
    axes = _normalise_axes(axis, a.ndim, "sum")
    if keepdims is not True and keepdims is not False:  # (the usual case: one comparison)
        keepdims = checks.flag("sum", "keepdims", keepdims)
    if a._data.size == 0:  # only then can the result be larger than the input: (0, 10**12) summed over axis 0
        checks.memory("sum", "the result", [1 if ax in axes else size for ax, size in enumerate(a.shape)
                                            if keepdims or ax not in axes], a.dtype.itemsize)

    return Tensor.from_op(a._data.sum(axis=axes, keepdims=keepdims), (a,),
                          lambda grad: sum_backward(grad, a.shape, axes, keepdims), "sum")


def mean(a, axis=None, keepdims: bool = False) -> Tensor:
    """Mean over `axis` = sum / (number of elements summed)."""
    a = as_tensor(a)
    axes = _normalise_axes(axis, a.ndim, "mean")
    if keepdims is not True and keepdims is not False:  # (the usual case: one comparison)
        keepdims = checks.flag("mean", "keepdims", keepdims)
    count = int(np.prod([a.shape[ax] for ax in axes]))
    return mul(sum(a, axes, keepdims), 1.0 / count if count else float("nan"))  # of nothing: NaN, as NumPy and PyTorch


def max(a, axis=None, keepdims: bool = False) -> Tensor:
    """Maximum over `axis`. Ties share the gradient equally."""
    a = as_tensor(a)
    axes = _normalise_axes(axis, a.ndim, "max")
    if keepdims is not True and keepdims is not False:  # (the usual case: one comparison)
        keepdims = checks.flag("max", "keepdims", keepdims)
    if any(a.shape[ax] == 0 for ax in axes):
        raise ValueError(f"max: a tensor of shape {a.shape} has no elements along axis {axis}, so no maximum "
                         f"(as in NumPy and PyTorch)")
    out = a._data.max(axis=axes, keepdims=True)

    def backward(grad):
        winners = (a._data == out) | (np.isnan(a._data) & np.isnan(out))  # a NaN maximum is its NaN's (PyTorch)
        share = winners / winners.sum(axis=axes, keepdims=True)
        (copied,) = sum_backward(grad, a.shape, axes, keepdims)  # g copied back over the reduced axes, as for sum
        return (share * copied,)

    result = out if keepdims else np.squeeze(out, axis=axes)
    return Tensor.from_op(result, (a,), backward, "max")


# ----------------------------------------------------------------------
# shape operations


def reshape(a, *shape) -> Tensor:
    """The same elements in a new shape; ``reshape(a, 2, -1)`` or ``reshape(a, (2, -1))``."""
    a = as_tensor(a)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if not all([type(size) is int and size >= -1 for size in shape]):  # the usual case: one pass (the hot path)
        shape = checks.sizes("reshape", "the shape", shape, allow_unknown=True)
    try:
        out = a._data.reshape(shape)
    except ValueError:
        raise ValueError(f"reshape: cannot reshape a tensor of shape {a.shape} ({a.size} elements) "
                         f"into {shape}") from None
    return Tensor.from_op(out, (a,), lambda grad: (grad.reshape(a.shape),), "reshape")


def permute(a, *axes) -> Tensor:
    """Reorder the axes: output axis i is input axis ``axes[i]``."""
    a = as_tensor(a)
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    if not all([type(axis) is int for axis in axes]):  # the usual case costs one pass (this is the hot path)
        for axis in axes:
            checks.axis("permute", axis, a.ndim, name="each axis")
    ndim = a._data.ndim
    in_range = all(-ndim <= ax < ndim for ax in axes)
    if not in_range or sorted(ax % ndim for ax in axes) != list(range(ndim)):
        raise ValueError(f"permute: {axes} is not a permutation of the {ndim} axes of a tensor of shape {a.shape}")
    inverse = [0] * ndim  # undoes the permutation: input axis axes[i] comes back from output axis i
    for position, ax in enumerate(axes):
        inverse[ax % ndim] = position
    return Tensor.from_op(a._data.transpose(axes), (a,), lambda grad: (grad.transpose(inverse),), "permute")


def transpose(a, axis1: int = -2, axis2: int = -1) -> Tensor:
    """Swap two axes (by default the last two: the matrix transpose)."""
    a = as_tensor(a)
    axis1, axis2 = _axis_index("transpose", axis1, a.ndim), _axis_index("transpose", axis2, a.ndim)
    axes = list(range(a.ndim))
    axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
    return permute(a, *axes)


def _is_basic_index(index) -> bool:
    """Ints, slices, None and Ellipsis select each element at most once."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(isinstance(p, (int, np.integer, slice, type(None), type(Ellipsis))) for p in parts)


def getitem(a, index) -> Tensor:
    """``a[index]``: basic slicing and NumPy advanced (integer/boolean) indexing."""
    a = as_tensor(a)
    parts = index if isinstance(index, tuple) else (index,)
    parts = tuple(copy.deepcopy(part) if isinstance(part, (np.ndarray, list)) else part for part in parts)
    index = parts if isinstance(index, tuple) else parts[0]  # a copy: backward reads it, and the caller's may change
    if any(isinstance(part, Tensor) for part in parts):
        raise TypeError("getitem: index with ints, slices, or NumPy arrays of ints or booleans, not a Tensor (a Tensor "
                        "holds floats, so a boolean mask inside it would be read as the indices 0 and 1)")

    def backward(grad):
        full = np.zeros_like(a._data)
        if _is_basic_index(index):
            full[index] = grad
        else:
            np.add.at(full, index, grad)  # an element picked twice gets both gradients
        return (full,)

    try:
        values = a._data[index]
    except tensor_checks.INDEX_ERRORS as error:  # NumPy's says what an index may hold
        shown = ", ".join(reprlib.repr(part) for part in parts)
        raise tensor_checks.bad_index("getitem", f"x[{shown}]", a.shape, error) from None
    return Tensor.from_op(values, (a,), backward, "getitem")


# ----------------------------------------------------------------------
# selection and joining


def where(condition, a, b) -> Tensor:
    """Elementwise `a` where `condition` is true, else `b` (all broadcast)."""
    condition = np.array(condition._data if isinstance(condition, Tensor) else condition)  # a copy: backward reads
    if condition.dtype != bool:
        raise TypeError(f"where: the condition must be a boolean mask, got dtype {condition.dtype}")
    like = a if isinstance(a, Tensor) else b
    a, b = as_tensor(a, like), as_tensor(b, like)
    try:
        np.broadcast_shapes(condition.shape, a.shape, b.shape)
    except ValueError:
        raise ValueError(f"where: condition {condition.shape}, a {a.shape} and b {b.shape} cannot be broadcast "
                         f"together") from None

    def backward(grad):  # a constant branch (masked_fill's fill value) needs no gradient
        return (np.where(condition, grad, 0.0) if a.requires_grad else None,
                np.where(condition, 0.0, grad) if b.requires_grad else None)

    try:
        out = np.where(condition, a._data, b._data)
    except MemoryError:
        raise checks.result_too_large("where", f"condition {condition.shape}, a {a.shape} and b {b.shape}") from None
    return Tensor.from_op(out, (a, b), backward, "where")


def masked_fill(a, mask, value: float) -> Tensor:
    """`a` with the entries where `mask` is true replaced by `value` = where(mask, value, a).

    The filled entries get exactly zero gradient. A `value` that is a tensor in a graph gets its gradient, the
    sum of the upstream gradient over the filled entries (as `where` gives it).
    """
    a = as_tensor(a)
    for what, given in (("mask", mask), ("value", value)):  # where would broadcast `a` up to a larger one
        shape = np.shape(given._data if isinstance(given, Tensor) else given)
        if not tensor_checks.broadcasts_to(shape, a.shape):
            raise ValueError(f"masked_fill: a {what} of shape {shape} does not fit a tensor of shape {a.shape} (the "
                             f"result keeps the tensor's shape; the {what} must broadcast to it)")
    if isinstance(value, Tensor) and value.requires_grad:
        return where(mask, value, a)
    return where(mask, Tensor(value, dtype=a.dtype), a)


def concatenate(tensors, axis: int = 0) -> Tensor:
    """Join tensors along an existing axis."""
    tensors = tensor_checks.tensors_to_join("concatenate", tensors)
    if tensors[0].ndim == 0:
        raise ValueError("concatenate: zero-dimensional tensors have no axis to join along; use stack")
    axis = checks.axis("concatenate", axis, tensors[0].ndim)
    try:
        out = np.concatenate([t._data for t in tensors], axis=axis)
    except ValueError as error:
        raise ValueError(f"concatenate: shapes {[t.shape for t in tensors]} along axis {axis}: {error}") from None
    except MemoryError:  # NumPy's words would not name concatenate
        raise checks.result_too_large("concatenate", tensor_checks.shapes_joined(tensors, axis)) from None
    boundaries = np.cumsum([t.shape[axis] for t in tensors])[:-1]

    def backward(grad):
        return tuple(np.split(grad, boundaries, axis=axis))  # each input gets its own slab

    return Tensor.from_op(out, tuple(tensors), backward, "concatenate")


def stack(tensors, axis: int = 0) -> Tensor:
    """Join same-shape tensors along a new axis."""
    tensors = tensor_checks.tensors_to_join("stack", tensors)
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"stack: all tensors must have the same shape, got {[t.shape for t in tensors]}")
    axis = checks.axis("stack", axis, tensors[0].ndim, new=True)
    try:
        out = np.stack([t._data for t in tensors], axis=axis)
    except MemoryError:
        raise checks.result_too_large("stack", tensor_checks.shapes_joined(tensors, axis)) from None

    def backward(grad):
        return tuple(np.moveaxis(grad, axis, 0))  # one slice per input

    return Tensor.from_op(out, tuple(tensors), backward, "stack")


# ----------------------------------------------------------------------
# Python operators and methods. Tensor gets them here, beside the operations, so that
# tensor.py needs nothing from this module: ``x + y`` is add(x, y), ``x.sum(0)`` is sum(x, 0).

Tensor.__add__, Tensor.__sub__, Tensor.__mul__, Tensor.__truediv__ = add, sub, mul, div
Tensor.__matmul__, Tensor.__pow__, Tensor.__neg__, Tensor.__getitem__ = matmul, pow, neg, getitem
Tensor.__radd__ = lambda self, other: add(other, self)
Tensor.__rsub__ = lambda self, other: sub(other, self)
Tensor.__rmul__ = lambda self, other: mul(other, self)
Tensor.__rtruediv__ = lambda self, other: div(other, self)
Tensor.__rmatmul__ = lambda self, other: matmul(other, self)
Tensor.__rpow__ = lambda self, base: pow(base, self)  # raises: pow takes only constant exponents
Tensor.sum, Tensor.mean, Tensor.max = sum, mean, max
Tensor.exp, Tensor.log, Tensor.relu, Tensor.sigmoid, Tensor.__abs__ = exp, log, relu, sigmoid, abs
Tensor.reshape, Tensor.permute, Tensor.transpose, Tensor.masked_fill = reshape, permute, transpose, masked_fill
Tensor.T = property(lambda self: permute(self, *reversed(range(self.ndim))), doc="all axes reversed")
