"""Modules and parameters: the pieces models are built from (chapter 03).

A `Module` finds its `Parameter`s by looking at its attributes: parameters,
sub-modules, and lists, tuples or dicts of those (nested too). `state_dict` and
`load_state_dict` turn a model into named arrays and back (used to save
trained models as ``.npz`` files).
"""

from __future__ import annotations

import io
import reprlib
from collections.abc import Iterator, Mapping, Set

import numpy as np

from minitorch import checks
from minitorch.seeding import default_generator
from minitorch.tensor import Tensor, as_float_array, as_tensor


class Parameter(Tensor):
    """A tensor a module learns: a leaf, with ``requires_grad=True`` unless frozen (as PyTorch's)."""

    def __init__(self, data, dtype=None, requires_grad: bool = True):
        super().__init__(data, requires_grad=requires_grad, dtype=dtype)

    def __repr__(self) -> str:
        return "Parameter" + super().__repr__()[len("Tensor"):]


class Module:
    """Base class: subclasses set attributes in ``__init__`` and define ``forward``.

    Parameters are found in attributes that are a `Parameter`, a `Module`, or
    a list, tuple or dict of those, at any depth (``self.blocks = [[a, b], [c]]``,
    ``self.heads = {"bos": h}``), in the order they were set (a dict's in its
    keys' order); each is named by its path (``blocks.0.1.weight``,
    ``heads.bos.weight``). A generator or other iterator cannot be searched
    without using it up, and a set has no order: both are refused when they
    would hold modules; store a list. A tensor in such a list or dict must be a Parameter: another tensor there is
    refused, since one that replaced a Parameter (``self.blocks[0] = w * 2``) would silently stop training; keep a
    constant tensor in an attribute of its own.
    """

    optional_parameters: tuple = ()  # the parameters a subclass may turn off, holding None (Linear's bias)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __setattr__(self, name: str, value) -> None:
        """A parameter replaced by something that is not one would silently leave parameters() and stop training:
        refused (``m.weight = m.weight * 1`` too). A leaf tensor that requires grad is a Parameter in all but name
        (gradcheck of a module's weights gives it such leaves): it becomes one, and stays in parameters(). A
        parameter turned off (`optional_parameters`: ``Linear(2, 2, bias=False).bias`` is None) is one too: it
        takes a Parameter, or such a leaf, or None, as PyTorch's takes a Parameter or None. An attribute named as
        one of Module's methods (``self.parameters = [...]``) would hide it from a later call: refused."""
        old = vars(self).get(name)
        if old is None and name in _METHODS:  # (only a new attribute: one of these names never gets set)
            raise TypeError(f"{type(self).__name__}.{name} would hide the method Module.{name}(), so a later "
                            f"call of it would fail; choose another name (such as self.my_{name.lstrip('_')})")
        if (isinstance(old, Parameter) or (old is None and value is not None and name in self.optional_parameters)) \
                and not isinstance(value, Parameter):
            if isinstance(value, Tensor) and value.is_leaf and value.requires_grad:
                value.__class__ = Parameter  # the same object, so its gradient still reaches whoever holds it
                return object.__setattr__(self, name, value)
            if old is None:
                raise TypeError(f"{type(self).__name__}.{name} is a Parameter turned off (None); give it a Parameter "
                                f"(nn.Parameter(values)) or None (a {_kind(value)} would be used by forward but be "
                                f"missing from parameters())")
            raise TypeError(f"{type(self).__name__}.{name} is a Parameter; give it a Parameter (nn.Parameter(values)), "
                            f"or change its values with {name}.data = ... (a {_kind(value)} would drop it from "
                            f"parameters() and it would stop training)")
        object.__setattr__(self, name, value)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def named_parameters(self, prefix: str = ""):
        """Yield ``(dotted_name, parameter)`` in the order attributes were set, each name after `prefix`."""
        if not isinstance(prefix, str):  # checked here, at the call, not when the first name is asked for
            raise TypeError(f"named_parameters: prefix must be a string (put before each name), got {prefix!r} "
                            f"({type(prefix).__name__})")
        return _distinct_names(self, self._named_parameters_from(prefix, ()))

    def _named_parameters_from(self, prefix: str, outer: tuple):
        """named_parameters, given the modules this one sits in (`outer`)."""
        holders = outer + (self,)  # this module and the modules it sits in
        _refuse_shared_class_attributes(self)
        for name, value in vars(self).items():
            yield from _parameters_held(value, prefix + name, holders)

    def _named_parameters_inside(self, holders: tuple, name: str):
        """named_parameters of the sub-module `name` of holders[-1]; one of the `holders` again would be a cycle
        (``m.me = m``), which recursion would follow forever."""
        if any(self is holder for holder in holders):
            raise ValueError(f"{type(holders[0]).__name__}.{name} is the module itself or a module that holds it, "
                             f"so the module tree has a cycle and its parameters have no end; keep that reference "
                             f"outside the module (or delete the attribute)")
        yield from self._named_parameters_from(name + ".", holders)

    def parameters(self) -> list[Parameter]:
        """Every parameter, once (one shared by two sub-modules is listed once)."""
        unique = {id(parameter): parameter for _, parameter in self.named_parameters()}
        return list(unique.values())  # an optimiser given a duplicate would update it twice

    def zero_grad(self) -> None:
        """Forget every parameter's accumulated gradient."""
        for parameter in self.parameters():
            parameter.zero_grad()

    def state_dict(self) -> dict[str, np.ndarray]:
        """A copy of every parameter's values, by dotted name."""
        return {name: parameter._data.copy() for name, parameter in self.named_parameters()}

    def load_state_dict(self, state: dict) -> None:
        """Copy values from `state` into the parameters (names and shapes must match), in place, as an optimizer
        step changes them: a detached view of a parameter follows, and a graph built before refuses its backward."""
        if not isinstance(state, Mapping):
            raise TypeError(f"load_state_dict for {type(self).__name__}: state must be a dict of parameter name -> "
                            f"array, as state_dict() returns, got {reprlib.repr(state)} ({type(state).__name__})")
        checks.open_state(f"load_state_dict for {type(self).__name__}", state)  # not a closed NpzFile
        own = dict(self.named_parameters())
        checks.state_keys(f"load_state_dict for {type(self).__name__}", state, own)
        converted = {}
        for name, parameter in own.items():  # every value checked before any parameter changes
            try:
                given = state[name]
                values = given._data if isinstance(given, Tensor) else np.asarray(given)  # (PyTorch's hold tensors)
            except ValueError:  # nested lists of unequal lengths
                raise ValueError(f"load_state_dict for {type(self).__name__}: parameter '{name}' holds lists of "
                                 f"unequal lengths, not an array") from None
            if values.dtype.kind not in "biuf":  # complex weights would lose their imaginary parts
                raise TypeError(f"load_state_dict for {type(self).__name__}: parameter '{name}' holds {values.dtype} "
                                f"values; a parameter holds real numbers")
            if values.shape != parameter.shape:
                raise ValueError(
                    f"load_state_dict for {type(self).__name__}: parameter '{name}' has shape "
                    f"{parameter.shape} but the state holds shape {values.shape}"
                )
            try:  # 1e40 into float32 would become inf
                converted[name] = as_float_array(values, parameter.dtype)
            except OverflowError as error:
                raise ValueError(f"load_state_dict for {type(self).__name__}: parameter '{name}': {error}") from None
        _refuse_disagreeing_names(self, own, converted)
        for name, parameter in own.items():
            parameter._prepare_to_change()  # writable, one version on: a graph that read it refuses a backward
            parameter._data[...] = converted[name]  # in place, as the optimizers: a detached view follows


