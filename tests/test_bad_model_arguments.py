"""The paper's code, training and the optimizers name a bad argument before any work."""

from __future__ import annotations

import numpy as np
import pytest

from bad_input_helpers import tiny_model


def _paper_call(name):
    from minitorch.paper.task import make_batch
    from minitorch.paper.train import train

    return {
        "input-of-length-0": lambda: tiny_model()(np.zeros((2, 0, 16))),
        "make-batch-without-rng": lambda: make_batch(4, None),
        "train-without-model": lambda: train(None, lr=1e-3, progress=False),
        "width-1e6": lambda: tiny_model(width=10**6),
        "200k-layers": lambda: tiny_model(layers=200_000, residual=True),
    }[name]


@pytest.mark.parametrize("name,error,culprit", [
    ("input-of-length-0", ValueError, r"expected input of shape \(B, L, 16\) with L >= 1.*got \(2, 0, 16\)"),
    ("make-batch-without-rng", TypeError, "rng must be a NumPy Generator.*got NoneType"),
    ("train-without-model", TypeError, "train: model must be an attention model.*got NoneType"),
    ("width-1e6", ValueError, "width 1000000.*4,000,000,000,000 weights.*builds models of up to"),
    ("200k-layers", ValueError, "200000 layer.*204,800,000 weights"),
])
def test_the_paper_layer_names_a_bad_argument_before_any_work(name, error, culprit):
    with pytest.raises(error, match=culprit) as raised:
        _paper_call(name)()
    assert len(str(raised.value)) < 400, "one line"


@pytest.mark.parametrize("argument,value,error", [
    ("seed", -1, ValueError), ("seed", 1.5, TypeError), ("heads", 2.5, TypeError), ("width", 0, ValueError),
    ("layers", True, TypeError),
])
def test_build_model_names_a_bad_argument(argument, value, error):
    changes = {argument: value, **({"residual": True} if argument == "layers" else {})}
    with pytest.raises(error, match=argument):
        tiny_model(**changes)


# ----------------------------------------------------------------------
# training


@pytest.mark.parametrize("arguments,error,culprit", [
    (dict(lr=float("nan")), ValueError, "lr"),
    (dict(lr=float("inf")), ValueError, "lr"),
    (dict(lr="0.001"), TypeError, "lr"),
    (dict(lr=1e-3, max_steps=2.5), TypeError, "max_steps"),
    (dict(lr=1e-3, stop_error=float("nan")), ValueError, "stop_error"),
    (dict(lr=1e-3, probe_size=0), ValueError, "probe_size"),
    (dict(lr=1e-3, length=2), ValueError, "length"),
    (dict(lr=1e-3, length=4), ValueError, r"^train: length must be >= 8, since the probe set puts its trigger at"),
    (dict(lr=1e-3, length=5, probe_size=3), ValueError, r"^train: length must be >= 8"),
    (dict(lr=1e-3, batch_size=0), ValueError, "batch_size"),
    (dict(lr=1e-3, seed=-3), ValueError, "seed"),
    (dict(lr=1e-3, snapshot_every=0), ValueError, "snapshot_every"),
], ids=["lr-nan", "lr-inf", "lr-string", "max-steps-float", "stop-error-nan", "probe-size-0", "length-2",
        "length-4-below-the-probe-sets-trigger", "length-5-small-probe-set", "batch-size-0", "seed-negative",
        "snapshot-every-0"])
def test_train_names_a_bad_argument_before_training(arguments, error, culprit):
    from minitorch.paper.train import train

    model = tiny_model(normaliser="relu")
    before = model.state_dict()
    with pytest.raises(error, match=culprit):
        train(model, progress=False, **arguments)
    after = model.state_dict()
    assert all(np.array_equal(before[name], after[name]) for name in before), "a refused run must not train"


