"""Specification of minitorch.optim: SGD and Adam with PyTorch's semantics (chapter 07).

PyTorch is not a dependency, so SGD is compared with a plain re-derivation written below from the textbook
formulas (a loop over steps), and Adam, an exercise, with trajectories and numbers worked out beforehand and
kept here as numbers (the formulas themselves would be its answer; tests/hidden/ holds that comparison).
Graded here: exercise 2.5 (the Adam step), only through the ``student`` fixture: the graded tests drive
the student's Adam with prescribed gradients (``student.adam_trajectories``) and check where it goes.
"""

from __future__ import annotations

import numpy as np
import pytest

from minitorch import Tensor
from minitorch.nn import Linear, Module, Parameter
from minitorch.optim import SGD, Adam


def reference_sgd(theta, gradients, lr, momentum=0.0, weight_decay=0.0):
    """SGD as PyTorch defines it (no dampening, no Nesterov), for one parameter."""
    theta, buffer = theta.copy(), None
    trajectory = []
    for g in gradients:
        if g is not None:
            g = g + weight_decay * theta
            if momentum:
                buffer = g.copy() if buffer is None else momentum * buffer + g  # buffer = g at the first step
                g = buffer
            theta = theta - lr * g
        trajectory.append(theta.copy())
    return trajectory


def run_optimizer(optimizer_class, initial_values, gradient_sequences, **settings):
    """Drive a minitorch optimiser with prescribed gradients; returns each parameter's trajectory."""
    parameters = [Parameter(values.copy()) for values in initial_values]
    optimizer = optimizer_class(parameters, **settings)
    trajectories = [[] for _ in parameters]
    for step_gradients in zip(*gradient_sequences):
        for parameter, gradient in zip(parameters, step_gradients):
            parameter.grad = None if gradient is None else gradient.copy()
        optimizer.step()
        for trajectory, parameter in zip(trajectories, parameters):
            trajectory.append(parameter.data.copy())
    return trajectories


