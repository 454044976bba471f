"""The engine: a bad argument or a changed input gets a clear error naming the operation, never a wrong
gradient."""

from __future__ import annotations

import operator
import re

import numpy as np
import pytest

from bad_input_helpers import ROOT, tiny_model


def test_editing_an_input_in_place_before_backward_is_refused():
    from minitorch import tensor

    x = tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (x * x).sum()
    with pytest.raises(ValueError, match="read-only"):
        x.data[0] = 5.0  # mul's backward needs the old x: editing it now would give a wrong gradient
    loss.backward()
    np.testing.assert_array_equal(x.grad, [2.0, 4.0, 6.0])
    x.data[0] = 5.0  # after backward, the values are the student's again (an optimizer step does this)


def test_replacing_an_input_before_backward_names_the_operation():
    from minitorch import tensor

    x = tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (x * x).sum()
    x.data = np.array([5.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"input 0 of 'mul'.*after 'mul' used it.*copy"):
        loss.backward()


def test_the_documented_way_to_edit_before_backward_works_and_the_old_graph_refuses():
    from minitorch import tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    old_loss = (x * x).sum()
    x.data = x.data.copy()  # as Tensor's docstring says
    x.data[0] = 3.0
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [6.0, 4.0])
    with pytest.raises(RuntimeError, match="'mul'"):
        old_loss.backward()


def test_editing_a_saved_result_in_place_before_backward_is_refused():
    from minitorch import tensor

    x = tensor([0.5, 1.0], requires_grad=True)
    out = x.exp()  # exp's backward reuses its own result
    with pytest.raises(ValueError, match="read-only"):
        out.data *= 2


def test_optimizer_steps_still_update_parameters_in_place():
    from minitorch.optim import Adam

    model = tiny_model()
    optimizer = Adam(model.parameters(), lr=1e-3)
    x = np.random.default_rng(0).normal(size=(2, 16, 16))
    for _ in range(2):  # forward, backward, step, twice: the step must find the parameters writable
        optimizer.zero_grad()
        (model(x) ** 2).mean().backward()
        optimizer.step()


def test_load_state_dict_works_while_a_graph_holds_the_old_weights():
    model, other = tiny_model(), tiny_model(seed=1)
    loss = model(np.ones((1, 4, 16))).sum()
    model.load_state_dict(other.state_dict())
    with pytest.raises(RuntimeError, match="was given new values"):
        loss.backward()  # the graph was built from the weights just replaced


def test_reductions_of_an_empty_tensor_behave_as_numpy_and_pytorch():
    from minitorch import tensor

    empty = tensor(np.zeros((0, 3)), requires_grad=True)
    assert np.isnan(empty.mean().item()), "the mean of no numbers is NaN (NumPy, PyTorch)"
    assert empty.sum().item() == 0.0
    assert empty.softmax(0).shape == (0, 3) and empty.softmax(1).shape == (0, 3), "a softmax of nothing is empty"
    with pytest.raises(ValueError, match=r"max: a tensor of shape \(0, 3\) has no elements"):
        empty.max()
    with pytest.raises(ValueError, match="no elements along axis 0"):
        empty.max(axis=0)
    empty.mean().backward()
    assert empty.grad.shape == (0, 3)


@pytest.mark.parametrize("function,point,op", [
    (lambda t: t.relu(), [0.0, 1.0], "relu"),
    (lambda t: t.log(), [0.0, 1.0], "log"),
])
def test_gradcheck_at_a_kink_says_the_point_is_not_differentiable(function, point, op):
    from minitorch.gradcheck import GradcheckError, gradcheck

    with np.errstate(all="ignore"), pytest.raises(GradcheckError, match=f"not differentiable: '{op}'"):
        gradcheck(function, [np.array(point)])


def test_gradcheck_away_from_kinks_passes_and_says_nothing_of_them():
    from minitorch.gradcheck import gradcheck

    assert gradcheck(lambda t: t.relu() + t.log(), [np.array([0.5, 2.0])])


def _refusing_softmax(scores, future):
    """Softmax attention as exercise 2.4's contract allows it to meet NaN: a ValueError, in its own words."""
    if not np.isfinite(scores.data).all():
        raise ValueError("my softmax will not normalise these scores")
    from minitorch.paper import attention
    return attention.softmax_attention(scores, future)


@pytest.mark.parametrize("path", ["readable", "fast", "a softmax refusing in its own words"])
def test_training_on_nan_data_says_the_data_is_to_blame(path, monkeypatch):
    """Whatever trains (the library's softmax, which raises ValueError on NaN as exercise 2.4 asks; the fast
    path, whose array softmax lets NaN through to the loss, or runs the student's softmax in an edition that
    removed it; any softmax raising ValueError), the error says the batch holds NaN."""
    from minitorch import fast
    from minitorch.paper import attention
    from minitorch.paper import train as train_module

    make_batch = train_module.make_batch

    def batch_with_nan(*args, **kwargs):
        x, y, triggers = make_batch(*args, **kwargs)
        x[0, 1, 2] = np.nan  # e.g. a student's task code that divides by zero
        return x, y, triggers

    monkeypatch.setattr(train_module, "make_batch", batch_with_nan)
    model = tiny_model()
    if path == "fast":
        model = fast.speed_up(model)
    elif path != "readable":
        monkeypatch.setitem(attention.NORMALISERS, "softmax", _refusing_softmax)
    with pytest.raises(FloatingPointError, match="at step 1 .*batch itself holds NaN"):
        train_module.train(model, lr=1e-3, max_steps=5, progress=False)


def _tensor_of(data, **options):
    from minitorch import tensor

    return lambda: tensor(data, **options)


@pytest.mark.parametrize("make,error,culprit", [
    (_tensor_of(None), TypeError, "from NoneType"),
    (_tensor_of("1.5"), TypeError, "from str"),
    (_tensor_of({"a": 1.0}), TypeError, "from dict"),
    (_tensor_of([[1.0, 2.0], [3.0]]), ValueError, "list"),
    (_tensor_of([2**2000]), TypeError, "holding int"),
    (_tensor_of([1j]), TypeError, "complex128"),
    (lambda: _tensor_of([_tensor_of(1.0)(), _tensor_of(2.0)()])(), TypeError, r"list of Tensors.*stack"),
    (_tensor_of([1.0], requires_grad="False"), TypeError, r"requires_grad must be True or False, got 'False'"),
    (_tensor_of(x for x in [1.0, 2.0]), TypeError, r"^cannot make a Tensor from generator: .* pass list\(values\)"),
    (_tensor_of(map(float, [1, 2])), TypeError, r"^cannot make a Tensor from map: .* pass list\(values\)"),
    (_tensor_of({"a": 1.0}.values()), TypeError, r"^cannot make a Tensor from dict_values: .* pass list\(values\)"),
], ids=["None", "str", "dict", "ragged", "int-beyond-float", "complex", "list-of-tensors", "requires-grad-str",
        "generator", "map", "dict-values"])
def test_tensor_construction_names_what_was_passed(make, error, culprit):
    with pytest.raises(error, match=culprit):
        make()


def test_tensor_of_an_integer_beyond_64_bits_is_the_float_it_rounds_to():
    from minitorch import tensor

    assert tensor([2**70]).item() == float(2**70), "a float tensor holds 2**70 as NumPy's float would"


def _engine_call(name):
    import minitorch
    from minitorch.nn import Linear
    from minitorch.tensor import sum_to_shape

    x = minitorch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    return {
        "sum-axis-float": lambda: x.sum(axis=1.5),
        "sum-axis-twice": lambda: x.sum(axis=(0, -2)),
        "mean-axis-bool": lambda: x.mean(axis=True),
        "transpose-axis-5": lambda: x.transpose(0, 5),
        "stack-nothing": lambda: minitorch.stack([]),
        "concatenate-nothing": lambda: minitorch.concatenate([]),
        "stack-one-tensor": lambda: minitorch.stack(x),
        "gradcheck-step-0": lambda: minitorch.gradcheck(lambda t: t * t, [np.ones(2)], step=0),
        "gradcheck-step-nan": lambda: minitorch.gradcheck(lambda t: t * t, [np.ones(2)], step=float("nan")),
        "linear-float-size": lambda: Linear(2.5, 3),
        "linear-zero-size": lambda: Linear(2, 0),
        "unbroadcast-int-shape": lambda: minitorch.unbroadcast(np.ones((2, 3)), 3),
        "sum_to_shape-int-shape": lambda: sum_to_shape(np.ones((2, 3)), 3),  # exercise 2.1's, checked outside it
    }[name]


@pytest.mark.parametrize("name,error,culprit", [
    ("sum-axis-float", TypeError, r"sum: an axis must be an integer, got 1.5"),
    ("sum-axis-twice", ValueError, "sum: axis .* same axis twice"),
    ("mean-axis-bool", TypeError, "mean: an axis must be an integer"),
    ("transpose-axis-5", ValueError, "transpose: axis 5 is out of range for a tensor with 2 dimensions"),
    ("stack-nothing", ValueError, "stack: got no tensors"),
    ("concatenate-nothing", ValueError, "concatenate: got no tensors"),
    ("stack-one-tensor", TypeError, r"stack: expected a list of tensors, got one Tensor"),
    ("gradcheck-step-0", ValueError, "gradcheck: step must be a finite number > 0, got 0"),
    ("gradcheck-step-nan", ValueError, "gradcheck: step must be a finite number > 0, got nan"),
    ("linear-float-size", TypeError, "Linear: in_features must be an integer >= 1, got 2.5"),
    ("linear-zero-size", ValueError, "Linear: out_features must be an integer >= 1, got 0"),
    ("unbroadcast-int-shape", TypeError, r"unbroadcast: shape must be a tuple of integers .*, got int 3"),
    ("sum_to_shape-int-shape", TypeError, r"sum_to_shape: shape must be a tuple of integers such as \(3,\).*got int 3"),
])
def test_an_engine_operation_names_a_bad_argument(name, error, culprit):
    with pytest.raises(error, match=culprit):
        _engine_call(name)()


@pytest.mark.parametrize("question,culprit", [
    (lambda x, y: len(x.sum()), "len\\(\\) of a 0-d tensor"),
    (lambda x, y: x < "a", "'<' not supported between instances of 'Tensor' and 'str'"),
    (lambda x, y: x in [y], r"any\(t is x for t in tensors\)"),
    (lambda x, y: bool(x == y), r"\(x == y\).all\(\)"),
], ids=["len-0d", "less-than-str", "in-list", "if-equal"])
def test_a_python_question_a_tensor_cannot_answer_says_what_to_ask_instead(question, culprit):
    from minitorch import tensor

    x, y = tensor([1.0, 2.0]), tensor([1.0, 3.0])
    with pytest.raises(TypeError, match=culprit):
        question(x, y)


def test_python_questions_a_tensor_can_answer_keep_working():
    from minitorch import tensor

    x, y = tensor([1.0, 2.0]), tensor([1.0, 3.0])
    assert x in [x, y], "`in` finds the very same tensor (Python compares identity before values)"
    assert tensor([2.0]) in [tensor([2.0])], "one element: `in` compares the values, as in PyTorch"
    assert x != "a" and not (x == None), "a Tensor equals no string and not None"  # noqa: E711
    np.testing.assert_array_equal(x.data[x > 1.5], [2.0])
    assert repr(x == y) == "array([ True, False])" and type((x == y).all()) is np.bool_, "a mask reads as NumPy's"


def test_the_gradient_of_x_to_the_power_0_is_0_everywhere_also_at_0():
    from minitorch import tensor

    x = tensor([0.0, 2.0], requires_grad=True)
    with np.errstate(all="raise"):  # no 0 * inf on the way
        (x**0).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 0.0], err_msg="d(x^0)/dx = 0, as PyTorch gives, not nan at 0")


