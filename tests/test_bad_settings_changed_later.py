"""A setting changed after construction is checked as one given at first (or cannot be changed without the check):
an optimiser's hyper-parameters and parameter list, adam_update's inputs (checked outside the exercise's body), a
module's parameters replaced by something that would drop out of parameters()."""

from __future__ import annotations

import decimal
import re

import numpy as np
import pytest

from minitorch import optim, tensor
from minitorch.nn import Linear, Parameter


def _one_step(optimizer, parameter, loss=lambda p: (p * p).sum()):
    optimizer.zero_grad()
    loss(parameter).backward()
    optimizer.step()


@pytest.mark.parametrize("kind,setting,value,error", [
    ("SGD", "momentum", float("nan"), ValueError),  # the momentum buffer became NaN
    ("SGD", "weight_decay", -5.0, ValueError),  # the parameter grew at each step
    ("SGD", "weight_decay", "0.1", TypeError),  # NumPy's "ufunc 'multiply' did not contain a loop"
    ("SGD", "lr", float("inf"), ValueError),
    ("Adam", "eps", float("nan"), ValueError),  # the parameter became NaN
    ("Adam", "eps", -1e-8, ValueError),
    ("Adam", "weight_decay", float("nan"), ValueError),
    ("Adam", "betas", (0.9, 1.0), ValueError),  # 1 - β^t = 0
    ("Adam", "betas", 0.9, ValueError),
])
def test_a_hyper_parameter_set_later_is_checked_as_the_constructors(kind, setting, value, error):
    parameter = Parameter([1.0])
    optimizer = getattr(optim, kind)([parameter], lr=0.1)
    before = getattr(optimizer, setting)
    with pytest.raises(error, match=f"{kind}: {setting}"):
        setattr(optimizer, setting, value)
    assert getattr(optimizer, setting) == before, "a refused value must leave the setting as it was"
    _one_step(optimizer, parameter)
    assert np.isfinite(parameter.data).all()


def test_a_hyper_parameter_may_still_change_to_a_good_value():
    parameter = Parameter([1.0])
    optimizer = optim.SGD([parameter], lr=0.1)
    optimizer.momentum, optimizer.weight_decay, optimizer.lr = 0.5, decimal.Decimal("0.01"), 0.2
    assert (optimizer.momentum, optimizer.weight_decay, optimizer.lr) == (0.5, 0.01, 0.2)
    assert optim.SGD([parameter], lr=decimal.Decimal("0.1")).lr == 0.1, "a Decimal is a finite number > 0 too"


@pytest.mark.parametrize("change", ["append the same parameter", "append a new parameter", "replace the list",
                                    "a tuple instead"])
def test_a_parameter_list_changed_after_construction_is_refused_at_the_next_step(change):
    first, second = Parameter([1.0]), Parameter([2.0])
    for kind in ("SGD", "Adam"):
        optimizer = getattr(optim, kind)([first, second], lr=0.1)
        if change == "append the same parameter":
            optimizer.parameters.append(first)  # it would be updated twice per step
        elif change == "append a new parameter":
            optimizer.parameters.append(Parameter([3.0]))
        elif change == "replace the list":
            optimizer.parameters = [second, first]  # each would take the other's moments
        else:
            optimizer.parameters = (first, second)
        (first * second).sum().backward()
        with pytest.raises(ValueError, match=rf"{kind}.step: the parameter list changed since the optimizer was made"):
            optimizer.step()
        np.testing.assert_array_equal(first.data, [1.0], err_msg="a refused step changes nothing")


def test_an_optimiser_refuses_a_tensor_that_can_never_get_a_gradient():
    with pytest.raises(ValueError, match="parameter 0 .* does not require grad"):
        optim.SGD([tensor([1.0, 2.0])], lr=0.1)
    frozen = Parameter([1.0])
    frozen.requires_grad = False  # a parameter frozen for now (it may be unfrozen): accepted, as in PyTorch
    optim.SGD([frozen], lr=0.1).step()


