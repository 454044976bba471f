"""The Tensor and reverse-mode automatic differentiation (chapters 01 and 02).

A `Tensor` wraps a NumPy array. Every operation on tensors that need gradients
records, in the result, its inputs (`parents`) and a small function that turns
the gradient of the result into gradients of the inputs (`backward_fn`). The
operations themselves live in `minitorch.ops` and `minitorch.softmax`; this
module holds what they share:

- `Tensor`, whose `backward` runs the recorded functions in reverse order;
- `topological_order`, the order in which `Tensor.backward` visits the graph;
- `unbroadcast`, the single place where broadcasting is undone in backward;
- `no_grad`, a context in which no graph is recorded.

Notation (chapter 01): for a scalar loss ``ℓ`` and a tensor ``x``, ``x.grad``
holds ``∂ℓ/∂x``, an array of the same shape as ``x``.

Around it: `minitorch.tensor_checks` (every check of what a tensor is given)
and `minitorch.tensor_protocols` (``len``, ``float``, ``f"{t:.4f}"``,
``np.asarray``, ``copy``, comparisons, ``x += y``, ...).
"""

from __future__ import annotations

import contextlib
import inspect
import numbers
import sys
import threading
import warnings

import numpy as np

from minitorch import checks
from minitorch.tensor_checks import (DEFAULT_DTYPE, FLOAT_DTYPES, as_float_array, broadcasts_to,  # noqa: F401
                                     check_backward_result, check_inputs_unchanged, check_parents_are_tensors,
                                     check_result_unchanged, checked_grad, checked_incoming_grad, checked_new_values,
                                     checked_op_values, checked_parents, checked_result_values, checked_shape,
                                     gradient_as_array, gradient_in_dtype, make_writable, mark_released,
                                     named_float_array, no_backward_rule, read_only_view, root_of_the_graph,
                                     shared_versions, summable_to_shape, unexplained, unsupported_backward_options,
                                     wrote_read_only)
from minitorch.tensor_protocols import Mask, Size, TensorProtocols  # noqa: F401


_FLOAT64, _FLOAT32 = np.dtype(np.float64), np.dtype(np.float32)


