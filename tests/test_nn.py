"""Specification of minitorch.nn: Parameter, Module (finding parameters, state dicts) and Linear (chapter 03)."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import Tensor, gradcheck
from minitorch.nn import Linear, Module, Parameter


@pytest.fixture(autouse=True)
def fresh_default_generator():
    """Tests here reseed minitorch's generator; leave it as a fresh import would."""
    yield
    minitorch.manual_seed(0)


class Block(Module):
    def __init__(self):
        self.first = Linear(3, 4)
        self.second = Linear(4, 3, bias=False)
        self.scale = Parameter(np.ones(3))

    def forward(self, x):
        return self.second(self.first(x).relu()) * self.scale


class Network(Module):
    def __init__(self):
        self.embedding = Parameter(np.zeros((5, 3)))
        self.blocks = [Block(), Block()]
        self.head = Linear(3, 1)
        self.description = "not a parameter"
        self.constant = Tensor(np.ones(3))  # a plain tensor is not learned

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


EXPECTED_NAMES = [
    "embedding",
    "blocks.0.first.weight", "blocks.0.first.bias", "blocks.0.second.weight", "blocks.0.scale",
    "blocks.1.first.weight", "blocks.1.first.bias", "blocks.1.second.weight", "blocks.1.scale",
    "head.weight", "head.bias",
]


def test_module_finds_parameters_in_attributes_nested_modules_and_lists_with_dotted_names():
    names = [name for name, _ in Network().named_parameters()]
    assert names == EXPECTED_NAMES, (
        f"expected every Parameter, named by its path of attributes, in the order they were set;\n"
        f"got {names}")


def test_module_ignores_plain_tensors_and_other_attributes():
    parameters = Network().parameters()
    assert all(isinstance(p, Parameter) for p in parameters)
    assert len(parameters) == len(EXPECTED_NAMES)


def test_parameters_lists_a_shared_parameter_once():
    class Tied(Module):
        def __init__(self):
            self.encoder = Linear(3, 3)
            self.decoder = self.encoder  # the same layer twice (weight tying)
            self.blocks = [self.encoder, Linear(3, 3)]
            self.extra = self.encoder.weight

    model = Tied()
    parameters = model.parameters()
    assert len({id(p) for p in parameters}) == len(parameters) == 4, (
        f"parameters() returned {len(parameters)} entries for 4 distinct parameters: an optimiser "
        f"would update a shared parameter several times per step")


def test_zero_grad_clears_every_parameter():
    model = Network()
    model(Tensor(np.ones((2, 3)))).sum().backward()
    assert all(p.grad is not None for p in model.parameters() if p is not model.embedding)
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_state_dict_maps_every_dotted_name_to_a_copy_of_the_values():
    model = Network()
    state = model.state_dict()
    assert list(state) == EXPECTED_NAMES
    before = model.head.weight.data.copy()
    state["head.weight"][...] = 99.0
    np.testing.assert_array_equal(model.head.weight.data, before,
                                  err_msg="changing the state dict changed the model: state_dict must copy")


def test_load_state_dict_round_trip_reproduces_the_model():
    minitorch.manual_seed(1)
    source = Network()
    minitorch.manual_seed(2)
    target = Network()
    x = Tensor(np.random.default_rng(0).standard_normal((4, 3)))
    assert not np.allclose(source(x).data, target(x).data), "two seeds should give two different models"
    state = source.state_dict()
    target.load_state_dict(state)
    np.testing.assert_array_equal(target(x).data, source(x).data)
    state["head.bias"][...] = 5.0
    assert np.all(target.head.bias.data != 5.0), "load_state_dict must copy the values, not keep the arrays"


def test_load_state_dict_with_a_wrong_shape_names_the_parameter_and_both_shapes():
    model = Network()
    state = model.state_dict()
    state["blocks.1.first.weight"] = np.zeros((2, 2))
    with pytest.raises(ValueError) as error:
        model.load_state_dict(state)
    message = str(error.value)
    assert "blocks.1.first.weight" in message and "(4, 3)" in message and "(2, 2)" in message, message