def test_adam_with_eps_0_says_why_a_parameter_became_nan():
    parameter = Parameter([1.0, 2.0])
    optimizer = optim.Adam([parameter], lr=0.1, eps=0)
    parameter.grad = np.array([0.0, 1.0])  # a gradient of 0 at the first step: m = v = 0, and 0 / 0
    with pytest.raises(FloatingPointError, match="became NaN: with eps=0"):
        optimizer.step()


@pytest.mark.parametrize("changes,error,culprit", [
    (dict(lr=float("nan")), ValueError, "lr"),
    (dict(lr=-0.1), ValueError, "lr"),  # a step up the gradient
    (dict(eps=-1.0), ValueError, "eps"),
    (dict(weight_decay=float("inf")), ValueError, "weight_decay"),
    (dict(theta=np.array([1, 2])), TypeError, "theta must be a float ndarray"),  # truncated to integers
    (dict(theta=[1.0, 2.0]), TypeError, "theta must be a float ndarray"),
    (dict(grad=[1.0, 1.0]), TypeError, "grad must be an ndarray of numbers of theta's shape, got list"),
    (dict(m=np.array(["a", "b"])), TypeError, "m must be an ndarray of numbers of theta's shape, got an array of"),
    (dict(v=np.array([0.0, -1.0])), ValueError, r"v \(the second moment.*must not be negative, got -1.0"),  # √v: nan
])
def test_adam_update_checks_every_input_outside_the_exercise_body(changes, error, culprit):
    arguments = dict(theta=np.array([1.0, 2.0]), grad=np.array([1.0, 1.0]), m=np.zeros(2), v=np.zeros(2), t=1,
                     lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    arguments.update(changes)
    with pytest.raises(error, match=f"adam_update: {culprit}"):
        optim.adam_update(**arguments)


def test_the_checks_of_adam_update_sit_outside_its_body():
    import inspect

    source = inspect.getsource(optim.adam_update)
    body = source[source.index("def adam_update"):]
    assert "raise" not in body and "checks." not in body, "the body of exercise 2.5 must hold only the update"


@pytest.mark.parametrize("replacement", ["a computed tensor", "a constant tensor", "an array"])
def test_a_parameter_replaced_by_a_non_parameter_is_refused(replacement):
    layer = Linear(2, 2)
    value = {"a constant tensor": lambda: tensor(np.zeros((2, 2))), "a computed tensor": lambda: layer.weight * 1,
             "an array": lambda: np.zeros((2, 2))}[replacement]()
    with pytest.raises(TypeError, match=r"Linear.weight is a Parameter; give it a Parameter \(nn.Parameter"):
        layer.weight = value
    assert len(layer.parameters()) == 2 and isinstance(layer.weight, Parameter)


@pytest.mark.parametrize("replacement", ["a computed tensor", "a constant tensor", "an array", "a number"])
def test_a_parameter_turned_off_given_a_non_parameter_is_refused(replacement):
    layer = Linear(2, 2, bias=False)
    value = {"a constant tensor": lambda: tensor(np.zeros(2)), "a computed tensor": lambda: layer.weight[0] * 0,
             "an array": lambda: np.zeros(2), "a number": lambda: 0.5}[replacement]()
    with pytest.raises(TypeError, match=r"^Linear.bias is a Parameter turned off \(None\); give it a Parameter "
                                        r"\(nn.Parameter\(values\)\) or None"):
        layer.bias = value
    assert layer.bias is None and len(layer.parameters()) == 1, "a refused bias must leave the layer without one"


@pytest.mark.parametrize("replacement", ["a Parameter", "a leaf that requires grad"])
def test_a_parameter_turned_off_given_a_parameter_is_in_parameters_and_trains(replacement):
    layer = Linear(2, 2, bias=False)
    layer.bias = Parameter(np.zeros(2)) if replacement == "a Parameter" else tensor(np.zeros(2), requires_grad=True)
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"], "the bias forward adds is listed"
    layer(np.ones((1, 2))).sum().backward()
    np.testing.assert_array_equal(layer.bias.grad, [1.0, 1.0], err_msg="the new bias gets its gradient")


@pytest.mark.parametrize("method", ["parameters", "state_dict", "zero_grad"])
@pytest.mark.parametrize("holder", ["list", "dict", "list in a sub-module"])
@pytest.mark.parametrize("replacement,kind", [
    (lambda old: old * 2, r"Tensor \(the result of 'mul'\)"),
    (lambda old: tensor([5.0]), "Tensor that does not require grad"),
    (lambda old: tensor([5.0], requires_grad=True), r"Tensor \(a leaf that requires grad, not a Parameter\)"),
], ids=["computed", "constant", "leaf-that-requires-grad"])
def test_a_parameter_in_a_list_or_dict_replaced_by_a_tensor_is_refused_naming_its_path(replacement, kind, holder,
                                                                                      method):
    """An item of a list or dict replaced goes past Module.__setattr__: parameters() itself refuses a tensor that is no
    Parameter where it searches (the item would silently drop out of parameters() and stop training)."""
    from minitorch.nn import Module

    class Holder(Module):
        def __init__(self):
            self.ps = [Parameter([1.0]), Parameter([2.0])] if holder != "dict" else {"a": Parameter([1.0])}

    class Outer(Module):
        def __init__(self):
            self.inner = Holder()

    nested = holder == "list in a sub-module"
    model = Outer() if nested else Holder()
    items, key = (model.inner if nested else model).ps, "a" if holder == "dict" else 0
    path = f"{'Outer.inner' if nested else 'Holder'}.ps.{key}"
    items[key] = replacement(items[key])
    with pytest.raises(TypeError, match=rf"^{re.escape(path)} is a {kind} in a {type(items).__name__} that "
                                        rf"parameters\(\) searches, where a tensor must be a Parameter"):
        getattr(model, method)()


def test_a_constant_tensor_in_an_attribute_of_its_own_and_arrays_or_numbers_in_a_list_are_no_error():
    layer = Linear(2, 2)
    layer.mask, layer.sizes, layer.statistics = tensor([1.0, 0.0]), [2, 2], {"mean": np.zeros(2)}
    assert len(layer.parameters()) == 2 and set(layer.state_dict()) == {"weight", "bias"}


def test_a_parameter_replaced_by_a_leaf_that_requires_grad_stays_in_parameters():
    layer = Linear(2, 2)
    leaf = tensor(np.zeros((2, 2)), requires_grad=True)
    layer.weight = leaf
    assert layer.weight is leaf and isinstance(leaf, Parameter), "the leaf is kept, as the Parameter it is"
    assert any(parameter is leaf for parameter in layer.parameters()), "it must stay in parameters() and train"


def test_a_parameter_replaced_by_one_of_another_shape_is_named_at_the_next_forward_pass():
    layer = Linear(2, 2)
    layer.weight = Parameter(np.zeros((3, 3)))  # a Parameter: accepted, but not of this layer's shape
    with pytest.raises(ValueError, match=r"Linear\(2, 2\): its weight has shape \(3, 3\) .* expected \(2, 2\)"):
        layer(tensor([[1.0, 2.0]]))


@pytest.mark.parametrize("change,named", [
    ("a tuple of the same parameters", r"it is now a tuple of the same parameters, not a list"),
    ("a tuple of others", r"it is now a tuple, not a list"),
    ("None", r"it is now a NoneType, not a list"),
    ("append the same parameter", r"parameter 2 was added \(parameter 0 again\), 3 now, made with 2"),
    ("append a new parameter", r"parameter 2 was added \(a new one\), 3 now, made with 2"),
    ("swap the two", r"parameter 0 is now parameter 1 again"),
    ("replace one by a new one", r"parameter 1 is now a new one"),
    ("remove the last", r"the last 1 of its 2 parameters were removed"),
])
def test_a_changed_parameter_list_is_refused_saying_what_changed(change, named):
    first, second = Parameter([1.0]), Parameter([2.0])
    optimizer = optim.SGD([first, second], lr=0.1)
    optimizer.parameters = {
        "a tuple of the same parameters": (first, second), "a tuple of others": (second,), "None": None,
        "append the same parameter": [first, second, first],
        "append a new parameter": [first, second, Parameter([3.0])], "swap the two": [second, first],
        "replace one by a new one": [first, Parameter([2.0])], "remove the last": [first],
    }[change]
    first.grad, second.grad = np.array([1.0]), np.array([1.0])
    with pytest.raises(ValueError, match=rf"^SGD\.step: the parameter list changed since the optimizer was made: "
                                         rf"{named}; .*make a new optimizer"):
        optimizer.step()
    assert first.data.tolist() == [1.0] and second.data.tolist() == [2.0], "a refused step changes nothing"


@pytest.mark.parametrize("t,shown", [(10**400, "an integer of about 400 digits"), (2**63, str(2**63))])
def test_adam_update_refuses_a_step_count_beyond_64_bits_naming_t(t, shown):
    from minitorch.optim import adam_update

    with pytest.raises(ValueError, match=rf"^adam_update: t must be an integer from 1 to {2**63 - 1}, got {shown}$"):
        adam_update(np.ones(2), np.ones(2), np.zeros(2), np.zeros(2), t, 0.1, (0.9, 0.999), 1e-8, 0.0)
    theta, _, _ = adam_update(np.ones(2), np.ones(2), np.zeros(2), np.zeros(2), 2**63 - 1, 0.1, (0.9, 0.999), 1e-8, 0.0)
    assert np.isfinite(theta).all(), "the largest step count still gives a finite update (the corrections are 1)"


@pytest.mark.parametrize("text", ["9" * 5000, "-" + "9" * 5000])
def test_a_whole_number_with_more_digits_than_python_reads_is_said_to_have_too_many_digits(text):
    from minitorch import checks

    with pytest.raises(ValueError, match=r"^--seed must be a whole number >= 0, got a number of 5,000 digits, too many "
                                         r"digits to read \('[-9]{10,}\.\.\.9+'\)$"):
        checks.parse_number(text, "--seed", integer=True, minimum=0)
    with pytest.raises(ValueError, match=r"^--seed must be a whole number, got 'abc'$"):  # not digits: as before
        checks.parse_number("abc", "--seed", integer=True)


@pytest.mark.parametrize("optimizer_name", ["SGD", "Adam"])
def test_an_optimizer_names_a_parameter_whose_shape_changed_since_it_was_made(optimizer_name):
    from minitorch import optim
    from minitorch.nn import Parameter

    p = Parameter([1.0, 2.0])
    optimizer = getattr(optim, optimizer_name)([p], lr=0.1, momentum=0.9) if optimizer_name == "SGD" else \
        optim.Adam([p], lr=0.1)
    p.grad = np.ones(2)
    optimizer.step()
    p.requires_grad = False
    p.data = np.array([1.0, 2.0, 3.0])
    p.requires_grad = True
    p.grad = np.ones(3)
    with pytest.raises(ValueError, match=rf"{optimizer_name}.step: parameter 0 changed shape since the optimizer was "
                                         rf"made, from \(2,\) to \(3,\)"):
        optimizer.step()


def test_adam_changes_a_parameter_in_place_so_its_detached_view_follows_as_with_sgd():
    from minitorch import optim
    from minitorch.nn import Parameter

    for make in (lambda p: optim.SGD([p], lr=0.1), lambda p: optim.Adam([p], lr=0.1)):
        p = Parameter([1.0, 2.0])
        optimizer, view = make(p), p.detach()
        p.grad = np.ones(2)
        optimizer.step()
        np.testing.assert_array_equal(view.data, p.data, err_msg=f"{type(optimizer).__name__}: p.detach() went stale")


def test_load_state_dict_changes_each_parameter_in_place_so_its_detached_view_follows_as_after_a_step():
    layer = Linear(2, 2)
    view = layer.weight.detach()
    layer.load_state_dict({"weight": np.full((2, 2), 7.0), "bias": np.zeros(2)})
    np.testing.assert_array_equal(view.data, np.full((2, 2), 7.0),
                                  err_msg="load_state_dict gave the weight a new array: its detached view went stale")