@pytest.mark.parametrize("change", ["SGD", "Adam", "in-place-edit", "new-data"])
def test_a_second_backward_after_the_parameters_changed_raises_instead_of_a_wrong_gradient(change):
    from minitorch import optim, tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    if change in ("SGD", "Adam"):
        getattr(optim, change)([x], lr=0.1).step()
    elif change == "in-place-edit":
        x.data[0] = 5.0
    else:
        x.data = np.array([5.0, 2.0])
    x.zero_grad()
    with pytest.raises(RuntimeError, match=r"input 0 of 'mul' .*was given new values.*optimizer step.*forward pass"):
        y.backward()
    assert x.grad is None, "a refused backward must not leave a partial gradient"


def test_a_second_backward_through_an_unchanged_graph_gives_the_same_gradient():
    from minitorch import tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    x.zero_grad()
    y.backward()
    np.testing.assert_array_equal(x.grad, [2.0, 4.0], err_msg="nothing changed: the same gradient, 2x")


@pytest.mark.parametrize("make,error,culprit", [
    (lambda p, model: optim_of("Adam", model), TypeError, "got a model; pass model.parameters()"),
    (lambda p, model: optim_of("SGD", p), TypeError, r"got a single Tensor; pass model.parameters\(\) or \[p\]"),
    (lambda p, model: optim_of("Adam", [np.zeros(3)]), TypeError, "parameter 0 is of type ndarray, not a Tensor"),
    (lambda p, model: optim_of("Adam", [p, p]), ValueError, "parameter 1 is parameter 0 again"),
    (lambda p, model: optim_of("SGD", [p, p]), ValueError, "parameter 1 is parameter 0 again"),
    (lambda p, model: optim_of("Adam", [p], betas=(0.9,)), ValueError, r"betas must be a pair \(beta1, beta2\)"),
    (lambda p, model: optim_of("Adam", [p], betas=(0.9, "0.99")), TypeError, "betas must be a finite number"),
    (lambda p, model: optim_of("SGD", model.parameters), TypeError,
     r"^SGD: expected a list of parameters, got a method \(parameters\); call it: model.parameters\(\)"),
    (lambda p, model: optim_of("SGD", [p * 2]), ValueError,
     r"^SGD: parameter 0 is the result of 'mul', not a leaf: .*can't optimize a non-leaf Tensor"),
    (lambda p, model: optim_of("Adam", [p, model.weight.T]), ValueError,
     r"^Adam: parameter 1 is the result of 'permute', not a leaf"),
], ids=["adam-of-a-model", "sgd-of-one-tensor", "adam-of-arrays", "adam-p-p", "sgd-p-p", "one-beta", "beta-str",
        "sgd-of-the-method-parameters", "sgd-of-a-computed-tensor", "adam-of-a-computed-tensor"])
def test_an_optimizer_names_what_is_not_a_list_of_distinct_parameters(make, error, culprit):
    from minitorch.nn import Linear, Parameter

    with pytest.raises(error, match=culprit):
        make(Parameter(np.zeros(2)), Linear(2, 3))


def optim_of(name, parameters, **options):
    from minitorch import optim

    return getattr(optim, name)(parameters, lr=0.1, **options)


# ----------------------------------------------------------------------
# Arguments are checked before NumPy sees them, and the error names the function and the argument


def _unchecked_call(name):
    import minitorch
    from minitorch import optim, tensor
    from minitorch.fast import speed_up
    from minitorch.nn import Linear, Parameter
    from minitorch.paper import task
    from minitorch.ops import exp_backward, log_backward, matmul_backward, mul_backward, sum_backward
    from minitorch.paper.attention import causal_mask
    from minitorch.softmax import stable_softmax

    rng = np.random.default_rng(0)
    pair = [tensor([1.0]), tensor([2.0])]
    two, three = np.ones(2), np.ones(3)
    return {
        "concatenate-axis-1.5": lambda: minitorch.concatenate(pair, axis=1.5),
        "concatenate-axis-3": lambda: minitorch.concatenate(pair, axis=3),
        "stack-axis-5": lambda: minitorch.stack(pair, axis=5),
        "stack-axis-true": lambda: minitorch.stack(pair, axis=True),
        "reshape-2.0": lambda: tensor(np.zeros(6)).reshape(2.0, 3),
        "reshape-tuple-and-int": lambda: tensor(np.zeros(6)).reshape((2, 3), 4),
        "reshape-minus-2": lambda: tensor(np.zeros(6)).reshape(-2, -3),
        "permute-bools": lambda: tensor(np.zeros((2, 3))).permute(True, False),
        "permute-strings": lambda: tensor(np.zeros((2, 3))).permute("1", "0"),
        "softmax-axis-3": lambda: tensor([1.0, 2.0]).softmax(axis=3),
        "softmax-axis-1.5": lambda: tensor([[1.0, 2.0]]).softmax(axis=1.5),
        "causal-mask-minus-1": lambda: causal_mask(-1),
        "causal-mask-float": lambda: causal_mask(4.0),
        "linear-of-a-number": lambda: Linear(2, 3)(tensor(1.0)),
        "linear-too-large": lambda: Linear(10**6, 10**6),
        "sgd-of-none": lambda: optim.SGD(None, lr=0.1),
        "adam-of-a-string": lambda: optim.Adam("weights", lr=0.1),
        "make-inputs-trigger-float": lambda: task.make_inputs(2, rng, trigger=3.0),
        "make-inputs-batch-true": lambda: task.make_inputs(True, rng),
        "make-inputs-length-float": lambda: task.make_inputs(2, rng, length=3.5),
        "make-inputs-width-float": lambda: task.make_inputs(2, rng, width=16.0),
        "make-inputs-batch-huge": lambda: task.make_inputs(10**9, rng),
        "forward-at-length-60000": lambda: tiny_model()(np.zeros((1, 60_000, 16))),
        "pow-huge-exponent": lambda: tensor([1.0]) ** (2**2000),
        "dtype-nonsense": lambda: tensor([1.0], dtype="nonsense"),
        "speed-up-none": lambda: speed_up(None),
        "adam-p-data-new-shape": lambda: setattr(Parameter(np.zeros(2)), "data", np.ones(3)),
        "data-a-tensor": lambda: setattr(tensor([1.0]), "data", tensor([2.0])),
        "no-grad-without-parentheses": lambda: minitorch.no_grad.__enter__(),
        "topological-order-of-a-number": lambda: minitorch.topological_order(5),
        "gradcheck-of-a-string": lambda: minitorch.gradcheck(lambda t: (t * t).sum(), ["ab"]),
        "gradcheck-of-none": lambda: minitorch.gradcheck(lambda t: (t * t).sum(), [None]),
        # the exercise functions, called as a student calls them
        "stable-softmax-axis-5": lambda: stable_softmax(tensor(np.ones((2, 3))), 5),
        "stable-softmax-of-an-array": lambda: stable_softmax(np.ones((2, 3)), -1),
        "stable-softmax-of-nothing": lambda: stable_softmax(tensor(np.ones((0, 3))), -1),
        "mul-backward-a-and-b-do-not-broadcast": lambda: mul_backward(two, two, three),
        "mul-backward-grad-of-another-shape": lambda: mul_backward(np.ones((2, 2)), np.ones((2, 1)), three),
        "mul-backward-of-lists": lambda: mul_backward([1.0, 2.0], [3.0, 4.0], [5.0, 6.0]),
        "mul-backward-of-a-tensor": lambda: mul_backward(two, tensor(two), two),
        "exp-backward-grad-and-out": lambda: exp_backward(two, three),
        "log-backward-grad-and-a": lambda: log_backward(two, three),
        "matmul-backward-grad-of-another-shape": lambda: matmul_backward(np.ones((2, 2)), np.ones((2, 3)),
                                                                         np.ones((3, 4))),
        "matmul-backward-a-and-b-do-not-fit": lambda: matmul_backward(np.ones((2, 4)), np.ones((2, 3)),
                                                                      np.ones((2, 4))),
        "sum-backward-axis-5": lambda: sum_backward(two, (2, 3), (5,), False),
        "sum-backward-grad-of-another-shape": lambda: sum_backward(three, (2, 3), (1,), False),
        "sum-backward-grad-of-another-shape-kept": lambda: sum_backward(np.ones((2, 3)), (2, 3), (1,), True),
    }[name]


@pytest.mark.parametrize("name,error,culprit", [
    ("concatenate-axis-1.5", TypeError, r"concatenate: axis must be an integer, got 1.5"),
    ("concatenate-axis-3", ValueError, r"concatenate: axis 3 is out of range"),
    ("stack-axis-5", ValueError, r"stack: axis 5 is out of range for 2 places"),
    ("stack-axis-true", TypeError, r"stack: axis must be an integer, got True"),
    ("reshape-2.0", TypeError, r"reshape: the shape must hold integers, got 2.0"),
    ("reshape-tuple-and-int", TypeError, r"reshape: the shape must hold integers, got \(2, 3\)"),
    ("reshape-minus-2", ValueError, r"reshape: the shape must hold sizes >= 0 \(or one -1\), got \(-2, -3\)"),
    ("permute-bools", TypeError, r"permute: each axis must be an integer, got True"),
    ("permute-strings", TypeError, r"permute: each axis must be an integer, got '1'"),
    ("softmax-axis-3", ValueError, r"softmax: axis 3 is out of range"),
    ("softmax-axis-1.5", TypeError, r"softmax: axis must be an integer, got 1.5"),
    ("causal-mask-minus-1", ValueError, r"causal_mask: length must be an integer >= 0, got -1"),
    ("causal-mask-float", TypeError, r"causal_mask: length must be an integer"),
    ("linear-of-a-number", ValueError, r"Linear\(2, 3\): input has last axis none \(shape \(\)\)"),
    ("linear-too-large", MemoryError, r"Linear: the weight of shape \(1000000, 1000000\) would need"),
    ("sgd-of-none", TypeError, r"SGD: expected a list of parameters, got NoneType"),
    ("adam-of-a-string", TypeError, r"Adam: expected a list of parameters, got str"),
    ("make-inputs-trigger-float", ValueError, r"make_inputs: trigger must be a whole number .*got 3.0 \(float\)"),
    ("make-inputs-batch-true", TypeError, r"make_inputs: batch must be an integer >= 1, got True"),
    ("make-inputs-length-float", TypeError, r"make_inputs: length must be an integer >= 1, got 3.5"),
    ("make-inputs-width-float", TypeError, r"make_inputs: width must be an integer >= 1, got 16.0"),
    ("make-inputs-batch-huge", MemoryError, r"make_inputs: the inputs .* would need .* GiB"),
    ("forward-at-length-60000", MemoryError, r"SingleLayerModel: the attention weights .*\(1, 1, 60000, 60000\)"),
    ("pow-huge-exponent", OverflowError, r"pow: the exponent, an integer of 2001 bits, is too large"),
    ("dtype-nonsense", TypeError, r"Tensor dtype must be float32 or float64, got 'nonsense'"),
    ("speed-up-none", TypeError, r"speed_up: expected a model .* got NoneType"),
    ("adam-p-data-new-shape", ValueError, r"x.data = ...: new values of shape \(3,\) for a tensor of shape \(2,\)"),
    ("data-a-tensor", TypeError, r"x.data = <Tensor>"),
    ("no-grad-without-parentheses", TypeError, r"with minitorch.no_grad\(\):"),
    ("topological-order-of-a-number", TypeError, r"topological_order: root must be a Tensor, got int"),
    ("gradcheck-of-a-string", TypeError, r"gradcheck: inputs\[0\] must be numbers, got 'ab'"),
    ("gradcheck-of-none", TypeError, r"gradcheck: inputs\[0\] must be numbers, got None"),
    ("stable-softmax-axis-5", ValueError, r"stable_softmax: axis 5 is out of range for 2 axes"),
    ("stable-softmax-of-an-array", TypeError, r"stable_softmax: scores must be a Tensor, got ndarray"),
    ("stable-softmax-of-nothing", ValueError, r"stable_softmax: scores must have .* one element, got shape \(0, 3\)"),
    ("mul-backward-a-and-b-do-not-broadcast", ValueError, r"mul_backward: a \(2,\) and b \(3,\) cannot be broadcast"),
    ("mul-backward-grad-of-another-shape", ValueError, r"mul_backward: grad has shape \(2, 2\), expected \(2, 3\)"),
    ("mul-backward-of-lists", TypeError, r"mul_backward: grad, a and b must be ndarrays, got list for grad"),
    ("mul-backward-of-a-tensor", TypeError, r"mul_backward: .*got Tensor for a \(a tensor's values are t.data\)"),
    ("exp-backward-grad-and-out", ValueError, r"exp_backward: grad \(2,\) and out \(3,\) must have one shape"),
    ("log-backward-grad-and-a", ValueError, r"log_backward: grad \(2,\) and a \(3,\) must have one shape"),
    ("matmul-backward-grad-of-another-shape", ValueError,
     r"matmul_backward: grad has shape \(2, 2\), expected \(2, 4\) \(the shape of a @ b"),
    ("matmul-backward-a-and-b-do-not-fit", ValueError, r"matmul_backward: a \(2, 3\) and b \(2, 4\) do not fit"),
    ("sum-backward-axis-5", ValueError, r"sum_backward: axis 5 is out of range for shape \(2, 3\)"),
    ("sum-backward-grad-of-another-shape", ValueError,
     r"sum_backward: grad has shape \(3,\), expected \(2,\) \(shape \(2, 3\) summed over axes \(1,\)\)"),
    ("sum-backward-grad-of-another-shape-kept", ValueError,
     r"sum_backward: grad has shape \(2, 3\), expected \(2, 1\) .*kept as size 1"),
])
def test_an_argument_numpy_would_refuse_is_refused_first_naming_the_function_and_argument(name, error, culprit):
    with pytest.raises(error, match=culprit):
        _unchecked_call(name)()