@pytest.mark.parametrize("normaliser", ["relu", "softmax"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_train_names_weights_that_are_not_finite_before_any_step_not_the_learning_rate(normaliser, value):
    from minitorch.paper.train import train

    model = tiny_model(normaliser=normaliser)
    model.layers[0].W_V.weight.data[3, 5] = value  # e.g. weights loaded from a run that diverged
    with pytest.raises(ValueError, match=r"train: the model's layers.0.W_V.weight holds 1 NaN or inf value\(s\) of "
                                         r"256 before any step"):
        train(model, lr=1e-3, max_steps=3, progress=False)


@pytest.mark.parametrize("normaliser", ["relu", "softmax"])
def test_training_stops_at_the_first_non_finite_loss_and_blames_the_learning_rate(normaliser):
    from minitorch.paper.train import train

    model = tiny_model(normaliser=normaliser, dtype=np.float32)
    blames_the_learning_rate = r"loss became (nan|inf) at step \d+.*learning rate"
    with np.errstate(all="ignore"), pytest.raises(FloatingPointError, match=blames_the_learning_rate):
        train(model, lr=1e10, max_steps=50, progress=False)


@pytest.mark.parametrize("optimizer,arguments,culprit", [
    ("SGD", dict(momentum=-0.5), "momentum"), ("SGD", dict(weight_decay=float("nan")), "weight_decay"),
    ("Adam", dict(eps=float("inf")), "eps"), ("Adam", dict(weight_decay=-1.0), "weight_decay"),
    ("Adam", dict(betas=(float("nan"), 0.9)), "betas"),
])
def test_optimizer_names_a_bad_hyperparameter(optimizer, arguments, culprit):
    from minitorch import optim
    from minitorch.nn import Parameter

    with pytest.raises(ValueError, match=culprit):
        getattr(optim, optimizer)([Parameter(np.zeros(2))], lr=0.1, **arguments)


def test_optimizer_refuses_a_non_finite_learning_rate():
    from minitorch.nn import Parameter
    from minitorch.optim import SGD, Adam

    for optimizer in (SGD, Adam):
        with pytest.raises(ValueError, match="learning rate"):
            optimizer([Parameter(np.zeros(2))], lr=float("nan"))


# ----------------------------------------------------------------------
# The paper's code names the argument, with its value and what is expected, instead of a raw traceback


def _infinite_model():
    from minitorch.paper.models import build_model

    model = build_model(16, 1, 1, "relu", False)
    model.parameters()[2].data = np.full(model.parameters()[2].shape, np.inf)
    return model


def _paper_function_call(name):
    from minitorch.paper import beyond, metrics, plotting, reproduce, scrubber, theory
    from minitorch.paper import train as training
    from minitorch.paper.models import build_model
    from minitorch.paper.task import make_batch, make_test_set

    def budget(**changed):
        return beyond.Budget(**{**dict(zoo_seeds=(0,), zoo_max_steps=1, law_lengths=(8,), law_max_steps=1,
                                       seeds_4x4=(0,), quick=True), **changed})

    weights = np.tril(np.full((2, 1, 4, 4), 0.25))  # (B, H, L, L), causal
    identity = np.eye(16)
    x, y, triggers = make_test_set(size=2)
    with_nan = y.copy()
    with_nan[0, 0, 0] = np.nan
    history = {"step": [0, 50], "head_bos_mass": [[[0.1]], [[0.95]]]}
    return {
        "make-test-set-length-5": lambda: make_test_set(length=5),  # not "make_inputs: trigger must lie in 1..4"
        "make-test-set-length-float": lambda: make_test_set(length=8.0),
        "make-test-set-seed-minus-1": lambda: make_test_set(seed=-1),  # not NumPy's bit generator's words
        "make-test-set-seed-str": lambda: make_test_set(seed="1"),
        "make-test-set-size-0": lambda: make_test_set(size=0),
        "make-test-set-residual-yes": lambda: make_test_set(residual="yes"),  # not "make_targets: residual ..."
        "make-test-set-width-float": lambda: make_test_set(width=16.0),  # not "make_inputs: width ..."
        "make-batch-residual-yes": lambda: make_batch(2, np.random.default_rng(0), residual="yes"),
        "make-batch-trigger-20": lambda: make_batch(2, np.random.default_rng(0), trigger=20),
        "make-batch-batch-0": lambda: make_batch(0, np.random.default_rng(0)),
        "make-batch-rng-0": lambda: make_batch(2, 0),  # not "make_inputs: rng ..."
        "budget-a-seed-twice": lambda: budget(zoo_seeds=(0, 0)),  # one seed averaged as two
        "budget-a-length-twice": lambda: budget(law_lengths=(8, 8)),  # the log T law fitted through one length
        "run-seeds-shapes-a-string": lambda: beyond.run_seeds("unused", seeds=[0], quick=True, shapes="x"),
        "mass-split-triggers-of-another-batch": lambda: beyond.mass_split([weights], np.array([2])),
        "scrubber-data-of-no-runs": lambda: scrubber.scrubber_data({}),  # not "sink_scrubber_html: ..."
        "train-snapshots-between-records": lambda: training.train(build_model(16, 1, 1, "softmax", False), lr=1e-3,
                                                                  max_steps=1, record_every=20, snapshot_every=30,
                                                                  progress=False),
        "train-probe-too-large": lambda: training.train(build_model(16, 1, 1, "softmax", False), lr=1e-3,
                                                        max_steps=1, probe_size=10**8, progress=False),
        "stress-inputs-too-large": lambda: theory.stress_inputs(size_per_trigger=10**7),  # the machine's OOM killer
        "worst-case-too-large": lambda: theory.worst_case(build_model(16, 1, 1, "relu", False),
                                                          size_per_trigger=10**7),
        "worst-case-of-infinite-weights": lambda: theory.worst_case(_infinite_model(), size_per_trigger=1),
        "bos-mass-triggers-9": lambda: metrics.bos_mass_at_non_trigger_rows(weights, np.array([9, 9])),
        "bos-mass-trigger-at-bos": lambda: metrics.bos_mass_at_non_trigger_rows(weights, [0, 2]),
        "bos-mass-float-triggers": lambda: metrics.bos_mass_at_non_trigger_rows(weights, np.array([1.5, 2.0])),
        "trigger-row-triggers-9": lambda: metrics.trigger_row(weights, [9, 9]),
        "row-mass-trigger-minus-1": lambda: metrics.non_trigger_row_mass(weights, [-1, 2]),
        "hull-points-minus-1": lambda: theory.random_token_hull_points(-1),  # not NumPy's "negative dimensions"
        "hull-points-float": lambda: theory.random_token_hull_points(2.5),
        "hull-points-seed-minus-1": lambda: theory.random_token_hull_points(3, seed=-1),
        "load-head-layer-5": lambda: theory.load_head(tiny_model(), 5, 0, *[identity] * 4),  # not an IndexError
        "load-head-head-3": lambda: theory.load_head(tiny_model(), 0, 3, *[identity] * 4),
        "load-head-layer-minus-1": lambda: theory.load_head(tiny_model(), -1, 0, *[identity] * 4),
        "value-map-layer-2": lambda: theory.value_map(tiny_model(), 2, 0),
        "head-split-threshold-1.5": lambda: plotting.head_split_settled(history, sink_bos_mass=1.5),
        "head-bos-mass-figure-threshold-0": lambda: plotting.head_bos_mass_figure({"m": history}, sink_bos_mass=0),
        "probe-an-empty-test-set": lambda: training.probe(tiny_model(), x[:0], y[:0], triggers[:0]),  # nan, then NumPy
        "probe-targets-of-strings": lambda: training.probe(tiny_model(), x, y.astype(str), triggers),
        "probe-targets-with-nan": lambda: training.probe(tiny_model(), x, with_nan, triggers),  # a loss of nan
        "softmax-family-test-size-0": lambda: theory.softmax_family([1.0], size_per_trigger=1, test_size=0),
        "softmax-family-test-size-too-large": lambda: theory.softmax_family([1.0], size_per_trigger=1,
                                                                            test_size=10**9),
        "measured-rows-from-row-minus-1": lambda: metrics.measured_rows("me", [2], 5, each_row_from=-1),
        "measured-rows-from-bos-row": lambda: metrics.measured_rows("me", [2], 5, each_row_from=0),
        "seeds-command-of-no-seed": lambda: beyond.seeds_command([], True, ["1x1"]),  # a command run_seeds refuses
        "seeds-command-a-seed-twice": lambda: beyond.seeds_command([1, 1], True, ["1x1"]),
        "seeds-command-quick-yes": lambda: beyond.seeds_command([0], "yes", ["1x1"]),  # not str * str
        "seeds-command-shape-3x3": lambda: beyond.seeds_command([0], True, ["3x3"]),  # a command run_seeds refuses
        "seeds-command-shapes-a-string": lambda: beyond.seeds_command([0], True, "1x1"),  # not split into letters
        "run-command-quick-yes": lambda: reproduce.run_command("yes", ["1x1"], 0),
        "run-command-seed-minus-1": lambda: reproduce.run_command(True, ["1x1"], -1),  # a command reproduce refuses
        "worst-case-of-no-sequences": lambda: theory.worst_case(build_model(16, 1, 1, "softmax", False),
                                                                inputs=(np.zeros((0, 16, 16)), np.zeros(0, int))),
    }[name]


@pytest.mark.parametrize("name,error,culprit", [
    ("make-test-set-length-5", ValueError, r"make_test_set: length must be >= 8, since .*trigger at position 7.*got 5"),
    ("make-test-set-length-float", TypeError, r"make_test_set: length must be an integer"),
    ("make-test-set-seed-minus-1", ValueError, r"make_test_set: seed must be an integer >= 0, got -1"),
    ("make-test-set-seed-str", TypeError, r"make_test_set: seed must be an integer >= 0, got '1'"),
    ("make-test-set-size-0", ValueError, r"make_test_set: size must be an integer >= 1, got 0"),
    ("make-test-set-residual-yes", TypeError, r"^make_test_set: residual must be True or False, got 'yes' \(str\)"),
    ("make-test-set-width-float", TypeError, r"^make_test_set: width must be an integer >= 1, got 16.0"),
    ("make-batch-residual-yes", TypeError, r"^make_batch: residual must be True or False, got 'yes' \(str\)"),
    ("make-batch-trigger-20", ValueError, r"^make_batch: trigger must lie in 1..15, got 20"),
    ("make-batch-batch-0", ValueError, r"^make_batch: batch must be an integer >= 1, got 0"),
    ("make-batch-rng-0", TypeError, r"^make_batch: rng must be a NumPy Generator"),
    ("budget-a-seed-twice", ValueError, r"^Budget: zoo_seeds must be distinct, got \(0, 0\)"),
    ("budget-a-length-twice", ValueError, r"^Budget: law_lengths must be distinct, got \(8, 8\)"),
    ("run-seeds-shapes-a-string", ValueError,
     r"^run_seeds: shapes must be a list of some of '1x1' and '2x2', got 'x'"),
    ("mass-split-triggers-of-another-batch", ValueError,
     r"^mass_split: per_layer_weights\[0\] has shape \(2, 1, 4, 4\) and triggers \(1,\)"),
    ("scrubber-data-of-no-runs", ValueError, r"^scrubber_data: no runs given"),
    ("train-snapshots-between-records", ValueError, r"^train: snapshot_every must be a multiple of record_every"),
    ("train-probe-too-large", MemoryError, r"^train: the probe set of probe_size sequences .* would need"),
    ("stress-inputs-too-large", MemoryError, r"^stress_inputs: the stress inputs of size_per_trigger=10000000"),
    ("worst-case-too-large", MemoryError, r"^worst_case: the stress inputs of size_per_trigger=10000000"),
    ("worst-case-of-infinite-weights", ValueError,
     r"^worst_case: the model's layers.0.W_V.weight holds 256 NaN or inf"),
    ("bos-mass-triggers-9", ValueError,
     r"bos_mass_at_non_trigger_rows: triggers must be a list of integers in 1..3 \(L = 4\), got 9"),
    ("bos-mass-trigger-at-bos", ValueError, r"triggers must be a list of integers in 1..3 \(L = 4\), got 0 in \[0, "),
    ("bos-mass-float-triggers", TypeError, r"triggers must be a list of integers in 1..3, got 1.5 \(float\)"),
    ("trigger-row-triggers-9", ValueError, r"trigger_row: triggers must be a list of integers in 1..3"),
    ("row-mass-trigger-minus-1", ValueError, r"non_trigger_row_mass: triggers .* in 1..3 \(L = 4\), got -1"),
    ("hull-points-minus-1", ValueError, r"random_token_hull_points: size must be an integer >= 0, got -1"),
    ("hull-points-float", TypeError, r"random_token_hull_points: size must be an integer >= 0, got 2.5"),
    ("hull-points-seed-minus-1", ValueError, r"random_token_hull_points: seed must be an integer >= 0, got -1"),
    ("load-head-layer-5", ValueError, r"load_head: layer 5 is not a layer of this model \(it has 1: 0..0\)"),
    ("load-head-head-3", ValueError, r"load_head: head 3 is not a head of layer 0 \(it has 1: 0..0\)"),
    ("load-head-layer-minus-1", ValueError, r"load_head: layer must be an integer >= 0, got -1"),
    ("value-map-layer-2", ValueError, r"value_map: layer 2 is not a layer of this model"),
    ("head-split-threshold-1.5", ValueError,  # no head can reach it: the answer 0 meant nothing
     r"^head_split_settled: sink_bos_mass must be a number in \(0, 1\] \(a BOS mass lies in \[0, 1\]\), got 1.5"),
    ("head-bos-mass-figure-threshold-0", ValueError, r"^head_bos_mass_figure: sink_bos_mass must be a number in"),
    ("probe-an-empty-test-set", ValueError, r"^probe: x holds no sequences \(shape \(0, 16, 16\)\); give at least one"),
    ("probe-targets-of-strings", TypeError, r"^probe: y must be finite numbers, got [\s\S]*\(dtype <U32\)"),
    ("probe-targets-with-nan", ValueError, r"^probe: y must be finite numbers, got array\(\[\[\[ *nan"),
    ("softmax-family-test-size-0", ValueError, r"^softmax_family: test_size must be an integer >= 1, got 0"),
    ("softmax-family-test-size-too-large", MemoryError,
     r"^softmax_family: each test set of test_size sequences of shape \(1000000000, 16, 16\) would need"),
    ("measured-rows-from-row-minus-1", ValueError, r"^me: each_row_from must be an integer >= 1, got -1"),
    ("measured-rows-from-bos-row", ValueError, r"^me: each_row_from must be an integer >= 1, got 0"),
    ("seeds-command-of-no-seed", ValueError,
     r"^seeds_command: seeds must be distinct whole numbers >= 0, at least one, got \[\]"),
    ("seeds-command-a-seed-twice", ValueError, r"^seeds_command: seeds must be distinct .*, got \[1, 1\]"),
    ("seeds-command-quick-yes", TypeError, r"^seeds_command: quick must be True or False, got 'yes' \(str\)"),
    ("seeds-command-shape-3x3", ValueError,
     r"^seeds_command: shapes must be a list of some of '1x1' and '2x2', got \['3x3'\]"),
    ("seeds-command-shapes-a-string", ValueError, r"^seeds_command: shapes must be a list .*, got '1x1'$"),
    ("run-command-quick-yes", TypeError, r"^run_command: quick must be True or False, got 'yes' \(str\)"),
    ("run-command-seed-minus-1", ValueError, r"^run_command: seed must be an integer >= 0, got -1"),
    ("worst-case-of-no-sequences", ValueError,
     r"^worst_case: inputs hold no sequences \(x of shape \(0, 16, 16\)\); give at least one"),
])
def test_the_paper_functions_name_a_bad_argument_before_any_work(name, error, culprit):
    with pytest.raises(error, match=culprit) as raised:
        _paper_function_call(name)()
    assert len(str(raised.value)) < 400, "one line"


# ----------------------------------------------------------------------
# A model's stack of layers is checked where it is used: the forward pass, the metrics and the theory walk it


def _restacked(change: str):
    """A two-layer residual model whose `layers` list was changed after it was built."""
    from minitorch.nn import Linear
    from minitorch.paper.models import AttentionLayer

    model = tiny_model(layers=2, residual=True)
    if change == "linear-appended":
        model.layers.append(Linear(16, 16))
    elif change == "emptied":
        model.layers = []
    elif change == "narrower-layer":
        model.layers[1] = AttentionLayer(8, 1, "softmax", np.random.default_rng(0))
    elif change == "layer-repeated":
        model.layers.append(model.layers[0])
    elif change == "narrower-query-projection":
        model.layers[0].W_Q = Linear(16, 8)
    elif change == "value-projection-removed":
        model.layers[1].W_V = None
    elif change == "query-projection-with-a-bias":
        model.layers[0].W_Q = Linear(16, 16, bias=True)
    return model


STACK_ERRORS = [
    ("linear-appended", TypeError, r"model.layers\[2\] is a Linear, not an attention layer"),
    ("emptied", ValueError, r"the model has no layers \(model.layers is empty\); its config says 2"),
    ("narrower-layer", ValueError,
     r"model.layers\[1\] is an attention layer with \{'width': 8.*describes \{'width': 16"),
    ("layer-repeated", ValueError, r"model.layers holds 3 attention layers; the model's config says 2"),
    ("narrower-query-projection", ValueError,  # not reshape's "cannot reshape a tensor of shape (1, 3, 8)"
     r"model.layers\[0\].W_Q must be a Linear\(16, 16\) \(width n = 16, 1 head\(s\)\), got Linear\(16, 8\)"),
    ("value-projection-removed", TypeError, r"model.layers\[1\].W_V must be a Linear\(16, 16\), got NoneType"),
    ("query-projection-with-a-bias", ValueError,  # saved without a word, then refused by load_model
     r"model.layers\[0\].W_Q must be a Linear\(16, 16\) without a bias \(as the model builds it: bias=False\)"),
]


@pytest.mark.parametrize("change,error,culprit", STACK_ERRORS)
def test_a_forward_pass_names_what_is_wrong_with_the_stack_of_layers(change, error, culprit):
    with pytest.raises(error, match="ResidualModel: " + culprit):
        _restacked(change)(np.zeros((1, 3, 16)))


@pytest.mark.parametrize("function", ["value_norm", "value_words", "value_map", "residual_streams", "worst_case",
                                      "probe", "train", "save_model"])
@pytest.mark.parametrize("change,error,culprit", STACK_ERRORS[:2])
def test_the_functions_that_walk_the_layers_name_what_is_wrong_with_them(function, change, error, culprit, tmp_path):
    from minitorch.paper import theory, train
    from minitorch.paper.models import save_model
    from minitorch.paper.task import make_test_set

    model = _restacked(change)
    test_set = make_test_set(size=2)
    call = {
        "value_norm": lambda: theory.value_norm(model),
        "value_words": lambda: theory.value_words(model),
        "value_map": lambda: theory.value_map(model, 0, 0),
        "residual_streams": lambda: theory.residual_streams(model, np.zeros((1, 3, 16))),
        "worst_case": lambda: theory.worst_case(model, size_per_trigger=1),
        "probe": lambda: train.probe(model, *test_set),
        "train": lambda: train.train(model, lr=1e-3, max_steps=1, progress=False),
        "save_model": lambda: save_model(model, tmp_path / "model.npz"),  # a file load_model would refuse
    }[function]
    with pytest.raises(error, match=f"{function}: {culprit}"):
        call()
    assert list(tmp_path.iterdir()) == [], f"{function} must write nothing for a model it refuses"


@pytest.mark.parametrize("key, value, culprit", [
    ("residual", True, r"the model's config says residual=True, but it is a SingleLayerModel \(residual=False\)"),
    ("dtype", "float32", r"model.layers\[0\] is an attention layer with \{.*'dtype': 'float64'\}; the model's "
                         r"config describes \{.*'dtype': 'float32'\}"),
], ids=["residual", "dtype"])
def test_a_config_edited_to_describe_another_model_is_refused_before_it_is_saved(key, value, culprit, tmp_path):
    """A single-layer model whose config said residual=True saved a file that loaded as a ResidualModel, whose
    outputs differ by the input added back; config['dtype'] edited to float32 loaded its weights rounded."""
    from minitorch.paper.models import build_model, save_model

    model = build_model(16, 1, 1, "softmax", False)
    model.config[key] = value
    for name, call in (("save_model", lambda: save_model(model, tmp_path / "model.npz")),
                       ("SingleLayerModel", lambda: model(np.zeros((1, 3, 16))))):
        with pytest.raises(ValueError, match=rf"^{name}: {culprit}"):
            call()
    assert list(tmp_path.iterdir()) == [], "save_model must write nothing for a model it refuses"


@pytest.mark.parametrize("change,error,culprit", [
    (dict(zoo_seeds=()), ValueError, r"^Budget: zoo_seeds must be a non-empty tuple of integers"),
    (dict(law_lengths=()), ValueError, r"^Budget: law_lengths must be a non-empty tuple"),
    (dict(seeds_4x4=[]), ValueError, r"^Budget: seeds_4x4 must be a non-empty tuple"),
    (dict(zoo_seeds=0), TypeError, r"^Budget: zoo_seeds must be a non-empty tuple"),
    (dict(law_lengths=(4,)), ValueError, r"^Budget: each of law_lengths must be an integer >= 8, got 4"),
    (dict(zoo_seeds=(-1,)), ValueError, r"^Budget: each of zoo_seeds must be an integer >= 0"),
    (dict(zoo_max_steps=0), ValueError, r"^Budget: zoo_max_steps must be an integer >= 1, got 0"),
    (dict(law_max_steps=1.5), TypeError, r"^Budget: law_max_steps must be an integer"),
    (dict(quick="yes"), TypeError, r"^Budget: quick must be True or False"),
], ids=["no-zoo-seeds", "no-lengths", "no-4x4-seeds", "zoo-seeds-a-number", "length-4", "seed-negative",
        "zoo-steps-0", "law-steps-float", "quick-a-string"])
def test_a_budget_of_chapter_10s_experiments_is_refused_when_made_not_after_the_training(change, error, culprit):
    from minitorch.paper import beyond

    given = dict(zoo_seeds=(0,), zoo_max_steps=1, law_lengths=(8,), law_max_steps=1, seeds_4x4=(0,), quick=True)
    with pytest.raises(error, match=culprit):
        beyond.Budget(**(given | change))
    assert beyond.Budget(**given).law_lengths == (8,), "the smallest budget that runs every experiment is taken"


@pytest.mark.parametrize("residual", [False, True])
def test_whether_a_model_is_residual_cannot_change_after_it_is_built(residual, tmp_path):
    """m.residual = True on a 1-layer model made forward (and train's targets) residual while its config, name and
    saved file still said otherwise: the reloaded model computed something else than the one trained."""
    from minitorch.paper.models import load_model, save_model

    model = tiny_model(layers=2 if residual else 1, residual=residual)
    x = np.random.default_rng(0).normal(size=(1, 4, 16))
    before = model(x).data.copy()
    with pytest.raises(AttributeError, match=rf"^{type(model).__name__}\.residual is fixed by the model's kind .*"
                                             rf"build_model\(\.\.\., residual={not residual}\)"):
        model.residual = not residual
    assert model.residual is residual and model.config["residual"] is residual
    save_model(model, tmp_path / "m.npz")
    np.testing.assert_array_equal(load_model(tmp_path / "m.npz")(x).data, before,
                                  err_msg="the saved model computes what the refused change left alone")


def test_evaluate_measures_a_model_of_another_width_at_its_width_as_train_trains_it():
    """evaluate made the test set at width 16 whatever the model: a width-8 model failed in its own shape check,
    about a test set the user never made."""
    from minitorch.paper.reproduce import evaluate

    measures, attention, triggers = evaluate(tiny_model(width=8))
    assert attention[0].shape[-1] == 16 and measures["heads_total"] == 1 and np.isfinite(measures["test_mse"])
    with pytest.raises(TypeError, match=r"^evaluate: model must be an attention model"):
        evaluate("model")


def test_save_model_refuses_a_projection_whose_weight_was_replaced_by_one_of_another_shape(tmp_path):
    from minitorch.nn import Parameter
    from minitorch.paper.models import build_model, save_model

    model = build_model(16, 1, 1, "softmax", False)
    model.layers[0].W_Q.weight = Parameter(np.zeros((8, 16)))
    with pytest.raises(ValueError, match=r"save_model: model.layers\[0\].W_Q.weight must have shape \(16, 16\), got "
                                         r"\(8, 16\)"):
        save_model(model, tmp_path / "model.npz")
    assert not (tmp_path / "model.npz").exists(), "a refused model writes no file"


# ----------------------------------------------------------------------
# The paper's functions check their inputs as their siblings do: what one refuses or takes, all of them do


@pytest.mark.parametrize("function", ["head_table", "sink_share", "mass_split"])
def test_one_layers_array_where_the_list_per_layer_goes_is_refused_by_every_function_that_takes_the_list(function):
    """head_table(att[0], triggers) read the sequences as layers and each sequence's heads as sequences: a table of
    'layer 1 head 0' for a one-layer array, without a word (sink_share and mass_split refused it)."""
    from minitorch.paper import beyond, metrics, task

    model = tiny_model(heads=2, layers=2, residual=True)
    x, _, triggers = task.make_test_set(residual=True, size=2)  # B = H = 2: nothing else fails to give it away
    _, attention = model(x, return_attention=True)
    call = {"head_table": lambda layers: metrics.head_table(layers, triggers),
            "sink_share": lambda layers: metrics.sink_share(layers),
            "mass_split": lambda layers: beyond.mass_split(layers, triggers)}[function]
    with pytest.raises(ValueError, match=rf"^{function}: per_layer_weights must be a non-empty list of \(B, H, L, L\) "
                                         r"arrays, one per layer, got an array of shape \(2, 2, 16, 16\) \(one"):
        call(attention[0])
    call([attention[0]])  # the list of one layer is what it takes
    if function == "head_table":
        assert [(row["layer"], row["head"]) for row in call([attention[0]])] == [(0, 0), (0, 1)], \
            "the list of layer 0 gives its two heads"


def _not_theorem_1s(kind):
    return {"two-heads": lambda: tiny_model(heads=2), "two-layers": lambda: tiny_model(layers=2, residual=True),
            "one-residual-layer": lambda: tiny_model(residual=True)}[kind]()


@pytest.mark.parametrize("step", ["non_trigger_row_sides", "trigger_row_decomposition", "trigger_row_slack"])
@pytest.mark.parametrize("kind", ["two-heads", "two-layers", "one-residual-layer"])
def test_the_steps_of_theorem_1_refuse_a_model_that_is_not_one_head_without_a_residual(step, kind):
    """trigger_row_decomposition on a 2-head model gave sides 0.0064 apart (1.0 for a residual model), against
    2.6e-18 for one head: identity (3) is about a single head's output, and value_map read head 0 of layer 0."""
    from minitorch.paper import theory

    model, points = _not_theorem_1s(kind), theory.random_token_hull_points(3, seed=1)
    x, triggers = theory.stress_inputs(1, seed=1)
    call = {"non_trigger_row_sides": lambda: theory.non_trigger_row_sides(model, x, triggers),
            "trigger_row_decomposition": lambda: theory.trigger_row_decomposition(model, points, 5),
            "trigger_row_slack": lambda: theory.trigger_row_slack(model, points)}[step]
    with pytest.raises(ValueError, match=rf"^{step}: the model must have a single head in a single layer, without a "
                                         r"residual connection"):
        call()


@pytest.mark.parametrize("step", ["trigger_row_decomposition", "trigger_row_slack"])
def test_the_steps_of_theorem_1_take_mu_as_points_b_n_of_the_models_width_and_a_list_as_an_array(step):
    """One point mu of shape (16,) failed with NumPy's 'too many indices for array', a list of points with
    "'list' object has no attribute 'shape'", and points of width 8 deep inside the model."""
    from minitorch.paper import theory

    model = tiny_model(seed=2)
    points = theory.random_token_hull_points(2, seed=1)
    call = {"trigger_row_decomposition": lambda mu: theory.trigger_row_decomposition(model, mu, 5),
            "trigger_row_slack": lambda mu: theory.trigger_row_slack(model, mu)}[step]
    with pytest.raises(ValueError, match=rf"^{step}: mu must be points of shape \(B, n\) = \(B, 16\), the model's "
                                         r"width, got shape \(16,\); write mu\[None\] for one point"):
        call(points[0])
    with pytest.raises(ValueError, match=rf"^{step}: mu must be points of shape \(B, n\) = \(B, 16\).*got shape "
                                         r"\(2, 8\)"):
        call(theory.random_token_hull_points(2, seed=1, width=8))
    np.testing.assert_array_equal(np.asarray(call(points.tolist())), np.asarray(call(points)),
                                  err_msg="a list of points is taken as the array of them")


def test_probe_averages_each_sequences_trigger_row_over_its_own_keys_1_to_j():
    """On a training batch (triggers 2..15) probe's trigger_content averaged keys 1..j of the first sequence's j for
    every sequence: 0.0907 where the mean over the sequences of their own keys 1..j_b is 0.1385."""
    from minitorch.paper import task, train

    model = tiny_model(seed=3)
    x, y, triggers = task.make_batch(64, np.random.default_rng(1))
    assert len(set(triggers.tolist())) > 1, "the batch must hold several trigger positions"
    measures, attention = train.probe(model, x, y, triggers)
    row = attention[0][np.arange(len(triggers)), 0, triggers]  # (B, L): each sequence's trigger row, the one head
    expected = np.mean([row[b, 1:j + 1].mean() for b, j in enumerate(triggers)])
    assert measures["trigger_content"] == pytest.approx(expected, rel=1e-12), (
        "trigger_content must be the trigger row's mean weight on keys 1..j, each sequence over its own j")


def test_score_gaps_checks_x_as_learned_extras_does():
    """score_gaps(model, x.tolist(), t) failed with "'list' object has no attribute 'astype'", x of width 8 with
    NumPy's matmul error, one sequence with "axes don't match array"; learned_extras takes the list and names the
    shapes."""
    from minitorch.paper import beyond, task

    model = tiny_model()
    x, _, triggers = task.make_batch(8, np.random.default_rng(0))
    assert beyond.score_gaps(model, x.tolist(), triggers) == beyond.score_gaps(model, x, triggers), \
        "a list of sequences is taken as the array of them"
    narrow, _, _ = task.make_batch(8, np.random.default_rng(0), width=8)
    for bad, shown in ((narrow, r"\(8, 16, 8\)"), (x[0], r"\(16, 16\)")):
        with pytest.raises(ValueError, match=rf"^score_gaps: x must have shape \(B, L, 16\) and triggers \(B,\), got "
                                             rf"x {shown}"):
            beyond.score_gaps(model, bad, triggers)


@pytest.mark.parametrize("function", ["head_table", "mass_split"])
def test_measures_over_non_trigger_rows_refuse_sequences_that_have_none(function):
    """head_table on maps of length 2 (row 0 is BOS's, row 1 the trigger's) stopped in NumPy's "zero-size array to
    reduction operation minimum" after its "Mean of empty slice" warning; mass_split gave nan."""
    import warnings

    from minitorch.paper import beyond, metrics

    call = {"head_table": metrics.head_table, "mass_split": beyond.mass_split}[function]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's warning instead of our error is a failure too
        with pytest.raises(ValueError, match=rf"^{function}: sequences of length 2 have no non-trigger row .*L >= 3"):
            call([np.tril(np.full((2, 1, 2, 2), 0.5))], np.array([1, 1]))
        assert call([np.tril(np.full((2, 1, 3, 3), 1 / 3))], np.array([1, 2])), "L = 3 has a non-trigger row: measured"


@pytest.mark.parametrize("length,trigger", [(3, 2), (16, 7)], ids=["length-3", "the-test-sets-trigger"])
def test_score_gaps_refuses_a_row_that_is_the_trigger_row_of_every_sequence(length, trigger):
    """score_gaps averages each row i >= 2 over the sequences where it is a non-trigger row: at length 3 (every
    trigger of make_batch at 2) it stopped in NumPy's reduction error, on the test set (every trigger at 7) it gave
    row 7 as nan with NumPy's "Mean of empty slice" warnings."""
    import warnings

    from minitorch.paper import beyond, task

    x, _, triggers = task.make_batch(20, np.random.default_rng(0), length=length, trigger=trigger)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=rf"^score_gaps: row {trigger} is the trigger row of every sequence "
                                             rf"\(of length {length}\).*other triggers"):
            beyond.score_gaps(tiny_model(), x, triggers)


@pytest.mark.parametrize("log", [lambda: None, lambda line, level: None, None, "quiet"],
                         ids=["no-argument", "two-arguments", "None", "a-string"])
@pytest.mark.parametrize("function", ["reproduce", "run_seeds", "run_beyond"])
def test_a_log_that_cannot_take_one_line_is_refused_before_any_work(tmp_path, monkeypatch, function, log):
    """reproduce(log=lambda: None), to silence it, passed the callable check and failed at its first line with
    "<lambda>() takes 0 positional arguments but 1 was given"; run_seeds and run_beyond checked no log at all and
    call it only after the work."""
    from minitorch.paper import beyond, reproduce

    def no_work(*args, **kwargs):
        pytest.fail(f"{function} started its work with a log it cannot call")

    for module, work in ((reproduce, "_reproduce_into"), (beyond, "run_in_processes"), (beyond, "_run_beyond_into")):
        monkeypatch.setattr(module, work, no_work)
    call = {"reproduce": lambda: reproduce.reproduce(tmp_path / "out", only=["1x1"], quick=True, log=log),
            "run_seeds": lambda: beyond.run_seeds(tmp_path / "out", quick=True, log=log),
            "run_beyond": lambda: beyond.run_beyond(tmp_path / "out", beyond.QUICK, log=log)}[function]
    with pytest.raises(TypeError, match=rf"^{function}: log must be a function of one line \(print, by default"):
        call()
    assert not any(tmp_path.iterdir()), "a refused run must write nothing"


def test_seeds_table_refuses_a_seed_given_twice_as_budget_does():
    """seeds_table(runs + runs), two --seeds runs' records put together, counted 4 seeds for seeds 0 and 1 and
    weighed each twice in the medians, without a word."""
    from minitorch.paper import beyond

    def run(seed):
        return dict(shape="1x1", normaliser="softmax", seed=seed, steps=700 + seed, converged=True,
                    wall_time_seconds=5.0, bos_mass_mean=0.95, bos_mass_min=0.9, heads_sinking=1, heads_total=1)

    assert beyond.seeds_table([run(0), run(1)])[0]["seeds"] == 2
    with pytest.raises(ValueError, match=r"^seeds_table: runs gives softmax_1x1 the seeds \[0, 1, 0, 1\], one of them "
                                         r"more than once; a seed given twice would count as two"):
        beyond.seeds_table([run(0), run(1)] * 2)


@pytest.mark.parametrize("measure", ["probe", "score_gaps", "row_errors", "worst_case"])
def test_triggers_of_another_batch_are_refused_where_x_marks_its_own(measure):
    """probe(m, x, y, triggers of another batch) measured the wrong rows (a non-trigger error of 0.934 for 0.0091)
    without a word: x marks each sequence's trigger, so the triggers given must be those (the theory's row_errors and
    worst_case measured errors against the targets of the wrong trigger)."""
    from minitorch.paper import beyond, task, theory, train
    from minitorch.paper.models import build_model

    model = build_model(16, 1, 1, "softmax", False, seed=3)
    x, y, triggers = task.make_batch(8, np.random.default_rng(1))
    others = np.where(triggers == 2, 3, 2)  # every sequence's trigger moved
    call = {"probe": lambda: train.probe(model, x, y, others),
            "score_gaps": lambda: beyond.score_gaps(model, x, others),
            "row_errors": lambda: theory.row_errors(model, x, others),
            "worst_case": lambda: theory.worst_case(model, inputs=(x, others))}[measure]
    with pytest.raises(ValueError, match=rf"^{measure}: triggers\[0\] is {others[0]}, but x's sequence 0 marks its "
                                         rf"trigger at \[{triggers[0]}\]; pass x's own triggers"):
        call()


@pytest.mark.parametrize("triggers, culprit", [
    (np.array([7, 7]), r"triggers holds 2 position\(s\) for x's 4 sequences; pass x's own triggers"),
    (np.array([7, 7, 7, 40]), r"triggers must be a list of integers in 1..15 \(L = 16\), got 40"),
    (np.array([7, 7, 7, 7.0]), r"triggers must be a list of integers in 1..15, got 7.0 \(float\)"),
], ids=["fewer-triggers-than-sequences", "a-trigger-beyond-the-sequence", "floats"])
def test_marked_triggers_checks_one_position_per_sequence_in_range_before_reading_x(triggers, culprit):
    """Two triggers for four sequences passed as "x's own" (only the first two were compared) and a trigger of 40
    failed in NumPy's IndexError."""
    from minitorch.paper import task

    x, _, _ = task.make_test_set(size=4)
    with pytest.raises(ValueError if "40" in culprit or "holds" in culprit else TypeError, match=rf"^me: {culprit}"):
        task.marked_triggers("me", x, triggers)


def test_trigger_row_weights_names_contents_of_the_wrong_width():
    from minitorch.paper import theory
    from minitorch.paper.models import build_model

    model = build_model(16, 1, 1, "softmax", False, seed=3)
    with pytest.raises(ValueError, match=r"^trigger_row_weights: contents must be \(B, d\) with d = 13 content "
                                         r"coordinates for a model of width 16, got shape \(2, 12\)"):
        theory.trigger_row_weights(model, np.zeros((2, 12)), 7)