def test_load_state_dict_changes_nothing_when_it_fails():
    model = Network()
    state = {name: values + 1.0 for name, values in model.state_dict().items()}
    state["head.bias"] = np.zeros(7)  # the last parameter is wrong
    before = model.state_dict()
    with pytest.raises(ValueError):
        model.load_state_dict(state)
    for name, values in model.state_dict().items():
        np.testing.assert_array_equal(values, before[name], err_msg=f"{name} was overwritten by a failed load")


@pytest.mark.parametrize("change,key", [
    (lambda state: state.pop("head.bias"), "head.bias"),
    (lambda state: state.update({"head.gain": np.ones(1)}), "head.gain"),
], ids=["missing", "unexpected"])
def test_load_state_dict_with_a_missing_or_unexpected_key_names_it(change, key):
    model = Network()
    state = model.state_dict()
    change(state)
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        model.load_state_dict(state)


def test_parameter_is_a_leaf_that_requires_grad():
    parameter = Parameter([1.0, 2.0])
    assert parameter.requires_grad and parameter.is_leaf
    assert repr(parameter).startswith("Parameter(")


# ----------------------------------------------------------------------
# Linear


@pytest.mark.parametrize("input_shape,output_shape", [
    ((5, 3), (5, 4)),
    ((2, 5, 3), (2, 5, 4)),  # (B, L, n_in) -> (B, L, n_out)
    ((3,), (4,)),
], ids=str)
def test_linear_maps_the_last_axis_from_in_features_to_out_features(input_shape, output_shape):
    layer = Linear(3, 4, rng=np.random.default_rng(0))
    layer.bias.data[...] = [1.0, 2.0, 3.0, 4.0]
    x = np.random.default_rng(1).standard_normal(input_shape)
    out = layer(Tensor(x))
    assert out.shape == output_shape
    np.testing.assert_allclose(out.data, x @ layer.weight.data.T + layer.bias.data, rtol=1e-12,
                               err_msg="Linear should compute y = x Wᵀ + b")


def test_linear_weight_has_shape_out_by_in_and_the_bias_starts_at_zero():
    layer = Linear(3, 4)
    assert layer.weight.shape == (4, 3) and layer.bias.shape == (4,)
    np.testing.assert_array_equal(layer.bias.data, 0.0)


def test_linear_without_bias_has_only_a_weight():
    layer = Linear(3, 4, bias=False)
    assert [name for name, _ in layer.named_parameters()] == ["weight"]
    x = np.ones((2, 3))
    np.testing.assert_allclose(layer(Tensor(x)).data, x @ layer.weight.data.T)


def test_linear_gradient_matches_finite_differences():
    def linear_layer(x, weight, bias):
        layer = Linear(3, 4)
        layer.weight, layer.bias = weight, bias
        return layer(x)

    rng = np.random.default_rng(2)
    assert gradcheck(linear_layer, [rng.standard_normal((2, 5, 3)), rng.standard_normal((4, 3)),
                                    rng.standard_normal(4)])


def test_linear_initial_weights_have_the_requested_standard_deviation():
    layer = Linear(400, 250, init_std=0.05, rng=np.random.default_rng(3))  # 100,000 draws
    weights = layer.weight.data
    assert abs(weights.std() - 0.05) < 0.05 * 0.02, f"weight std {weights.std():.5f}, asked for 0.05"
    assert abs(weights.mean()) < 0.05 * 0.02, f"weight mean {weights.mean():.5f}, expected about 0"


def test_linear_with_a_wrong_input_width_raises_naming_both_widths():
    layer = Linear(3, 4)
    with pytest.raises(ValueError) as error:
        layer(Tensor(np.ones((2, 5))))
    message = str(error.value)
    assert "5" in message and "3" in message and "(2, 5)" in message, message


def test_linear_refuses_non_positive_sizes():
    with pytest.raises(ValueError, match="in_features must be an integer >= 1"):
        Linear(0, 4)


def test_manual_seed_makes_linear_initialisation_reproducible():
    minitorch.manual_seed(3)
    first = Linear(5, 6).weight.data.copy()
    minitorch.manual_seed(3)
    again = Linear(5, 6).weight.data.copy()
    minitorch.manual_seed(4)
    other = Linear(5, 6).weight.data.copy()
    np.testing.assert_array_equal(first, again, err_msg="same seed, same initial weights")
    assert not np.array_equal(first, other), "a different seed should give different weights"