class Tensor(TensorProtocols):
    """An n-dimensional array that can record how it was computed.

    Parameters
    ----------
    data : array-like
        The values, copied (as ``torch.tensor`` does). Integers and booleans
        are converted to float64; float32 data stays float32 (float32 is
        supported end to end).
    requires_grad : bool
        If True, `backward` will fill in ``self.grad``.
    dtype : numpy dtype, optional
        float32 or float64.

    Gradients accumulate: every call to `backward` *adds* to ``.grad`` of the
    leaves it reaches, as in PyTorch. Call `zero_grad` (or the optimizer's
    ``zero_grad``) between steps.


    Changing values a graph recorded (version counters, as in PyTorch):
    every tensor counts the changes to its values (``_version``; one count
    shared by the tensors that view the same values: a reshape, a slice, a
    detached copy); an operation notes the count of each input it read and of
    its result, and `backward` raises, naming the operation, if one changed
    since (`minitorch.tensor_checks`).
    Between a recorded operation and its `backward`, the arrays it read are
    read-only: ``x.data[0] = 5`` then fails with NumPy's "assignment
    destination is read-only"; edit after `backward`, or give the tensor a
    copy to edit (``x.data = x.data.copy()``) and run the forward pass again.
    One hole NumPy leaves: the ndarray of a view taken before the graph
    (``v = x[1:]``, then ``v.data``) is NumPy's own and stays writable; change
    values through the tensor (``v[0] = 5``), which counts.
    With nothing changed, a second `backward` gives the same gradients.
    The Python and NumPy protocols are `minitorch.tensor_protocols`'.
    """

    def __init__(self, data, requires_grad: bool = False, dtype=None):
        self._data = np.array(as_float_array(data, dtype))  # a copy: updating the tensor never changes `data`
        self._versions = [0]  # how many times the values changed, shared with views (see the class docstring)
        self._released = False  # a backward through every graph that froze the array has run
        self.parents: tuple[Tensor, ...] = ()
        self.backward_fn = None  # grad of output -> tuple of grads of parents
        self.requires_grad = requires_grad
        self._grad: np.ndarray | None = None  # `grad`, set by backward without the setter's checks
        self.op = "leaf"
        self._retains_grad = False

    # ------------------------------------------------------------------
    # building the graph
    @staticmethod
    def from_op(data: np.ndarray, parents: tuple, backward_fn, op: str) -> "Tensor":
        """The result of operation `op` on `parents`.

        The graph edge (parents and backward_fn) is recorded only when a
        parent requires a gradient and we are not inside `no_grad()`. Refused, naming the mistake: parents not a
        tuple (or list) of Tensors, data a Tensor, a backward_fn that is no function where the edge is recorded.
        """
        out = Tensor.__new__(Tensor)
        out._data = data if type(data) is np.ndarray else checked_op_values(op, data)  # (a reduction gives a number)
        if out._data.dtype is not _FLOAT64 and out._data.dtype is not _FLOAT32:  # (the usual case: two identities)
            out._data = checked_result_values(op, out._data)
        if type(parents) is not tuple:
            parents = checked_parents(op, parents)  # a list, as a tuple; one Tensor (x) for (x,) named
        owner = out._data.base  # (None for most results: a view's is the array it views)
        out._versions = [0] if owner is None else shared_versions(owner, parents)
        out._released = False
        out._grad = None
        out.op = op
        out._retains_grad = False
        try:
            out._requires_grad = is_grad_enabled() and any([p._requires_grad for p in parents])
        except AttributeError:
            check_parents_are_tensors(op, parents)  # names the parent that is not a Tensor
            raise
        if out._requires_grad:
            if not callable(backward_fn):  # None would make the result a leaf, cut from its parents
                raise no_backward_rule(op, parents, backward_fn)
            out.parents = parents
            out.backward_fn = backward_fn
            # backward_fn reads these arrays later: they may not change until backward has run
            out.versions_used = tuple([parent._version for parent in parents])
            for parent in parents:
                parent._data.flags.writeable = False
                parent._released = False
                if parent._data is out._data:  # the parent's own array (an identity): one count of its changes
                    out._versions = parent._versions
            out.version_made = out._versions[0]  # a backward may read the result itself (exp's does)
            out._data.flags.writeable = False
        else:
            if type(backward_fn) is str:  # from_op(data, parents, "op", rule): the arguments swapped
                raise no_backward_rule(op, parents, backward_fn)
            out.parents = ()
            out.backward_fn = None
        return out

    # ------------------------------------------------------------------
    # reverse mode
    def backward(self, grad=None, **options) -> None:
        """Compute ``∂self/∂x`` for every leaf ``x`` with ``requires_grad``.

        `grad` is the gradient flowing into ``self`` (``∂ℓ/∂self``); it may be
        omitted only when ``self`` holds a single number, where it is 1.
        Gradients are *added* to each leaf's ``.grad``. The graph is kept (PyTorch's ``retain_graph=True`` is
        not needed, and refused as any other option).
        """
        if options:  # PyTorch's retain_graph=True, create_graph=True
            raise unsupported_backward_options(options)
        grad = checked_incoming_grad(self, grad)
        order = topological_order(self)
        for node in order:
            check_inputs_unchanged(node)  # before any .grad changes
        for node in order:
            if node is not self:  # (reading loss.data after one backward must not stop a second)
                check_result_unchanged(node)
        mark_released(order, False)  # the backward functions read .data: that is no change
        grads = {id(self): grad}  # ∂ℓ/∂node for nodes reached so far
        for node in reversed(order):
            node_grad = grads.pop(id(node), None)
            if node_grad is None:
                continue
            if node.is_leaf or node._retains_grad:
                node._grad = node_grad.copy() if node._grad is None else np.asarray(node._grad + node_grad)
            if node.is_leaf:
                continue
            try:
                parent_grads = node.backward_fn(read_only_view(node_grad))  # (other nodes may hold the same array)
            except ValueError as error:  # NumPy's "output array is read-only", in our words
                if "read-only" not in str(error):
                    raise
                raise wrote_read_only(node.op, error) from error
            check_backward_result(node, parent_grads)
            for parent, parent_grad in zip(node.parents, parent_grads):
                if parent_grad is None or not parent.requires_grad:
                    continue
                if type(parent_grad) is not np.ndarray:  # a number (a reduction gives one); a Tensor is named
                    parent_grad = gradient_as_array(node, parent_grads, parent_grad)
                if parent_grad.shape != parent._data.shape:
                    parent_grad = unbroadcast(parent_grad, parent._data.shape, node.op)
                if parent_grad.dtype != parent._data.dtype:
                    parent_grad = gradient_in_dtype(node.op, parent_grad, parent._data.dtype)
                previous = grads.get(id(parent))
                # (np.asarray: the sum of two 0-d arrays is a NumPy number, which read_only_view cannot flag)
                grads[id(parent)] = parent_grad if previous is None else np.asarray(previous + parent_grad)
        mark_released(order, True)

    def retain_grad(self) -> "Tensor":
        """Also store ``.grad`` on this intermediate (non-leaf) tensor."""
        self._retains_grad = True
        return self

    def zero_grad(self) -> None:
        """Forget the accumulated gradient."""
        self._grad = None

    def detach(self) -> "Tensor":
        """The same values, cut from the graph (shares memory: a change in place counts as a change of this
        tensor too, so a graph that read it refuses a stale backward)."""
        out = Tensor.from_op(self._data, (), None, "detach")
        out._versions = self._versions  # the same values: one count of their changes
        return out

    # ------------------------------------------------------------------
    # attributes
    @property
    def requires_grad(self) -> bool:
        """Whether operations on this tensor are recorded, so that `backward` reaches it."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value) -> None:
        if not isinstance(value, (bool, np.bool_)):  # bool('False') would be True
            raise TypeError(f"requires_grad must be True or False, got {value!r} ({type(value).__name__})")
        if not value and self.backward_fn is not None:  # backward would stop here without a word
            raise RuntimeError(f"requires_grad = False on the result of '{self.op}': only a leaf's flag may change "
                               f"(as in PyTorch); for its values without a gradient write y.detach()")
        self._requires_grad = bool(value)

    @property
    def grad(self) -> np.ndarray | None:
        """``∂ℓ/∂x``, summed over the `backward` calls since the last `zero_grad` (None before the first).
        Stored on leaves only, unless `retain_grad` was called: reading it on another tensor warns, as PyTorch's
        does, since the None it finds says nothing of the gradient."""
        if self._grad is None and self.backward_fn is not None and not self._retains_grad:
            warnings.warn(f"the .grad of a non-leaf tensor (the result of '{self.op}') is None: backward stores "
                          f"gradients on leaves only (tensors made with requires_grad=True); to keep this one's, "
                          f"call .retain_grad() on it before backward", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        """Set by hand (``x.grad = None``, a gradient for an optimizer): None, or a float array of x's shape."""
        self._grad = checked_grad(self, value)

    @property
    def data(self) -> np.ndarray:
        """The values, an ndarray. After a `backward`, taking them counts as a change (they may be written to)."""
        if self._released:
            self._prepare_to_change()
        return self._data

    @data.setter
    def data(self, values) -> None:
        """Replace the values with a copy of `values` in this tensor's dtype (as the constructor copies: the caller's
        array stays the caller's); a tensor that requires grad keeps its shape."""
        if values is self._data:  # `x.data -= 1` sets back the array it changed in place
            return
        self._data = checked_new_values(self, values)
        self._versions = [self._version + 1]  # values of its own now: views of the old ones no longer count here
        self._released = False

    def _prepare_to_change(self) -> None:
        """About to be changed in place (an optimizer step, ``x.data[0] = 5``): writable again, one version on
        (for every tensor that views these values: they share the count)."""
        self._versions[0] += 1
        self._released = False
        make_writable(self._data)

    @property
    def _version(self) -> int:
        """How many times the values changed (see the class docstring)."""
        return self._versions[0]

    @property
    def is_leaf(self) -> bool:
        """A tensor not produced by a recorded operation (e.g. a parameter)."""
        return self.backward_fn is None

    def numpy(self) -> np.ndarray:
        """The underlying ndarray (shares memory; read-only while a recorded operation still needs it)."""
        return self.data

    def item(self) -> float:
        """The single number held by a one-element tensor."""
        if self._data.size != 1:
            raise ValueError(f"item(): the tensor has shape {self.shape} ({self.size} elements) but item() needs "
                             f"exactly one: pick one first (t[0].item()) or reduce (t.sum().item())")
        return self._data.item()

    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        """The number of elements, an int; ``t.size(0)`` (PyTorch's method) is the length of axis 0 (`Size`)."""
        return Size(self._data.shape)

    @property
    def dtype(self):
        return self._data.dtype

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        body = np.array2string(self._data, precision=4, separator=", ", prefix="Tensor(")
        shape = f", shape={self._data.shape}" if self._data.size == 0 and self._data.shape != (0,) else ""  # NumPy's
        return f"Tensor({body}{shape}{grad})"

    def astype(self, dtype) -> "Tensor":
        """A copy converted to `dtype` (float32 or float64), differentiable as PyTorch's ``x.to(dtype)``.

        The values only change precision, so ``∂ℓ/∂x`` is ``∂ℓ/∂(x.astype(dtype))`` cast back to ``x``'s dtype.
        """
        out = np.array(as_float_array(self._data, dtype))  # a copy, even when the dtype is the same
        return Tensor.from_op(out, (self,), lambda grad: (grad.astype(self._data.dtype),), "astype")

    # The arithmetic operators (+, *, @, ...) and methods such as .sum() are attached by
    # minitorch/ops.py, where the operations live; softmax.py attaches .softmax().


