"""Checking gradients against finite differences (chapter 01).

For a function ``f`` of tensors, `gradcheck` compares the gradient from
`Tensor.backward` ("analytic") with the central difference

    ∂ℓ/∂x_e ≈ (ℓ(x + h e) - ℓ(x - h e)) / (2h),

element by element, in float64. If ``f`` returns more than one number, the
scalar checked is ``ℓ = Σ w ⊙ f(x)`` for a fixed random ``w``, which tests
every output at once.
"""

from __future__ import annotations

import reprlib

import numpy as np

from minitorch import checks
from minitorch.tensor import Tensor, no_grad, topological_order


class GradcheckError(AssertionError):
    """The analytic and numeric gradients disagree."""


def gradcheck(function, inputs, step: float = 1e-6, atol: float = 1e-6, rtol: float = 1e-5, seed: int = 0) -> bool:
    """Check the gradient of ``function(*inputs)`` with respect to every input.

    Parameters
    ----------
    function : callable
        Takes the tensors of `inputs` and returns a Tensor.
    inputs : list (or tuple) of Tensor or array
        The point at which to check, one entry per argument of `function`. They
        are copied to float64 leaves with ``requires_grad=True``; the originals
        are not touched.
    step : float
        The finite-difference step ``h``.
    atol, rtol : float
        An element passes if ``|analytic - numeric| <= atol + rtol * |numeric|``.
    seed : int
        Seeds the random weights ``w`` (an integer >= 0).

    Returns True, or raises GradcheckError naming the function, the argument,
    the element, and both values.
    """
    __tracebackhide__ = True  # pytest: a failing check shows the caller's line and this message, not this loop
    if not callable(function):
        raise TypeError(f"gradcheck: function must be callable (it takes the input tensors and returns a Tensor), "
                        f"got {function!r} ({type(function).__name__})")
    if not isinstance(inputs, (list, tuple)):
        shape = getattr(inputs, "shape", None)
        what = reprlib.repr(inputs) if shape is None else f"one {type(inputs).__name__} of shape {shape}"
        raise TypeError(f"gradcheck: inputs must be a list of the function's arguments, got {what}; for a function "
                        f"of one tensor x write gradcheck(function, [x])")
    if len(inputs) == 0:  # no leaf to differentiate with respect to: nothing would be checked
        raise ValueError("gradcheck: inputs is empty, so there is no gradient to check; list the tensors the "
                         "function takes, e.g. gradcheck(lambda x: (x * x).sum(), [x])")
    seed = checks.integer("gradcheck", "seed", seed, minimum=0)  # before the function runs
    step = checks.positive_number("gradcheck", "step", step)  # step=0 would divide by zero
    atol = checks.positive_number("gradcheck", "atol", atol, allow_zero=True)
    rtol = checks.positive_number("gradcheck", "rtol", rtol, allow_zero=True)
    leaves = [Tensor(checks.real_numbers("gradcheck", f"inputs[{index}]", _data(x), finite=False), requires_grad=True)
              for index, x in enumerate(inputs)]
    for index, leaf in enumerate(leaves):  # (±inf is allowed: a masked score)
        if np.isnan(leaf.data).any():
            element = tuple(int(i) for i in np.argwhere(np.isnan(leaf.data))[0])
            raise ValueError(f"gradcheck: inputs[{index}] holds NaN (element {element}); a gradient at NaN cannot be "
                             f"checked: choose a point of numbers")
    name = getattr(function, "__name__", repr(function))

    output = function(*leaves)
    if not isinstance(output, Tensor):
        raise TypeError(f"gradcheck: {name} must return a Tensor, got {type(output).__name__}")
    if not output.requires_grad:  # backward's own error would ask for inputs that require grad, which these do
        raise ValueError(f"gradcheck: {name} returned a tensor cut from its inputs (gradcheck made each input a leaf "
                         f"with requires_grad=True, yet the result does not require grad): it was computed from their "
                         f"values (t.data, tensor(...), NumPy) or inside no_grad(); compute it with minitorch's "
                         f"operations on the input tensors themselves")
    weights = np.random.default_rng(seed).standard_normal(output.shape)

    def scalar_objective() -> float:
        with no_grad():
            return float((function(*leaves).data * weights).sum())

    output.backward(weights)  # ∂ℓ/∂output = w; seeding it directly needs no mul or sum backward
    analytic = [np.zeros_like(leaf.data) if leaf.grad is None else leaf.grad for leaf in leaves]
    return compare_with_finite_differences(name, [leaf.data for leaf in leaves], analytic, scalar_objective,
                                           step, atol, rtol,
                                           explain=lambda: _nondeterminism_note(name, scalar_objective)
                                           + _infinite_note(output) + _kinks_note(output, step)
                                           + _rounding_note(leaves, step) + _low_precision_note(output, step)
                                           + _value_rounding_note(output, weights, step, atol))


