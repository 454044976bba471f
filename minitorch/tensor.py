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
import copy
import inspect
import numbers
import reprlib
import sys
import weakref

import numpy as np

from minitorch import checks

DEFAULT_DTYPE = np.float64
FLOAT_DTYPES = (np.float32, np.float64)

_grad_enabled = True


def is_grad_enabled() -> bool:
    """True unless we are inside a `no_grad()` block."""
    return _grad_enabled


@contextlib.contextmanager
def _no_grad():
    global _grad_enabled
    previous = _grad_enabled
    _grad_enabled = False
    try:
        yield
    finally:
        _grad_enabled = previous


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
            return _no_grad()
        if not callable(function):
            raise TypeError(f"no_grad takes no arguments (or decorates a function), got {function!r}")
        if isinstance(function, type) or inspect.isgeneratorfunction(function):
            raise TypeError(f"@no_grad decorates plain functions, not {function.__name__!r} (a class or a generator, "
                            f"whose code runs after the decorated call returns); write `with no_grad():` inside it")
        return _no_grad()(function)

    def __enter__(self):
        raise TypeError("write `with minitorch.no_grad():`, with the parentheses")

    def __exit__(self, *exception):
        return False

    def __repr__(self) -> str:
        return "minitorch.no_grad"


no_grad = _NoGrad()