@checks.inputs_checked_by(root_of_the_graph)
def topological_order(root: Tensor) -> list[Tensor]:
    """Every tensor that `root` depends on (requiring grad), parents first.

    Iterative depth-first search with an explicit stack, so a graph of any
    depth works (a recursive version hits Python's recursion limit near 1,000
    nodes). A node is appended only after all of its parents, so reading the
    list backwards visits every node before any of its parents: the order
    reverse mode needs. (Exercise 1.1.)
    """
    order: list[Tensor] = []
    visited: set[int] = set()
    stack = [(root, False)]  # (node, are its parents already in `order`?)
    while stack:
        node, parents_done = stack.pop()
        if parents_done:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        for parent in node.parents:
            if parent.requires_grad and id(parent) not in visited:
                stack.append((parent, False))
    return order


@checks.inputs_checked_by(summable_to_shape)
def sum_to_shape(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """Exercise 2.1: the gradient of broadcasting. `grad` was computed at a broadcast shape; return it
    summed back to `shape` (without changing `grad` in place).

    If ``x`` of shape `shape` was broadcast up to ``grad.shape`` in the forward pass, each element of
    ``x`` was used once per copy, so its gradient is the *sum* over the copies: sum away the leading
    axes that broadcasting added, then every axis where ``x`` had size 1 (keeping it, as size 1).
    """
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))  # (extra..., *shape') -> shape'
    size_one_axes = tuple(
        axis for axis, size in enumerate(shape) if size == 1 and grad.shape[axis] != 1
    ) if grad.ndim == len(shape) else ()
    if size_one_axes:
        grad = grad.sum(axis=size_one_axes, keepdims=True)
    return grad


