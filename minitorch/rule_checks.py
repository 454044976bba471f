"""The inputs of the engine's other exercise functions, checked outside their bodies (`checks.inputs_checked_by`), so
that a student edition keeps the checks: the backward rules of `minitorch.ops` (exercises 1.2-1.4, 2.2, 2.3) and the
stable softmax of `minitorch.softmax` (2.4). These checks run in every backward pass, so the usual case costs type
tests and a few shape comparisons. (`minitorch.tensor_checks` holds the Tensor's own checks.)
"""

from __future__ import annotations

import numpy as np

from minitorch import checks
from minitorch.tensor import Tensor


def _arrays(owner: str, **arrays) -> None:
    """TypeError unless every one of `arrays` is an ndarray (or a NumPy number, as e^a of a 0-d array is)."""
    for name, value in arrays.items():
        if not isinstance(value, (np.ndarray, np.generic)):
            *others, last = arrays
            names = f"{', '.join(others)} and {last}" if others else last  # 'grad, a and b'
            hint = " (a tensor's values are t.data)" if isinstance(value, Tensor) else ""
            raise TypeError(f"{owner}: {names} must be ndarrays, got {type(value).__name__} for {name}{hint}")


def _broadcast_shape(owner: str, a: np.ndarray, b: np.ndarray) -> tuple:
    """The shape of a * b, or a ValueError naming `owner`, a and b."""
    try:
        return np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"{owner}: a {a.shape} and b {b.shape} cannot be broadcast together, so they are not the "
                         f"inputs of one operation") from None


def mul_backward_inputs(grad, a, b) -> tuple:
    """`mul_backward`'s inputs: arrays, `grad` of the shape of a * b."""
    if not (type(grad) is np.ndarray and type(a) is np.ndarray and type(b) is np.ndarray):
        _arrays("mul_backward", grad=grad, a=a, b=b)
    shape = grad.shape  # the usual cases: inputs of one shape, or one of them a single number
    if not (shape == a.shape == b.shape or (shape == a.shape and not b.ndim) or (shape == b.shape and not a.ndim)):
        expected = _broadcast_shape("mul_backward", a, b)
        if grad.shape != expected:
            raise ValueError(f"mul_backward: grad has shape {grad.shape}, expected {expected} (the shape of a * b, "
                             f"a {a.shape} and b {b.shape} broadcast)")
    return grad, a, b


def _one_shape(owner: str, grad, name: str, other, what: str) -> tuple:
    """`grad` and `other` (named `name`), arrays of one shape: an elementwise rule's inputs."""
    if not (type(grad) is np.ndarray and type(other) is np.ndarray):
        _arrays(owner, **{"grad": grad, name: other})
    if grad.shape != other.shape:
        raise ValueError(f"{owner}: grad {grad.shape} and {name} {other.shape} must have one shape ({what})")
    return grad, other


def exp_backward_inputs(grad, out) -> tuple:
    """`exp_backward`'s inputs: arrays of one shape."""
    return _one_shape("exp_backward", grad, "out", out, "grad is the gradient of out = e^a, elementwise")


def log_backward_inputs(grad, a) -> tuple:
    """`log_backward`'s inputs: arrays of one shape."""
    return _one_shape("log_backward", grad, "a", a, "grad is the gradient of log a, elementwise")


def _matmul_shape(a: np.ndarray, b: np.ndarray) -> tuple:
    """The shape of a @ b (NumPy's rules: a 1-D operand is a vector), or a ValueError naming a and b."""
    if not a.ndim or not b.ndim:
        raise ValueError(f"matmul_backward: a {a.shape} and b {b.shape} must have at least one axis each")
    inner = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if a.shape[-1] != inner:
        raise ValueError(f"matmul_backward: a {a.shape} and b {b.shape} do not fit: a's last axis ({a.shape[-1]}) "
                         f"must equal b's {'second-to-last' if b.ndim > 1 else 'only'} axis ({inner})")
    batch_a, batch_b = a.shape[:-2], b.shape[:-2]
    try:  # (a stack times one matrix, or stacks of one shape: no broadcast to work out)
        batch = batch_a if batch_a == batch_b or not batch_b else batch_b if not batch_a else \
            np.broadcast_shapes(batch_a, batch_b)
    except ValueError:
        raise ValueError(f"matmul_backward: the batch axes of a {a.shape} and b {b.shape} cannot be broadcast "
                         f"together") from None
    return batch + a.shape[-2:-1] + (b.shape[-1:] if b.ndim > 1 else ())  # (..., n, p) @ (..., p, m) -> (..., n, m)