@pytest.mark.parametrize("module,function", [
    ("tensor", "topological_order"), ("tensor", "sum_to_shape"), ("ops", "mul_backward"), ("ops", "exp_backward"),
    ("ops", "log_backward"), ("ops", "matmul_backward"), ("ops", "sum_backward"), ("softmax", "stable_softmax"),
])
def test_an_engine_exercise_checks_its_inputs_outside_its_body(module, function):
    """The body is what a student writes (a stub in a student edition); the check that names a bad input wraps it
    (checks.inputs_checked_by), so that every edition keeps it and the body holds only the answer."""
    import ast
    import importlib
    import inspect
    import textwrap

    checked = getattr(importlib.import_module(f"minitorch.{module}"), function)
    assert inspect.unwrap(checked) is not checked, f"{function} should be wrapped by checks.inputs_checked_by"
    source = inspect.getsource(inspect.unwrap(checked))
    statements = ast.parse(textwrap.dedent(source)).body[0].body[1:]  # after the docstring
    if len(statements) == 1 and isinstance(statements[0], ast.Raise) and "NotImplementedError" in ast.unparse(
            statements[0]):
        return  # a student edition's stub, where the student's answer goes
    body = source.split('"""')[-1]
    assert "raise" not in body and "checks." not in body, f"the body of {function} should hold only the answer"


@pytest.mark.parametrize("module,function", [
    ("tensor", "topological_order"), ("tensor", "sum_to_shape"), ("ops", "mul_backward"), ("ops", "exp_backward"),
    ("ops", "log_backward"), ("ops", "matmul_backward"), ("ops", "sum_backward"), ("softmax", "stable_softmax"),
    ("optim", "adam_update"), ("paper.metrics", "sink_share"), ("paper.attention", "causal_mask"),
])
@pytest.mark.parametrize("call", ["no-argument", "a-misspelt-keyword"])
def test_a_call_that_does_not_fit_a_checked_functions_signature_names_that_function(module, function, call):
    """The check that wraps an exercise's function takes its arguments first: Python's error for a missing argument or
    an unknown keyword named the check (`_adam_inputs() missing ...`), a function the caller never called."""
    import importlib

    checked = getattr(importlib.import_module(f"minitorch.{module}"), function)
    with pytest.raises(TypeError) as refused:
        checked() if call == "no-argument" else checked(*[None] * 9, no_such_argument=1)
    assert str(refused.value).startswith(f"{function}() "), f"the error should name {function}: {refused.value}"


def test_the_arguments_numpy_would_take_still_work():
    import minitorch
    from minitorch import optim, tensor
    from minitorch.nn import Parameter

    pair = [tensor([[1.0]]), tensor([[2.0]])]
    assert minitorch.concatenate(pair, axis=np.int64(-1)).shape == (1, 2), "a NumPy integer axis is an axis"
    assert minitorch.stack(pair, axis=-1).shape == (1, 1, 2), "stack's axis -1 is after the last axis"
    assert tensor(np.zeros(6)).reshape(np.int64(2), -1).shape == (2, 3), "reshape takes NumPy integers and one -1"
    optim.Adam([Parameter(np.zeros(2))], betas=np.array([0.9, 0.99]))  # a pair given as an array is a pair
    from minitorch.ops import exp_backward, mul_backward, sum_backward
    (summed,) = sum_backward(np.ones(2), [2, 3], (-1,), False)  # a list shape, a negative axis: as NumPy takes them
    assert summed.shape == (2, 3), "sum_backward takes a shape as a list and axes counted from the end"
    assert [g.shape for g in mul_backward(np.ones((2, 3)), np.ones((2, 1)), np.ones(3))] == [(2, 3), (2, 3)], (
        "mul_backward takes inputs that broadcast")
    assert exp_backward(np.ones(()), np.exp(np.zeros(())))[0] == 1.0, "e^a of a 0-d array is a NumPy number: taken"

    @minitorch.no_grad
    def doubled(x):
        return x * 2

    assert not doubled(tensor([1.0], requires_grad=True)).requires_grad, "@no_grad without parentheses decorates"


@pytest.mark.parametrize("name,call,expected", [
    ("mul", lambda mt: mt.mul([1.0, 2.0], [3.0, 4.0]), [3.0, 8.0]),
    ("add", lambda mt: mt.add([1.0], [2.0]), [3.0]),
    ("sub", lambda mt: mt.sub((5.0, 1.0), np.array([1.0, 1.0])), [4.0, 0.0]),
    ("matmul", lambda mt: mt.matmul([[1.0, 2.0]], [[3.0], [4.0]]), [[11.0]]),
    ("where", lambda mt: mt.where([True, False], [1.0, 2.0], [3.0, 4.0]), [1.0, 4.0]),
], ids=["mul", "add", "sub", "matmul", "where"])
def test_a_functional_op_given_no_tensor_at_all_takes_lists_as_the_tensor_operators_do(name, call, expected):
    """mt.mul([1., 2.], [3., 4.]) raised AttributeError ('list' has no dtype): with no Tensor among the operands
    there is no dtype to match, and the lists become Tensors as `tensor([1., 2.]) * [3., 4.]` makes them."""
    import minitorch

    result = call(minitorch)
    assert isinstance(result, minitorch.Tensor), f"{name} of lists should give a Tensor, got {type(result).__name__}"
    np.testing.assert_array_equal(result.data, expected, err_msg=f"{name} of lists gave the wrong values")


# ----------------------------------------------------------------------
# Values the engine could compute silently wrong: each is computed right, or refused


def _changed_between_backwards(kind):
    """A graph whose backward ran, then a change of the kind named: (the graph's loss, the leaf x)."""
    from minitorch import tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    if kind == "a-constant-edited":  # E81: c.data[0] = 50 gave x.grad [50, 1]
        c = tensor([1.0, 1.0])
        loss = (x * c).sum()
        loss.backward()
        c.data[0] = 50.0
    elif kind == "an-intermediate-edited":  # E33: y.numpy()[0] = 100 gave [600, 36]
        y = x * 3
        loss = (y * y).sum()
        loss.backward()
        y.numpy()[0] = 100.0
    elif kind == "a-constant-replaced":
        c = tensor([1.0, 1.0])
        loss = (x * c).sum()
        loss.backward()
        c.data = np.array([50.0, 1.0])
    elif kind == "in-place-operator-on-a-constant":
        c = tensor([1.0, 1.0])
        loss = (x * c).sum()
        loss.backward()
        c *= 50.0
    else:  # "a-parameter-updated-under-no-grad"
        import minitorch

        loss = (x * x).sum()
        loss.backward()
        with minitorch.no_grad():
            x -= 0.5
    x.zero_grad()
    return loss, x


def _silently_wrong_before(name):
    import minitorch
    from minitorch import tensor
    from minitorch.nn import Linear
    from minitorch.paper import task

    def iterate_a_number():
        return list(tensor(5.0))

    def parameter_plus_equals():
        model = Linear(2, 2)
        model.weight += 0.0

    def integer_data_gradient():
        x = tensor([1.0, 2.0], requires_grad=True)
        x.data = np.array([1, 2])
        (x * tensor([0.5, 0.5])).sum().backward()
        return x.grad

    def custom_backward_of(gradient):
        x = tensor([3.0], requires_grad=True)
        y = minitorch.Tensor.from_op(x.data * 2, (x,), lambda grad: (grad * gradient,), "custom")
        y.sum().backward()

    rng = np.random.default_rng(0)
    return {
        "none-in-a-list": lambda: tensor([1.0, None]),
        "iterate-a-0-d-tensor": iterate_a_number,
        "parameter-plus-equals": parameter_plus_equals,
        "asarray-of-a-tensor-that-requires-grad": lambda: np.asarray(tensor([1.0, 2.0], requires_grad=True)),
        "residual-the-string-False": lambda: task.make_targets(*task.make_inputs(2, rng), residual="False"),
        "make-batch-residual-the-string-False": lambda: task.make_batch(2, rng, residual="False"),
        "manual-seed-true": lambda: minitorch.manual_seed(True),
        "integer-data": integer_data_gradient,
        "complex-gradient-of-a-custom-op": lambda: custom_backward_of(1 + 1j),  # cast to 1.0 with a ComplexWarning
        "complex-gradient-of-a-custom-op-of-another-shape": lambda: custom_backward_of(np.full((2, 1), 1j)),
    }[name]


@pytest.mark.parametrize("kind", ["a-constant-edited", "an-intermediate-edited", "a-constant-replaced",
                                  "in-place-operator-on-a-constant", "a-parameter-updated-under-no-grad"])
def test_a_backward_through_values_changed_since_the_forward_pass_raises(kind):
    loss, x = _changed_between_backwards(kind)
    with pytest.raises(RuntimeError, match=r"was given new values after '.*' used it \(version \d+ then, \d+ now"):
        loss.backward()
    assert x.grad is None, "a refused backward must not leave a partial gradient"


@pytest.mark.parametrize("name,error,culprit", [
    ("none-in-a-list", TypeError, r"holding None.*float\('nan'\)"),
    ("iterate-a-0-d-tensor", TypeError, r"iteration over a 0-d tensor"),
    ("parameter-plus-equals", RuntimeError, r"leaf that requires grad .*with minitorch.no_grad\(\)"),
    ("asarray-of-a-tensor-that-requires-grad", TypeError, r"requires grad cannot become a NumPy array.*detach"),
    ("residual-the-string-False", TypeError, r"make_targets: residual must be True or False, got 'False'"),
    ("make-batch-residual-the-string-False", TypeError, r"residual must be True or False"),
    ("manual-seed-true", ValueError, r"manual_seed: the seed must be a non-negative integer, got True"),
    ("complex-gradient-of-a-custom-op", TypeError,
     r"^backward of 'custom' gave a gradient of dtype complex128 for an input of dtype float64; a gradient holds real"),
    ("complex-gradient-of-a-custom-op-of-another-shape", TypeError, r"^backward of 'custom' gave a gradient of dtype"),
])
def test_what_was_silently_wrong_is_refused_naming_the_fix(name, error, culprit):
    with pytest.raises(error, match=culprit):
        _silently_wrong_before(name)()