def unbroadcast(grad: np.ndarray, shape: tuple, op: str = "?") -> np.ndarray:
    """Fold a gradient computed at a broadcast shape back to `shape` (with `sum_to_shape`).

    This is the only place where broadcasting is undone; a gradient that no
    broadcast could explain is an error of the operation `op`.
    """
    if isinstance(shape, tuple) and grad.shape == shape:
        return grad  # nothing was broadcast (so chapter 01 runs before exercise 2.1 is written)
    shape = checked_shape("unbroadcast", shape)
    incoming_shape = grad.shape
    if not broadcasts_to(shape, incoming_shape):  # (checked before sum_to_shape is asked to fold it)
        raise unexplained(op, incoming_shape, shape)
    grad = np.asarray(sum_to_shape(grad, shape))
    if grad.shape != shape:
        raise unexplained(op, incoming_shape, shape)
    return grad


def as_tensor(x, like: Tensor | None = None, op: str = "") -> Tensor:
    """`x` itself if it is a Tensor, else a constant Tensor.

    Python numbers and ndarrays take the dtype of `like` when it is a Tensor, so that
    ``float32_tensor * 2.0`` stays float32 (``mt.mul([1.0], [2.0])``, with no Tensor, takes Tensor's default).
    """
    if isinstance(x, Tensor):
        return x
    if not isinstance(x, (numbers.Number, np.ndarray, np.generic, list, tuple)):
        op = op or sys._getframe(1).f_code.co_name  # the operation that was given `x` (ops.exp, ...)
        raise TypeError(f"{op}: cannot combine a Tensor with an object of type {type(x).__name__} (give a Tensor, an "
                        f"array, a number or a list of numbers)")
    return Tensor(x, dtype=like.dtype if isinstance(like, Tensor) else None)


