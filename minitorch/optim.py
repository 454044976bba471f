"""Optimisers: SGD and Adam with PyTorch's semantics (chapter 02 writes the Adam step, chapter 07 explains it).

An optimiser holds a list of parameters and, at each `step`, updates them
in place from their ``.grad``. Parameters whose ``.grad`` is None are left
alone.
"""

from __future__ import annotations

import numpy as np

from minitorch import checks
from minitorch.nn import Module, Parameter
from minitorch.tensor import Tensor


class Setting:
    """A hyper-parameter checked whenever it is set, in the constructor or later (``optimizer.lr = 0.01``, a
    schedule, ``optimizer.momentum = 0.5``): ``check(owner, value)`` returns the value to keep or raises. It is
    kept in the optimizer's own attributes, where reading it costs nothing more (a descriptor without __get__)."""

    def __init__(self, check):
        self.check = check

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __set__(self, optimizer, value) -> None:
        optimizer.__dict__[self.name] = self.check(type(optimizer).__name__, value)


def _at_least_zero(name: str):
    return Setting(lambda owner, value: checks.positive_number(owner, name, value, allow_zero=True))


class Optimizer:
    """Shared plumbing: the parameter list and `zero_grad`."""

    lr = Setting(lambda owner, value: checks.positive_number(owner, "lr (the learning rate)", value))

    def __init__(self, parameters, lr: float):
        self.parameters = checked_parameters(type(self).__name__, parameters)
        self._made_with = tuple(self.parameters)  # the state (moments, buffers) is per parameter of this list
        self._shapes = [parameter.shape for parameter in self.parameters]  # ... and of each one's shape
        self.lr = lr

    def zero_grad(self) -> None:
        for parameter in self.parameters:
            parameter.grad = None

    def step(self) -> None:
        raise NotImplementedError(f"{type(self).__name__}.step: Optimizer is the base class, with no update rule; use "
                                  f"optim.SGD or optim.Adam, or define step() in a subclass")

    def _parameters_as_made(self) -> list[Tensor]:
        """The parameter list, checked to be the one the optimizer was made with, each parameter of the shape it had:
        its state is per parameter, so a parameter appended (twice, or new), a list replaced or a parameter given
        values of another shape would be updated with another one's state."""
        now = self.parameters
        change = _change_of_list(now, self._made_with)
        change = f"the parameter list changed since the optimizer was made: {change}" if change else next(
            (f"parameter {index} changed shape since the optimizer was made, from {shape} to {parameter.shape}"
             for index, (parameter, shape) in enumerate(zip(now, self._shapes)) if parameter.shape != shape), "")
        if change:
            raise ValueError(f"{type(self).__name__}.step: {change}; its state is per parameter: keep the parameters "
                             f"it was made with, or make a new optimizer for the new ones")
        return now

    def _gradient_of(self, index: int, parameter: Tensor) -> np.ndarray:
        """The parameter's gradient, checked: an array of the parameter's shape (one set by hand may not be)."""
        grad = parameter.grad
        if isinstance(grad, np.generic):  # a 0-d parameter's gradient may come as a NumPy scalar
            grad = np.asarray(grad)
        if not isinstance(grad, np.ndarray) or grad.shape != parameter.shape or grad.dtype.kind != "f":
            what = f"shape {grad.shape}, dtype {grad.dtype}" if isinstance(grad, np.ndarray) else type(grad).__name__
            raise ValueError(f"{type(self).__name__}.step: parameter {index} (shape {parameter.shape}) has a .grad of "
                             f"{what}; a gradient is a float array of the parameter's shape")
        return grad


def _change_of_list(now, made: tuple) -> str:
    """What makes `now` other than the list of the parameters `made` ('' if nothing), in words naming it."""
    if not isinstance(now, list):
        same = isinstance(now, tuple) and len(now) == len(made) and all(p is q for p, q in zip(now, made))
        return f"it is now a {type(now).__name__}{' of the same parameters' if same else ''}, not a list"

    def which(parameter) -> str:  # (only when something changed: a step pays for no dict)
        position = {id(made_parameter): index for index, made_parameter in enumerate(made)}
        return f"parameter {position[id(parameter)]} again" if id(parameter) in position else "a new one"

    for index, (parameter, original) in enumerate(zip(now, made)):
        if parameter is not original:
            return f"parameter {index} is now {which(parameter)}"
    if len(now) > len(made):
        return f"parameter {len(made)} was added ({which(now[len(made)])}), {len(now)} now, made with {len(made)}"
    if len(now) < len(made):
        return f"the last {len(made) - len(now)} of its {len(made)} parameters were removed"
    return ""