def random_problem(seed, steps=25, skip=True):
    """Three parameters of different shapes and their gradients; some gradients are None."""
    rng = np.random.default_rng(seed)
    shapes = [(3,), (2, 4), ()]
    initial = [rng.standard_normal(shape) for shape in shapes]
    sequences = []
    for index, shape in enumerate(shapes):
        sequence = [rng.standard_normal(shape) * rng.choice([0.01, 1.0, 100.0]) for _ in range(steps)]
        if skip and index > 0:
            for step in rng.choice(steps, size=steps // 4, replace=False):
                sequence[step] = None
            sequence[0] = None  # the first update of this parameter comes later than the others'
        sequences.append(sequence)
    return initial, sequences




# Adam's trajectories on one small problem, for each setting, worked out once with the formulas of chapter 07
# (PyTorch's Adam) and kept here as numbers: (settings, θ of the vector after each step, θ of the scalar after
# each step). The vector gets a gradient at every step, the scalar only at step 2 (its first step, t = 1).
# tests/hidden/ compares random problems (the grader's seed) with the formulas themselves.
ADAM_INITIAL = [np.array([0.5, -1.0, 2.0]), np.array(0.3)]
ADAM_GRADIENTS = [[np.array([0.1, -2.0, 30.0]), np.array([0.2, 1.5, -10.0]), np.array([-0.05, -3.0, 20.0])],
                  [None, np.array(4.0), None]]
ADAM_WORKED = [
    (dict(lr=1e-3),
     [[0.4990000001, -0.999000000005, 1.9990000000003334], [0.49803481813521255, -0.9989106749981, 1.998599781428558],
      [0.49744621144698115, -0.9983755774937736, 1.9979966949373955]],
     [0.3, 0.2990000000025, 0.2990000000025]),
    (dict(lr=0.1, betas=(0.5, 0.9), eps=1e-3),
     [[0.40099009900990096, -0.9000499750124937, 1.900003333222226],
      [0.2978490499869636, -0.9190358308405718, 1.884772803603399],
      [0.26541392503492117, -0.8505731105316363, 1.824154080287701]],
     [0.3, 0.2000249937515621, 0.2000249937515621]),
    (dict(lr=0.01, weight_decay=0.1),
     [[0.4900000006666666, -0.990000000047619, 1.9900000000033113],
      [0.48016870171550835, -0.9885580613646061, 1.9859250488951212],
      [0.47261286359388727, -0.9829000243761645, 1.9798368530566361]],
     [0.3, 0.2900000000248139, 0.2900000000248139]),
    (dict(lr=0.05, betas=(0.0, 0.0)),
     [[0.4500000049999995, -0.95000000025, 1.9500000000166666],
      [0.40000000749999937, -0.9999999999166667, 1.9999999999666667],
      [0.44999999750000136, -0.9500000000833333, 1.9499999999916666]],
     [0.3, 0.250000000125, 0.250000000125]),
    (dict(lr=0.02, betas=(0.95, 0.98), eps=1e-6, weight_decay=0.5),
     [[0.4800000571426939, -0.9800000079999968, 1.9800000006451612],
      [0.4600931986599662, -0.9726301987382477, 1.970776845703843],
      [0.4412433659788079, -0.9594914333258119, 1.9579886552845942]],
     [0.3, 0.28000000481927595, 0.28000000481927595]),
]


@pytest.mark.exercise("2.5")
@pytest.mark.parametrize("settings,vector,scalar", ADAM_WORKED,
                         ids=[",".join(f"{k}={v}" for k, v in settings.items()) for settings, _, _ in ADAM_WORKED])
def test_adam_follows_the_worked_out_trajectories_step_by_step(settings, vector, scalar, student):
    trajectories = student.adam_trajectories(ADAM_INITIAL, ADAM_GRADIENTS, **settings)
    for index, (trajectory, expected) in enumerate(zip(trajectories, (vector, scalar))):
        assert len(trajectory) == len(expected), f"parameter {index}: expected {len(expected)} steps"
        for step, (got, want) in enumerate(zip(trajectory, expected), start=1):
            assert np.shape(got) == np.shape(ADAM_INITIAL[index]), (
                f"parameter {index} after step {step} has shape {np.shape(got)}, not its own "
                f"{np.shape(ADAM_INITIAL[index])}")
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=(
                f"parameter {index} after step {step} differs from the worked-out trajectory: check the moving "
                f"averages, their bias correction and where eps enters (chapter 07)"))


@pytest.mark.exercise("2.5")
def test_adam_first_step_moves_each_parameter_by_lr_against_the_sign_of_its_gradient(exercise_seed, student):
    # Adam's first step has size lr, up to eps, whatever the gradient's scale
    rng = np.random.default_rng(exercise_seed)
    magnitudes = np.array([1e-3, 1e-2, 1, 10, 100, 1e3]) * rng.uniform(0.5, 2.0, size=6)  # all >= 5e-4
    gradient = rng.choice([-1.0, 1.0], size=6) * magnitudes
    [[after]] = student.adam_trajectories([np.zeros(6)], [[gradient]], lr=0.01, eps=1e-8)
    assert np.shape(after) == (6,), f"the parameter should keep its shape (6,), got {np.shape(after)}"
    # eps changes a step by less than lr * eps / |g| <= 0.01 * 1e-8 / 5e-4 = 2e-7
    np.testing.assert_allclose(after, -0.01 * np.sign(gradient), rtol=0, atol=2e-7,
                               err_msg="Adam's first step should have size lr whatever the gradient's scale")


@pytest.mark.exercise("2.5")
def test_adam_with_a_constant_gradient_moves_lr_every_step(student):
    [trajectory] = student.adam_trajectories([np.zeros(2)], [[np.array([2.0, -0.5])] * 5], lr=0.1, eps=0.0)
    assert np.shape(trajectory[-1]) == (2,), f"the parameter should keep its shape (2,), got {np.shape(trajectory[-1])}"
    np.testing.assert_allclose(trajectory[-1], [-0.5, 0.5], rtol=1e-9,
                               err_msg="with a constant gradient (and eps = 0) every step of Adam has size lr")