def _as_float_array(data, dtype) -> np.ndarray:
    """Convert `data` to a floating-point ndarray (float64 unless told), or a TypeError naming what was passed."""
    if isinstance(data, Tensor):
        data = data._data
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
        if any(item is None for item in array.ravel()):  # float(None) is not an error to NumPy: it gives nan
            raise TypeError(f"cannot make a Tensor from a {type(data).__name__} holding None: every element must "
                            f"be a number (write float('nan') for a missing value)")
        try:
            array = np.asarray(data, dtype=np.float64)
        except (TypeError, ValueError, OverflowError) as error:
            kinds = sorted({type(item).__name__ for item in np.asarray(data, dtype=object).ravel()})
            raise TypeError(f"cannot make a Tensor from a {type(data).__name__} holding {', '.join(kinds)}: "
                            f"{error}") from None
    if dtype is None:  # float32 and float64 stay as they are, in either byte order ('>f4' is float32 too)
        native = array.dtype.newbyteorder("=") if array.dtype.kind == "f" else None
        dtype = native if native in FLOAT_DTYPES else DEFAULT_DTYPE
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"Tensor dtype must be float32 or float64, got {dtype!r}") from None
    if dtype not in FLOAT_DTYPES:
        raise TypeError(f"Tensor dtype must be float32 or float64, got {dtype}")
    if array.dtype.kind not in "biuf":
        raise TypeError(f"cannot make a Tensor from data of dtype {array.dtype} (a Tensor holds real numbers)")
    checks.memory("tensor", "the values", array.shape, dtype.itemsize)  # before the copy: a view may be huge
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

    Changing values a graph recorded (version counters, as in PyTorch):
    every tensor counts the changes to its values (``_version``); an
    operation notes the count of each input it read, and `backward` raises,
    naming the operation, if an input changed since. A change is replacing
    ``x.data = ...``, an optimizer step, an in-place operator (``x += 1``,
    under `no_grad` for a parameter), or taking ``x.data`` / ``x.numpy()``
    after a `backward` (which may be written to: NumPy cannot tell a read from
    a write). Between a recorded operation and its `backward`, the arrays it
    read are read-only: ``x.data[0] = 5`` then fails with NumPy's "assignment
    destination is read-only"; edit after `backward`, or give the tensor a
    copy to edit (``x.data = x.data.copy()``) and run the forward pass again.
    With nothing changed, a second `backward` gives the same gradients.

    Protocols: ``len(t)`` and ``iter(t)`` go over the first axis (a 0-d
    tensor has neither); ``float(t)`` needs one element; ``np.asarray(t)`` is
    the values (a read-only view: NumPy's functions on a tensor compute
    without gradients, so a tensor that requires grad says so, and asks for
    ``t.detach()`` or ``t.numpy()``); ``pickle`` saves a leaf, and refuses
    the result of a recorded operation (detach it first); ``copy.copy`` and
    ``copy.deepcopy`` likewise copy a leaf, with values of its own.
    """

    __array_priority__ = 1000  # so that `ndarray + Tensor` calls Tensor.__radd__

    def __init__(self, data, requires_grad: bool = False, dtype=None):
        self._data = np.array(_as_float_array(data, dtype))  # a copy: updating the tensor never changes `data`
        self._version = 0  # how many times the values changed (see the class docstring)
        self._released = False  # a backward through every graph that froze the array has run
        if not isinstance(requires_grad, (bool, np.bool_)):  # bool('False') would be True
            raise TypeError(f"requires_grad must be True or False, got {requires_grad!r} "
                            f"({type(requires_grad).__name__})")
        self.requires_grad = bool(requires_grad)
        self._grad: np.ndarray | None = None  # `grad`, set by backward without the setter's checks
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
        out._data = np.asarray(data)  # NumPy reductions and integer indexing return scalars, not arrays
        out._version = 0
        out._released = False
        out._grad = None
        out.op = op
        out._retains_grad = False
        out._requires_grad = _grad_enabled and any([p._requires_grad for p in parents])
        if out._requires_grad:
            out.parents = parents
            out.backward_fn = backward_fn
            # backward_fn reads these arrays later: they may not change until backward has run
            out.versions_used = tuple([parent._version for parent in parents])
            for parent in parents:
                parent._data.flags.writeable = False
                parent._released = False
            out._data.flags.writeable = False
        else:
            out.parents = ()
            out.backward_fn = None
        return out

    @property
    def requires_grad(self) -> bool:
        """Whether operations on this tensor are recorded, so that `backward` reaches it."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value) -> None:
        if not isinstance(value, (bool, np.bool_)):  # bool('False') would be True
            raise TypeError(f"requires_grad must be True or False, got {value!r} ({type(value).__name__})")
        self._requires_grad = bool(value)

    @property
    def grad(self) -> np.ndarray | None:
        """``∂ℓ/∂x``, summed over the `backward` calls since the last `zero_grad` (None before the first)."""
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        """Set by hand (``x.grad = None``, a gradient for an optimizer): None, or a float array of x's shape. Any
        other value would be broadcast into the next backward's sum (E6-71) or fail in it unnamed (E6-73)."""
        if value is not None:
            if isinstance(value, Tensor):
                raise TypeError("x.grad = <Tensor>: a gradient is an ndarray; assign its values (t.data)")
            if isinstance(value, np.generic) and not self.shape:  # a 0-d tensor's gradient may be a NumPy scalar
                value = np.asarray(value)
            if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
                what = (f"an array of dtype {value.dtype}" if isinstance(value, np.ndarray)
                        else f"{type(value).__name__} {reprlib.repr(value)}")
                raise TypeError(f"x.grad = ...: a gradient is None or a float ndarray of the tensor's shape "
                                f"{self.shape}, got {what}")
            if value.shape != self.shape:
                raise ValueError(f"x.grad = ...: a gradient of shape {value.shape} for a tensor of shape "
                                 f"{self.shape}; it must have the tensor's shape")
        self._grad = value

    @property
    def data(self) -> np.ndarray:
        """The values, an ndarray. After a `backward`, taking them counts as a change (they may be written to)."""
        if self._released:
            self._prepare_to_change()
        return self._data

    @data.setter
    def data(self, values) -> None:
        """Replace the values: converted to this tensor's dtype; a tensor that requires grad keeps its shape."""
        if values is self._data:  # `x.data -= 1` sets back the array it changed in place
            return
        if isinstance(values, Tensor):
            raise TypeError("x.data = <Tensor>: assign its values (t.data), or use the tensor itself")
        array = _as_float_array(values, self._data.dtype)
        if self.requires_grad and array.shape != self._data.shape:
            raise ValueError(f"x.data = ...: new values of shape {array.shape} for a tensor of shape {self.shape} "
                             f"that requires grad (an optimizer holds state of its shape); make a new tensor")
        self._data = array
        self._version += 1
        self._released = False

    def _prepare_to_change(self) -> None:
        """About to be changed in place (an optimizer step, ``x.data[0] = 5``): writable again, one version on;
        a detached tensor shares its values with the tensor it came from, so that one counts the change too."""
        self._version += 1
        self._released = False
        _writable(self._data)
        source = self._detached_from() if getattr(self, "_detached_from", None) is not None else None
        if source is not None and source._data is self._data:
            source._prepare_to_change()

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
            if self._data.size != 1:
                raise RuntimeError(
                    f"backward() without a gradient needs a single-number tensor, "
                    f"but this one has shape {self.shape}. Reduce it first "
                    f"(e.g. loss = out.sum() or out.mean()), or pass "
                    f"grad=<array of shape {self.shape}>."
                )
            grad = np.ones_like(self._data)
        grad = _as_float_array(grad, self._data.dtype)
        if grad.shape != self.shape:
            raise ValueError(
                f"backward(grad): grad has shape {grad.shape} but the tensor has shape {self.shape}"
            )

        order = topological_order(self)
        for node in order:
            _check_inputs_unchanged(node)  # before any .grad changes
        _mark_released(order, False)  # the backward functions read .data: that is no change
        grads = {id(self): grad}  # ∂ℓ/∂node for nodes reached so far
        for node in reversed(order):
            node_grad = grads.pop(id(node), None)
            if node_grad is None:
                continue
            if node.is_leaf or node._retains_grad:
                node._grad = node_grad.copy() if node._grad is None else node._grad + node_grad
            if node.is_leaf:
                continue
            parent_grads = node.backward_fn(_read_only(node_grad))  # (other nodes may hold the same array)
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
                if parent_grad.shape != parent._data.shape:
                    parent_grad = unbroadcast(parent_grad, parent._data.shape, node.op)
                if parent_grad.dtype != parent._data.dtype:
                    parent_grad = parent_grad.astype(parent._data.dtype)
                previous = grads.get(id(parent))
                grads[id(parent)] = parent_grad if previous is None else previous + parent_grad
        _mark_released(order, True)

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
        out._detached_from = weakref.ref(self)  # (weak: a kept record must not keep a whole graph alive)
        return out

    def __getstate__(self) -> dict:
        """What pickle saves: the values, the gradient and the flags. A result of a recorded operation is
        refused: its graph holds the operations' backward functions, which pickle cannot save."""
        if self.backward_fn is not None:
            raise TypeError(f"cannot pickle the result of '{self.op}' with its graph (the backward functions "
                            f"are not picklable): pickle y.detach() for its values, or save y.numpy()")
        state = dict(vars(self))
        state.pop("_detached_from", None)  # a copy shares no values with the tensor it was detached from
        return state

    def __deepcopy__(self, memo: dict) -> "Tensor":
        """``copy.deepcopy(t)``: a leaf with its own values and its own version count, as in PyTorch. (NumPy's
        copy of an array copies its values too.) Values shared under a separate count would let a change through
        the copy reach a graph that read `t` without a word. The result of a recorded operation is refused, as in
        PyTorch: its copy could not be part of the graph."""
        if self.backward_fn is not None:
            raise TypeError(f"cannot copy the result of '{self.op}' with its graph (only leaves are copied, as in "
                            f"PyTorch): copy y.detach() for its values, or keep y itself")
        copied = type(self).__new__(type(self))
        memo[id(self)] = copied  # a parameter shared by two layers is copied once, and stays shared
        state = {name: value for name, value in vars(self).items() if name not in ("_data", "_detached_from")}
        copied.__dict__.update(copy.deepcopy(state, memo))
        copied._data = self._data.copy()  # never through `memo`: a tensor detached from this one owns its copy too
        copied._version, copied._released = 0, False
        return copied

    def __copy__(self) -> "Tensor":
        """``copy.copy(t)`` is ``copy.deepcopy(t)``: a tensor owns its values (see `__deepcopy__`); to share them
        on purpose, use t.detach(), which counts a change through it as a change of t."""
        return self.__deepcopy__({})

    def numpy(self) -> np.ndarray:
        """The underlying ndarray (shares memory; read-only while a recorded operation still needs it)."""
        return self.data

    def __array__(self, dtype=None, copy=None):
        """The values for NumPy (``np.asarray(t)``, ``np.sum(t)``), read-only: NumPy computes without gradients,
        so a tensor that requires grad is refused (use t.detach() or t.numpy(), or minitorch's own operation)."""
        if self.requires_grad:
            raise TypeError("a tensor that requires grad cannot become a NumPy array: NumPy would compute without "
                            "its gradient. Use minitorch's operation (t.sum(), t.exp(), ...), or take the values "
                            "without gradient: t.detach() or t.numpy()")
        if copy is False and dtype is not None and np.dtype(dtype) != self._data.dtype:
            raise ValueError(f"np.asarray(tensor, dtype={dtype}, copy=False): the tensor holds {self.dtype}")
        array = self._data.view()
        array.flags.writeable = False
        return array.astype(dtype) if dtype is not None else array.copy() if copy else array

    def __array_function__(self, function, types, args, kwargs):
        """NumPy's functions (np.sum, np.allclose, ...) on tensors: computed on the values, as on arrays, without
        gradients; a tensor that requires grad is refused (see __array__)."""
        return function(*_values_for_numpy(args), **_values_for_numpy(kwargs))

    def __int__(self) -> int:
        """``int(t)`` of a tensor of one element (truncated, as ``int`` of a float)."""
        return int(self.__float__())

    def __float__(self) -> float:
        if self.size != 1:
            raise TypeError(f"float() of a tensor of shape {self.shape}: it needs exactly one element")
        return float(self._data.item())

    def __iter__(self):
        """The tensor's rows (its slices along the first axis), as ``t[0], t[1], ...``, gradients kept."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor: it holds a single number (shape ()); use .item()")
        return (self[index] for index in range(len(self._data)))

    def item(self) -> float:
        """The single number held by a one-element tensor."""
        if self._data.size != 1:
            raise ValueError(f"item(): the tensor has shape {self.shape} ({self.size} elements) but item() needs "
                             f"exactly one: pick one first (t[0].item()) or reduce (t.sum().item())")
        return self._data.item()

    # ------------------------------------------------------------------
    # array attributes
    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return self._data.size

    @property
    def dtype(self):
        return self._data.dtype

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor: it holds a single number (shape ()); use .item() for the "
                            "number, .size for the count of elements")
        return len(self._data)

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        body = np.array2string(self._data, precision=4, separator=", ", prefix="Tensor(")
        return f"Tensor({body}{grad})"

    def astype(self, dtype) -> "Tensor":
        """A copy converted to `dtype` (not differentiable)."""
        return Tensor(self._data, dtype=dtype)

    # The arithmetic operators (+, *, @, ...) and methods such as .sum() are attached by
    # minitorch/ops.py, where the operations live; softmax.py attaches .softmax().

    # Comparisons give boolean masks (`Mask`, an ndarray), not differentiable.
    def __lt__(self, other):
        return _compare(np.less, "<", self, other)

    def __le__(self, other):
        return _compare(np.less_equal, "<=", self, other)

    def __gt__(self, other):
        return _compare(np.greater, ">", self, other)

    def __ge__(self, other):
        return _compare(np.greater_equal, ">=", self, other)

    def __eq__(self, other):
        return _compare(np.equal, "==", self, other)

    def __ne__(self, other):
        return _compare(np.not_equal, "!=", self, other)

    __hash__ = object.__hash__  # tensors are graph nodes, hashed by identity

    # In-place operators (x += y): they change this tensor's own values (one version on), as in PyTorch.
    def __iadd__(self, other):
        return _in_place(self, other, "+=", np.add)

    def __isub__(self, other):
        return _in_place(self, other, "-=", np.subtract)

    def __imul__(self, other):
        return _in_place(self, other, "*=", np.multiply)

    def __itruediv__(self, other):
        return _in_place(self, other, "/=", np.true_divide)

    def __bool__(self):
        raise TypeError(
            "the truth value of a Tensor is ambiguous; compare .item() or use "
            "(t > 0).all() on the boolean mask"
        )


# ----------------------------------------------------------------------
# values a backward needs may not change before it runs
#
# A backward reads its operation's inputs (mul's ∂(ab)/∂a = b) or result (exp's) when it runs, not
# when the operation ran. Changing them in between would give a wrong gradient without a word. So,
# as PyTorch does, every tensor counts the changes to its values (its version), an operation notes
# the version of each input it read (`versions_used`), and backward raises if one moved on. NumPy
# cannot report a write into an array, so the arrays a graph read, and its results, stay read-only
# (``x.data[0] = 5`` fails: "assignment destination is read-only"); what may write to one makes it
# writable and moves the version on first: an optimizer step, an in-place operator, the data setter,
# and taking ``x.data`` or ``x.numpy()`` once a backward through the graph has run (`_released`).
# That costs one integer per input, where a copy of every array would cost its size.


def _check_inputs_unchanged(node: "Tensor") -> None:
    """Raise if an input of `node` changed since the forward pass read it."""
    for position, (parent, version) in enumerate(zip(node.parents, node.versions_used if node.parents else ())):
        if parent._version != version:
            raise RuntimeError(
                f"backward: input {position} of '{node.op}' (shape {parent.shape}) was given new values "
                f"after '{node.op}' used it (version {version} then, {parent._version} now: its .data was "
                f"replaced, changed in place, or taken after an earlier backward(), or an optimizer step "
                f"changed it), so its gradient would come from the wrong values. Run the forward pass again "
                f"from the changed tensor (to keep the old values, copy them first: old = x.data.copy())."
            )


def _mark_released(order: list, released: bool) -> None:
    """Whether taking .data of the graph's tensors counts as a change (True once its backward has run)."""
    for node in order:
        node._released = released
        for parent in node.parents:
            parent._released = released


