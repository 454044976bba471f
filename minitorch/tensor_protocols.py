"""The Python and NumPy protocols of a Tensor (chapter 01), kept out of the way of `minitorch.tensor`: `Tensor`
inherits them from `TensorProtocols`.

``len(t)`` and ``iter(t)`` go over the first axis (a 0-d tensor has neither); ``float(t)``, ``int(t)``,
``f"{t:.4f}"`` need one element; ``round(t)`` rounds the values (no gradient flows through a rounding);
``abs(t)`` is `minitorch.ops.abs`; ``np.asarray(t)`` is the values (a read-only view: NumPy's functions on a
tensor compute without gradients, so a tensor that requires grad says so, and asks for ``t.detach()`` or
``t.numpy()``); ``array += t`` changes the array's values, ``array + t`` is the tensor operation; ``pickle``
saves a leaf, and refuses the result of a recorded operation (detach it first); ``copy.copy`` and
``copy.deepcopy`` likewise copy a leaf, with values of its own. Comparisons give boolean masks (`Mask`);
in-place operators (``x += y``) and ``x[index] = y`` change a tensor's own values, where no gradient is lost
(where x or y requires grad, outside ``no_grad()``, they are refused: write ``x = x + y``); ``+t`` is t; ``%``
and ``//`` are refused (no gradient flows through them: compute them on ``t.data``), as are ``&``, ``|``, ``^``
and ``~`` (a tensor holds floats: combine masks). (The arithmetic operators are `minitorch.ops`'.)
"""

from __future__ import annotations

import copy
import math
import numbers
import reprlib

import numpy as np

from minitorch import checks, tensor_checks
from minitorch import tensor as tensor_module  # (Tensor itself is defined after this module is imported)