def tensor(data, requires_grad: bool = False, dtype=None) -> Tensor:
    """Shorthand for ``Tensor(data, requires_grad, dtype)``."""
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def _keep_one_tensor_class(new_class: type) -> type:
    """The class the name `Tensor` stands for. The chapters re-import this file when it is edited (autoreload,
    chapter 00); a second run of the class statement would make a second Tensor class, unknown to existing
    tensors, to the operators `minitorch.ops` attaches and to every isinstance check. So the first class is
    kept on the package (a re-import clears this module's names, not the package's), and a re-run updates it."""
    package = sys.modules[__name__.rpartition(".")[0]]
    first = package.__dict__.setdefault("_first_tensor_class", new_class)
    if first is not new_class:
        for name, value in vars(new_class).items():
            if name not in ("__dict__", "__weakref__"):
                setattr(first, name, value)
    return first


Tensor = _keep_one_tensor_class(Tensor)


# ----------------------------------------------------------------------
# recording switched off

_grad_mode = threading.local()  # per thread, as in PyTorch: one thread's no_grad() leaves the others recording


def is_grad_enabled() -> bool:
    """True unless we are inside a `no_grad()` block (of this thread)."""
    return getattr(_grad_mode, "enabled", True)


class _NoGradContext(contextlib.ContextDecorator):
    """One ``no_grad()`` block. Entering saves this thread's grad mode on a stack and exiting restores it, so one
    object can be entered again, or inside itself."""

    def __enter__(self):
        if not hasattr(_grad_mode, "saved"):
            _grad_mode.saved = []
        _grad_mode.saved.append(is_grad_enabled())
        _grad_mode.enabled = False

    def __exit__(self, *exception):
        if not getattr(_grad_mode, "saved", None):
            raise RuntimeError("no_grad: a block was left that was not entered (__exit__ without __enter__, or twice); "
                               "use `with no_grad():`, which enters and leaves once")
        _grad_mode.enabled = _grad_mode.saved.pop()
        return False

    def __call__(self, function):  # ``@no_grad()``: the checks of ``@no_grad``
        return super().__call__(_decoratable(function))


def _decoratable(function):
    """`function`, which ``@no_grad`` or ``@no_grad()`` may decorate: a plain function, not a class or a generator
    (or coroutine), whose code runs after the decorated call has returned and recording is back on."""
    if isinstance(function, (staticmethod, classmethod)):  # (a wrapper of one would take `self` too)
        raise TypeError(f"@no_grad sits below @{type(function).__name__} here: put @{type(function).__name__} on "
                        f"top, then @no_grad, then the function")
    if not callable(function):
        raise TypeError(f"no_grad takes no arguments (or decorates a function), got {function!r}")
    if isinstance(function, type) or inspect.isgeneratorfunction(function) or inspect.iscoroutinefunction(function) \
            or inspect.isasyncgenfunction(function):
        raise TypeError(f"@no_grad decorates plain functions, not {getattr(function, '__name__', function)!r} (a class "
                        f"or a generator, whose code runs after the decorated call returns); write `with no_grad():` "
                        f"inside it")
    return function


class _NoGrad:
    """`no_grad`: a context (``with no_grad():``) or a decorator (``@no_grad()`` or ``@no_grad``) in which no
    graph is recorded.

    Results computed inside have ``requires_grad=False``: use it for
    evaluation, where gradients are not needed and the graph would only cost
    memory. (One object, not a class: ``with no_grad:`` without the parentheses names the fix, and IPython's
    autoreload can reload this module.)
    """

    def __call__(self, function=None):
        if function is None:
            return _NoGradContext()
        return _NoGradContext()(function)

    def __enter__(self):
        raise TypeError("write `with minitorch.no_grad():`, with the parentheses")

    def __exit__(self, *exception):
        return False

    def __repr__(self) -> str:
        return "minitorch.no_grad"


no_grad = _NoGrad()