@pytest.mark.parametrize("name,check", [
    ("integer-data", lambda grad: np.testing.assert_array_equal(grad, [0.5, 0.5])),
    ("big-endian-float32", None),
    ("float32-to-a-numpy-float64-power", None),
    ("max-over-a-nan", None),
    ("protocols", None),
    ("a-parameter-stays-a-parameter-under-no-grad", None),
    ("optimizer-step-after-a-new-forward", "SGD"),
    ("optimizer-step-after-a-new-forward", "Adam"),
    ("data-a-list", None),
])
def test_what_was_silently_wrong_is_now_right(name, check):
    import minitorch
    from minitorch import tensor
    from minitorch.nn import Linear, Parameter

    if name == "integer-data":  # P17: the gradient was cast to int, [0, 0]
        check(_silently_wrong_before(name)())
    elif name == "big-endian-float32":  # E10: '>f4' became float64
        assert tensor(np.array([1.5], dtype=">f4")).dtype == np.float32, "big-endian float32 data stays float32"
        assert tensor(np.array([1.5], dtype=">f8")).dtype == np.float64
    elif name == "float32-to-a-numpy-float64-power":  # E48
        x = tensor([2.0], dtype=np.float32)
        assert (x ** np.float64(2)).dtype == np.float32, "x ** np.float64(2) stays float32, as x * np.float64(2)"
        assert (x ** np.int64(3)).dtype == np.float32
    elif name == "max-over-a-nan":  # E46: the gradient was NaN everywhere; PyTorch gives it to the NaN
        x = tensor([1.0, np.nan, 3.0], requires_grad=True)
        x.max().backward()
        np.testing.assert_array_equal(x.grad, [0.0, 1.0, 0.0])
        y = tensor([[1.0, np.nan], [4.0, 2.0]], requires_grad=True)
        y.max(axis=1).sum().backward()
        np.testing.assert_array_equal(y.grad, [[0.0, 1.0], [1.0, 0.0]], err_msg="per row: the NaN or the maximum")
    elif name == "protocols":  # E18, E50, E51, E52, E82, E83
        t = tensor([1.0, 2.0])
        assert [v.item() for v in t] == [1.0, 2.0] and len(t) == 2, "iterating goes over the first axis"
        assert float(tensor([2.5])) == 2.5 and np.sum(t) == 3.0 and np.allclose(t, [1.0, 2.0])
        array = np.asarray(t, dtype=float)
        assert type(array) is np.ndarray and array.dtype == np.float64 and array.tolist() == [1.0, 2.0]
        with pytest.raises(TypeError, match="float\\(\\) of a tensor of shape \\(2,\\)"):
            float(t)
        rows = list(tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True))
        assert all(row.requires_grad for row in rows), "the rows of a tensor that requires grad keep its graph"
    elif name == "optimizer-step-after-a-new-forward":  # P15, P18: "output array is read-only"
        from minitorch import optim

        model, x = Linear(2, 2), tensor([[1.0, 2.0]])
        optimizer = getattr(optim, check)(model.parameters(), lr=0.1)
        (model(x) ** 2).sum().backward()
        pending = (model(x) ** 2).sum()  # a forward whose backward has not run
        before = model.weight.data.copy()
        optimizer.step()
        assert not np.array_equal(model.weight.data, before), "the step must update the weights"
        with pytest.raises(RuntimeError, match="was given new values"):
            pending.backward()  # it read the weights before the step: its gradient would be wrong
    elif name == "data-a-list":  # P16: AttributeError: 'list' object has no attribute 'shape'
        x = tensor([1.0, 2.0], requires_grad=True)
        x.data = [3.0, 4.0]
        (x * x).sum().backward()
        assert x.data.dtype == np.float64 and x.grad.tolist() == [6.0, 8.0]
    else:  # E54: += turned the weight into a plain Tensor and the optimiser lost it
        model = Linear(2, 2)
        with minitorch.no_grad():
            model.weight += 1.0
            model.weight *= 2.0
        assert isinstance(model.weight, Parameter) and len(model.parameters()) == 2, "still a Parameter, still listed"


def test_a_change_in_place_through_a_detached_tensor_counts_as_a_change_of_its_source():
    """``d = x.detach()`` shares x's values, so ``d += 1`` under no_grad changes x: the version count must move too,
    so that a second backward is refused rather than giving [4, 6] of the new values."""
    from minitorch import no_grad, tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    z = (x * x).sum()
    z.backward()
    detached = x.detach()
    with no_grad():
        detached += 1
    with pytest.raises(RuntimeError, match="was given new values"):
        z.backward()


def _engine_and_paper_cases():
    """(name, call, error type, what the message must say) for inputs the engine and the paper refuse."""
    import inspect as _inspect  # noqa: F401 (the cases import what they use)

    from minitorch import no_grad, tensor
    from minitorch.nn import Parameter
    from minitorch.optim import SGD
    from minitorch.paper import attention, metrics

    weights = np.tril(np.random.default_rng(0).random((2, 1, 4, 4)))  # a causal map

    def no_grad_on(thing):
        return lambda: no_grad(thing)

    def generator():
        yield 1

    def sgd_with(grad):
        def step():
            parameter = Parameter(np.ones(3))
            parameter.grad = grad  # a bad gradient is refused here, at the assignment, before any optimizer sees it
            SGD([parameter], lr=0.1).step()
        return step

    return [
        ("int of two elements", lambda: int(tensor([2.7, 1.0])), TypeError, "exactly one element"),
        ("no_grad on a generator", no_grad_on(generator), TypeError, "decorates plain functions"),
        ("no_grad on a class", no_grad_on(type("Model", (), {})), TypeError, "decorates plain functions"),
        ("no_grad() on a generator", lambda: no_grad()(generator), TypeError, "decorates plain functions"),
        ("np.add.at on a tensor", lambda: np.add.at(tensor([1.0, 2.0]), [0], 1.0), TypeError,
         r"np.add.at\(tensor, ...\) would change the tensor's values in place"),
        ("grad of the wrong shape", sgd_with(np.ones((3, 2))), ValueError,
         r"x.grad = ...: a gradient of shape \(3, 2\) for a tensor of shape \(3,\)"),
        ("grad a string", sgd_with("abc"), TypeError, r"x.grad = ...: a gradient is None or a float .* got str 'abc'"),
        ("sink_share threshold nan", lambda: metrics.sink_share([weights], threshold=float("nan")), ValueError,
         "threshold"),
        ("sink_share key past the end", lambda: metrics.sink_share([weights], key=10), ValueError,
         "key 10 is not a key"),
        ("sink_share of no layers", lambda: metrics.sink_share([]), ValueError, "non-empty list"),
        ("causal_mask too large", lambda: attention.causal_mask(10**6), MemoryError, "causal_mask: a mask of shape"),
        ("normaliser named by a number", lambda: attention.register_normaliser(123), TypeError, "non-empty string"),
    ]


@pytest.mark.parametrize("case", _engine_and_paper_cases(), ids=lambda case: case[0])
def test_bad_engine_and_paper_inputs_are_refused_naming_what_is_wrong(case):
    _, call, error, message = case
    with pytest.raises(error, match=message):
        call()
    assert int(tensor_of_one()) == 2, "int() of one element truncates, as int() of a float"


def tensor_of_one():
    from minitorch import tensor
    return tensor([2.7])


def test_inputs_that_would_change_behaviour_silently_are_refused():
    """Inputs that would change behaviour without a word are refused: requires_grad='False' (a true string), a
    Parameter replaced by an array (it would drop out of parameters()), keepdims='no', book --only ''."""
    from minitorch import sum as total, tensor
    from minitorch.nn import Linear
    from minitorch.tools.book.chapters import BookError, find_chapters

    x = tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="requires_grad must be True or False, got 'False'"):
        x.requires_grad = "False"
    layer = Linear(2, 2)
    with pytest.raises(TypeError, match="Linear.weight is a Parameter"):
        layer.weight = np.ones((2, 2))
    assert len(layer.parameters()) == 2
    with pytest.raises(TypeError, match="sum: keepdims must be True or False"):
        total(x, keepdims="no")
    with pytest.raises(BookError, match="--only: name the chapters to build"):
        find_chapters(ROOT / "chapters", [""])


# ----------------------------------------------------------------------
# Inputs that would end in a raw traceback: each refused before any work, naming the argument and what is expected


@pytest.mark.parametrize("symbol,other", [
    ("+=", np.ones((3, 2))),  # not NumPy's "non-broadcastable output operand", and the version stays put
    ("-=", np.ones(3)),
    ("*=", [[1.0, 2.0], [3.0, 4.0]]),
    ("/=", "a tensor of shape (2, 2)"),
])
@pytest.mark.parametrize("requires_grad", [False, True], ids=["constant", "graph"])
def test_an_in_place_operator_refuses_values_of_another_shape_and_changes_nothing(symbol, other, requires_grad):
    from minitorch import tensor

    if isinstance(other, str):
        other = tensor(np.ones((2, 2)))
    x = tensor([1.0, 2.0], requires_grad=requires_grad)
    x = x * 1.0 if requires_grad else x  # not a leaf: the shape is checked before anything else
    version = x._version
    in_place = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv}[symbol]
    with pytest.raises(ValueError, match=rf"x {re.escape(symbol)} y: y of shape .* to x's shape \(2,\)"):
        in_place(x, other)
    assert x._version == version, "a refused in-place operator changed nothing: the version must not move"
    np.testing.assert_array_equal(x.data, [1.0, 2.0])
    y = tensor([1.0, 2.0])
    y += np.ones(1)  # what broadcasts to x's shape still works
    np.testing.assert_array_equal(y.data, [2.0, 3.0])


def _graph_output(kind):
    from minitorch import tensor
    from minitorch.nn import Linear

    x = tensor([1.0, 2.0], requires_grad=True)
    return {"mul": lambda: x * 2.0,  # its backward is a local function, 'mul.<locals>.<lambda>' to pickle
            "sum": lambda: (x * x).sum(),
            "linear": lambda: Linear(2, 3)(tensor([[1.0, 2.0]]))}[kind]()


@pytest.mark.parametrize("kind,op", [("mul", "mul"), ("sum", "sum"), ("linear", "add")])
def test_pickling_a_graph_output_says_to_detach_it_and_a_leaf_still_pickles(kind, op):
    import pickle

    from minitorch import tensor
    from minitorch.nn import Linear, Parameter

    output = _graph_output(kind)
    with pytest.raises(TypeError, match=rf"cannot pickle the result of '{op}'.*detach\(\).*numpy\(\)"):
        pickle.dumps(output)
    for kept in (output.detach(), tensor([1.0, 2.0], requires_grad=True), Parameter(np.ones(2))):
        copy = pickle.loads(pickle.dumps(kept))
        assert type(copy) is type(kept) and copy.requires_grad == kept.requires_grad, "a leaf pickles as itself"
        np.testing.assert_array_equal(copy.data, kept.data)
    layer = pickle.loads(pickle.dumps(Linear(2, 3)))
    assert len(layer.parameters()) == 2, "a module pickles with its parameters"


