"""What the Tensor checks, kept out of the way of `minitorch.tensor` (chapter 01): a bad value fails at once with
an error that names it, never a silent wrong gradient.

- `as_float_array`: the values a tensor is made from (numbers, nested lists of numbers, ndarrays).
- `checked_grad`, `checked_new_values`, `checked_incoming_grad`: a gradient or values set by hand, and the
  gradient given to ``backward(grad)`` (`named_float_array`, `unsupported_backward_options`).
- `bad_index`: an index NumPy cannot take (`INDEX_ERRORS`), for ``x[index]`` and ``x[index] = y`` alike.
- `check_backward_result`, `gradient_in_dtype`: what an operation's backward rule returned.
- `check_inputs_unchanged`, `check_result_unchanged`: the values a backward needs did not change before it ran
  (with `shared_versions`, `mark_released`, `read_only_view`, `make_writable`: the change counts and flags).
- `root_of_the_graph`, `summable_to_shape`: the inputs of the exercise functions of `minitorch.tensor`, checked
  outside their bodies (`checks.inputs_checked_by`), so that a student edition keeps them (those of the backward
  rules are `minitorch.checks`', the softmax's `minitorch.softmax`').

Values a backward needs may not change before it runs. A backward reads its operation's inputs (mul's
∂(ab)/∂a = b) or result (exp's) when it runs, not when the operation ran. Changing them in between would give
a wrong gradient without a word. So, as PyTorch does, every tensor counts the changes to its values (its
version; views of the same values share one), an operation notes the version of each input it read
(`versions_used`) and of its result (`version_made`), and backward raises if one moved on. NumPy cannot report
a write into an array, so the arrays a graph read, and its results, stay read-only (``x.data[0] = 5`` fails:
"assignment destination is read-only"); what may write to one makes it writable and moves the version on first:
an optimizer step, an in-place operator, the data setter, and taking ``x.data`` or ``x.numpy()`` once a backward
through the graph has run (`_released`). That costs one integer per input, where a copy of every array would cost
its size.
"""

from __future__ import annotations

import decimal
import math
import numbers
import reprlib

import numpy as np

from minitorch import checks
from minitorch import tensor as tensor_module  # (Tensor itself is defined after this module is imported)

DEFAULT_DTYPE = np.float64
FLOAT_DTYPES = (np.float32, np.float64)
_LARGEST = {np.dtype(dtype): float(np.finfo(dtype).max) for dtype in FLOAT_DTYPES}
_MASKED_ARRAY = np.ma.MaskedArray  # (np.ma is looked up lazily, at a cost, on every access)


def native_float(dtype: np.dtype) -> np.dtype:
    """A float dtype in the machine's byte order, as NumPy's own object for it (np.dtype('float64')): '>f8' turned
    native is equal to float64 but another object, and Tensor.from_op, which checks the dtype by identity, would
    copy every result of such a tensor (a detach or a slice would no longer share its values)."""
    return np.dtype(dtype.newbyteorder("=").name)


