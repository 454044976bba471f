"""The Tensor and reverse-mode automatic differentiation (chapters 01 and 02).

A `Tensor` wraps a NumPy array. Every operation on tensors that need gradients
records, in the result, its inputs (`parents`) and a small function that turns
the gradient of the result into gradients of the inputs (`backward_fn`). The
operations themselves live in `minitorch.ops` and `minitorch.softmax`; this
module holds what they share:

- `Tensor`, with the Python operators wired to those operations;
- `topological_order`, the order in which `Tensor.backward` visits the graph;
- `unbroadcast`, the single place where broadcasting is undone in backward;
- `no_grad`, a context in which no graph is recorded.

Notation (chapter 01): for a scalar loss ``ℓ`` and a tensor ``x``, ``x.grad``
holds ``∂ℓ/∂x``, an array of the same shape as ``x``.
"""

from __future__ import annotations

import contextlib
import numbers
import sys

import numpy as np

DEFAULT_DTYPE = np.float64
FLOAT_DTYPES = (np.float32, np.float64)

_grad_enabled = True


def is_grad_enabled() -> bool:
    """True unless we are inside a `no_grad()` block."""
    return _grad_enabled


@contextlib.contextmanager
def no_grad():
    """A context (also usable as a decorator) in which no graph is recorded.

    Results computed inside have ``requires_grad=False``: use it for
    evaluation, where gradients are not needed and the graph would only cost
    memory.
    """
    global _grad_enabled
    previous = _grad_enabled
    _grad_enabled = False
    try:
        yield
    finally:
        _grad_enabled = previous


def _as_float_array(data, dtype) -> np.ndarray:
    """Convert `data` to a floating-point ndarray (float64 unless told), or a TypeError naming what was passed."""
    if isinstance(data, Tensor):
        data = data.data
    if isinstance(data, (list, tuple)) and any(isinstance(item, Tensor) for item in data):
        raise TypeError("cannot make a Tensor from a list of Tensors: join them with minitorch.stack(tensors) "
                        "(which keeps their gradients), or pass their values (t.data)")
    if data is None or isinstance(data, (str, bytes, dict, set)):
        raise TypeError(f"cannot make a Tensor from {type(data).__name__}: expected a number, a (nested) list of "
                        f"numbers or an ndarray")
    try:
        array = np.asarray(data)
    except ValueError as error:  # e.g. nested lists of unequal lengths
        raise ValueError(f"cannot make a Tensor from this {type(data).__name__}: {error}") from None
    if array.dtype == object:  # e.g. an integer too large for 64 bits, which a float can still hold
        try:
            array = np.asarray(data, dtype=np.float64)
        except (TypeError, ValueError, OverflowError) as error:
            kinds = sorted({type(item).__name__ for item in np.asarray(data, dtype=object).ravel()})
            raise TypeError(f"cannot make a Tensor from a {type(data).__name__} holding {', '.join(kinds)}: "
                            f"{error}") from None
    if dtype is None:
        dtype = array.dtype if array.dtype in FLOAT_DTYPES else DEFAULT_DTYPE
    dtype = np.dtype(dtype)
    if dtype not in FLOAT_DTYPES:
        raise TypeError(f"Tensor dtype must be float32 or float64, got {dtype}")
    if array.dtype.kind not in "biuf":
        raise TypeError(f"cannot make a Tensor from data of dtype {array.dtype} (a Tensor holds real numbers)")
    return array.astype(dtype, copy=False)