@pytest.mark.parametrize("data,dtype,size", [
    (np.broadcast_to(np.zeros(1), (10**10,)), None, "74.5 GiB"),  # a view of 8 bytes: its copy's size is named
    (np.broadcast_to(np.zeros(1, dtype=np.float32), (10**5, 10**5)), None, "37.3 GiB"),
    (np.broadcast_to(np.int8(1), (10**6, 10**4)), np.float32, "37.3 GiB"),
])
def test_a_tensor_too_large_for_memory_is_refused_saying_how_large_before_copying(data, dtype, size):
    from minitorch import tensor

    with pytest.raises(MemoryError, match=rf"tensor: the values of shape {re.escape(str(data.shape))} would need "
                                          rf"{size}"):
        tensor(data, dtype=dtype)
    assert tensor(np.broadcast_to(np.zeros(1), (1000,))).shape == (1000,), "a view of a fitting size is copied"


def _module_tree(kind):
    """A module whose attributes lead back to itself or to a module holding it, in the way `kind` names."""
    from minitorch.nn import Linear, Module

    layer = Linear(2, 2)
    if kind == "itself":  # a module that holds itself: walking it must not recurse forever
        layer.me = layer
        return layer
    outer = Module()
    outer.inner = Module()
    outer.inner.layer = layer
    if kind == "its-holder":
        outer.inner.up = outer
    else:  # "in-a-list"
        outer.inner.blocks = [layer, outer]
    return outer


@pytest.mark.parametrize("kind,attribute", [
    ("itself", "Linear.me"), ("its-holder", "Module.inner.up"), ("in-a-list", r"Module.inner.blocks.1"),
])
@pytest.mark.parametrize("method", ["parameters", "state_dict", "zero_grad"])
def test_a_module_tree_with_a_cycle_names_the_attribute_that_closes_it(kind, attribute, method):
    model = _module_tree(kind)
    with pytest.raises(ValueError, match=rf"{attribute} is .*a module that holds it.*a cycle"):
        getattr(model, method)()


def test_a_module_shared_by_two_attributes_is_not_a_cycle():
    from minitorch.nn import Linear, Module

    model, shared = Module(), Linear(2, 2)
    model.first, model.second = shared, shared
    assert len(model.parameters()) == 2, "a shared module's parameters are listed once, without an error"


# ----------------------------------------------------------------------
# More raw tracebacks and silent values the engine refuses with a message that names the culprit


@pytest.mark.parametrize("values", [[1.0, 2.0], [], [[1.0], [2.0]], np.zeros((2, 3))])
def test_item_of_a_tensor_of_other_than_one_element_names_item_and_the_shape(values):
    """The error names item and the shape, which NumPy's "can only convert an array of size 1" does not."""
    from minitorch import tensor

    x = tensor(values)
    with pytest.raises(ValueError, match=rf"item\(\): the tensor has shape {re.escape(str(x.shape))} "
                                         rf"\({x.size} elements\)"):
        x.item()
    assert tensor([[3.0]]).item() == 3.0 and tensor(2.0).item() == 2.0, "one element, of any shape, is a number"


@pytest.mark.parametrize("index,culprit", [
    ("a", r"x\['a'\] .* only integers, slices"),  # NumPy's message alone names neither getitem nor 'a'
    (1.5, r"x\[1.5\] .* only integers, slices"),
    ((0, "a"), r"x\[0, 'a'\] .* only integers, slices"),
    ({"row": 0}, r"x\[\{'row': 0\}\] .* only integers, slices"),
    (np.array([0.5]), r"x\[array\(\[0.5\]\)\] .* must be of integer \(or boolean\) type"),
    ((0, 0, 0), r"x\[0, 0, 0\] .* too many indices"),
    (5, r"x\[5\] .* index 5 is out of bounds for axis 0 with size 2"),
])
def test_indexing_with_what_is_not_an_index_names_getitem_and_the_index(index, culprit):
    from minitorch import tensor

    x = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with pytest.raises(IndexError, match=rf"getitem: {culprit}"):
        x[index]
    for fine in (np.int64(1), [0, 1], np.array([True, False]), (Ellipsis, None, slice(0, 1)), (0, -1), range(2)):
        np.testing.assert_array_equal(x[fine].data, x.data[fine], err_msg=f"x[{fine!r}] is NumPy's indexing")


@pytest.mark.parametrize("index", [slice(None, None, 0), (0, slice(1, None, 0)), 2**63],
                         ids=["zero-step", "zero-step-in-tuple", "beyond-64-bits"])
def test_reading_and_assigning_through_a_bad_index_are_refused_in_one_line_naming_the_index_and_shape(index):
    from minitorch import tensor

    x = tensor([[1.0, 2.0], [3.0, 4.0]])
    for operation, culprit in [(lambda: x[index], r"^getitem: x\[.*\] on a tensor of shape \(2, 2\): "),
                               (lambda: x.__setitem__(index, 0.0), r"^x\[index\] = y on a tensor of shape \(2, 2\): ")]:
        with pytest.raises((IndexError, ValueError), match=culprit + r"(slice step cannot be zero|an index is out)"):
            operation()
    assert x.data.tolist() == [[1.0, 2.0], [3.0, 4.0]], "a refused assignment changed the tensor's values"


@pytest.mark.parametrize("arguments,error,culprit", [
    (dict(seed="a"), TypeError, r"gradcheck: seed must be an integer >= 0, got 'a' \(str\)"),
    (dict(seed=-1), ValueError, "gradcheck: seed must be an integer >= 0, got -1"),
    (dict(seed=1.5), TypeError, "gradcheck: seed must be an integer >= 0, got 1.5"),
    (dict(function="notfn"), TypeError, r"gradcheck: function must be callable .* got 'notfn' \(str\)"),
    (dict(function=None), TypeError, "gradcheck: function must be callable .* got None"),
    (dict(inputs=np.ones(2)), TypeError,  # not split into two scalar arguments
     r"gradcheck: inputs must be a list .* got one ndarray of shape \(2,\); .* gradcheck\(function, \[x\]\)"),
    (dict(inputs="tensor"), TypeError, r"gradcheck: inputs must be a list .* got one Tensor of shape \(2,\)"),
    (dict(inputs=3.0), TypeError, "gradcheck: inputs must be a list .* got 3.0"),
    (dict(inputs=[]), ValueError, "gradcheck: inputs is empty, so there is no gradient to check; list the tensors"),
])
def test_gradcheck_refuses_a_bad_argument_before_calling_the_function(arguments, error, culprit):
    from minitorch import gradcheck, tensor

    calls = []

    def square_sum(t):
        calls.append(t)
        return (t * t).sum()

    given = dict(function=square_sum, inputs=[np.ones(2)]) | arguments
    if isinstance(given["inputs"], str):
        given["inputs"] = tensor([1.0, 2.0])
    with pytest.raises(error, match=culprit):
        gradcheck(given.pop("function"), given.pop("inputs"), **given)
    assert not calls, "gradcheck ran the function before refusing its arguments"
    assert gradcheck(square_sum, (np.ones(2),), seed=np.int64(3)), "a tuple of inputs and a NumPy seed still work"


@pytest.mark.parametrize("bias", ["no", "False", 0, 1, None])
def test_linear_takes_only_true_or_false_for_bias(bias):
    """Linear(2, 3, bias='no') must not keep a bias (bool('no') is True), so only True or False is taken."""
    from minitorch.nn import Linear

    with pytest.raises(TypeError, match=rf"Linear: bias must be True or False, got {re.escape(repr(bias))}"):
        Linear(2, 3, bias=bias)
    assert Linear(2, 3, bias=np.False_).bias is None and Linear(2, 3, bias=True).bias is not None


@pytest.mark.parametrize("state,culprit", [
    (None, r"got None \(NoneType\)"),  # not Python's "'NoneType' object is not iterable"
    ([("weight", np.ones((2, 2)))], r"got \[\('weight', .*\)\] \(list\)"),
    ("model.npz", r"got 'model.npz' \(str\)"),
    (np.ones((2, 2)), r"got array\(.*\) \(ndarray\)"),
])
def test_load_state_dict_of_what_is_not_a_dict_names_state_and_changes_nothing(state, culprit):
    from minitorch.nn import Linear

    layer = Linear(2, 2)
    before = layer.state_dict()
    with pytest.raises(TypeError, match=rf"load_state_dict for Linear: state must be a dict .*, {culprit}"):
        layer.load_state_dict(state)
    for name, values in layer.state_dict().items():
        np.testing.assert_array_equal(values, before[name], err_msg=f"a refused state changed '{name}'")


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
@pytest.mark.parametrize("lr,error", [(-5, ValueError), (0.0, ValueError), (float("nan"), ValueError),
                                      ("0.1", TypeError), (True, TypeError)])
def test_a_learning_rate_set_after_construction_is_checked_as_the_constructors(optimizer, lr, error):
    """opt.lr = -5 must be refused like the constructor's lr; taken, SGD would move the parameter uphill (1 -> 6)."""
    from minitorch import optim
    from minitorch.nn import Parameter

    parameter = Parameter([1.0])
    step = getattr(optim, optimizer)([parameter], lr=0.1)
    with pytest.raises(error, match=rf"{optimizer}: lr \(the learning rate\) must be a finite number > 0, got "):
        step.lr = lr
    assert step.lr == 0.1, "a refused learning rate must leave the old one"
    parameter.grad = np.ones(1)
    step.lr = np.float64(0.5)  # a schedule's new rate is taken
    step.step()
    assert parameter.data[0] < 1.0, f"a step with lr 0.5 and gradient 1 must go downhill, got {parameter.data}"


@pytest.mark.parametrize("copier", ["copy", "deepcopy"])
@pytest.mark.parametrize("kind", ["leaf", "parameter", "detached"])
def test_a_copy_of_a_tensor_owns_its_values_so_a_change_to_it_leaves_the_graph_right(copier, kind):
    """A copy of x owns its values: were x's array shared but not its version count, z += 1 under no_grad would
    change x, and the gradient of (x * x).sum() would come out [4, 6] (of the new values) where [2, 4] is right."""
    import copy

    from minitorch import no_grad, tensor
    from minitorch.nn import Parameter

    x = {"leaf": lambda: tensor([1.0, 2.0], requires_grad=True), "parameter": lambda: Parameter([1.0, 2.0]),
         "detached": lambda: tensor([1.0, 2.0])}[kind]()
    source = x
    if kind == "detached":  # a copy of a detached tensor owns its values too, not its source's
        x = source.detach()
    y = (source * source).sum() if kind == "detached" else (x * x).sum()
    copied = getattr(copy, copier)(x)
    assert type(copied) is type(x) and copied.requires_grad == x.requires_grad, "a copy keeps its class and flag"
    with no_grad():
        copied += 1
    np.testing.assert_array_equal(copied.data, [2.0, 3.0])
    np.testing.assert_array_equal(x.data, [1.0, 2.0], err_msg=f"copy.{copier} shares the values it was copied from")
    if y.requires_grad:
        y.backward()
        np.testing.assert_array_equal(x.grad, [2.0, 4.0], err_msg="the gradient must be of the forward's values")


@pytest.mark.parametrize("copier", ["copy", "deepcopy"])
def test_copying_a_graph_output_is_refused_and_a_copied_model_keeps_shared_parameters_shared(copier):
    import copy

    from minitorch import tensor
    from minitorch.nn import Linear, Module

    x = tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"cannot copy the result of 'mul' .* copy y.detach\(\)"):
        getattr(copy, copier)(x * 2.0)

    class Tied(Module):
        def __init__(self):
            self.first = Linear(2, 2)
            self.second = self.first

    model = copy.deepcopy(Tied())
    assert model.first is model.second and len(model.parameters()) == 2, "a shared layer stays shared in a copy"