def as_float_array(data, dtype) -> np.ndarray:
    """Convert `data` to a floating-point ndarray (float64 unless told), or a TypeError naming what was passed."""
    if isinstance(data, tensor_module.Tensor):
        data = data._data
    if type(data) is np.ndarray and data.dtype in FLOAT_DTYPES and (dtype is None or data.dtype == dtype):
        checks.memory("tensor", "the values", data.shape, data.dtype.itemsize)  # (a copy of it may follow)
        return data  # the usual case, at once: already float32 or float64 as asked (an optimizer's new values)
    if isinstance(data, (list, tuple)) and any(isinstance(item, tensor_module.Tensor) for item in data):
        raise TypeError("cannot make a Tensor from a list of Tensors: join them with minitorch.stack(tensors) "
                        "(which keeps their gradients), or pass their values (t.data)")
    if data is None or isinstance(data, (str, bytes, bytearray, dict, set)):  # bytes would become character codes
        raise TypeError(f"cannot make a Tensor from {type(data).__name__}: expected a number, a (nested) list of "
                        f"numbers or an ndarray")
    if type(data) is memoryview and data.format in ("B", "b", "c"):  # a view of bytes; 'd', 'f', 'i': numbers
        raise TypeError("cannot make a Tensor from a memoryview of bytes: its bytes would become character codes; "
                        "expected a number, a (nested) list of numbers or an ndarray (np.frombuffer reads numbers)")
    if isinstance(data, _MASKED_ARRAY) and np.ma.getmaskarray(data).any():
        raise TypeError("cannot make a Tensor from a masked array: its mask would be dropped and the masked entries "
                        "read as numbers; fill them first (a.filled(np.nan) or a.filled(0))")
    try:
        array = np.asarray(data)
    except ValueError as error:  # e.g. nested lists of unequal lengths
        raise ValueError(f"cannot make a Tensor from this {type(data).__name__}: {error}") from None
    if array.dtype == object:  # e.g. an integer too large for 64 bits, which a float can still hold
        if array.ndim == 0 and hasattr(data, "__iter__"):  # a generator, map, dict.values(): to NumPy one object
            raise TypeError(f"cannot make a Tensor from {type(data).__name__}: expected a number, a (nested) list of "
                            f"numbers or an ndarray; pass list(values) for values that come one at a time")
        if any(item is None for item in array.ravel()):  # float(None) is not an error to NumPy: it gives nan
            raise TypeError(f"cannot make a Tensor from a {type(data).__name__} holding None: every element must "
                            f"be a number (write float('nan') for a missing value)")
        items = array.ravel()
        try:
            array = np.asarray(data, dtype=np.float64)
        except (TypeError, ValueError, OverflowError) as error:
            kinds = sorted({type(item).__name__ for item in np.asarray(data, dtype=object).ravel()})
            raise TypeError(f"cannot make a Tensor from a {type(data).__name__} holding {', '.join(kinds)}: "
                            f"{error}") from None
        for item, value in zip(items, array.ravel()):  # float(Decimal('1e400')) is inf, without an error
            if math.isinf(value) and isinstance(item, decimal.Decimal) and item.is_finite():
                raise OverflowError(f"cannot make a Tensor from {item!r}: it is too large for float64 (at most "
                                    f"{_LARGEST[np.dtype(np.float64)]:.3g}) and would become inf")
    if dtype is None:  # float32 and float64 stay as they are, in either byte order ('>f4' is float32 too)
        native = array.dtype.newbyteorder("=") if array.dtype.kind == "f" else None
        dtype = native if native in FLOAT_DTYPES else DEFAULT_DTYPE
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"Tensor dtype must be float32 or float64, got {dtype!r}") from None
    if dtype.kind == "f":  # '>f8' is float64 too, in another byte order: the tensor holds it in the machine's order
        dtype = native_float(dtype)
    if dtype not in FLOAT_DTYPES:
        raise TypeError(f"Tensor dtype must be float32 or float64, got {dtype}")
    if array.dtype.kind not in "biuf":
        raise TypeError(f"cannot make a Tensor from data of dtype {array.dtype} (a Tensor holds real numbers)")
    checks.memory("tensor", "the values", array.shape, dtype.itemsize)  # before the copy: a view may be huge
    if array.dtype.kind == "f" and array.dtype.itemsize > dtype.itemsize:  # float64 -> float32: may overflow
        return _narrowed(array, dtype)
    return array.astype(dtype, copy=False)


def named_float_array(owner: str, data, dtype) -> np.ndarray:
    """`as_float_array` for values given to `owner` (a gradient, new values), whose error names `owner` first: its
    own words speak of making a Tensor."""
    try:
        return as_float_array(data, dtype)
    except (TypeError, ValueError, OverflowError) as error:
        raise type(error)(f"{owner}: {error}") from None


INDEX_ERRORS = (IndexError, TypeError, ValueError, OverflowError, MemoryError)  # NumPy's for an index (a zero step:
# ValueError; an integer beyond 64 bits: OverflowError; index arrays of shapes (1e5, 1) and (1, 1e5): MemoryError)