def _values_for_numpy(arguments):
    """`arguments` with every Tensor in them (also inside lists, tuples and dicts) replaced by its values."""
    if isinstance(arguments, Tensor):
        return np.asarray(arguments)
    if isinstance(arguments, (list, tuple)):
        return type(arguments)(_values_for_numpy(item) for item in arguments)
    if isinstance(arguments, dict):
        return {key: _values_for_numpy(value) for key, value in arguments.items()}
    return arguments


def _in_place(tensor: Tensor, other, symbol: str, operation) -> Tensor:
    """``tensor <symbol>= other`` on `tensor`'s own values; refused where a gradient would be lost."""
    _check_keeps_shape(tensor, other, symbol)
    other_requires_grad = isinstance(other, Tensor) and other.requires_grad
    if _grad_enabled and (tensor.requires_grad or other_requires_grad):
        if tensor.is_leaf and tensor.requires_grad:
            raise RuntimeError(
                f"x {symbol} ...: x is a leaf that requires grad (a parameter); changing it in place would be "
                f"recorded nowhere. To update it, as an optimizer does: with minitorch.no_grad(): x {symbol} ...; "
                f"for a new tensor: y = x {symbol[0]} ...")
        return {"+=": Tensor.__add__, "-=": Tensor.__sub__, "*=": Tensor.__mul__,
                "/=": Tensor.__truediv__}[symbol](tensor, other)  # recorded, as a new tensor
    values = _raw(other)
    tensor._prepare_to_change()
    if not tensor._data.flags.writeable:  # a view of an array that stays read-only
        raise ValueError(f"x {symbol} ...: this tensor's values are a read-only view; write y = x {symbol[0]} ...")
    operation(tensor._data, values, out=tensor._data, casting="same_kind")
    return tensor