class Tensor:
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

    Between a recorded operation and `backward`, the arrays the operation
    used are read-only (its backward still needs them): ``x.data[0] = 5``
    then fails with NumPy's "assignment destination is read-only". Edit after
    `backward`, or give the tensor a copy to edit (``x.data = x.data.copy()``)
    and run the forward pass again; a `backward` through the old graph then
    raises, naming the operation whose input changed. So does a second
    `backward` through a graph after an optimizer step changed its
    parameters; with the parameters unchanged, it gives the same gradients.
    """

    __array_priority__ = 1000  # so that `ndarray + Tensor` calls Tensor.__radd__

    def __init__(self, data, requires_grad: bool = False, dtype=None):
        self.data = np.array(_as_float_array(data, dtype))  # a copy: updating the tensor never changes `data`
        if not isinstance(requires_grad, (bool, np.bool_)):  # bool('False') would be True
            raise TypeError(f"requires_grad must be True or False, got {requires_grad!r} "
                            f"({type(requires_grad).__name__})")
        self.requires_grad = bool(requires_grad)
        self.grad: np.ndarray | None = None
        self.parents: tuple[Tensor, ...] = ()
        self.backward_fn = None  # grad of output -> tuple of grads of parents
        self.op = "leaf"
        self._retains_grad = False

    # ------------------------------------------------------------------
    # building the graph
    @staticmethod
    def from_op(data: np.ndarray, parents: tuple, backward_fn, op: str) -> "Tensor":
        """The result of operation `op` on `parents`.

        The graph edge (parents and backward_fn) is recorded only when a
        parent requires a gradient and we are not inside `no_grad()`.
        """
        out = Tensor.__new__(Tensor)
        out.data = np.asarray(data)  # NumPy reductions and integer indexing return scalars, not arrays
        out.grad = None
        out.op = op
        out._retains_grad = False
        out.requires_grad = _grad_enabled and any([p.requires_grad for p in parents])
        if out.requires_grad:
            out.parents = parents
            out.backward_fn = backward_fn
            # backward_fn reads these arrays later: they may not change until backward has run
            out.inputs_used = tuple([parent.data for parent in parents])
            for array in out.inputs_used:
                array.flags.writeable = False
            out.data.flags.writeable = False
        else:
            out.parents = ()
            out.backward_fn = None
        return out

    @property
    def is_leaf(self) -> bool:
        """A tensor not produced by a recorded operation (e.g. a parameter)."""
        return self.backward_fn is None

    # ------------------------------------------------------------------
    # reverse mode
    def backward(self, grad=None) -> None:
        """Compute ``∂self/∂x`` for every leaf ``x`` with ``requires_grad``.

        `grad` is the gradient flowing into ``self`` (``∂ℓ/∂self``); it may be
        omitted only when ``self`` holds a single number, where it is 1.
        Gradients are *added* to each leaf's ``.grad``.
        """
        if not self.requires_grad:
            raise RuntimeError(
                "backward() on a tensor that does not require grad: it was built "
                "inside no_grad(), or from inputs none of which has "
                "requires_grad=True. Create the leaves with requires_grad=True "
                "and compute outside no_grad()."
            )
        if grad is None:
            if self.data.size != 1:
                raise RuntimeError(
                    f"backward() without a gradient needs a single-number tensor, "
                    f"but this one has shape {self.shape}. Reduce it first "
                    f"(e.g. loss = out.sum() or out.mean()), or pass "
                    f"grad=<array of shape {self.shape}>."
                )
            grad = np.ones_like(self.data)
        grad = _as_float_array(grad, self.data.dtype)
        if grad.shape != self.shape:
            raise ValueError(
                f"backward(grad): grad has shape {grad.shape} but the tensor has shape {self.shape}"
            )

        order = topological_order(self)
        for node in order:
            _check_inputs_unchanged(node)  # before any .grad changes
        grads = {id(self): grad}  # ∂ℓ/∂node for nodes reached so far
        for node in reversed(order):
            node_grad = grads.pop(id(node), None)
            if node_grad is None:
                continue
            if node.is_leaf or node._retains_grad:
                node.grad = node_grad.copy() if node.grad is None else node.grad + node_grad
            if node.is_leaf:
                continue
            parent_grads = node.backward_fn(node_grad)
            if not isinstance(parent_grads, tuple) or len(parent_grads) != len(node.parents):
                returned = (f"a tuple of {len(parent_grads)}" if isinstance(parent_grads, tuple)
                            else f"a {type(parent_grads).__name__}")
                raise ValueError(
                    f"backward of '{node.op}' must return a tuple of {len(node.parents)} "
                    f"gradient(s), one per input; it returned {returned}"
                )
            for parent, parent_grad in zip(node.parents, parent_grads):
                if parent_grad is None or not parent.requires_grad:
                    continue
                parent_grad = np.asarray(parent_grad)
                if parent_grad.shape != parent.data.shape:
                    parent_grad = unbroadcast(parent_grad, parent.data.shape, node.op)
                if parent_grad.dtype != parent.data.dtype:
                    parent_grad = parent_grad.astype(parent.data.dtype)
                previous = grads.get(id(parent))
                grads[id(parent)] = parent_grad if previous is None else previous + parent_grad
        _release(order)
        _writable(self.data)  # a root's own result was frozen for its backward, if it has one

    def retain_grad(self) -> "Tensor":
        """Also store ``.grad`` on this intermediate (non-leaf) tensor."""
        self._retains_grad = True
        return self

    def zero_grad(self) -> None:
        """Forget the accumulated gradient."""
        self.grad = None

    def detach(self) -> "Tensor":
        """The same values, cut from the graph (shares memory)."""
        return Tensor.from_op(self.data, (), None, "detach")

    def numpy(self) -> np.ndarray:
        """The underlying ndarray (shares memory; read-only while a recorded operation still needs it)."""
        return self.data

    def item(self) -> float:
        """The single number held by a one-element tensor."""
        return self.data.item()

    # ------------------------------------------------------------------
    # array attributes
    @property
    def shape(self) -> tuple:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def dtype(self):
        return self.data.dtype

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor: it holds a single number (shape ()); use .item() for the "
                            "number, .size for the count of elements")
        return len(self.data)

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        body = np.array2string(self.data, precision=4, separator=", ", prefix="Tensor(")
        return f"Tensor({body}{grad})"

    def astype(self, dtype) -> "Tensor":
        """A copy converted to `dtype` (not differentiable)."""
        return Tensor(self.data, dtype=dtype)

    # The arithmetic operators (+, *, @, ...) and methods such as .sum() are attached by
    # minitorch/ops.py, where the operations live; softmax.py attaches .softmax().

    # Comparisons give boolean masks (`Mask`, an ndarray), not differentiable.
    def __lt__(self, other):
        return _compare(np.less, self, other)

    def __le__(self, other):
        return _compare(np.less_equal, self, other)

    def __gt__(self, other):
        return _compare(np.greater, self, other)

    def __ge__(self, other):
        return _compare(np.greater_equal, self, other)

    def __eq__(self, other):
        return _compare(np.equal, self, other)

    def __ne__(self, other):
        return _compare(np.not_equal, self, other)

    __hash__ = object.__hash__  # tensors are graph nodes, hashed by identity

    def __bool__(self):
        raise TypeError(
            "the truth value of a Tensor is ambiguous; compare .item() or use "
            "(t > 0).all() on the boolean mask"
        )


# ----------------------------------------------------------------------
# values a backward needs may not change before it runs
#
# A backward reads its operation's inputs (mul's ∂(ab)/∂a = b) or result (exp's) when it runs, not
# when the operation ran. Changing them in between would give a wrong gradient without a word, so a
# recorded operation makes the arrays it read, and its result, read-only (NumPy then refuses an
# in-place edit such as ``x.data[0] = 5``: "assignment destination is read-only"), and backward checks
# that no input was given a new array (``x.data = ...``). Backward makes them writable again, so an
# optimizer (or gradcheck) can update the parameters in place after it. Each operation then keeps a
# copy of the parameters it read (the tensors created with requires_grad=True): a second backward
# through the same graph gives the same gradients if they are unchanged, and raises if they changed
# (an optimizer step in between; PyTorch raises too, "modified by an inplace operation").


def _check_inputs_unchanged(node: "Tensor") -> None:
    """Raise if an input of `node` no longer holds the values the forward pass read."""
    for position, (parent, used) in enumerate(zip(node.parents, node.inputs_used if node.parents else ())):
        if parent.data is not used and not np.array_equal(parent.data, used, equal_nan=True):
            raise RuntimeError(
                f"backward: input {position} of '{node.op}' (shape {parent.shape}) was given new values "
                f"after '{node.op}' used it (its .data was replaced, or it was changed in place after an "
                f"earlier backward(), as an optimizer step does), so its gradient would come from the wrong "
                f"values. Run the forward pass again from the changed tensor (to keep the old values, copy "
                f"them first: old = x.data.copy())."
            )


def _release(order: list) -> None:
    """After backward: the arrays the graph read may be written again (parents first, so that a
    view's base is writable before the view). Each operation keeps a copy of the parameters it read: the
    tensors created with requires_grad=True (op "leaf"), which an optimizer step changes in place."""
    for node in order:
        if node.parents:
            for array in node.inputs_used:
                _writable(array)
            node.inputs_used = tuple([parent.data.copy() if parent.op == "leaf" and parent.requires_grad else used
                                      for parent, used in zip(node.parents, node.inputs_used)])


def _writable(array: np.ndarray) -> None:
    try:
        array.flags.writeable = True
    except ValueError:  # a view of an array that stays read-only (e.g. of a NumPy constant)
        pass


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


def _raw(x):
    return x.data if isinstance(x, Tensor) else x


class Mask(np.ndarray):
    """What a comparison of tensors returns (``x > 0``, ``x == y``): a boolean ndarray, to index with or to
    pass to `where`. Its truth value needs a single element: ``if x == y`` or ``x in [y, z]`` (which compares
    with ==) on tensors of several elements asks about every element at once, and says so."""

    def __bool__(self):
        if self.size != 1:
            raise TypeError(
                f"the truth value of a comparison of tensors with {self.size} elements is ambiguous; use "
                f"(x == y).all() or .any(). To find a tensor in a list, compare identities: "
                f"any(t is x for t in tensors) (`x in [...]` compares the values with ==)")
        return bool(self.item())

    def __array_wrap__(self, array, context=None, return_scalar=False):
        return array[()] if return_scalar else np.asarray(array)  # what NumPy computes from a mask is an ndarray

    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))


def _compare(comparison, tensor: Tensor, other):
    if not isinstance(other, (Tensor, numbers.Number, np.ndarray, np.generic, list, tuple)):
        return NotImplemented  # Python then says "'<' not supported between instances of 'Tensor' and 'str'"
    return np.asarray(comparison(tensor.data, _raw(other))).view(Mask)


def as_tensor(x, like: Tensor | None = None) -> Tensor:
    """`x` itself if it is a Tensor, else a constant Tensor.

    Python numbers and ndarrays take the dtype of `like`, so that
    ``float32_tensor * 2.0`` stays float32.
    """
    if isinstance(x, Tensor):
        return x
    if not isinstance(x, (numbers.Number, np.ndarray, np.generic, list, tuple)):
        raise TypeError(f"cannot combine a Tensor with an object of type {type(x).__name__}")
    return Tensor(x, dtype=None if like is None else like.dtype)


def tensor(data, requires_grad: bool = False, dtype=None) -> Tensor:
    """Shorthand for ``Tensor(data, requires_grad, dtype)``."""
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def topological_order(root: Tensor) -> list[Tensor]:
    """Every tensor that `root` depends on (requiring grad), parents first.

    Iterative depth-first search with an explicit stack, so a graph of any
    depth works (a recursive version hits Python's recursion limit near 1,000
    nodes). A node is appended only after all of its parents, so reading the
    list backwards visits every node before any of its parents: the order
    reverse mode needs. (Exercise 1.2.)
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
    if grad.shape == tuple(shape):
        return grad  # nothing was broadcast (so chapter 01 runs before exercise 2.1 is written)
    incoming_shape = grad.shape
    grad = np.asarray(sum_to_shape(grad, tuple(shape)))
    if grad.shape != tuple(shape):
        raise ValueError(
            f"backward of '{op}' gave a gradient of shape {incoming_shape} for an input of shape "
            f"{tuple(shape)}, and no broadcast explains it: a gradient must have its tensor's shape"
        )
    return grad
