"""Gradient checks through the ``student`` fixture: the student's gradients against central differences.

The student's code computes the gradients (a whole backward pass, or one backward rule alone) through a probe; the
finite differences of ℓ = Σ w ⊙ output are computed here, in the test's process, for a random w drawn from the seed.
"""

from __future__ import annotations

import numpy as np

from minitorch.exercises.grader.sandboxed import probes
from minitorch.gradcheck import GradcheckError, compare_with_finite_differences


def check_gradients(student, expression: str, inputs, seed: int = 0, **options) -> bool:
    """The gradients of a whole backward pass of the named expression (`probes.EXPRESSIONS`), as the student's code
    computes them, against central differences of ℓ = Σ w ⊙ output computed here, w drawn from `seed`."""
    __tracebackhide__ = True
    return _check(student.gradients, expression, expression, inputs, seed, options)


def check_local_gradients(student, expression: str, inputs, seed: int = 0, **options) -> bool:
    """The output's own backward rule alone (no other rule, no topological order, no sum_to_shape), the same way;
    each gradient must have its input's shape (give inputs of one shape). True, or GradcheckError."""
    __tracebackhide__ = True
    return _check(student.local_gradients, expression, f"{expression}'s backward rule", inputs, seed, options)


def _check(probe, expression: str, name: str, inputs, seed: int, options: dict) -> bool:
    __tracebackhide__ = True
    points = [np.array(value, dtype=np.float64) for value in inputs]
    weights = np.random.default_rng(seed).standard_normal(np.shape(probes.forward(expression, points, **options)))
    answer = probe(expression, [point.copy() for point in points], weights, **options)
    claimed = answer.get("gradients") if isinstance(answer, dict) else answer
    if not isinstance(claimed, (list, tuple)):
        raise GradcheckError(f"gradcheck failed for {name}: it returned {type(claimed).__name__}, not one gradient "
                             f"per input")
    if isinstance(answer, dict):  # a whole backward pass: None where no gradient arrived
        claimed = [np.zeros_like(point) if gradient is None else gradient
                   for point, gradient in zip(points, claimed)] + list(claimed[len(points):])

    def objective() -> float:
        return float((probes.forward(expression, points, **options) * weights).sum())

    return compare_with_finite_differences(name, points, list(claimed), objective)