@pytest.mark.parametrize("symbol", ["<", "<=", ">", ">=", "==", "!="])
@pytest.mark.parametrize("other", [[1.0, 2.0, 3.0], np.ones((2, 3)), "tensor"], ids=["list", "array", "tensor"])
def test_a_comparison_of_shapes_that_do_not_broadcast_names_itself_and_the_shapes(symbol, other):
    """tensor([1., 2.]) > tensor([1., 2., 3.]) names the comparison and both shapes, not only NumPy's broadcast."""
    from minitorch import tensor
    compare = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
               "!=": operator.ne}[symbol]
    other = tensor([1.0, 2.0, 3.0]) if isinstance(other, str) else other
    shapes = rf"shapes \(2,\) and {re.escape(str(np.shape(other)))}"
    with pytest.raises(ValueError, match=rf"x {re.escape(symbol)} y: {shapes} cannot be broadcast together"):
        compare(tensor([1.0, 2.0]), other)
    assert compare(tensor([1.0, 2.0]), np.ones((3, 1))).shape == (3, 2), "shapes that broadcast still compare"


@pytest.mark.parametrize("prefix", [5, None, b"model.", ["model."]])
def test_named_parameters_names_a_prefix_that_is_not_a_string_at_the_call(prefix):
    """named_parameters(prefix=5) is named at the call, not with Python's "unsupported operand type(s) for +"."""
    model = tiny_model()
    with pytest.raises(TypeError, match=rf"named_parameters: prefix must be a string .*got {re.escape(repr(prefix))}"):
        model.named_parameters(prefix=prefix)  # not only when the first name is asked for
    assert [name for name, _ in model.named_parameters("m.")][0].startswith("m.layers.0.")


@pytest.mark.parametrize("parameters, culprit", [
    (5, r"got 5 \(int\)"),  # refused here, not with "'int' object is not iterable" when the decorator applies
    ([("sink_logit", lambda heads: np.zeros((heads, 1, 1, 1)))], r"\(list\)"),
    ({"sink_logit": 0.0}, r"got \{'sink_logit': 0.0\} \(dict\)"),
    ({3: lambda heads: np.zeros((heads, 1, 1, 1))}, r"\(dict\)"),
])
def test_register_normaliser_names_parameters_that_are_not_names_and_functions_before_registering(parameters,
                                                                                                   culprit):
    from minitorch.paper import attention
    with pytest.raises(TypeError, match=rf"register_normaliser: parameters must be a dict of parameter name -> "
                                        rf"function .*{culprit}"):
        attention.register_normaliser("r6_bad_parameters", parameters=parameters)
    assert "r6_bad_parameters" not in attention.NORMALISERS, "a refused normaliser must not be registered"


@pytest.mark.parametrize("grad, error, culprit", [
    (np.ones((2, 2)), ValueError, r"a gradient of shape \(2, 2\) for a tensor of shape \(2,\)"),
    (np.ones(3), ValueError, r"a gradient of shape \(3,\) for a tensor of shape \(2,\)"),
    (np.float64(1.0), TypeError, "got float64"),  # a scalar for a (2,) tensor would be broadcast too
    ("abc", TypeError, "got str 'abc'"),
    ([1.0, 2.0], TypeError, r"got list \[1.0, 2.0\]"),
    (np.array([1, 2]), TypeError, "got an array of dtype int64"),
    (np.array(["a", "b"]), TypeError, "got an array of dtype <U1"),
    ("tensor", TypeError, r"x.grad = <Tensor>: .*assign its values"),
], ids=["broadcast-2x2", "too-long", "scalar", "str", "list", "int-array", "str-array", "tensor"])
def test_a_grad_assigned_by_hand_that_is_no_gradient_of_the_tensor_is_refused_at_the_assignment(grad, error,
                                                                                                   culprit):
    """A gradient is checked when assigned: x.grad = np.ones((2, 2)) on a (2,) tensor would make the next backward
    broadcast into a (2, 2) .grad, and x.grad = 'abc' would fail in backward with a NumPy error not naming .grad."""
    from minitorch import tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    x.grad = np.array([0.5, 0.5])
    with pytest.raises(error, match=culprit) as refused:
        x.grad = tensor([1.0, 2.0]) if isinstance(grad, str) and grad == "tensor" else grad
    assert "x.grad" in str(refused.value), f"the message must name x.grad: {refused.value}"
    assert np.array_equal(x.grad, [0.5, 0.5]), "a refused gradient must leave the old one"
    (x * x).sum().backward()
    assert x.grad.shape == (2,) and np.array_equal(x.grad, [2.5, 4.5]), f"backward then adds 2x: {x.grad}"
    for accepted in (None, np.zeros(2), np.zeros(2, dtype=np.float32)):
        x.grad = accepted  # None (zero_grad) and float arrays of the shape are gradients
        assert x.grad is accepted
    scalar = tensor(3.0, requires_grad=True)
    scalar.grad = np.float64(1.0)  # a 0-d tensor's gradient may be a NumPy scalar
    assert scalar.grad.shape == ()


# ----------------------------------------------------------------------
# dtype conversions: part of the graph, and a dtype in either byte order is that dtype

def test_astype_keeps_the_graph_so_every_branch_adds_its_gradient_in_the_inputs_dtype():
    from minitorch import tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    ((x.astype(np.float32) * 3.0).sum() + x.sum()).backward()
    np.testing.assert_array_equal(x.grad, [4.0, 4.0], err_msg="the float32 branch must add 3 to each gradient "
                                                              "(astype cut the graph if it is 1)")
    y = tensor([1.0, 2.0], requires_grad=True)
    as_float32 = y.astype(np.float32)
    assert as_float32.dtype == np.float32 and as_float32.requires_grad, "astype records its input, as x.to() does"
    (as_float32 * as_float32).sum().backward()  # (a backward through it blamed no_grad() before)
    assert y.grad.dtype == np.float64, f"the gradient has the input's dtype float64, got {y.grad.dtype}"
    np.testing.assert_array_equal(y.grad, [2.0, 4.0])


def test_astype_of_a_tensor_without_grad_or_under_no_grad_records_nothing_and_copies():
    import minitorch
    from minitorch import tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    with minitorch.no_grad():
        assert not x.astype(np.float32).requires_grad, "no graph is recorded inside no_grad()"
    plain = tensor([1.0, 2.0])
    same = plain.astype(np.float64)
    assert not same.requires_grad and same.data is not plain.data, "astype to the same dtype is still a copy"


@pytest.mark.parametrize("dtype,expected", [(">f8", np.float64), (np.dtype(">f8"), np.float64),
                                            (">f4", np.float32), ("<f4", np.float32)])
def test_a_dtype_argument_in_another_byte_order_is_that_float_dtype_in_the_machines_order(dtype, expected):
    from minitorch import tensor

    made = tensor([1.0, 2.0], dtype=dtype)
    assert made.dtype == expected, f"tensor(dtype={dtype!r}) holds {made.dtype}, expected {np.dtype(expected)}"
    assert made.data.dtype.isnative, "the values are kept in the machine's byte order, as an array of '>f8' is"
    assert made.data.tolist() == [1.0, 2.0]
    assert tensor([1.0]).astype(dtype).dtype == expected, "astype takes the same dtypes as tensor()"


@pytest.mark.parametrize("holder,kind", [
    (lambda Linear: (Linear(2, 2) for _ in range(2)), "generator"),
    (lambda Linear: map(lambda _: Linear(2, 2), range(2)), "map"),
    (lambda Linear: iter([Linear(2, 2)]), "list_iterator"),
    (lambda Linear: {Linear(2, 2)}, "set"),
    (lambda Linear: np.array([Linear(2, 2), None], dtype=object)[:1], "ndarray"),
])
@pytest.mark.parametrize("method", ["parameters", "state_dict", "zero_grad"])
def test_modules_held_where_parameters_cannot_search_are_refused_naming_the_attribute(holder, kind, method):
    from minitorch.nn import Linear, Module

    model = Module()
    model.layers = holder(Linear)
    with pytest.raises(TypeError, match=rf"^Module\.layers is a {kind}, which parameters\(\) cannot search: .*"
                                        rf"store a list"):
        getattr(model, method)()


@pytest.mark.parametrize("shared", [lambda nn: nn.Parameter([1.0]), lambda nn: nn.Linear(2, 2)])
def test_a_parameter_or_module_set_on_the_class_is_refused_naming_it(shared):
    from minitorch import nn

    class Model(nn.Module):
        scale = shared(nn)
        steps = np.arange(3)  # a class attribute that holds no parameter is no error

    class Wider(Model):
        pass

    for model in (Model(), Wider()):
        with pytest.raises(TypeError, match=r"^Model\.scale is a (Parameter|Linear) set on the class, .*"
                                            r"set it in __init__ instead: self\.scale = "):
            model.parameters()
    model = Model()
    model.scale = shared(nn)  # set on the instance, it is found
    assert len(model.parameters()) >= 1, "a parameter set on the instance is in parameters()"


@pytest.mark.parametrize("name", ["parameters", "named_parameters", "state_dict", "load_state_dict", "zero_grad"])
def test_an_attribute_named_as_a_module_method_is_refused_at_the_assignment_naming_the_method(name):
    """self.parameters = [...] would hide parameters(), and the optimizer's call fail later in Python's words."""
    from minitorch.nn import Module, Parameter

    class Model(Module):
        def __init__(self):
            setattr(self, name, [Parameter([1.0])])

    with pytest.raises(TypeError, match=rf"^Model\.{name} would hide the method Module\.{name}\(\), .*another name"):
        Model()
    model = Module()
    model.forward = lambda x: x  # forward is each model's own to define: no error
    model.params = [Parameter([1.0])]
    assert model(3) == 3 and len(model.parameters()) == 1, "forward and other names are set as before"


def test_load_state_dict_refuses_two_names_of_one_shared_parameter_given_different_values():
    """A layer shared under two names is one parameter: a state giving the names different values is a mistake
    (the last would silently win); a state that agrees, as state_dict() gives, loads."""
    from minitorch.nn import Linear, Module

    class Tied(Module):
        def __init__(self):
            self.first = Linear(2, 2)
            self.second = self.first

    model = Tied()
    state = model.state_dict()
    state["first.weight"], state["second.weight"] = np.ones((2, 2)), np.zeros((2, 2))
    before = model.first.weight.data.copy()
    with pytest.raises(ValueError, match=r"^load_state_dict for Tied: first\.weight and second\.weight are one "
                                         r"parameter .*different values"):
        model.load_state_dict(state)
    np.testing.assert_array_equal(model.first.weight.data, before, err_msg="a refused load changed the weight")
    state["second.weight"] = np.ones((2, 2))
    model.load_state_dict(state)
    np.testing.assert_array_equal(model.second.weight.data, np.ones((2, 2)), err_msg="an agreeing state loads")

def test_attributes_that_hold_no_modules_are_left_alone_and_a_list_that_holds_itself_is_named():
    from minitorch.nn import Linear, Module

    model = Module()
    model.layer, model.names, model.log = Linear(2, 2), {"bos", "content"}, open(__file__)
    try:
        assert len(model.parameters()) == 2, "a set of names or an open file holds no parameters and is no error"
    finally:
        model.log.close()
    model.blocks = [Linear(2, 2)]
    model.blocks.append(model.blocks)
    with pytest.raises(ValueError, match=r"Module\.blocks\.1 is the list that holds it.*no end"):
        model.parameters()


@pytest.mark.parametrize("change", [
    lambda t: t.__iadd__(1.0),
    lambda t: t.data.__setitem__(0, 0.0),
])
def test_values_assigned_from_a_read_only_array_are_copied_so_in_place_changes_leave_it_alone(change):
    from minitorch import tensor

    values = np.array([5.0, 6.0])
    values.flags.writeable = False
    t = tensor([1.0, 2.0])
    t.data = values
    change(t)
    assert values.tolist() == [5.0, 6.0], "an in-place change of the tensor wrote into the read-only array"
    assert not values.flags.writeable, "the user's read-only array was made writable"