def _check_keeps_shape(tensor: Tensor, other, symbol: str) -> None:
    """``x <symbol>= y`` changes x's own values, so its result must have x's shape: y must broadcast to it."""
    other_shape = np.shape(_raw(other))
    try:
        fits = np.broadcast_shapes(tensor.shape, other_shape) == tensor.shape
    except ValueError:  # not broadcastable at all
        fits = False
    if not fits:
        raise ValueError(f"x {symbol} y: y of shape {other_shape} does not broadcast to x's shape {tensor.shape} "
                         f"(an in-place operator keeps x's shape); for a result of another shape write "
                         f"z = x {symbol[0]} y")


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
    return x._data if isinstance(x, Tensor) else x


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


def _compare(comparison, symbol: str, tensor: Tensor, other):
    if not isinstance(other, (Tensor, numbers.Number, np.ndarray, np.generic, list, tuple)):
        return NotImplemented  # Python then says "'<' not supported between instances of 'Tensor' and 'str'"
    other = _raw(other)
    try:
        np.broadcast_shapes(tensor.shape, np.shape(other))
    except ValueError:  # (a ragged list has no shape: NumPy's comparison says so itself)
        if _has_shape(other):
            raise ValueError(f"x {symbol} y: shapes {tensor.shape} and {np.shape(other)} cannot be broadcast together "
                             f"(aligned from the right, each pair of sizes must be equal or one of them 1)") from None
    return np.asarray(comparison(tensor._data, other)).view(Mask)