# Module's own methods, which an attribute of the same name would hide (forward is each subclass's to define)
_METHODS = frozenset(name for name, value in vars(Module).items()
                     if callable(value) and not name.startswith("__") and name != "forward")


def _parameters_held(value, name: str, holders: tuple):
    """Yield ``(dotted_name, parameter)`` for each parameter that `value`, named `name`, holds: itself, a module's,
    or those of the items of a list, tuple or dict (at any depth). `holders` are the modules and lists it sits in."""
    if isinstance(value, Parameter):
        yield name, value
    elif isinstance(value, Module):
        yield from value._named_parameters_inside(holders, name)
    elif isinstance(value, (list, tuple, Mapping)):
        if any(value is holder for holder in holders):
            raise ValueError(f"{type(holders[0]).__name__}.{name} is the {type(value).__name__} that holds it, so "
                             f"its parameters have no end; remove that item")
        items = value.items() if isinstance(value, Mapping) else enumerate(value)
        for key, item in items:
            yield from _parameters_held(item, f"{name}.{key}", holders + (value,))
    elif isinstance(value, Tensor) and not isinstance(holders[-1], Module):  # an item of a list, tuple or dict
        raise TypeError(f"{type(holders[0]).__name__}.{name} is a {_kind(value)} in a {type(holders[-1]).__name__} "
                        f"that parameters() searches, where a tensor must be a Parameter: a Parameter replaced by it "
                        f"would drop out of parameters() and stop training. Give it a Parameter (nn.Parameter(values)) "
                        f"or change its values with .data = ...; keep a constant tensor in an attribute of its own")
    elif (isinstance(value, Iterator) and not isinstance(value, io.IOBase)) or \
            (isinstance(value, Set) and any(isinstance(item, (Module, Tensor)) for item in value)) or \
            (isinstance(value, np.ndarray) and value.dtype == object and
             any(isinstance(item, (Module, Tensor)) for item in value.flat)):
        what = "an iterator (a generator, map, ...) would be used up" if isinstance(value, Iterator) else \
            "a set has no order, so the parameters would change places between runs" if isinstance(value, Set) else \
            "an array of objects is not searched"
        raise TypeError(f"{type(holders[0]).__name__}.{name} is a {type(value).__name__}, which parameters() cannot "
                        f"search: {what}; store a list of them instead")