def compare_with_finite_differences(name: str, points, analytic, objective, step: float = 1e-6, atol: float = 1e-6,
                                    rtol: float = 1e-5, explain=lambda: "") -> bool:
    """Check the gradients `analytic` (one array per point) of the scalar ``objective()``, which reads the
    arrays `points`: each element is nudged by ±`step` in place (and put back) for a central difference.

    Returns True, or raises GradcheckError naming `name`, the argument, the element and both values;
    ``explain()`` may add a sentence (why the point may be to blame)."""
    __tracebackhide__ = True
    if len(analytic) != len(points):
        raise GradcheckError(f"gradcheck failed for {name}: {len(points)} arguments but {len(analytic)} gradients")
    for position, (point, claimed) in enumerate(zip(points, analytic)):
        claimed = np.asarray(claimed, dtype=float)
        if claimed.shape != point.shape:
            raise GradcheckError(f"gradcheck failed for {name}: argument {position} has shape {point.shape} but its "
                                 f"gradient has shape {claimed.shape}")
        numeric = np.empty_like(point)
        for element in np.ndindex(point.shape):
            original = point[element]
            up, down = original + step, original - step  # as float64 holds them: x ± step, rounded
            if up == down and np.isfinite(original):
                raise ValueError(f"gradcheck: argument {position} element {element} is {original:.3g}, where a step "
                                 f"of {step:g} is below float64's precision (x + step == x): no finite difference "
                                 f"can be measured there; check at smaller values, or pass a larger step")
            point[element] = up
            above = objective()
            point[element] = down
            below = objective()
            point[element] = original
            # divided by the step taken, not 2 * step: at |x| = 1e10 the rounding of x ± step is no longer small
            # (an infinite x, a masked score, has up - down = nan: its difference is 0 over any step)
            numeric[element] = (above - below) / ((up - down) if np.isfinite(original) else 2 * step)
        wrong = ~(np.abs(claimed - numeric) <= atol + rtol * np.abs(numeric))  # NaN counts as wrong
        if wrong.any():
            element = tuple(int(index) for index in np.argwhere(wrong)[0])
            raise GradcheckError(
                f"gradcheck failed for {name}: argument {position} (shape {point.shape}), "
                f"element {element}: analytic gradient {claimed[element]:.8g}, "
                f"numeric (central difference) {numeric[element]:.8g}, "
                f"difference {claimed[element] - numeric[element]:.3g}; "
                f"{int(wrong.sum())} of {wrong.size} elements of this argument disagree" + explain()
            )
    return True


# Where an operation has no derivative: a finite difference across such a point measures
# neither one-sided slope, so a failure there says nothing about the backward rule.
def _near_a_tie(node: Tensor, step: float) -> np.ndarray:
    """Which inputs of a max lie within a step of a maximum they are not: nudged, they could take its place."""
    values, maxima = node.parents[0].data.ravel(), np.unique(node.data)  # maxima sorted
    right = np.clip(np.searchsorted(maxima, values), 0, maxima.size - 1)
    left = np.clip(right - 1, 0, maxima.size - 1)
    distance = np.minimum(np.abs(values - maxima[left]), np.abs(values - maxima[right]))  # to the nearest maximum
    return (distance > 0) & (distance < 2 * step)