def _has_shape(values) -> bool:
    try:
        np.shape(values)
        return True
    except ValueError:
        return False


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


def _root(root) -> tuple:
    if not isinstance(root, Tensor):
        raise TypeError(f"topological_order: root must be a Tensor, got {type(root).__name__}")
    return (root,)


@checks.inputs_checked_by(_root)
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


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view: a backward rule that writes into its upstream gradient (``grad *= 2``) fails, as one that
    writes into its inputs does, instead of changing a gradient another node shares."""
    view = array.view()
    view.flags.writeable = False
    return view


def unbroadcast(grad: np.ndarray, shape: tuple, op: str = "?") -> np.ndarray:
    """Fold a gradient computed at a broadcast shape back to `shape` (with `sum_to_shape`).

    This is the only place where broadcasting is undone; a gradient that no
    broadcast could explain is an error of the operation `op`.
    """
    if grad.shape == tuple(shape):
        return grad  # nothing was broadcast (so chapter 01 runs before exercise 2.1 is written)
    incoming_shape = grad.shape
    if not _broadcasts_to(tuple(shape), incoming_shape):  # (checked before sum_to_shape is asked to fold it)
        raise _unexplained(op, incoming_shape, shape)
    grad = np.asarray(sum_to_shape(grad, tuple(shape)))
    if grad.shape != tuple(shape):
        raise _unexplained(op, incoming_shape, shape)
    return grad


def _broadcasts_to(shape: tuple, broadcast_shape: tuple) -> bool:
    """Whether broadcasting a tensor of `shape` can give `broadcast_shape`."""
    try:
        return np.broadcast_shapes(shape, broadcast_shape) == tuple(broadcast_shape)
    except ValueError:
        return False


def _unexplained(op: str, incoming_shape: tuple, shape: tuple) -> ValueError:
    return ValueError(f"backward of '{op}' gave a gradient of shape {incoming_shape} for an input of shape "
                      f"{tuple(shape)}, and no broadcast explains it: a gradient must have its tensor's shape")
