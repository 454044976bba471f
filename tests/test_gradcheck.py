"""Specification of minitorch.gradcheck: the tool every other gradient test relies on (chapter 01).

A checker that cannot fail is worse than none, so most of these tests feed it a deliberately
wrong backward (built with `Tensor.from_op`) and check that it says exactly what is wrong.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitorch
from minitorch import GradcheckError, Tensor, gradcheck


def square_with_doubled_gradient(x: Tensor) -> Tensor:
    """x² whose backward claims 4x instead of 2x: off by a factor 2."""
    return Tensor.from_op(x.data**2, (x,), lambda grad: (grad * 4 * x.data,), "bad_square")


def sum_of_a_and_b_cubed_with_wrong_second_gradient(a: Tensor, b: Tensor) -> Tensor:
    """a + b³ whose backward is right for a and twice too large for b. (Not a product: mul's rule is exercise 1.2,
    and a test file every edition ships must not spell it.)"""
    return Tensor.from_op(a.data + b.data**3, (a, b), lambda grad: (grad, 6 * grad * b.data**2), "bad_cube")


def reported_values(message: str) -> tuple[float, float]:
    analytic = re.search(r"analytic gradient (\S+),", message)
    numeric = re.search(r"numeric \(central difference\) (\S+),", message)
    assert analytic and numeric, f"the message should state the analytic and the numeric value: {message}"
    return float(analytic.group(1)), float(numeric.group(1))


@pytest.mark.parametrize("function,shapes", [
    (lambda x: x * x, [(3,)]),
    (lambda x, y: (x @ y).exp(), [(2, 3), (3, 2)]),
    (lambda x: x.sum(), [(2, 2)]),
    (lambda x: (x * 2.0).mean(axis=0), [()]),
], ids=["square", "matmul-exp", "sum", "0-d"])
def test_gradcheck_passes_on_correct_functions(function, shapes):
    rng = np.random.default_rng(0)
    assert gradcheck(function, [rng.standard_normal(shape) for shape in shapes]) is True


def test_gradcheck_detects_a_backward_off_by_a_factor_two():
    with pytest.raises(GradcheckError):
        gradcheck(square_with_doubled_gradient, [np.array([0.5, -1.0, 2.0])])


def test_gradcheck_error_names_the_function_argument_element_and_both_values():
    with pytest.raises(GradcheckError) as error:
        gradcheck(square_with_doubled_gradient, [np.array([[0.5, -1.0], [2.0, 1.5]])])
    message = str(error.value)
    assert "square_with_doubled_gradient" in message, f"the message should name the function: {message}"
    assert "argument 0" in message, f"the message should name the argument: {message}"
    assert "element (0, 0)" in message, f"the first element checked, (0, 0), is already wrong: {message}"
    analytic, numeric = reported_values(message)
    assert analytic == pytest.approx(2 * numeric, rel=1e-5), (
        f"the doubled backward should report twice the numeric value, got {analytic} vs {numeric}")


def test_gradcheck_error_points_at_the_argument_with_the_wrong_gradient():
    with pytest.raises(GradcheckError) as error:
        gradcheck(sum_of_a_and_b_cubed_with_wrong_second_gradient, [np.array([1.0, 2.0]), np.array([3.0, -1.0])])
    message = str(error.value)
    assert "sum_of_a_and_b_cubed_with_wrong_second_gradient" in message
    assert "argument 1" in message, f"argument 0 is right and argument 1 is wrong: {message}"
    assert "element (0,)" in message


def test_gradcheck_catches_an_error_in_a_single_element():
    def gradient_wrong_at_last_element(x):
        def backward(grad):
            wrong = grad * 2 * x.data
            wrong[-1] *= 1.01
            return (wrong,)
        return Tensor.from_op(x.data**2, (x,), backward, "almost_square")

    with pytest.raises(GradcheckError, match=r"element \(3,\)"):
        gradcheck(gradient_wrong_at_last_element, [np.array([1.0, 2.0, 3.0, 4.0])])


def test_gradcheck_does_not_modify_the_callers_inputs():
    array = np.array([0.5, -1.0, 2.0])
    tensor = Tensor([[1.0, 2.0]], requires_grad=True)
    float32_tensor = Tensor(np.array([1.5, 2.5], dtype=np.float32))
    saved = array.copy(), tensor.data.copy(), float32_tensor.data.copy()
    gradcheck(lambda a, t, f: (a * a).sum() + (t * t).sum() + f.exp().sum(), [array, tensor, float32_tensor])
    for original, before in zip((array, tensor.data, float32_tensor.data), saved):
        np.testing.assert_array_equal(original, before, err_msg="gradcheck changed an input's values")
    assert tensor.grad is None, "gradcheck should compute gradients on its own copies, not on the caller's tensors"
    assert float32_tensor.dtype == np.float32 and not float32_tensor.requires_grad
    with pytest.raises(GradcheckError):
        gradcheck(square_with_doubled_gradient, [array])
    np.testing.assert_array_equal(array, saved[0], err_msg="a failing gradcheck must leave the input as it found it")


def test_gradcheck_relies_on_no_operation_outside_the_function_it_checks(monkeypatch):
    # so that a student's broken mul or sum cannot make the check of exp fail (or pass)
    def unavailable(*args, **kwargs):
        raise AssertionError("gradcheck used an operation that is not part of the function under test")

    for name in ("mul", "sum", "add", "mean"):
        monkeypatch.setattr(minitorch.ops, name, unavailable)
    assert gradcheck(minitorch.exp, [np.array([[0.5, -1.0], [2.0, 1.5]])])


def test_gradcheck_works_in_float64_even_for_float32_inputs():
    seen = []

    def record_dtype(x):
        seen.append(x.dtype)
        return x * x

    gradcheck(record_dtype, [np.array([1.0, 2.0], dtype=np.float32)])
    assert set(seen) == {np.dtype(np.float64)}, f"finite differences need float64, the function saw {set(seen)}"


@pytest.mark.parametrize("function", [
    lambda x: (x.astype(np.float32) ** 2).sum(),  # the result is float32
    lambda x: (x.astype(np.float32) ** 2).astype(np.float64).sum(),  # float32 only inside
])
def test_a_function_that_rounds_to_float32_inside_is_named_as_the_cause_of_a_failure(function):
    with pytest.raises(GradcheckError, match=r"disagree\. The function rounds to float32 inside .*check the function "
                                             r"in float64"):
        gradcheck(function, [minitorch.tensor([0.3, 0.7], requires_grad=True)])


def test_gradcheck_gives_zero_gradient_to_an_unused_input():
    assert gradcheck(lambda x, unused: x * 3.0, [np.array([1.0, 2.0]), np.array([5.0])])


def test_gradcheck_refuses_a_function_that_does_not_return_a_tensor():
    with pytest.raises(TypeError, match="must return a Tensor"):
        gradcheck(lambda x: x.data * 2, [np.array([1.0])])


def test_gradcheck_error_is_an_assertion_error_so_pytest_reports_it_as_a_failure():
    assert issubclass(GradcheckError, AssertionError)
    assert minitorch.GradcheckError is GradcheckError


def test_a_ragged_input_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"gradcheck: inputs\[1\] must be numbers in a rectangular shape"):
        gradcheck(lambda a, b: a * b, [[1.0, 2.0], [[1.0], [2.0, 3.0]]])


def test_a_failure_at_a_point_where_the_function_is_infinite_says_so():
    with pytest.raises(GradcheckError, match="The function's value is not finite at this point"):
        gradcheck(lambda x: (x * x).sum(), [np.array([np.inf, 1.0])])


def test_a_failure_of_max_at_a_near_tie_names_the_kink():
    with pytest.raises(GradcheckError, match="'max' has 1 input.s. at a near-tie for the maximum"):
        gradcheck(lambda x: x.max(), [np.array([1.0, 1.0 + 1e-7])])
    assert gradcheck(lambda x: x.max(axis=0), [np.array([[1.0, 2.0], [3.0, 5.0]])]), "max away from a tie passes"


@pytest.mark.parametrize("function, step", [(lambda t: t + 1e6, 1e-6), (lambda t: t.exp(), 1e-12)],
                         ids=["large values", "a tiny step"])
def test_a_failure_from_rounding_the_functions_values_says_so(function, step):
    """A correct gradient fails where float64's rounding of the values, over the step, passes atol: the error
    says that the difference measures rounding."""
    from minitorch import GradcheckError, gradcheck

    with pytest.raises(GradcheckError, match=r"The function's values reach .* float64 rounds the weighted sum .* "
                                             r"above atol 1e-06: check where the values are smaller, or pass a "
                                             r"larger step"):
        gradcheck(function, [np.zeros(3)], step=step)


def test_a_failure_of_a_function_that_is_not_deterministic_says_so():
    rng = np.random.default_rng(1)

    def noisy(t):
        return t * t + minitorch.tensor(rng.normal(size=t.shape)) * 1e-3  # new noise at every call

    with pytest.raises(GradcheckError, match=r"noisy is not deterministic: at the same point it gave .*, then .*, so "
                                             r"the central difference measures that change, not the gradient"):
        gradcheck(noisy, [np.ones(3)])

    def doubled_wrongly(t):  # deterministic, with a wrong rule: no such note
        return Tensor.from_op(t.data * 2, (t,), lambda g: (g * 3,), "double")

    with pytest.raises(GradcheckError) as failure:
        gradcheck(doubled_wrongly, [np.ones(3)])
    assert "not deterministic" not in str(failure.value), "a deterministic function must not be called noisy"
