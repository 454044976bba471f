"""Specification of minitorch.fast.arrays: each helper gives the plain NumPy reduction it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.fast.arrays import max_along, sum_along


@pytest.mark.parametrize("shape,axis", [((16,), 0), ((4, 3, 16, 16), -1), ((4, 3, 16, 16), 2), ((5, 40), -1),
                                        ((3, 7), 0)])
def test_max_along_and_sum_along_equal_numpy_keepdims_reductions(shape, axis):
    x = np.random.default_rng(0).normal(size=shape)
    np.testing.assert_array_equal(max_along(x, axis), x.max(axis=axis, keepdims=True),
                                  err_msg="max_along differs from x.max")
    np.testing.assert_allclose(sum_along(x, axis), x.sum(axis=axis, keepdims=True), rtol=1e-12, atol=1e-12,
                               err_msg="sum_along differs from x.sum (beyond the order of additions)")


def test_masked_entries_and_non_finite_values_pass_through_like_numpy():
    x = np.array([[-np.inf, 1.0, 2.0], [-np.inf, -np.inf, -np.inf], [np.nan, 0.0, 1.0]])
    np.testing.assert_array_equal(max_along(x, -1), x.max(axis=-1, keepdims=True))
    np.testing.assert_array_equal(np.isnan(sum_along(x, -1)), np.isnan(x.sum(axis=-1, keepdims=True)))


@pytest.mark.parametrize("call, culprit", [
    (lambda: sum_along(np.ones((2, 3)), 5), r"sum_along: axis 5 is out of range for 2 axes"),  # else the rows'
    (lambda: max_along(np.ones((2, 3)), 7), r"max_along: axis 7 is out of range for 2 axes"),  # sums, no word
    (lambda: max_along(np.zeros((0, 3)), 0), r"max_along: axis 0 of shape \(0, 3\) is empty"),
], ids=["sum-axis-5", "max-axis-7", "max-of-nothing"])
def test_an_axis_the_array_does_not_have_is_refused_naming_the_helper(call, culprit):
    with pytest.raises(ValueError, match=culprit):
        call()


def test_the_helpers_take_array_likes_as_numpys_reductions_do():
    rows = [[1.0, 2.0], [3.0, 4.0]]
    np.testing.assert_array_equal(sum_along(rows, -1), [[3.0], [7.0]], err_msg="sum_along of a list")
    np.testing.assert_array_equal(max_along(rows, 0), [[3.0, 4.0]], err_msg="max_along of a list")
    assert max_along(5.0, 0) == 5.0 and sum_along((1.0, 2.0), 0) == [3.0], "a number and a tuple too"


@pytest.mark.parametrize("x", [np.array([True, True, True]), np.array([[100, 100]], dtype=np.int8),
                               np.array([[2**62, 2**62]], dtype=np.uint64), np.array([[1 + 2j, 3j]])],
                         ids=["bool", "int8", "uint64", "complex"])
def test_sum_along_of_an_array_not_of_floats_equals_numpys_sum(x):
    expected = x.sum(axis=-1, keepdims=True)
    result = sum_along(x, -1)
    assert result.dtype == expected.dtype, f"sum_along of {x.dtype} gave {result.dtype}, NumPy's sum {expected.dtype}"
    np.testing.assert_array_equal(result, expected, err_msg=f"sum_along of {x.dtype} differs from NumPy's sum")