class TensorProtocols:
    """The protocols `Tensor` inherits (see the module docstring)."""

    def __getstate__(self) -> dict:
        """What pickle saves: the values, the gradient and the flags. A result of a recorded operation is
        refused: its graph holds the operations' backward functions, which pickle cannot save."""
        if self.backward_fn is not None:
            raise TypeError(f"cannot pickle the result of '{self.op}' with its graph (the backward functions "
                            f"are not picklable): pickle y.detach() for its values, or save y.numpy()")
        state = dict(vars(self))
        state["_versions"] = [self._version]  # a copy shares no values with the tensors that view this one's
        return state

    def __deepcopy__(self, memo: dict):
        """``copy.deepcopy(t)``: a leaf with its own values and its own version count, as in PyTorch. (NumPy's
        copy of an array copies its values too.) Values shared under a separate count would let a change through
        the copy reach a graph that read `t` without a word. The result of a recorded operation is refused, as in
        PyTorch: its copy could not be part of the graph."""
        if self.backward_fn is not None:
            raise TypeError(f"cannot copy the result of '{self.op}' with its graph (only leaves are copied, as in "
                            f"PyTorch): copy y.detach() for its values, or keep y itself")
        copied = type(self).__new__(type(self))
        memo[id(self)] = copied  # a parameter shared by two layers is copied once, and stays shared
        state = {name: value for name, value in vars(self).items() if name not in ("_data", "_versions")}
        copied.__dict__.update(copy.deepcopy(state, memo))
        copied._data = self._data.copy()  # never through `memo`: a tensor detached from this one owns its copy too
        copied._versions, copied._released = [0], False
        return copied

    def __copy__(self):
        """``copy.copy(t)`` is ``copy.deepcopy(t)``: a tensor owns its values (see `__deepcopy__`); to share them
        on purpose, use t.detach(), which counts a change through it as a change of t."""
        return self.__deepcopy__({})

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

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy's ufuncs with a tensor among the inputs. ``array + tensor`` (NumPy asks the tensor, on the right)
        is the tensor's operation, as ``tensor + array`` is. ``array += tensor`` changes the array's own values,
        as NumPy does for arrays. Any other ufunc (``np.exp(t)``) computes on the values, without gradients, as
        NumPy's functions do; a tensor that requires grad is refused there (see __array__)."""
        if method == "at" and isinstance(inputs[0], TensorProtocols):  # NumPy's .at writes even into read-only arrays
            raise TypeError(f"np.{ufunc.__name__}.at(tensor, ...) would change the tensor's values in place, behind "
                            f"the backward pass that may have saved them; change a copy (a = t.numpy(); "
                            f"np.{ufunc.__name__}.at(a, ...); t = tensor(a)) or write t[...] += ...")
        if any(isinstance(out, TensorProtocols) for out in _as_tuple(kwargs.get("out"))):
            raise TypeError(f"np.{ufunc.__name__}(..., out=<tensor>) would write into the tensor's values behind the "
                            f"backward pass; write t[...] = np.{ufunc.__name__}(...), or use the operator in place "
                            f"(t += ...)")
        if ufunc in _LOGICAL:  # ``mask & tensor``: NumPy's words would be of casting rules
            _not_boolean(_LOGICAL[ufunc])
        if method == "__call__" and len(inputs) == 2 and "out" not in kwargs and \
                not isinstance(inputs[0], TensorProtocols) and ufunc in _REFLECTED:
            return getattr(inputs[1], _REFLECTED[ufunc])(inputs[0])
        return getattr(ufunc, method)(*_values_for_numpy(inputs), **_values_for_numpy(kwargs))

    def __format__(self, spec: str) -> str:
        """``f"{loss:.4f}"``: a tensor of one element formats as its number; without a spec, as its repr."""
        if not spec:
            return str(self)
        if self.size != 1:
            raise TypeError(f"format(tensor, {spec!r}): a format spec needs a tensor of one element, got shape "
                            f"{self.shape}; format t.item() of a single number, or each element")
        try:
            return format(self._data.item(), spec)
        except ValueError as error:  # Python's words speak of a float the caller never had
            raise ValueError(f"format(tensor, {spec!r}): a tensor of one element formats as its number, a float, "
                             f"and {spec!r} is no float format spec ({error}); use one such as '.4f', or str(t)"
                             ) from None

    def __round__(self, ndigits=None):
        """``round(t)``, ``round(t, 2)``: a tensor of the values rounded (halves to even, as NumPy and PyTorch).
        No gradient flows through a rounding: its derivative is 0 wherever it exists."""
        if ndigits is not None and (isinstance(ndigits, bool) or not isinstance(ndigits, numbers.Integral)):
            raise TypeError(f"round(tensor, ndigits): ndigits must be an integer, got {ndigits!r}")
        return tensor_module.Tensor(np.round(self._data, ndigits or 0), dtype=self.dtype)

    def __int__(self) -> int:
        """``int(t)`` of a tensor of one element (truncated, as ``int`` of a float)."""
        value = _one_number(self, "int")
        if not math.isfinite(value):  # Python's words would not say that the number came from a tensor
            raise ValueError(f"int() of a tensor holding {value}: NaN and infinity have no integer value")
        return int(value)

    def __float__(self) -> float:
        return _one_number(self, "float")

    def __iter__(self):
        """The tensor's rows (its slices along the first axis), as ``t[0], t[1], ...``, gradients kept."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor: it holds a single number (shape ()); use .item()")
        return (self[index] for index in range(len(self._data)))

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor: it holds a single number (shape ()); use .item() for the "
                            "number, .size for the count of elements")
        return len(self._data)

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

    # In-place operators (x += y): they change this tensor's own values (one version on), as in PyTorch; refused
    # where recording applies (x or y requires grad, outside no_grad()): write x = x + y there.
    def __iadd__(self, other):
        return _in_place(self, other, "+=", np.add)

    def __isub__(self, other):
        return _in_place(self, other, "-=", np.subtract)

    def __imul__(self, other):
        return _in_place(self, other, "*=", np.multiply)

    def __itruediv__(self, other):
        return _in_place(self, other, "/=", np.true_divide)

    def __ipow__(self, exponent):  # a number, as for x ** p
        if not checks.is_exponent(exponent):
            raise TypeError(f"x **= p: the exponent must be a Python number, got {type(exponent).__name__}")
        return _in_place(self, exponent, "**=", np.power)

    def __imatmul__(self, other):  # without it Python would rebind x to x @ y, a new tensor, without a word
        raise TypeError("x @= y: in-place matmul is not supported (as in PyTorch; the result may change shape): "
                        "write x = x @ y, or, to change a parameter's values, x.data = (x @ y).data")

    def __bool__(self):
        raise TypeError(
            "the truth value of a Tensor is ambiguous; compare .item() or use "
            "(t > 0).all() on the boolean mask"
        )

    def __setitem__(self, index, other):
        """``x[index] = y`` changes x's own values, as ``x += y`` does (refused where a gradient would be lost)."""
        _assign(self, index, other)

    def __delitem__(self, index):
        raise TypeError("del x[...]: a tensor's elements cannot be deleted (its shape is fixed); select the ones to "
                        "keep instead: x[mask] or x[[0, 2]]")

    def __pos__(self):
        """``+t`` is t itself, as in PyTorch (torch.positive)."""
        return self

    # Operators minitorch does not differentiate: refused in its own words, naming what to write instead
    __mod__ = __rmod__ = lambda self, other: _not_provided("%", "remainder")
    __floordiv__ = __rfloordiv__ = lambda self, other: _not_provided("//", "floor division")
    __divmod__ = __rdivmod__ = lambda self, other: _not_provided("divmod", "floor division")
    __and__ = __rand__ = lambda self, other: _not_boolean("&")
    __or__ = __ror__ = lambda self, other: _not_boolean("|")
    __xor__ = __rxor__ = lambda self, other: _not_boolean("^")
    __invert__ = lambda self: _not_boolean("~")