@pytest.mark.exercise("2.5")
def test_adam_two_steps_match_numbers_worked_out_by_hand(student):
    # lr = 0.1, β = (0.9, 0.999), eps = 0, θ0 = 0, gradients 1 then 3: θ1 = -0.1, θ2 = -0.1917781119 (both can be
    # worked out by hand from chapter 07's formulas)
    [[first, second]] = student.adam_trajectories([np.array(0.0)], [[np.array(1.0), np.array(3.0)]], lr=0.1, eps=0.0)
    assert np.shape(first) == np.shape(second) == (), "a 0-d parameter should stay 0-d"
    assert float(first) == pytest.approx(-0.1, rel=1e-12)
    assert float(second) == pytest.approx(-0.1917781119, rel=1e-9)


@pytest.mark.exercise("2.5")
def test_adam_weight_decay_is_added_to_the_gradient(student):
    # a zero gradient: all the pull comes from the decay term weight_decay * θ
    [[after]] = student.adam_trajectories([np.array([2.0, -3.0])], [[np.zeros(2)]], lr=0.1, weight_decay=0.01)
    assert np.shape(after) == (2,), f"the parameter should keep its shape (2,), got {np.shape(after)}"
    np.testing.assert_allclose(after, [1.9, -2.9], rtol=1e-6)


@pytest.mark.exercise("2.5")
def test_adam_skips_a_parameter_without_gradient_and_starts_its_count_when_it_gets_one(student):
    # `used` gets a gradient at every step; `unused` none for three steps, then one at the fourth
    _, unused = student.adam_trajectories([np.array([1.0]), np.array([1.0])],
                                          [[np.array([1.0])] * 4, [None, None, None, np.array([4.0])]], lr=0.1)
    assert [np.shape(after) for after in unused] == [(1,)] * 4, "the parameter should keep its shape (1,)"
    for after in unused[:3]:
        np.testing.assert_array_equal(after, [1.0], err_msg="a parameter with grad None must not move")
    np.testing.assert_allclose(unused[3], [0.9], rtol=1e-6, err_msg=(
        "a parameter's first update is a first step (t = 1, size lr) even if other parameters were "
        "updated before: PyTorch keeps the step count per parameter"))


@pytest.mark.exercise("2.5", requires_values=True)
def test_adam_keeps_float32_parameters_float32(student):
    [trajectory] = student.adam_trajectories([np.ones(3, dtype=np.float32)], [[np.full(3, 0.5, dtype=np.float32)] * 3],
                                             lr=0.1)
    assert all(after.dtype == np.float32 for after in trajectory), (
        f"float32 parameters came back as {[str(after.dtype) for after in trajectory]}")


SGD_SETTINGS = [
    dict(lr=0.1),
    dict(lr=0.01, momentum=0.9),
    dict(lr=0.05, weight_decay=0.01),
    dict(lr=0.02, momentum=0.5, weight_decay=0.1),
]


@pytest.mark.parametrize("settings", SGD_SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_sgd_follows_the_textbook_update_step_by_step(settings):
    initial, sequences = random_problem(1)
    trajectories = run_optimizer(SGD, initial, sequences, **settings)
    for index, (theta, gradients, trajectory) in enumerate(zip(initial, sequences, trajectories)):
        for step, (got, want) in enumerate(zip(trajectory, reference_sgd(theta, gradients, **settings)), start=1):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                       err_msg=f"SGD parameter {index} after step {step}")


def test_sgd_with_momentum_matches_numbers_worked_out_by_hand():
    # lr = 0.1, momentum = 0.9, gradient 1 twice: buffer 1 then 0.9 * 1 + 1 = 1.9
    parameter = Parameter([0.0])
    optimizer = SGD([parameter], lr=0.1, momentum=0.9)
    for expected in (-0.1, -0.1 - 0.19):
        parameter.grad = np.array([1.0])
        optimizer.step()
        np.testing.assert_allclose(parameter.data, [expected], rtol=1e-12,
                                   err_msg="momentum buffer: b = g at the first step, then b = μ b + g")


def test_sgd_weight_decay_pulls_towards_zero():
    parameter = Parameter([1.0])
    parameter.grad = np.array([0.0])
    SGD([parameter], lr=0.1, weight_decay=0.1).step()
    np.testing.assert_allclose(parameter.data, [0.99], rtol=1e-12)  # 1 - 0.1 * (0 + 0.1 * 1)


