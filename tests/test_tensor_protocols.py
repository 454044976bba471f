"""Specification of minitorch.tensor_protocols: the Python and NumPy protocols a PyTorch user reaches for
(``f"{loss:.4f}"``, ``round``, ``abs``, ``array += tensor``) work as there, or say what to write instead."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch import gradcheck, tensor


def test_a_tensor_of_one_number_formats_as_that_number():
    loss = tensor(1.23456)
    assert f"{loss:.4f}" == "1.2346" and format(tensor([2.5]), ".1f") == "2.5", "a format spec formats the number"
    assert f"{loss}" == str(loss), "without a spec, a tensor formats as its repr"
    with pytest.raises(TypeError, match=r"format\(tensor, '.2f'\): a format spec needs a tensor of one element, "
                                        r"got shape \(2,\)"):
        format(tensor([1.0, 2.0]), ".2f")


@pytest.mark.parametrize("spec", ["s", "d", "x"])
def test_a_spec_a_float_does_not_take_names_the_tensor_and_the_spec(spec):
    with pytest.raises(ValueError, match=rf"^format\(tensor, '{spec}'\): a tensor of one element formats as its "
                                         rf"number, a float, and '{spec}' is no float format spec"):
        format(tensor(1.5), spec)
    assert format(tensor(1.5), ">6.2e") == format(1.5, ">6.2e"), "a float's spec still formats the number"


def test_round_gives_a_tensor_of_the_rounded_values_without_a_gradient():
    rounded = round(tensor([2.5, 3.5, -1.26]))
    np.testing.assert_array_equal(rounded.data, [2.0, 4.0, -1.0], err_msg="halves round to even, as NumPy's")
    np.testing.assert_array_equal(round(tensor([1.234, 5.678]), 1).data, [1.2, 5.7])
    assert not round(tensor(2.5, requires_grad=True)).requires_grad, "no gradient flows through a rounding"
    assert round(tensor([1.5], dtype=np.float32)).dtype == np.float32, "the dtype stays"
    with pytest.raises(TypeError, match="ndigits must be an integer"):
        round(tensor([1.0]), 1.5)


def test_abs_is_a_differentiable_operation():
    x = tensor([-2.0, 3.0], requires_grad=True)
    y = abs(x)
    np.testing.assert_array_equal(y.data, [2.0, 3.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, [-1.0, 1.0], err_msg="d|x|/dx = sign(x)")
    assert gradcheck(abs, [np.array([-1.5, 0.7, 2.0])])


def test_an_array_updated_in_place_by_a_tensor_stays_an_array():
    array = np.zeros(2)
    same = array
    array += tensor([1.0, 2.0])
    assert type(array) is np.ndarray and array is same, "array += tensor must change the array, not rebind the name"
    np.testing.assert_array_equal(same, [1.0, 2.0])
    with pytest.raises(TypeError, match="a tensor that requires grad cannot become a NumPy array"):
        array += tensor([1.0, 2.0], requires_grad=True)  # NumPy would compute without its gradient
    np.testing.assert_array_equal(same, [1.0, 2.0], err_msg="a refused update leaves the array as it was")


def test_an_array_on_the_left_of_an_operator_still_gives_the_tensor_operation():
    x = tensor([1.0, 2.0], requires_grad=True)
    total = (np.ones(2) * x + np.ones(2) - x / np.full(2, 2.0)).sum()
    total.backward()
    np.testing.assert_allclose(x.grad, [0.5, 0.5], err_msg="array * tensor must stay in the graph")
    assert type(np.ones(2) < tensor([0.0, 2.0])).__name__ == "Mask", "a comparison gives a mask, either way round"
    np.testing.assert_array_equal(np.exp(tensor([0.0])), [1.0], err_msg="NumPy's ufuncs compute on the values")


def test_size_is_numpys_count_of_elements_and_pytorchs_method_too():
    """``t.size`` is an int (NumPy's ndarray.size, which the library uses); ``t.size(0)`` is PyTorch's call."""
    import pickle

    x = tensor(np.ones((2, 3)))
    assert x.size == 6 and isinstance(x.size, int) and f"{x.size:,}" == "6" and x.size + 1 == 7, "size is the count"
    assert x.size() == (2, 3) and x.size(0) == 2 and x.size(-1) == 3, "t.size(dim) is the length of axis dim"
    assert pickle.loads(pickle.dumps(x.size))(1) == 3, "a size survives pickling"
    with pytest.raises(ValueError, match=r"size: dim 2 is out of range for 2 axes"):
        x.size(2)