# ``array <op> tensor``, as NumPy's ufunc sees it, and the tensor's method that computes it
_REFLECTED = {np.add: "__radd__", np.subtract: "__rsub__", np.multiply: "__rmul__", np.true_divide: "__rtruediv__",
              np.matmul: "__rmatmul__", np.power: "__rpow__", np.less: "__gt__", np.less_equal: "__ge__",
              np.greater: "__lt__", np.greater_equal: "__le__", np.equal: "__eq__", np.not_equal: "__ne__"}

_LOGICAL = {np.bitwise_and: "&", np.bitwise_or: "|", np.bitwise_xor: "^", np.invert: "~"}


def _values_for_numpy(arguments):
    """`arguments` with every Tensor in them (also inside lists, tuples and dicts) replaced by its values."""
    if isinstance(arguments, TensorProtocols):
        return np.asarray(arguments)
    if isinstance(arguments, (list, tuple)):
        return type(arguments)(_values_for_numpy(item) for item in arguments)
    if isinstance(arguments, dict):
        return {key: _values_for_numpy(value) for key, value in arguments.items()}
    return arguments


def _one_number(tensor, call: str) -> float:
    """The single number of `tensor`, for ``float(t)`` or ``int(t)`` (`call`: 'float' or 'int')."""
    if tensor.size != 1:
        raise TypeError(f"{call}() of a tensor of shape {tensor.shape}: it needs exactly one element")
    return float(tensor._data.item())


def _not_provided(symbol: str, what: str):
    """The error of an operator minitorch does not provide on tensors: it is a step function, whose gradient is 0
    (or undefined), so it is computed on the values, without a gradient."""
    called, written = ("divmod(x, y)", "divmod(x.data, y)") if symbol == "divmod" else (f"x {symbol} y",
                                                                                        f"x.data {symbol} y")
    raise TypeError(f"{called}: minitorch has no {what} of tensors (a step function: no gradient flows through it); "
                    f"compute it on the values, without a gradient: {written}")


def _not_boolean(symbol: str):
    """The error of a logical operator on tensors, which hold floats: the masks that comparisons give combine."""
    called = "~x" if symbol == "~" else f"x {symbol} y"
    raise TypeError(f"{called}: a tensor holds floats, not booleans; combine the masks that comparisons give, e.g. "
                    f"{'~(x > 0)' if symbol == '~' else f'(x > 0) {symbol} (y > 0)'}")


def _assign(tensor, index, other) -> None:
    """``tensor[index] = other`` on `tensor`'s own values, where ``tensor += ...`` would change them."""
    if _recorded(tensor, other):
        raise RuntimeError("x[...] = y: x or y requires grad, and an assignment into x's elements would be recorded "
                           "nowhere; for a new tensor with those elements replaced write minitorch.where(mask, y, x) "
                           "or x.masked_fill(mask, y); to change a parameter's values as an optimizer does: "
                           "with minitorch.no_grad(): x[...] = y")
    parts = index if isinstance(index, tuple) else (index,)
    if any(isinstance(part, TensorProtocols) for part in parts):
        raise TypeError("x[index] = y: index with ints, slices, or NumPy arrays of ints or booleans, not a Tensor (a "
                        "Tensor holds floats)")
    values = _raw(other) if isinstance(other, TensorProtocols) else \
        tensor_module.named_float_array("x[...] = y", other, tensor.dtype)
    try:  # checked before anything changes
        selected = np.shape(tensor._data[index])
    except tensor_checks.INDEX_ERRORS as error:
        raise tensor_checks.bad_index("", "x[index] = y", tensor.shape, error) from None
    if not tensor_module.broadcasts_to(np.shape(values), selected):
        raise ValueError(f"x[index] = y: y of shape {np.shape(values)} does not broadcast to the shape {selected} of "
                         f"the elements x[index] selects")
    _own_values(tensor, "x[...] = y", "assign into a copy: x = tensor(x.numpy())")[index] = values


