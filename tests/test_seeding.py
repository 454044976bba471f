"""Specification of minitorch.seeding: same seed, same numbers (chapter 00)."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.seeding import default_generator, manual_seed


@pytest.fixture(autouse=True)
def fresh_default_generator():
    """Tests here reseed minitorch's generator; leave it as a fresh import would."""
    yield
    manual_seed(0)


def test_manual_seed_returns_the_new_default_generator():
    generator = manual_seed(5)
    assert isinstance(generator, np.random.Generator)
    assert default_generator() is generator


def test_the_same_seed_gives_the_same_numbers():
    manual_seed(11)
    first = default_generator().standard_normal(5)
    manual_seed(11)
    np.testing.assert_array_equal(default_generator().standard_normal(5), first)


def test_manual_seed_behaves_like_numpy_default_rng():
    manual_seed(12)
    np.testing.assert_array_equal(default_generator().random(4), np.random.default_rng(12).random(4))


def test_different_seeds_give_different_numbers():
    manual_seed(1)
    first = default_generator().standard_normal(5)
    manual_seed(2)
    assert not np.array_equal(default_generator().standard_normal(5), first)


def test_manual_seed_accepts_numpy_integers():
    manual_seed(np.int64(3))
    np.testing.assert_array_equal(default_generator().random(2), np.random.default_rng(3).random(2))


@pytest.mark.parametrize("seed", [-1, 1.5, "3", None])
def test_manual_seed_refuses_anything_but_a_non_negative_integer(seed):
    with pytest.raises(ValueError, match="non-negative integer"):
        manual_seed(seed)


def test_manual_seed_is_exported_at_the_top_level():
    assert minitorch.manual_seed is manual_seed and minitorch.default_generator is default_generator


def test_manual_seed_resets_a_generator_held_from_default_generator():
    """manual_seed resets the one default generator in place (as torch.manual_seed): a generator taken before, e.g.
    given as a layer's rng, draws the seed's numbers, not those of a stream that manual_seed replaced."""
    manual_seed(5)
    held = default_generator()
    manual_seed(0)
    drawn = held.standard_normal(3)
    manual_seed(0)
    np.testing.assert_array_equal(drawn, default_generator().standard_normal(3),
                                  err_msg="the generator held from default_generator() was not reset by manual_seed")
    assert held is default_generator(), "manual_seed must keep the default generator object"