def test_sgd_skips_a_parameter_without_gradient():
    parameter = Parameter([1.0, 2.0])
    SGD([parameter], lr=0.1, momentum=0.9).step()
    np.testing.assert_array_equal(parameter.data, [1.0, 2.0])


@pytest.mark.parametrize("optimizer_class", [SGD, Adam])
def test_optimizer_zero_grad_clears_every_gradient(optimizer_class):
    parameters = [Parameter([1.0]), Parameter([2.0])]
    for parameter in parameters:
        parameter.grad = np.ones(1)
    optimizer_class(parameters, lr=0.1).zero_grad()
    assert all(parameter.grad is None for parameter in parameters)


@pytest.mark.parametrize("make", [
    lambda: SGD([], lr=0.1),
    lambda: SGD([Parameter([1.0])], lr=0.0),
    lambda: Adam([Parameter([1.0])], lr=-1e-3),
    lambda: Adam([Parameter([1.0])], betas=(0.9, 1.0)),
], ids=["no-parameters", "zero-lr", "negative-lr", "beta-of-1"])
def test_optimizer_settings_are_validated(make):
    with pytest.raises(ValueError):
        make()


@pytest.mark.parametrize("t, grad_shape, betas, culprit", [
    (0, (2,), (0.9, 0.999), r"adam_update: t must be an integer >= 1, got 0"),  # not a ZeroDivisionError
    (1, (3,), (0.9, 0.999), r"adam_update: grad, m and v must have theta's shape \(2,\), got grad \(3,\)"),
    (1, (2,), (1.0, 0.999), r"adam_update: betas must lie in \[0, 1\), got \(1.0, 0.999\)"),
], ids=["t-0", "grad-of-another-shape", "beta-of-1"])
def test_adam_update_called_directly_names_a_bad_input_outside_the_exercise(t, grad_shape, betas, culprit):
    """Checked before exercise 2.5's body runs, so a student's answer never sees these inputs."""
    from minitorch.optim import adam_update

    with pytest.raises(ValueError, match=culprit):
        adam_update(np.ones(2), np.ones(grad_shape), np.zeros(2), np.zeros(2), t, 0.1, betas, 1e-8, 0.0)


# ----------------------------------------------------------------------
# fitting a small model


class TwoLayerNet(Module):
    def __init__(self, hidden: int, rng):
        self.hidden = Linear(2, hidden, init_std=0.5, rng=rng)
        self.output = Linear(hidden, 1, init_std=0.5, rng=rng)

    def forward(self, x):
        return self.output(self.hidden(x).relu())  # (B, 2) -> (B, hidden) -> (B, 1)


def test_adam_fits_a_two_layer_net_to_a_smooth_target():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(128, 2))
    target = (np.sin(3 * x[:, :1]) + x[:, 1:] ** 2)  # (128, 1)
    model = TwoLayerNet(32, rng)
    optimizer = Adam(model.parameters(), lr=0.02)
    inputs, targets = Tensor(x), Tensor(target)
    initial_loss = ((model(inputs) - targets) ** 2).mean().item()
    for _ in range(600):
        loss = ((model(inputs) - targets) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    # observed (seed 0): 1.41 at the start, 4.7e-4 after 600 steps; the target's variance is 0.58
    assert loss.item() < 5e-3, f"Adam left the mean squared error at {loss.item():.4f} (started at {initial_loss:.3f})"


def test_adam_recovers_the_weights_of_a_noiseless_linear_regression():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 5))
    true_weight, true_bias = rng.standard_normal((1, 5)), 0.7
    targets = Tensor(x @ true_weight.T + true_bias)  # (64, 1)
    model = Linear(5, 1, rng=rng)
    optimizer = Adam(model.parameters(), lr=0.05)
    for _ in range(400):
        loss = ((model(Tensor(x)) - targets) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    # observed (seed 1): loss 2.6e-19, weights and bias within 2e-10 of the truth
    assert loss.item() < 1e-10, f"linear regression should be solved almost exactly, loss {loss.item():.2e}"
    np.testing.assert_allclose(model.weight.data, true_weight, atol=1e-6)
    np.testing.assert_allclose(model.bias.data, [true_bias], atol=1e-6)
