"""Hidden tests of exercise 2.5, the Adam update (chapter 07): a student edition never holds this file
(`registry.HIDDEN_TESTS`); the class grader and the Gradescope bundle run it, with the grader's seed.

Adam's trajectories on random problems (parameters of shapes the public tests do not use, gradients of scales
0.001 to 1000, some of them None) are compared with `reference_adam`, a plain re-derivation of PyTorch's Adam from
its formulas: the formulas are the exercise's answer, so they stay here, with the instructor. This file imports
nothing of the library or of the public tests, so an instructor can run it on a student's copy by hand.
"""

from __future__ import annotations

import numpy as np
import pytest


def random_problem(seed: int, steps: int = 30):
    """Four parameters and their gradients; the last three miss some steps (None), their first among them, so
    that each starts its count of updates at its own time."""
    rng = np.random.default_rng([seed, steps])
    shapes = [(4,), (3, 2), (2, 1, 3), (5,)]
    initial = [rng.normal(size=shape) for shape in shapes]
    sequences = []
    for index, shape in enumerate(shapes):
        sequence = [rng.normal(size=shape) * 10.0 ** rng.integers(-3, 4) for _ in range(steps)]
        if index > 0:
            for step in rng.choice(steps, size=steps // 3, replace=False):
                sequence[step] = None
            sequence[0] = None
        sequences.append(sequence)
    return initial, sequences


def reference_adam(theta, gradients, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
    """Adam as PyTorch defines it, for one parameter; a None gradient skips the step.

    Returns the parameter after every step. t counts only the steps that updated it.
    """
    beta1, beta2 = betas
    theta, m, v, t = theta.copy(), np.zeros_like(theta), np.zeros_like(theta), 0
    trajectory = []
    for g in gradients:
        if g is not None:
            t += 1
            g = g + weight_decay * theta  # L2 penalty added to the gradient (Adam, not AdamW)
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g**2
            m_hat = m / (1 - beta1**t)  # bias correction
            v_hat = v / (1 - beta2**t)
            theta = theta - lr * m_hat / (np.sqrt(v_hat) + eps)
        trajectory.append(theta.copy())
    return trajectory


ADAM_SETTINGS = [  # none of the public tests' settings
    dict(lr=3e-3),
    dict(lr=0.2, betas=(0.8, 0.95), eps=1e-4),
    dict(lr=0.03, weight_decay=0.2),
    dict(lr=0.01, betas=(0.0, 0.5), eps=1e-2),
    dict(lr=0.05, betas=(0.99, 0.9999), eps=1e-7, weight_decay=0.05),
]


@pytest.mark.exercise("2.5")
@pytest.mark.parametrize("settings", ADAM_SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_adam_follows_the_textbook_update_step_by_step(settings, exercise_seed, student):
    initial, sequences = random_problem(exercise_seed)
    trajectories = student.adam_trajectories(initial, sequences, **settings)
    for index, (theta, gradients, trajectory) in enumerate(zip(initial, sequences, trajectories)):
        expected = reference_adam(theta, gradients, **settings)
        assert len(trajectory) == len(expected), f"parameter {index}: expected {len(expected)} steps"
        for step, (got, want) in enumerate(zip(trajectory, expected), start=1):
            assert np.shape(got) == np.shape(want), (
                f"parameter {index} after step {step} has shape {np.shape(got)}, not its own {np.shape(want)}")
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=(
                f"parameter {index} after step {step} differs from Adam's formulas "
                f"(m, v moving averages; bias correction by 1 - β^t; eps outside the square root)"))


@pytest.mark.exercise("2.5")
def test_adam_keeps_float32_parameters_float32_and_on_the_float64_path(exercise_seed, student):
    initial, sequences = random_problem(exercise_seed, steps=6)
    single = [value.astype(np.float32) for value in initial[:2]]
    gradients = [[None if g is None else g.astype(np.float32) for g in sequence] for sequence in sequences[:2]]
    trajectories = student.adam_trajectories(single, gradients, lr=0.01)
    for index, (theta, sequence, trajectory) in enumerate(zip(single, gradients, trajectories)):
        expected = reference_adam(theta.astype(np.float64), [None if g is None else g.astype(np.float64)
                                                             for g in sequence], lr=0.01)
        for step, (got, want) in enumerate(zip(trajectory, expected), start=1):
            assert np.asarray(got).dtype == np.float32, (
                f"a float32 parameter came back as {np.asarray(got).dtype} after step {step}")  # measured here
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6,
                                       err_msg=f"float32 parameter {index} after step {step} is wrong")