def matmul_backward_inputs(grad, a, b) -> tuple:
    """`matmul_backward`'s inputs: arrays, `grad` of the shape of a @ b."""
    if not (type(grad) is np.ndarray and type(a) is np.ndarray and type(b) is np.ndarray):
        _arrays("matmul_backward", grad=grad, a=a, b=b)
    a_shape, b_shape = a.shape, b.shape  # the usual case: matrices, or stacks of them of one shape
    if len(a_shape) == len(b_shape) > 1 and a_shape[-1] == b_shape[-2] and a_shape[:-2] == b_shape[:-2] and \
            grad.shape == a_shape[:-1] + b_shape[-1:]:
        return grad, a, b
    expected = _matmul_shape(a, b)
    if grad.shape != expected:
        raise ValueError(f"matmul_backward: grad has shape {grad.shape}, expected {expected} (the shape of a @ b, "
                         f"for a {a.shape} and b {b.shape})")
    return grad, a, b


def _summed_axes(axes, shape: tuple) -> tuple:
    """`axes` (a tuple of axis indices of `shape`, negatives allowed, or one index) as a sorted tuple."""
    axes = axes if isinstance(axes, (tuple, list)) else (axes,)
    normalised = []
    for axis in axes:
        if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"sum_backward: axes must be a tuple of axis indices, got {axes!r}")
        if not -len(shape) <= axis < max(len(shape), 1):
            raise ValueError(f"sum_backward: axis {axis} is out of range for shape {shape}")
        normalised.append(int(axis) % max(len(shape), 1))
    if len(set(normalised)) != len(normalised):
        raise ValueError(f"sum_backward: axes {tuple(axes)} name the same axis twice")
    return tuple(sorted(normalised)) if shape else ()


def sum_backward_inputs(grad, shape, axes, keepdims) -> tuple:
    """`sum_backward`'s inputs: an array `grad` of the shape of a sum over `axes` of a tensor of `shape`."""
    if type(grad) is not np.ndarray:
        _arrays("sum_backward", grad=grad)
    if type(shape) is not tuple or not all([type(size) is int for size in shape]):
        shape = checks.sizes("sum_backward", "shape", shape)
    if type(axes) is not tuple or not all([type(axis) is int and 0 <= axis < len(shape) for axis in axes]):
        axes = _summed_axes(axes, shape)
    if keepdims is not True and keepdims is not False:
        keepdims = checks.flag("sum_backward", "keepdims", keepdims)
    if keepdims:
        expected = tuple([1 if axis in axes else size for axis, size in enumerate(shape)])
    else:
        expected = tuple([size for axis, size in enumerate(shape) if axis not in axes])
    if grad.shape != expected:
        raise ValueError(f"sum_backward: grad has shape {grad.shape}, expected {expected} (shape {shape} summed over "
                         f"axes {axes}{', kept as size 1' if keepdims else ''})")
    return grad, shape, axes, keepdims


def stable_softmax_inputs(scores, axis) -> tuple:
    """`stable_softmax`'s inputs: a Tensor with at least one element and one of its axes."""
    if not isinstance(scores, Tensor):
        raise TypeError(f"stable_softmax: scores must be a Tensor, got {type(scores).__name__} (minitorch.softmax "
                        f"takes arrays too)")
    if not scores._data.size or not scores._data.ndim:
        raise ValueError(f"stable_softmax: scores must have at least one axis and one element, got shape "
                         f"{scores.shape} (minitorch.softmax takes these too)")
    if type(axis) is not int or not -scores._data.ndim <= axis < scores._data.ndim:
        axis = checks.axis("stable_softmax", axis, scores._data.ndim)
    return scores, axis