def _distinct_names(module: Module, named):
    """`named` (pairs of name and parameter), refusing two parameters of one name: state_dict() would keep one.
    Dict keys make such names: {'0': a, 0: b}, or {'a.b': a, 'a': {'b': b}}."""
    seen = {}
    for name, parameter in named:
        if seen.setdefault(name, parameter) is not parameter:
            raise ValueError(f"{type(module).__name__}: two parameters are both named '{name}' (dict keys such as "
                             f"'0' and 0, or a key holding a dot, make one name twice), so state_dict() would keep "
                             f"only one; use distinct string keys without dots")
        yield name, parameter


def _refuse_disagreeing_names(module: Module, own: dict, values: dict) -> None:
    """A parameter shared under two names (``self.b = self.a``) given different `values` for them: refused, as
    the last name's would silently win; state_dict() gives both the same."""
    first_names = {}
    for name, parameter in own.items():
        first = first_names.setdefault(id(parameter), name)
        if first != name and not np.array_equal(values[first], values[name], equal_nan=True):
            raise ValueError(f"load_state_dict for {type(module).__name__}: {first} and {name} are one parameter "
                             f"(a shared module or parameter) but the state gives them different values; give "
                             f"both the same values")


def _kind(value) -> str:
    """What `value`, found where a Parameter belongs, is, in a message's words."""
    if not isinstance(value, Tensor):
        return type(value).__name__
    if not value.is_leaf:
        return f"Tensor (the result of '{value.op}')"
    return "Tensor (a leaf that requires grad, not a Parameter)" if value.requires_grad else \
        "Tensor that does not require grad"


def _refuse_shared_class_attributes(module: Module) -> None:
    """A Parameter or Module set on the class (``class M(Module): w = Parameter(...)``) is shared by every instance
    and is not in vars(module), where parameters() looks: refused, rather than never trained."""
    for cls in type(module).__mro__:
        if cls is Module:
            break
        for name, value in vars(cls).items():
            if isinstance(value, (Parameter, Module)) and name not in vars(module):
                raise TypeError(f"{cls.__name__}.{name} is a {type(value).__name__} set on the class, which "
                                f"parameters() does not search (and every instance would share it); set it in "
                                f"__init__ instead: self.{name} = ...")


class Linear(Module):
    """``y = x W^T + b`` with W of shape (out_features, in_features).

    Weights are drawn from N(0, init_std^2) with `rng` (minitorch's seeded
    default generator if None); the bias, if any, starts at zero.
    """

    optional_parameters = ("bias",)  # None with bias=False

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 init_std: float = 0.02, rng: np.random.Generator | None = None, dtype=np.float64):
        in_features = checks.integer("Linear", "in_features", in_features)
        out_features = checks.integer("Linear", "out_features", out_features)
        bias = checks.flag("Linear", "bias", bias)  # bias='no' would keep a bias
        init_std = checks.positive_number("Linear", "init_std", init_std, allow_zero=True)  # nan: weights of nan
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise TypeError(f"Linear: rng must be a NumPy Generator (np.random.default_rng(seed)) or None, got "
                            f"{rng!r:.40} ({type(rng).__name__})")
        try:
            wanted = np.dtype(dtype)
        except TypeError:
            wanted = None
        if wanted not in (np.float32, np.float64):
            raise TypeError(f"Linear: dtype must be np.float32 or np.float64, got {dtype!r}")
        checks.memory("Linear", "the weight", (out_features, in_features), wanted.itemsize)
        rng = default_generator() if rng is None else rng
        self.in_features, self.out_features = in_features, out_features
        with np.errstate(over="ignore"):
            weights = rng.normal(0.0, init_std, size=(out_features, in_features))  # (out, in)
        largest = np.finfo(wanted).max
        if not np.abs(weights).max(initial=0.0) <= largest:
            raise ValueError(f"Linear: init_std={init_std:g} draws weights too large for {wanted} (beyond "
                             f"{largest:.3g}, or inf); choose a smaller init_std")
        self.weight = Parameter(weights, dtype=dtype)
        self.bias = Parameter(np.zeros(out_features), dtype=dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        x = as_tensor(x, like=self.weight)  # an array or a nested list of numbers works too
        if self.weight.shape != (self.out_features, self.in_features) or \
                (self.bias is not None and self.bias.shape != (self.out_features,)):
            raise ValueError(f"Linear({self.in_features}, {self.out_features}): its weight has shape "
                             f"{self.weight.shape} and its bias {None if self.bias is None else self.bias.shape}, "
                             f"expected ({self.out_features}, {self.in_features}) and ({self.out_features},): one was "
                             f"replaced by a parameter of another shape")
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ValueError(
                f"Linear({self.in_features}, {self.out_features}): input has last axis "
                f"{x.shape[-1] if x.ndim else 'none'} (shape {x.shape}), expected {self.in_features}"
            )
        rows = x.reshape(-1, self.in_features)  # (..., in) -> (N, in): one matrix product, not one per sequence
        out = (rows @ self.weight.T).reshape(*x.shape[:-1], self.out_features)  # (N, out) -> (..., out)
        return out if self.bias is None else out + self.bias