def test_linear_draws_from_the_generator_it_is_given():
    layer = Linear(5, 6, init_std=0.1, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(layer.weight.data, np.random.default_rng(7).normal(0.0, 0.1, size=(6, 5)))


def test_linear_can_hold_float32_parameters():
    layer = Linear(3, 2, dtype=np.float32)
    out = layer(Tensor(np.ones((4, 3), dtype=np.float32)))
    assert layer.weight.dtype == layer.bias.dtype == out.dtype == np.float32


def test_parameters_in_a_plain_list_are_found():
    class Bag(Module):
        def __init__(self):
            self.items = [Parameter(np.zeros(2)), Parameter(np.ones(3))]

    assert [name for name, _ in Bag().named_parameters()] == ["items.0", "items.1"]


def test_parameters_in_dicts_and_nested_lists_are_found_in_order_and_saved_under_those_names():
    class Heads(Module):
        def __init__(self):
            self.by_name = {"bos": Linear(2, 2), "content": [Parameter(np.ones(2))]}
            self.grid = [[Linear(2, 1, bias=False)], (Parameter(np.zeros(1)),)]

    model = Heads()
    names = [name for name, _ in model.named_parameters()]
    assert names == ["by_name.bos.weight", "by_name.bos.bias", "by_name.content.0", "grid.0.0.weight", "grid.1.0"], (
        f"a dict's values (in its keys' order) and nested lists' items are searched, named by their path; got {names}")
    assert len(model.parameters()) == 5, "parameters() lists every one of them, as an optimiser needs"
    state = model.state_dict()
    assert list(state) == names, "state_dict names the same parameters as named_parameters()"
    copy = Heads()
    copy.load_state_dict(state)
    for (name, original), (_, loaded) in zip(model.named_parameters(), copy.named_parameters()):
        np.testing.assert_array_equal(loaded.data, original.data, err_msg=f"load_state_dict did not restore {name}")


@pytest.mark.parametrize("settings,error,culprit", [
    ({"dtype": "bogus"}, TypeError, r"Linear: dtype must be np.float32 or np.float64, got 'bogus'"),
    ({"init_std": 1e308}, ValueError, r"Linear: init_std=1e\+308 draws weights too large for float64"),
    ({"init_std": 1e39, "dtype": np.float32}, ValueError,
     r"Linear: init_std=1e\+39 draws weights too large for float32"),
])
def test_linear_refuses_a_dtype_or_an_init_std_whose_weights_it_cannot_hold(settings, error, culprit):
    with pytest.raises(error, match=culprit):
        Linear(16, 16, rng=np.random.default_rng(0), **settings)


def test_two_dict_keys_of_one_name_are_refused_as_state_dict_would_lose_a_parameter():
    class TwoKeys(Module):
        def __init__(self):
            self.heads = {"0": Parameter([1.0]), 0: Parameter([2.0])}

    with pytest.raises(ValueError, match=r"TwoKeys: two parameters are both named 'heads.0'"):
        TwoKeys().state_dict()


def test_load_state_dict_takes_the_parameters_of_another_model_as_pytorchs_does():
    source, target = Linear(2, 2, rng=np.random.default_rng(1)), Linear(2, 2, rng=np.random.default_rng(2))
    target.load_state_dict({"weight": source.weight, "bias": source.bias})
    np.testing.assert_array_equal(target.weight.data, source.weight.data)
    assert target.weight._data is not source.weight._data, "the values are copied, not shared"


def test_a_dict_key_holding_a_dot_that_repeats_a_nested_name_is_refused():
    class Dotted(Module):
        def __init__(self):
            self.p = {"a.b": Parameter([1.0]), "a": {"b": Parameter([2.0])}}

    with pytest.raises(ValueError, match=r"Dotted: two parameters are both named 'p.a.b'"):
        Dotted().state_dict()


def test_load_state_dict_names_a_parameter_given_lists_of_unequal_lengths():
    with pytest.raises(ValueError, match=r"load_state_dict for Linear: parameter 'weight' holds lists of unequal"):
        Linear(2, 2).load_state_dict({"weight": [[1.0], [2.0, 3.0]], "bias": [0.0, 0.0]})


def test_a_parameter_can_be_made_frozen_as_pytorchs_can():
    assert Parameter([1.0], requires_grad=False).requires_grad is False