KINKS = {
    "relu": ("0, where relu has no derivative (it is taken to be 0)",
             lambda node, step: np.abs(node.parents[0].data) < step),
    "log": ("0 or below, where log has no derivative", lambda node, step: node.parents[0].data < step),
    "abs": ("0, where abs has no derivative (it is taken to be 0)",
            lambda node, step: np.abs(node.parents[0].data) < step),
    "max": ("a near-tie for the maximum, where max has no derivative (a nudge changes which element is largest)",
            _near_a_tie),
}


def _kinks_note(output: Tensor, step: float) -> str:
    """A sentence naming every recorded operation whose input lies within `step` of a kink."""
    notes = []
    for node in topological_order(output):
        if node.op in KINKS and node.parents:
            where, near = KINKS[node.op]
            hits = int(near(node, step).sum())
            if hits:
                notes.append(f"'{node.op}' has {hits} input(s) at {where}")
    if not notes:
        return ""
    return (f". The point is not differentiable: {'; '.join(notes)}. Check the gradient at a point away "
            f"from it (farther than step={step:g})")


def _nondeterminism_note(name: str, objective) -> str:
    """A sentence if the function gives two values at one point (it draws random numbers, or reads state that
    changes between calls): a difference of its values then measures that change, whatever the backward rule."""
    first, second = objective(), objective()
    if first == second or (np.isnan(first) and np.isnan(second)):
        return ""
    return (f". {name} is not deterministic: at the same point it gave {first:.10g}, then {second:.10g}, so the "
            f"central difference measures that change, not the gradient; check it without the randomness (no noise, "
            f"or a generator seeded inside the function)")


def _infinite_note(output: Tensor) -> str:
    """A sentence if the function's value is infinite or NaN at the point: ℓ(x ± h e) is then inf (or nan) too, and
    their difference nan, whatever the backward rule."""
    if np.isfinite(output.data).all():
        return ""
    return (". The function's value is not finite at this point (its result holds inf or nan), so no difference of "
            "its values can be measured: check at a point where it is finite")


def _rounding_note(leaves: list, step: float) -> str:
    """A sentence if the inputs are so large that float64's rounding of them is not small beside `step`: the
    central difference there is imprecise, whatever the backward rule."""
    largest = max((float(np.abs(leaf.data[np.isfinite(leaf.data)]).max(initial=0.0)) for leaf in leaves), default=0.0)
    rounding = largest * np.finfo(np.float64).eps
    if rounding <= 1e-3 * step:
        return ""
    return (f". The inputs reach {largest:.3g}, where float64 rounds to about {rounding:.2g}, not small beside the "
            f"step {step:g}: the central difference is imprecise there; check at smaller values")


def _value_rounding_note(output: Tensor, weights: np.ndarray, step: float, atol: float) -> str:
    """A sentence if the function's values are so large beside `step` that float64's rounding of the objective
    ℓ = Σ w·f, divided by the step, is not small beside `atol`: the central difference then measures rounding
    (f = x + 1e6, or a step of 1e-12), whatever the backward rule."""
    weighted = np.abs(output.data * weights)
    objective = float(weighted[np.isfinite(weighted)].sum())
    error = objective * np.finfo(np.float64).eps / step  # about what rounding ℓ(x ± h) adds to their difference / 2h
    if error <= atol:
        return ""
    return (f". The function's values reach {float(np.abs(output.data).max(initial=0.0)):.3g}: float64 rounds the "
            f"weighted sum it differences to about {objective * np.finfo(np.float64).eps:.2g}, which over the step "
            f"{step:g} is an error of about {error:.2g} in each difference, above atol {atol:g}: check where the "
            f"values are smaller, or pass a larger step")


def _low_precision_note(output: Tensor, step: float) -> str:
    """A sentence if the function computes in a float type narrower than float64 (the inputs are float64 leaves, but
    ``x.astype(np.float32)`` inside rounds again): its rounding, not small beside `step`, spoils the difference."""
    narrow = sorted({str(node.dtype) for node in topological_order(output) if node.dtype != np.float64})
    if not narrow:
        return ""
    return (f". The function rounds to {' and '.join(narrow)} inside (its result is {output.dtype}), whose rounding is "
            f"not small beside the step {step:g}: the central difference measures that rounding, not the gradient; "
            f"check the function in float64")


def _data(x):
    return x.data if isinstance(x, Tensor) else x