def test_from_op_with_a_parent_that_is_no_tensor_names_its_position_and_type():
    from minitorch import Tensor, tensor

    with pytest.raises(TypeError, match=r"^Tensor\.from_op\('x'\): parent 1 is a ndarray, not a Tensor"):
        Tensor.from_op(np.ones(2), (tensor([1.0, 2.0], requires_grad=True), np.ones(2)), lambda g: (g, g), "x")


# ----------------------------------------------------------------------
# Python's operators and protocols on a tensor: each works, or is refused in our words naming what to write


@pytest.mark.parametrize("operation,error,culprit", [
    (lambda x: x.__delitem__(0), TypeError, r"^del x\[\.\.\.\]: a tensor's elements cannot be deleted"),
    (lambda x: x % 3, TypeError, r"^x % y: minitorch has no remainder of tensors.*x\.data % y"),
    (lambda x: 3 % x, TypeError, r"^x % y: minitorch has no remainder of tensors"),
    (lambda x: x // 2, TypeError, r"^x // y: minitorch has no floor division of tensors.*x\.data // y"),
    (lambda x: divmod(x, 2), TypeError, r"^divmod\(x, y\): minitorch has no floor division.*divmod\(x\.data, y\)"),
    (lambda x: x & x, TypeError, r"^x & y: a tensor holds floats, not booleans; .* \(x > 0\) & \(y > 0\)"),
    (lambda x: True | x, TypeError, r"^x \| y: a tensor holds floats, not booleans"),
    (lambda x: (x > 0) ^ x, TypeError, r"^x \^ y: a tensor holds floats, not booleans"),
    (lambda x: ~x, TypeError, r"^~x: a tensor holds floats, not booleans; .* ~\(x > 0\)"),
    (lambda x: int(x), TypeError, r"^int\(\) of a tensor of shape \(2,\): it needs exactly one element"),
    (lambda x: int(x[:1] * np.nan), ValueError, r"^int\(\) of a tensor holding nan: NaN and infinity have no integer"),
    (lambda x: int(x[:1] * np.inf), ValueError, r"^int\(\) of a tensor holding inf"),
    (lambda x: x.__isub__("a"), TypeError, r"^x -= y: cannot make a Tensor from str"),
    (lambda x: x.__iadd__(["a", "b"]), TypeError, r"^x \+= y: cannot make a Tensor from data of dtype <U1"),
    (lambda x: x.__setitem__(0, "a"), TypeError, r"^x\[\.\.\.\] = y: cannot make a Tensor from str"),
    (lambda x: x.__setitem__(5, 1.0), IndexError, r"^x\[index\] = y on a tensor of shape \(2,\): index 5 is out"),
    (lambda x: x.__setitem__(slice(None), [1.0, 2.0, 3.0]), ValueError, r"^x\[index\] = y: y of shape \(3,\) does "),
], ids=["del-item", "remainder", "reflected-remainder", "floor-division", "divmod", "and", "reflected-or", "mask-xor",
        "invert", "int-of-two", "int-of-nan", "int-of-inf", "in-place-str", "in-place-list-of-str", "assign-str",
        "assign-out-of-bounds", "assign-wrong-shape"])
def test_an_operator_a_tensor_does_not_take_is_refused_naming_it_and_changes_nothing(operation, error, culprit):
    from minitorch import tensor

    x = tensor([1.0, 2.0])
    with pytest.raises(error, match=culprit):
        operation(x)
    assert x.data.tolist() == [1.0, 2.0], "a refused operation changed the tensor's values"


def test_assigning_into_a_tensor_changes_its_values_where_no_gradient_is_lost_and_is_refused_where_one_would_be():
    import minitorch
    from minitorch import tensor

    x = tensor([1.0, 2.0, 3.0])
    x[0] = 5.0
    x[1:] += 1.0  # as the message of np.add.at(tensor, ...) advises
    assert x.data.tolist() == [5.0, 3.0, 4.0], "x[i] = y and x[i] += y change a tensor's own values"
    assert +x is x, "+x is x itself, as in PyTorch"
    w = tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^x\[\.\.\.\] = y: x or y requires grad.*where\(mask, y, x\).*masked_fill"):
        w[0] = 5.0
    with pytest.raises(RuntimeError, match=r"x or y requires grad"):
        x[0] = w[0]
    assert w.data.tolist() == [1.0, 2.0] and x.data.tolist() == [5.0, 3.0, 4.0], "a refused assignment changed values"
    loss = (w * w).sum()
    with minitorch.no_grad():
        w[0] = 3.0  # as an optimizer changes a parameter: the graph that read w now refuses a stale backward
    assert w.data.tolist() == [3.0, 2.0]
    with pytest.raises(RuntimeError, match="was given new values after 'mul' used it"):
        loss.backward()


def test_backward_names_its_grad_argument_and_refuses_pytorchs_options_saying_the_graph_is_kept():
    from minitorch import tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"^backward\(grad\): cannot make a Tensor from str"):
        x.sum().backward(grad="1")
    y = (x.reshape(2, 1) ** 2).sum()
    with pytest.raises(TypeError, match=r"^backward\(\) takes only grad, got retain_graph: minitorch keeps the graph"):
        y.backward(retain_graph=True)
    assert x.grad is None, "a refused backward must not have run"
    y.backward()
    y.backward()  # the graph is kept: no retain_graph needed
    np.testing.assert_array_equal(x.grad, [4.0, 8.0])
    with pytest.raises(TypeError, match=r"^x\.data = \.\.\.: cannot make a Tensor from str"):
        x.data = "ab"


def test_gradcheck_of_a_function_whose_result_is_cut_from_its_inputs_says_so():
    from minitorch import gradcheck, tensor

    with pytest.raises(ValueError, match=r"^gradcheck: <lambda> returned a tensor cut from its inputs.*t\.data"):
        gradcheck(lambda t: tensor(t.data * 2), [np.array([1.0, 2.0])])


def test_the_optimizer_base_class_step_names_itself_and_the_optimizers_to_use():
    from minitorch import optim
    from minitorch.nn import Parameter

    with pytest.raises(NotImplementedError, match=r"^Optimizer\.step: Optimizer is the base class.*SGD or optim\.Adam"):
        optim.Optimizer([Parameter([1.0])], lr=0.1).step()


@pytest.mark.parametrize("values,dtype", [(np.array([1, 2]), "int64"), (np.array(["a", "b"]), "<U1"),
                                          (np.array([True, False]), "bool"), (np.float16([1.0, 2.0]), "float16")])
def test_from_op_refuses_a_result_that_no_tensor_may_hold_naming_the_operation_and_the_dtype(values, dtype):
    """tensor() and astype take only float32 and float64; from_op made int and string tensors that required grad."""
    from minitorch import Tensor, tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=rf"^Tensor\.from_op\('custom'\): the result holds {dtype} values; a Tensor "
                                        r"holds float32 or float64"):
        Tensor.from_op(values, (x,), lambda grad: (grad,), "custom")
    swapped = Tensor.from_op(np.array([1.0, 2.0], dtype=">f8"), (x,), lambda grad: (grad,), "custom")
    assert swapped.dtype == np.float64 and swapped.dtype.isnative, "a float in another byte order is that float"


def _change_through_a_view_of_a_graphs_input():
    from minitorch import tensor

    values, weights = tensor([1.0, 2.0]), tensor([1.0, 1.0], requires_grad=True)
    view = values.reshape(2)  # shares values' memory
    loss = (weights * view).sum()
    values[0] = 100.0  # changes what the graph read, through the tensor it was viewed from
    return loss


def _change_through_a_view_taken_before_the_graph():
    from minitorch import tensor

    values, weights = tensor([1.0, 2.0, 3.0]), tensor([1.0, 1.0, 1.0], requires_grad=True)
    tail = values[1:]  # a view, still writable: the graph below freezes values' array, not this one
    loss = (weights * values).sum()
    tail[0] = 50.0
    return loss


def _change_of_a_result_through_its_detached_copy():
    from minitorch import tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    e = x.exp()
    e.detach()[0] = 0.0  # exp's backward reads its result e
    return e.sum()


def _change_of_a_result_under_no_grad():
    from minitorch import no_grad, tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    e = x.exp()
    with no_grad():
        e *= 2  # not recorded: the graph would still be exp's
    return e.sum()


@pytest.mark.parametrize("make_loss,culprit", [
    (_change_through_a_view_of_a_graphs_input, r"input 1 of 'mul' .* was given new values"),
    (_change_through_a_view_taken_before_the_graph, r"input 1 of 'mul' .* was given new values"),
    (_change_of_a_result_through_its_detached_copy, r"the result of 'exp' .* was changed in place"),
    (_change_of_a_result_under_no_grad, r"the result of 'exp' .* was changed in place"),
], ids=["view-of-an-input", "view-taken-before", "result-through-detach", "result-under-no-grad"])
def test_values_a_backward_reads_changed_through_a_view_or_in_its_result_are_refused(make_loss, culprit):
    loss = make_loss()
    with pytest.raises(RuntimeError, match=culprit):
        loss.backward()


def test_a_second_backward_after_reading_the_loss_values_still_runs():
    from minitorch import tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    loss.data  # taking .data after a backward counts as a change, but backward does not read its own start
    loss.backward()
    np.testing.assert_array_equal(x.grad, [4.0, 8.0])


def test_values_given_by_the_data_setter_stay_the_callers_array():
    from minitorch import tensor

    mine = np.array([1.0, 2.0])
    weights, x = tensor([1.0, 1.0], requires_grad=True), tensor([0.0, 0.0])
    x.data = mine
    (weights * x).sum().backward()
    mine[0] = 5.0  # the caller's array: writable, and no longer the tensor's values
    np.testing.assert_array_equal(x.data, [1.0, 2.0])


def test_reshape_refuses_a_negative_size_other_than_minus_one_on_its_fast_path():
    from minitorch import tensor

    with pytest.raises(ValueError, match=r"reshape: the shape must hold sizes >= 0 \(or one -1\), got \(-2, 3\)"):
        tensor(np.zeros(6)).reshape(-2, 3)


def test_pow_takes_a_decimal_exponent_as_the_optimizers_take_decimal_settings():
    import decimal

    from minitorch import tensor

    np.testing.assert_array_equal((tensor([4.0]) ** decimal.Decimal("0.5")).data, [2.0])


@pytest.mark.parametrize("call,op", [("minitorch.exp(None)", "exp"), ("tensor([1.0]) + None", "add"),
                                     ("minitorch.log(object())", "log")])
def test_an_operation_given_no_tensor_names_itself(call, op):
    import minitorch
    from minitorch import tensor

    with pytest.raises(TypeError, match=rf"^{op}: cannot combine a Tensor with an object of type"):
        eval(call, {"minitorch": minitorch, "tensor": tensor})


def test_a_result_too_large_for_memory_is_named_by_matmul_where_getitem_stack_and_concatenate():
    """Each asks NumPy for 74.5 GiB, under an address-space limit of 2 GiB (so the refusal is certain and quick)."""
    import subprocess
    import sys

    script = """
import resource, numpy as np
from minitorch import concatenate, stack, tensor, where
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
rows, columns = np.zeros((10**5, 1), dtype=int), np.zeros((1, 10**5), dtype=int)
for name, make in [("matmul", lambda: tensor(np.ones((10**5, 1))) @ tensor(np.ones((1, 10**5)))),
                   ("where", lambda: where(rows == 0, tensor(np.ones((1, 10**5))), 0.0)),
                   ("getitem", lambda: tensor(np.ones((3, 3)))[rows, columns]),
                   ("stack", lambda: stack([tensor(np.zeros(10**5))] * 10**5)),
                   ("concatenate", lambda: concatenate([tensor(np.zeros((1, 10**5)))] * 10**5))]:
    try:
        make()
        print(name, "ran")
    except MemoryError as error:
        print(name, "refused:", error)
"""
    shown = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    for name in ("matmul", "where", "getitem", "stack", "concatenate"):
        assert f"{name} refused: {name}: the result for" in shown.stdout, \
            f"{name} must name itself when its result does not fit in memory:\n{shown.stdout}{shown.stderr}"