def bad_index(owner: str, indexing: str, shape: tuple, error: Exception) -> Exception:
    """One of `INDEX_ERRORS` raised by ``values[index]`` for `indexing` (as written, e.g. ``x[::0]``) on a tensor of
    `shape`, in words that name them, after `owner` ("" where `indexing` names the operation: x[index] = y)."""
    where = f"{indexing} on a tensor of shape {shape}"
    if isinstance(error, MemoryError):
        return checks.result_too_large(owner or indexing, where)
    if isinstance(error, OverflowError):  # out of bounds for any axis
        error = IndexError("an index is out of bounds (beyond 64 bits)")
    return type(error)(f"{owner}: {where}: {error}" if owner else f"{where}: {error}")


def unsupported_backward_options(options: dict) -> TypeError:
    """The error of ``backward(retain_graph=True)`` and PyTorch's other options, which minitorch does without."""
    return TypeError(f"backward() takes only grad, got {', '.join(sorted(options))}: minitorch keeps the graph after "
                     f"backward (a second backward through it needs no retain_graph=True) and records no graph of "
                     f"the backward pass itself (create_graph); write y.backward() or y.backward(grad)")


def _narrowed(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`array` in the smaller float `dtype`, or an OverflowError if a finite value is too large for it (NumPy would
    make it inf, with a warning at most). A single number (``float32_tensor * 2.0``) is checked without NumPy."""
    limit = _LARGEST[dtype]
    if array.ndim == 0:
        largest = abs(array.item())
        largest = largest if largest != math.inf else 0.0  # an inf given stays inf
    else:
        finite = array[np.isfinite(array)] if array.size else array
        largest = np.abs(finite).max() if finite.size else 0.0  # (a long double may exceed any float64)
    if largest > limit:
        size = f"{float(largest):.3g}" if math.isfinite(float(largest)) else \
            np.format_float_scientific(largest, precision=1, trim="-")  # a long double beyond float64
        advice = "scale the values" if dtype == np.float64 else "keep float64, or scale the values"
        raise OverflowError(f"a value of size {size} does not fit in {dtype} (at most {limit:.3g}): it would "
                            f"become inf; {advice}")
    return array.astype(dtype)


def checked_grad(tensor, value):
    """``tensor.grad = value`` set by hand (``x.grad = None``, a gradient for an optimizer): None, or a float array
    of the tensor's shape. Any other value would be broadcast into the next backward's sum, or fail in it
    unnamed."""
    if value is None:
        return None
    if isinstance(value, tensor_module.Tensor):
        raise TypeError("x.grad = <Tensor>: a gradient is an ndarray; assign its values (t.data)")
    if isinstance(value, np.generic) and not tensor.shape:  # a 0-d tensor's gradient may be a NumPy scalar
        value = np.asarray(value)
    if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
        what = (f"an array of dtype {value.dtype}" if isinstance(value, np.ndarray)
                else f"{type(value).__name__} {reprlib.repr(value)}")
        raise TypeError(f"x.grad = ...: a gradient is None or a float ndarray of the tensor's shape "
                        f"{tensor.shape}, got {what}")
    if value.shape != tensor.shape:
        raise ValueError(f"x.grad = ...: a gradient of shape {value.shape} for a tensor of shape "
                         f"{tensor.shape}; it must have the tensor's shape")
    return value


def checked_new_values(tensor, values) -> np.ndarray:
    """``tensor.data = values``: a copy in the tensor's dtype; a tensor that requires grad keeps its shape."""
    if isinstance(values, tensor_module.Tensor):
        raise TypeError("x.data = <Tensor>: assign its values (t.data), or use the tensor itself")
    array = named_float_array("x.data = ...", values, tensor._data.dtype)
    if tensor.requires_grad and array.shape != tensor._data.shape:
        raise ValueError(f"x.data = ...: new values of shape {array.shape} for a tensor of shape {tensor.shape} "
                         f"that requires grad (an optimizer holds state of its shape); make a new tensor")
    if np.may_share_memory(array, values) or not array.flags.writeable:  # the caller's array stays the caller's: a
        array = array.copy()  # graph would make it read-only, and an in-place change of the tensor would write there
    return array


def checked_op_values(op: str, data) -> np.ndarray:
    """Tensor.from_op's `data` when not an ndarray: a number (a NumPy reduction gives one), as a 0-d array. A Tensor
    is refused: the result's values are arrays, and its graph edge comes from `parents` and the backward rule."""
    if not isinstance(data, (np.ndarray, np.generic, numbers.Number)):
        hint = "; pass x.data" if isinstance(data, tensor_module.Tensor) else f" {reprlib.repr(data)}"
        raise TypeError(f"Tensor.from_op('{op}'): data must be the result's values, an ndarray or a number, got "
                        f"{type(data).__name__}{hint}")
    return np.asarray(data)


def checked_parents(op: str, parents) -> tuple:
    """Tensor.from_op's `parents` when not a tuple: a list, as a tuple. One Tensor is refused: ``(x)`` is x itself,
    whose rows would be taken for the parents (``(x,)`` is the tuple)."""
    if isinstance(parents, list):
        return tuple(parents)
    hint = "; write (x,) (with the comma: (x) is x itself)" if isinstance(parents, tensor_module.Tensor) else ""
    raise TypeError(f"Tensor.from_op('{op}'): parents must be a tuple (or list) of Tensors, got "
                    f"{type(parents).__name__}{hint}")


def no_backward_rule(op, parents: tuple, backward_fn) -> TypeError:
    """Tensor.from_op's error for a `backward_fn` that is a str (the arguments swapped), or None or not callable
    where a parent requires grad (the result would be a leaf: backward would never reach the parents)."""
    if isinstance(backward_fn, str):
        return TypeError(f"Tensor.from_op: backward_fn is the str {backward_fn!r} and op a {type(op).__name__}: "
                         f"the two are swapped; the order is from_op(data, parents, backward_fn, op)")
    position = next(index for index, parent in enumerate(parents) if parent.requires_grad)
    return TypeError(f"Tensor.from_op('{op}'): backward_fn is {reprlib.repr(backward_fn)}, but parent {position} "
                     f"requires grad, so the result would be a leaf and backward would never reach its parents: give "
                     f"'{op}' a backward rule (a function: grad -> a tuple of one gradient per parent), or compute it "
                     f"under no_grad() or from detached values (x.detach()) if it needs no gradient")


def check_parents_are_tensors(op: str, parents: tuple) -> None:
    """Tensor.from_op records its parents in the graph: each is a Tensor (an ndarray has no gradient to give)."""
    for position, parent in enumerate(parents):
        if not isinstance(parent, tensor_module.Tensor):
            raise TypeError(f"Tensor.from_op('{op}'): parent {position} is a {type(parent).__name__}, not a Tensor; "
                            f"wrap it with minitorch.tensor(...) or leave it out of parents")


def checked_result_values(op: str, values: np.ndarray) -> np.ndarray:
    """Tensor.from_op's result, of float32 or float64 values as every tensor holds (tensor() and astype refuse
    others: an integer or string result would break every operation after it), in the machine's byte order."""
    if values.dtype.kind == "f" and values.dtype.newbyteorder("=") in FLOAT_DTYPES:
        return values.astype(native_float(values.dtype))
    raise TypeError(f"Tensor.from_op('{op}'): the result holds {values.dtype} values; a Tensor holds float32 or "
                    f"float64 (convert the result first, e.g. values.astype(np.float64))")


def wrote_read_only(op: str, error: ValueError) -> ValueError:
    """The error of a backward rule of `op` that wrote into a read-only array (NumPy's `error`), in our words."""
    return ValueError(f"backward of '{op}': its rule wrote into an array in place ({error}): the gradient it is given "
                      f"and the values the graph read are read-only; compute a new array (g = g * 2, not g *= 2)")


def checked_incoming_grad(tensor, grad) -> np.ndarray:
    """The gradient `grad` given to ``tensor.backward(grad)`` (None: 1, for a single number), as an array of the
    tensor's shape and dtype."""
    if not tensor.requires_grad:
        raise RuntimeError("backward() on a tensor that does not require grad: it was built inside no_grad(), or from "
                           "inputs none of which has requires_grad=True. Create the leaves with requires_grad=True "
                           "and compute outside no_grad().")
    if grad is None:
        if tensor._data.size != 1:
            raise RuntimeError(f"backward() without a gradient needs a single-number tensor, but this one has shape "
                               f"{tensor.shape}. Reduce it first (e.g. loss = out.sum() or out.mean()), or pass "
                               f"grad=<array of shape {tensor.shape}>.")
        return np.ones_like(tensor._data)
    grad = named_float_array("backward(grad)", grad, tensor._data.dtype)
    if grad.shape != tensor.shape:
        raise ValueError(f"backward(grad): grad has shape {grad.shape} but the tensor has shape {tensor.shape}")
    return grad


def check_backward_result(node, parent_grads) -> None:
    """A backward rule returns a tuple with one gradient (or None) per input of its operation."""
    if not isinstance(parent_grads, tuple) or len(parent_grads) != len(node.parents):
        returned = (f"a tuple of {len(parent_grads)}" if isinstance(parent_grads, tuple)
                    else f"a {type(parent_grads).__name__}")
        raise ValueError(f"backward of '{node.op}' must return a tuple of {len(node.parents)} gradient(s), one per "
                         f"input; it returned {returned}")


def gradient_as_array(node, parent_grads: tuple, grad) -> np.ndarray:
    """A gradient a backward rule returned that is not an ndarray (a reduction gives a NumPy number) as an array; a
    Tensor is refused, naming the input: the rule computed with the tensor (g * x) where it reads values (x.data)."""
    if isinstance(grad, tensor_module.Tensor):
        position = next(index for index, given in enumerate(parent_grads) if given is grad)
        raise TypeError(f"backward of '{node.op}' returned a Tensor for input {position}; a backward rule returns "
                        f"arrays: compute with the values, x.data, not the tensor x")
    return np.asarray(grad)


def gradient_in_dtype(op: str, grad: np.ndarray, dtype) -> np.ndarray:
    """The gradient that the backward of `op` gave, cast to its input's `dtype`; a TypeError if it holds no real
    numbers (a complex gradient cast to a float would lose its imaginary part with only NumPy's warning)."""
    if grad.dtype.kind not in "biuf":
        raise TypeError(f"backward of '{op}' gave a gradient of dtype {grad.dtype} for an input of dtype {dtype}; a "
                        f"gradient holds real numbers")
    return grad.astype(dtype)


def check_inputs_unchanged(node) -> None:
    """Raise if an input of `node` changed since the forward pass read it (see the module docstring)."""
    for position, (parent, version) in enumerate(zip(node.parents, node.versions_used if node.parents else ())):
        if parent._version != version:
            raise RuntimeError(f"backward: input {position} of '{node.op}' (shape {parent.shape}) was given new "
                               f"values after '{node.op}' used it (version {version} then, {parent._version} now: its "
                               f".data was replaced, changed in place, or taken after an earlier backward(), or an "
                               f"optimizer step changed it), so its gradient would come from the wrong values. Run the "
                               f"forward pass again from the changed tensor (to keep the old values, copy them first: "
                               f"old = x.data.copy()).")


def check_result_unchanged(node) -> None:
    """Raise if the result of `node` changed since its operation made it: a backward may read it (exp's does)."""
    if node.parents and node._version != node.version_made:
        raise RuntimeError(f"backward: the result of '{node.op}' (shape {node.shape}) was changed in place after "
                           f"'{node.op}' made it (version {node.version_made} then, {node._version} now: through a "
                           f"view or a detached copy of it, or an in-place operator under no_grad()), and the gradient "
                           f"must come from the values the forward pass used. Run the forward pass again, or change a "
                           f"copy (y * 1).")


def shared_versions(owner: np.ndarray, parents: tuple) -> list:
    """The change count of an operation's result that views the memory of `owner`: its parent's when that is the
    parent's memory (a reshape, a slice, a transpose), so that a change through either counts for both; else a
    count of its own. (A recorded result that is its parent's array itself, an identity, takes the parent's count
    in Tensor.from_op's loop over the parents; one made under no_grad does not: that loop is not run there.)"""
    for parent in parents:
        if owner is parent._data or owner is parent._data.base:
            return parent._versions
    return [0]


def mark_released(order: list, released: bool) -> None:
    """Whether taking .data of the graph's tensors counts as a change (True once its backward has run)."""
    for node in order:
        node._released = released
        for parent in node.parents:
            parent._released = released


def read_only_view(array: np.ndarray) -> np.ndarray:
    """A read-only view: a backward rule that writes into its upstream gradient (``grad *= 2``) fails, as one that
    writes into its inputs does, instead of changing a gradient another node shares."""
    view = array.view()
    view.flags.writeable = False
    return view


def make_writable(array: np.ndarray) -> None:
    try:
        array.flags.writeable = True
    except ValueError:  # a view of an array that stays read-only (e.g. of a NumPy constant)
        pass


def root_of_the_graph(root) -> tuple:
    """`topological_order`'s input: a Tensor."""
    if not isinstance(root, tensor_module.Tensor):
        raise TypeError(f"topological_order: root must be a Tensor, got {type(root).__name__}")
    return (root,)


def broadcasts_to(shape: tuple, broadcast_shape: tuple) -> bool:
    """Whether broadcasting a tensor of `shape` can give `broadcast_shape`."""
    try:
        return np.broadcast_shapes(shape, broadcast_shape) == tuple(broadcast_shape)
    except ValueError:
        return False


def checked_shape(owner: str, shape) -> tuple:
    """`shape`, a tuple (or list) of integers, as a tuple, or a TypeError naming `owner` (`unbroadcast`,
    `sum_to_shape`): a number such as 3 is no shape."""
    if not isinstance(shape, (tuple, list)) or not all(isinstance(size, (int, np.integer)) for size in shape):
        raise TypeError(f"{owner}: shape must be a tuple of integers such as (3,) or (2, 3), got "
                        f"{type(shape).__name__} {reprlib.repr(shape)}")
    return tuple(shape)


def summable_to_shape(grad, shape) -> tuple:
    """`sum_to_shape`'s inputs: an array and a shape it can be summed back to, i.e. one whose broadcast gives
    the array's shape (a gradient of shape (3,) was never broadcast from (2, 3))."""
    grad, shape = np.asarray(grad), checked_shape("sum_to_shape", shape)
    if not broadcasts_to(shape, grad.shape):
        raise ValueError(f"sum_to_shape: a gradient of shape {grad.shape} cannot be summed to shape {shape}: "
                         f"no broadcast of shape {shape} gives shape {grad.shape}")
    return grad, shape


def tensors_to_join(op: str, tensors) -> list:
    """The tensors `stack` or `concatenate` (`op`) is given to join: at least one, each a Tensor or made one."""
    if isinstance(tensors, tensor_module.Tensor):
        raise TypeError(f"{op}: expected a list of tensors, got one Tensor; write {op}([a, b, ...])")
    tensors = [tensor_module.as_tensor(t) for t in tensors]
    if not tensors:
        raise ValueError(f"{op}: got no tensors; it needs at least one to know the result's shape")
    return tensors


def shapes_joined(tensors: list, axis: int) -> str:
    """The inputs of a join, for a message: their number and shapes (a few), and the axis."""
    shapes = sorted({t.shape for t in tensors}, key=str)
    shown = ", ".join(str(shape) for shape in shapes[:3]) + (", ..." if len(shapes) > 3 else "")
    return f"{len(tensors):,} tensors of shape {shown} along axis {axis}"


def unexplained(op: str, incoming_shape: tuple, shape: tuple) -> ValueError:
    """The error of a backward of `op` that gave a gradient no broadcast of an input of `shape` explains."""
    if op == "?":  # unbroadcast called by hand, outside a backward pass
        return ValueError(f"unbroadcast: a gradient of shape {incoming_shape} cannot be summed to shape "
                          f"{tuple(shape)}: no broadcast of {tuple(shape)} gives {incoming_shape}")
    return ValueError(f"backward of '{op}' gave a gradient of shape {incoming_shape} for an input of shape "
                      f"{tuple(shape)}, and no broadcast explains it: a gradient must have its tensor's shape")
