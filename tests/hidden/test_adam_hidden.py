"""Hidden tests of exercise 2.5, the Adam update (chapter 07): a student edition never holds this file
(`registry.HIDDEN_TESTS`); the class grader and the Gradescope bundle run it, with the grader's seed.

Adam's trajectories on random problems (parameters of several shapes, gradients of scales 0.01 to 100, some of
them None) are compared with `reference_adam`, a plain re-derivation of PyTorch's Adam from its formulas: the
formulas are the exercise's answer, so they stay here, with the instructor.
"""

from __future__ import annotations

import numpy as np
import pytest

from test_optim import random_problem  # the public tests' problem generator (tests/ is on the path)


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


ADAM_SETTINGS = [
    dict(lr=1e-3),
    dict(lr=0.1, betas=(0.5, 0.9), eps=1e-3),
    dict(lr=0.01, weight_decay=0.1),
    dict(lr=0.05, betas=(0.0, 0.0)),
    dict(lr=0.02, betas=(0.95, 0.98), eps=1e-6, weight_decay=0.5),
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