@pytest.mark.parametrize("wrapper", [staticmethod, classmethod])
def test_no_grad_below_staticmethod_or_classmethod_says_which_goes_on_top(wrapper):
    from minitorch import no_grad

    name = wrapper.__name__
    with pytest.raises(TypeError, match=rf"@no_grad sits below @{name} here: put @{name} on top"):
        no_grad()(wrapper(lambda x: x))


@pytest.mark.parametrize("loss_of", [lambda x: x.mean() * x.mean(), lambda x: (lambda m: m * m)(x.mean()),
                                     lambda x: (lambda e: e + e)(x.exp()).sum(), lambda x: x[0] * x[0]],
                         ids=["mean-squared", "one-mean-used-twice", "exp-used-twice", "element-used-twice"])
def test_a_single_number_used_twice_gets_the_sum_of_its_gradients_as_an_array(loss_of):
    from minitorch import gradcheck

    assert gradcheck(lambda x: loss_of(x).sum(), [np.array([1.0, 2.0])])


def test_the_gradient_of_a_0_d_leaf_used_twice_is_an_array_that_can_be_reset_in_place():
    from minitorch import tensor

    x = tensor(2.0, requires_grad=True)
    (x * x).backward()
    assert isinstance(x.grad, np.ndarray), f"x.grad must be an ndarray, got {type(x.grad).__name__}"
    x.grad[...] = 0.0


def test_leaving_a_no_grad_block_twice_is_named():
    from minitorch import no_grad

    block = no_grad()
    block.__enter__()
    block.__exit__(None, None, None)
    with pytest.raises(RuntimeError, match="no_grad: a block was left that was not entered"):
        block.__exit__(None, None, None)


@pytest.mark.parametrize("values,culprit", [
    ("decimal.Decimal('1e400')", r"cannot make a Tensor from Decimal\('1E\+400'\): it is too large for float64"),
    ("np.array([np.longdouble('1e4000')])", r"a value of size 1e\+4000 does not fit in float64 .*; scale the values"),
], ids=["decimal", "long-double"])
def test_a_number_too_large_for_float64_is_refused_with_its_size(values, culprit):
    import decimal  # noqa: F401 (used by eval)

    from minitorch import tensor

    with pytest.raises(OverflowError, match=culprit):
        tensor(eval(values))


def test_comparing_a_tensor_with_a_list_holding_a_string_names_the_comparison():
    from minitorch import tensor

    with pytest.raises(TypeError, match=r"x < y: cannot compare a tensor with \[1, 'a'\]: y must hold numbers"):
        tensor([1.0, 2.0]) < [1, "a"]


def test_unbroadcast_called_by_hand_names_itself_not_an_operation():
    from minitorch import unbroadcast

    with pytest.raises(ValueError, match=r"^unbroadcast: a gradient of shape \(2, 3\) cannot be summed to shape"):
        unbroadcast(np.ones((2, 3)), (3, 2))


def test_a_numpy_function_told_to_write_into_a_tensor_is_refused():
    from minitorch import tensor

    with pytest.raises(TypeError, match=r"np.add\(..., out=<tensor>\) would write into the tensor's values"):
        np.add(tensor([1.0, 2.0]), 1, out=tensor([0.0, 0.0]))


def test_masked_fill_refuses_a_mask_larger_than_the_tensor():
    from minitorch import tensor

    with pytest.raises(ValueError, match=r"masked_fill: a mask of shape \(2, 2\) does not fit a tensor of shape"):
        tensor([1.0, 2.0]).masked_fill(np.array([[True, False], [False, True]]), 0.0)


@pytest.mark.parametrize("select", ["index", "where", "masked_fill"])
def test_an_index_or_mask_changed_after_the_forward_pass_does_not_change_the_gradient(select):
    """Backward reads the index or mask it was given: a copy, so the caller's array may change meanwhile."""
    from minitorch import tensor, where

    x = tensor([1.0, 2.0, 3.0], requires_grad=True)
    chosen = np.array([0, 1]) if select == "index" else np.array([True, False, True])
    y = {"index": lambda: x[chosen], "where": lambda: where(chosen, x, 0.0),
         "masked_fill": lambda: x.masked_fill(~chosen, 0.0)}[select]()
    chosen[...] = 2 if select == "index" else False  # the caller reuses its array
    (y * tensor(np.arange(1.0, y.shape[0] + 1))).sum().backward()
    expected = {"index": [1.0, 2.0, 0.0], "where": [1.0, 0.0, 3.0], "masked_fill": [1.0, 0.0, 3.0]}[select]
    np.testing.assert_array_equal(x.grad, expected, err_msg=f"{select}: the gradient followed the changed array")


def test_masked_fill_refuses_values_that_would_change_the_tensors_shape():
    from minitorch import tensor

    with pytest.raises(ValueError, match=r"masked_fill: a value of shape \(2, 3\) does not fit a tensor of shape "
                                         r"\(3,\)"):
        tensor([1.0, 2.0, 3.0]).masked_fill(np.array([True, False, False]), np.ones((2, 3)))


def test_power_in_place_changes_the_parameter_and_matmul_in_place_is_refused():
    from minitorch import no_grad, optim
    from minitorch.nn import Parameter

    p = Parameter([1.0, 2.0])
    optimizer = optim.SGD([p], lr=0.1)
    with no_grad():
        p **= 2
    assert p is optimizer.parameters[0], "p **= 2 rebound p to a new tensor instead of changing it in place"
    np.testing.assert_array_equal(optimizer.parameters[0].data, [1.0, 4.0])
    with pytest.raises(TypeError, match=r"x @= y: in-place matmul is not supported"):
        with no_grad():
            p @= np.eye(2)
    with pytest.raises(TypeError, match=r"x \*\*= p: the exponent must be a Python number, got ndarray"):
        with no_grad():
            p **= np.array([1.0, 2.0])


def test_a_tensor_of_big_endian_values_shares_them_with_its_views_as_any_tensor_does():
    from minitorch import tensor

    x = tensor(np.array([1.0, 2.0, 3.0]).astype(">f8"))
    assert x.dtype is np.dtype(np.float64), f"x holds {x.dtype!r}, not NumPy's float64"
    x.detach()[0] = 99.0
    view = x[1:]
    view += 10.0
    np.testing.assert_array_equal(x.data, [99.0, 12.0, 13.0], err_msg="a detach or a slice of x was a copy")


def test_a_backward_rule_that_writes_into_its_gradient_is_named():
    from minitorch import Tensor, tensor

    def doubled_in_place(grad):
        grad *= 2
        return (grad,)

    x = tensor([1.0, 2.0], requires_grad=True)
    y = Tensor.from_op(x.data * 2, (x,), doubled_in_place, "double")
    with pytest.raises(ValueError, match=r"backward of 'double': its rule wrote into an array in place .*not g \*= 2"):
        y.sum().backward()


def _from_op_misuse(kind):
    """Tensor.from_op called the wrong way (round fifteen's E01, E06, E08, E09): the student's own operation."""
    from minitorch import Tensor, tensor

    x = tensor([1.0, 2.0, 3.0], requires_grad=True)
    return {"no-backward-rule": lambda: Tensor.from_op(np.sin(x.data), (x,), None, "sin"),
            "one-tensor-as-parents": lambda: Tensor.from_op(x.data * 2, (x), lambda g: (g * 2,), "double"),
            "a-tensor-as-data": lambda: Tensor.from_op(x, (x,), lambda g: (g,), "ident"),
            "rule-and-name-swapped": lambda: Tensor.from_op(x.data * 2, (x,), "double", lambda g: (g * 2,)),
            }[kind]()


@pytest.mark.parametrize("kind,said", [
    ("no-backward-rule", r"from_op\('sin'\): backward_fn is None, but parent 0 requires grad.*give 'sin' a backward "
                         r"rule.*no_grad\(\).*x\.detach\(\)"),
    ("one-tensor-as-parents", r"from_op\('double'\): parents must be a tuple \(or list\) of Tensors, got Tensor; "
                              r"write \(x,\)"),
    ("a-tensor-as-data", r"from_op\('ident'\): data must be the result's values.*got Tensor; pass x\.data"),
    ("rule-and-name-swapped", r"backward_fn is the str 'double' and op a function: the two are swapped"),
], ids=lambda value: value if value in ("no-backward-rule", "one-tensor-as-parents", "a-tensor-as-data",
                                        "rule-and-name-swapped") else "")
def test_tensor_from_op_names_a_missing_rule_a_bare_parent_tensor_data_and_swapped_arguments(kind, said):
    with pytest.raises(TypeError, match=said):
        _from_op_misuse(kind)  # at from_op, not later in backward (or never: a missing rule cut x off silently)


def test_tensor_from_op_takes_parents_as_a_list_and_a_number_as_data():
    from minitorch import Tensor, no_grad, tensor

    x = tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = Tensor.from_op(x.data * 2, [x], lambda g: (g * 2,), "double")
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, [2.0, 2.0, 2.0], err_msg="parents given as a list must work as a tuple")
    assert Tensor.from_op(np.float64(6.0), (x,), lambda g: (g * np.ones(3),), "total").item() == 6.0
    with no_grad():  # nothing is recorded: no rule is needed
        assert Tensor.from_op(np.sin(x.data), (x,), None, "sin").is_leaf


def test_a_backward_rule_returning_a_tensor_is_named_with_the_input():
    from minitorch import Tensor, tensor

    x = tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = Tensor.from_op(x.data ** 2, (x,), lambda g: (g * 2 * x,), "square")
    with pytest.raises(TypeError, match=r"backward of 'square' returned a Tensor for input 0; a backward rule returns "
                                        r"arrays: compute with the values, x\.data"):
        y.sum().backward()


def test_a_result_holding_its_parents_own_array_shares_its_count_of_changes():
    """An identity written by hand (gradient reversal) returns x.data itself: a change through the result is a
    change of x, and the graph that read x must refuse its backward, as for x.reshape(3)."""
    from minitorch import Tensor, no_grad, tensor

    x, w = tensor([1.0, 2.0, 3.0], requires_grad=True), tensor([1.0, 1.0, 1.0], requires_grad=True)
    y = Tensor.from_op(x.data, (x,), lambda g: (-g,), "grad_reverse")
    z = (x * w).sum()
    with no_grad():
        y += 10
    with pytest.raises(RuntimeError, match=r"input 0 of 'mul' .* was given new values"):
        z.backward()  # it gave w.grad [11, 12, 13], of values mul never read



@pytest.mark.parametrize("requires_grad", ["x", "y"])
def test_an_in_place_operator_that_would_be_recorded_is_refused_rather_than_rebinding_x(requires_grad):
    """``x += y`` changes x itself or is refused: a new tensor in x's place would leave an alias of x (a list
    holding it, a module's attribute) with the old values, without a word."""
    from minitorch import no_grad, tensor

    acc = tensor([0.0, 0.0], requires_grad=requires_grad == "x") * 1.0
    alias, w = acc, tensor([1.0, 2.0], requires_grad=requires_grad == "y")
    with pytest.raises(RuntimeError, match=rf"x \+= y: {requires_grad} requires grad.*write x = x \+ y"):
        acc += w
    assert acc is alias and acc._version == 0, "a refused x += y must leave x as it was"
    with no_grad():
        acc += w  # not recorded: x's own values change
    assert acc is alias
    np.testing.assert_array_equal(alias.data, [1.0, 2.0])