def checked_parameters(owner: str, parameters) -> list[Tensor]:
    """`parameters` as a list of distinct tensors, or an error saying what was passed instead."""
    if parameters is None or isinstance(parameters, (str, bytes, dict)):
        raise TypeError(f"{owner}: expected a list of parameters, got {type(parameters).__name__}; pass "
                        f"model.parameters() or [p]")
    if isinstance(parameters, (Module, Tensor)):
        what = "a model" if isinstance(parameters, Module) else "a single Tensor"
        raise TypeError(f"{owner}: expected a list of parameters, got {what}; pass model.parameters() or [p]")
    if callable(parameters):  # SGD(model.parameters, ...): the method, not the list it returns
        raise TypeError(f"{owner}: expected a list of parameters, got a {type(parameters).__name__} "
                        f"({getattr(parameters, '__name__', '?')}); call it: model.parameters()")
    parameters = list(parameters)
    if not parameters:
        raise ValueError(f"{owner}: got an empty parameter list")
    seen = {}
    for position, parameter in enumerate(parameters):
        if not isinstance(parameter, Tensor):
            raise TypeError(f"{owner}: parameter {position} is of type {type(parameter).__name__}, not a Tensor; an "
                            f"optimizer updates tensors' .data from their .grad (wrap an array: nn.Parameter(array))")
        if not parameter.is_leaf:  # backward stores no gradient on it, and its values are computed anew
            raise ValueError(f"{owner}: parameter {position} is the result of '{parameter.op}', not a leaf: an "
                             f"optimizer updates leaves (as PyTorch's: can't optimize a non-leaf Tensor); pass the "
                             f"tensors it was computed from, or make it a leaf: nn.Parameter(t.data)")
        if not parameter.requires_grad and not isinstance(parameter, Parameter):  # a constant: it never moves
            raise ValueError(f"{owner}: parameter {position} (shape {parameter.shape}) does not require grad, so no "
                             f"backward gives it a gradient; make it with requires_grad=True (nn.Parameter(array))")
        if id(parameter) in seen:  # it would be updated twice per step
            raise ValueError(f"{owner}: parameter {position} is parameter {seen[id(parameter)]} again; list each "
                             f"parameter once (model.parameters() does)")
        seen[id(parameter)] = position
    return parameters


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum and weight decay.

    With ``g = grad + weight_decay * θ``: ``b ← momentum * b + g`` (b = g at
    the first step), then ``θ ← θ - lr * b`` (or ``- lr * g`` without momentum).
    """

    momentum, weight_decay = _at_least_zero("momentum"), _at_least_zero("weight_decay")

    def __init__(self, parameters, lr: float, momentum: float = 0.0, weight_decay: float = 0.0):
        super().__init__(parameters, lr)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.buffers = [None] * len(self.parameters)

    def step(self) -> None:
        for index, parameter in enumerate(self._parameters_as_made()):
            if parameter.grad is None:
                continue
            parameter._prepare_to_change()  # writable, one version on: a graph that read it refuses a backward
            grad = self._gradient_of(index, parameter) + self.weight_decay * parameter._data
            if self.momentum:
                previous = self.buffers[index]
                grad = grad if previous is None else self.momentum * previous + grad
                self.buffers[index] = grad
            parameter._data -= self.lr * grad


class Adam(Optimizer):
    """Adam (Kingma & Ba), as ``torch.optim.Adam`` computes it.

    Each parameter keeps running averages of its gradient (the first moment, m) and of its squared
    gradient (the second moment, v), both starting at zero, and counts its own updates t = 1, 2, ...;
    `step` hands each parameter with a gradient to `adam_update` (exercise 2.5), which chapter 02
    states and chapter 07 explains: a step of about ``lr`` per coordinate, along the sign of the
    averaged gradient, with both averages corrected for their start at zero.
    """

    betas, eps, weight_decay = Setting(lambda owner, value: checked_betas(owner, value)), _at_least_zero("eps"), \
        _at_least_zero("weight_decay")

    def __init__(self, parameters, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0):
        super().__init__(parameters, lr)
        self.betas = betas
        self.eps = eps
        self.weight_decay = weight_decay
        self.first_moments = [np.zeros_like(p.data) for p in self.parameters]
        self.second_moments = [np.zeros_like(p.data) for p in self.parameters]
        # t counts each parameter's own updates, as in PyTorch: a parameter skipped
        # (grad None) at some steps must not have its bias correction advanced
        self.step_counts = [0] * len(self.parameters)

    def step(self) -> None:
        for index, parameter in enumerate(self._parameters_as_made()):
            if parameter.grad is None:
                continue
            self.step_counts[index] += 1
            theta, self.first_moments[index], self.second_moments[index] = adam_update(
                parameter.data, self._gradient_of(index, parameter), self.first_moments[index],
                self.second_moments[index], self.step_counts[index], self.lr, self.betas, self.eps, self.weight_decay)
            parameter._prepare_to_change()  # writable, one version on: a graph that read it refuses a backward
            parameter._data[...] = theta  # in place, as SGD: a detached view of the parameter follows it
            if self.eps == 0 and np.isnan(parameter._data).any():  # (eps > 0 keeps every division finite)
                raise FloatingPointError(f"Adam.step: parameter {index} (shape {parameter.shape}) became NaN: with "
                                         f"eps=0, an element whose gradient was 0 at every step divides 0 by 0; "
                                         f"use eps > 0 (the default is 1e-8)")


def checked_betas(owner: str, betas) -> tuple[float, float]:
    """`betas` as a pair of floats (β1, β2) in [0, 1), or an error naming `owner` (β = 1 divides by 1 - β^t = 0)."""
    betas = tuple(betas.tolist()) if isinstance(betas, np.ndarray) and betas.shape == (2,) else betas
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(f"{owner}: betas must be a pair (beta1, beta2), e.g. (0.9, 0.999), got {betas!r}")
    beta1, beta2 = (checks.positive_number(owner, "betas", beta, allow_zero=True) for beta in betas)
    if not (beta1 < 1 and beta2 < 1):
        raise ValueError(f"{owner}: betas must lie in [0, 1), got {betas}")
    return beta1, beta2


MAX_STEPS = 2**63 - 1  # the most updates a step count holds (PyTorch counts them in 64 bits)


def _adam_inputs(theta, grad, m, v, t, lr, betas, eps, weight_decay) -> tuple:
    """adam_update's inputs, checked: the step count (1 - β^t = 0 at t = 0), the hyper-parameters, θ a float array
    and the shapes."""
    t = checks.integer("adam_update", "t", t, minimum=1, maximum=MAX_STEPS)  # β^t of a larger t overflows a float
    lr = checks.positive_number("adam_update", "lr", lr)
    eps = checks.positive_number("adam_update", "eps", eps, allow_zero=True)
    weight_decay = checks.positive_number("adam_update", "weight_decay", weight_decay, allow_zero=True)
    if not (isinstance(theta, np.ndarray) and theta.dtype.kind == "f"):  # an integer θ would be truncated
        what = f"an array of dtype {theta.dtype}" if isinstance(theta, np.ndarray) else type(theta).__name__
        raise TypeError(f"adam_update: theta must be a float ndarray (the parameter's values), got {what}")
    for name, value in (("grad", grad), ("m", m), ("v", v)):  # a list would be repeated by `*`, not multiplied
        if not (isinstance(value, (np.ndarray, np.generic, int, float)) and checks.is_real(np.asarray(value).dtype)):
            what = f"an array of dtype {value.dtype}" if isinstance(value, np.ndarray) else type(value).__name__
            raise TypeError(f"adam_update: {name} must be an ndarray of numbers of theta's shape, got {what}")
    if not np.shape(grad) == np.shape(m) == np.shape(v) == theta.shape:
        shapes = {"grad": np.shape(grad), "m": np.shape(m), "v": np.shape(v)}
        raise ValueError(f"adam_update: grad, m and v must have theta's shape {theta.shape}, got "
                         + ", ".join(f"{name} {shape}" for name, shape in shapes.items()))
    if (np.asarray(v) < 0).any():  # a mean of squared gradients; √v of a negative entry is nan
        raise ValueError(f"adam_update: v (the second moment, a mean of squared gradients) must not be negative, got "
                         f"{np.min(v)} among its entries")
    return theta, grad, m, v, t, lr, checked_betas("adam_update", betas), eps, weight_decay


@checks.inputs_checked_by(_adam_inputs)
def adam_update(theta: np.ndarray, grad: np.ndarray, m: np.ndarray, v: np.ndarray, t: int, lr: float,
                betas: tuple[float, float], eps: float, weight_decay: float):
    """Exercise 2.5: one Adam update of one parameter ``θ``, as chapter 02 states it: return the new
    ``(θ, m, v)``, new arrays (the ones given are not changed), θ in the dtype of `theta`. `t` counts this
    parameter's updates, this one included (1 at the first); ``g = grad + weight_decay · θ``."""
    beta1, beta2 = betas
    grad = grad + weight_decay * theta if weight_decay else grad
    m = m * beta1 + (1 - beta1) * grad
    v = v * beta2 + (1 - beta2) * grad * grad
    step_size = lr / (1 - beta1**t)
    denominator = np.sqrt(v) / np.sqrt(1 - beta2**t) + eps
    return (theta - step_size * m / denominator).astype(theta.dtype), m, v  # θ keeps its dtype (float32 stays)