def _in_place(tensor, other, symbol: str, operation):
    """``tensor <symbol>= other`` on `tensor`'s own values; refused where a gradient would be lost."""
    if not isinstance(other, TensorProtocols):  # a str, None, a list of str: named here, not by a NumPy loop
        other = tensor_module.named_float_array(f"x {symbol} y", other, tensor.dtype)
    _check_keeps_shape(tensor, other, symbol)
    if _recorded(tensor, other):  # a new tensor, x = x + y, would leave every other name for x with the old values
        if tensor.is_leaf and tensor.requires_grad:
            raise RuntimeError(
                f"x {symbol} ...: x is a leaf that requires grad (a parameter); changing it in place would be "
                f"recorded nowhere. To update it, as an optimizer does: with minitorch.no_grad(): x {symbol} ...; "
                f"for a new tensor: y = x {symbol[:-1]} ...")
        raise RuntimeError(
            f"x {symbol} y: {'x' if tensor.requires_grad else 'y'} requires grad, and minitorch records no change in "
            f"place (x's old values may be needed by its graph, and a new tensor in x's place would leave every "
            f"other name for x with the old values): write x = x {symbol[:-1]} y, a new tensor of the graph")
    values = _own_values(tensor, f"x {symbol} ...", f"write y = x {symbol[:-1]} ...")
    operation(values, _raw(other), out=values, casting="same_kind")
    return tensor


def _recorded(tensor, other) -> bool:
    """Whether changing `tensor` with `other` concerns the backward pass: recording is on and either requires grad
    (the change must then be a recorded operation, or is refused)."""
    other_requires_grad = isinstance(other, TensorProtocols) and other.requires_grad
    return tensor_module.is_grad_enabled() and (tensor.requires_grad or other_requires_grad)


def _own_values(tensor, written: str, instead: str) -> np.ndarray:
    """`tensor`'s values, ready to be changed in place by `written` (writable, one version on: a graph that read them
    refuses its backward), or ValueError for a read-only view, saying what to write `instead`."""
    tensor._prepare_to_change()
    if not tensor._data.flags.writeable:  # a view of an array that stays read-only
        raise ValueError(f"{written}: this tensor's values are a read-only view; {instead}")
    return tensor._data


def _check_keeps_shape(tensor, other, symbol: str) -> None:
    """``x <symbol>= y`` changes x's own values, so its result must have x's shape: y must broadcast to it."""
    other_shape = np.shape(_raw(other))
    if not tensor_module.broadcasts_to(other_shape, tensor.shape):
        raise ValueError(f"x {symbol} y: y of shape {other_shape} does not broadcast to x's shape {tensor.shape} "
                         f"(an in-place operator keeps x's shape); for a result of another shape write "
                         f"z = x {symbol[:-1]} y")



def _as_tuple(value) -> tuple:
    return value if isinstance(value, tuple) else () if value is None else (value,)


def _raw(x):
    return x._data if isinstance(x, TensorProtocols) else x


class Size(int):
    """``t.size``: the number of elements, an int, as NumPy's ``ndarray.size`` (the library and the chapters use it
    so), that may also be called as PyTorch's method: ``t.size()`` is the shape, ``t.size(0)`` the length of axis 0.
    (An int subclass: a property cannot be both a number and a method, and either idiom would otherwise fail, one
    with "'int' object is not callable".)"""

    def __new__(cls, shape: tuple):
        size = super().__new__(cls, math.prod(shape))
        size.shape = shape
        return size

    def __call__(self, dim=None):
        if dim is None:
            return self.shape
        return self.shape[checks.axis("size", dim, len(self.shape), name="dim")]

    def __reduce__(self):  # pickle and copy: int's would call Size(the number)
        return Size, (self.shape,)


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


def _compare(comparison, symbol: str, tensor, other):
    if not isinstance(other, (TensorProtocols, numbers.Number, np.ndarray, np.generic, list, tuple)):
        return NotImplemented  # Python then says "'<' not supported between instances of 'Tensor' and 'str'"
    other = _raw(other)
    try:
        np.broadcast_shapes(tensor.shape, np.shape(other))
    except ValueError:  # (a ragged list has no shape: NumPy's comparison says so itself)
        if _has_shape(other):
            raise ValueError(f"x {symbol} y: shapes {tensor.shape} and {np.shape(other)} cannot be broadcast together "
                             f"(aligned from the right, each pair of sizes must be equal or one of them 1)") from None
    try:
        return np.asarray(comparison(tensor._data, other)).view(Mask)
    except TypeError:  # [1, 'a']: NumPy's words would be of ufunc loops
        raise TypeError(f"x {symbol} y: cannot compare a tensor with {reprlib.repr(other)}: y must hold "
                        f"numbers") from None


def _has_shape(values) -> bool:
    try:
        np.shape(values)
        return True
    except ValueError:
        return False


