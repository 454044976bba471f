"""Measuring a model's worst case: the numerical companions of the bounds (chapters 05, 06, 09, 10).

A worst-case error ``δ = sup max_i ||ŷ_i - y_i||_∞`` is a supremum over infinitely many inputs; these
functions bound it from below on a finite set that reaches for the worst:

- `all_equal_inputs`: every non-BOS token carries the same content (the inputs of the proofs);
- `stress_inputs`: uniform, corner, near-corner and all-equal contents at every trigger position;
- `worst_case`: a model's largest error and smallest BOS mass on them; `row_errors` per row;
- `softmax_family`: `worst_case` along the softmax construction's scales c (chapter 05's figure);
- `predict_with_attention`: the prediction and every layer's weights as arrays, without a graph;
- `trigger_row_weights`: a single head's trigger row on all-equal inputs (Lemma 5 of chapter 05).

Every function that draws random numbers takes a seed.
"""

from __future__ import annotations

import numpy as np

from minitorch import checks
from minitorch.paper.metrics import bos_mass_at_non_trigger_rows
from minitorch.paper.models import AttentionModel, attention_model, finite_weights, for_training
from minitorch.paper.task import (BOS, SEQUENCE_LENGTH, TEST_SEED, TRIGGER, WIDTH, make_batch, make_targets,
                                  make_test_set, marked_triggers)
from minitorch.paper.theory.bounds import TRAINING_TRIGGERS
from minitorch.paper.theory.constructions import MIN_WIDTH, construction_worst_case, softmax_construction
from minitorch.tensor import no_grad


def all_equal_inputs(contents, trigger: int, length: int = SEQUENCE_LENGTH) -> np.ndarray:
    """Inputs whose non-BOS tokens all carry the same content z: (B, L, n).

    contents: (B, d), one z per sequence, entries in [-1, 1]. These inputs have
    probability 0 but lie in the support, which is all a worst-case error sees.
    """
    contents = np.atleast_2d(checks.real_numbers("all_equal_inputs", "contents", contents))
    if contents.ndim != 2 or contents.shape[1] == 0:  # a width d + 3 < 4 has no content coordinate
        raise ValueError(f"all_equal_inputs: contents must be (B, d) with d >= 1 content coordinates (the model's "
                         f"width is d + 3), got shape {contents.shape}")
    batch, d = contents.shape
    width = d + 3
    trigger = checks.integer("all_equal_inputs", "trigger", trigger, minimum=1)
    if trigger >= length:
        raise ValueError(f"all_equal_inputs: trigger must lie in 1..{length - 1}, got {trigger}")
    if np.any(np.abs(contents) > 1):
        raise ValueError("all_equal_inputs: contents must lie in [-1, 1]")
    x = np.zeros((batch, length, width))
    x[:, 1:, 2:width - 1] = contents[:, None, :]
    x[:, 1:, width - 1] = 1.0
    x[:, 0, BOS] = 1.0
    x[:, trigger, TRIGGER], x[:, trigger, width - 1] = 1.0, 0.0
    return x


def stress_inputs(size_per_trigger: int = 64, seed: int = 0, triggers=TRAINING_TRIGGERS,
                  length: int = SEQUENCE_LENGTH, width: int = WIDTH) -> tuple[np.ndarray, np.ndarray]:
    """Inputs on which to look for a model's worst case: ``(x (B, L, n), triggers (B,))``.

    For every trigger position j: `size_per_trigger` sequences with uniform
    contents, as many with contents at random corners of [-1, 1]^d, as many
    with contents near a random corner (at every distance from 1e-6 to 1), and
    all-equal inputs at random corners plus at the two corners ±(1, ..., 1).
    A finite set only bounds the worst case from below: ``δ̂ <= δ``.
    """
    checks.integer("stress_inputs", "width", width, minimum=MIN_WIDTH)
    size_per_trigger = checks.integer("stress_inputs", "size_per_trigger", size_per_trigger)
    length = checks.integer("stress_inputs", "length", length, minimum=2)
    triggers = stress_triggers("stress_inputs", triggers, length)
    _stress_memory("stress_inputs", size_per_trigger, triggers, length, width)
    rng = np.random.default_rng(checks.integer("stress_inputs", "seed", seed, minimum=0))
    d = width - 3
    blocks, positions = [], []
    for trigger in triggers:
        uniform = rng.uniform(-1.0, 1.0, size=(size_per_trigger, length - 1, d))
        corners = rng.choice([-1.0, 1.0], size=(size_per_trigger, length - 1, d))
        # near a corner s: contents s (1 - t U), U uniform in [0, 1], t log-uniform in [1e-6, 1]
        signs = rng.choice([-1.0, 1.0], size=(size_per_trigger, 1, d))
        distance = 10.0 ** rng.uniform(-6.0, 0.0, size=(size_per_trigger, 1, 1))
        near = signs * (1.0 - distance * rng.uniform(0.0, 1.0, size=(size_per_trigger, length - 1, d)))
        for contents in (uniform, corners, near):
            x = all_equal_inputs(np.zeros((size_per_trigger, d)), trigger, length)
            x[:, 1:, 2:width - 1] = contents
            blocks.append(x)
        equal = np.concatenate([np.ones((1, d)), -np.ones((1, d)),
                                rng.choice([-1.0, 1.0], size=(max(1, size_per_trigger // 4), d))])
        blocks.append(all_equal_inputs(equal, trigger, length))
        positions.append(np.full(sum(block.shape[0] for block in blocks[-4:]), trigger))
    return np.concatenate(blocks), np.concatenate(positions)


def stress_triggers(owner: str, triggers, length: int = SEQUENCE_LENGTH) -> list[int]:
    """`triggers` as a non-empty list of positions in 1..length-1 (`checks.positions`), or an error naming `owner`."""
    triggers = checks.positions(owner, "triggers", triggers, length).tolist()
    if not triggers:
        raise ValueError(f"{owner}: triggers must hold at least one trigger position, got none")
    return triggers


def predict_with_attention(model: AttentionModel, x: np.ndarray) -> tuple[np.ndarray, list]:
    """The model's prediction (B, L, n) and per-layer attention weights [(B, H, L, L)]."""
    with no_grad():
        prediction, attention = model(x, return_attention=True)
    return prediction.data, attention


def row_errors(model: AttentionModel, x: np.ndarray, triggers: np.ndarray) -> np.ndarray:
    """``||ŷ_i - y_i||_∞`` for every sequence and row: (B, L)."""
    triggers = marked_triggers("row_errors", x, triggers)  # another batch's would measure other rows
    prediction, _ = predict_with_attention(model, x)
    return np.abs(prediction - make_targets(x, triggers, residual=model.residual)).max(axis=-1)


def _stress_memory(owner: str, size_per_trigger: int, triggers, length: int, width: int) -> None:
    """A MemoryError naming `owner` before `stress_inputs` draws more than memory holds: per trigger, three blocks
    of `size_per_trigger` sequences and the all-equal ones."""
    size_per_trigger = checks.integer(owner, "size_per_trigger", size_per_trigger)
    sequences = len(triggers) * (3 * size_per_trigger + max(1, size_per_trigger // 4) + 2)
    checks.memory(owner, f"the stress inputs of size_per_trigger={size_per_trigger}", (sequences, length, width))


def worst_case(model: AttentionModel, triggers=TRAINING_TRIGGERS, size_per_trigger: int = 64,
               seed: int = 0, inputs=None) -> dict:
    """A model's largest error and smallest BOS mass on `stress_inputs` (or on `inputs`).

    inputs: None (the model's `stress_inputs` for `triggers`, `size_per_trigger` and `seed`), or a pair
    ``(x, triggers)`` as `stress_inputs` and `make_batch` give them: x (B, L, n) and each sequence's trigger
    position (B,).

    Returns ``worst_case_error`` (δ̂, a lower bound on the true δ),
    ``bos_mass_min`` / ``bos_mass_mean`` (over every head, layer, sequence and
    non-trigger row) and ``head_bos_mass_min`` (layers, H), the smallest BOS
    mass of each head.
    """
    attention_model("worst_case", model)
    finite_weights("worst_case", model)
    if inputs is None:  # the arguments named as worst_case's, before stress_inputs makes the inputs
        _stress_memory("worst_case", size_per_trigger, stress_triggers("worst_case", triggers), SEQUENCE_LENGTH,
                       model.config["width"])
        checks.integer("worst_case", "seed", seed, minimum=0)
    elif not (isinstance(inputs, (tuple, list)) and len(inputs) == 2):
        got = type(inputs).__name__ + (f" of shape {inputs.shape}" if isinstance(inputs, np.ndarray) else
                                       f" of length {len(inputs)}" if isinstance(inputs, (tuple, list)) else "")
        raise TypeError(f"worst_case: inputs must be a pair (x, triggers), x (B, L, n) and triggers (B,), as "
                        f"stress_inputs returns them, got {got}")
    x, positions = stress_inputs(size_per_trigger, seed, triggers, width=model.config["width"]) \
        if inputs is None else (inputs[0], marked_triggers("worst_case", *inputs))
    if len(x) == 0:  # no error to take the largest of (as probe refuses an empty test set)
        raise ValueError(f"worst_case: inputs hold no sequences (x of shape {np.shape(x)}); give at least one")
    prediction, attention = predict_with_attention(model, x)
    error = np.abs(prediction - make_targets(x, positions, residual=model.residual))
    bos = np.stack([bos_mass_at_non_trigger_rows(weights, positions) for weights in attention])  # (layers, B, H, L-2)
    return dict(worst_case_error=float(error.max()), bos_mass_min=float(bos.min()),
                bos_mass_mean=float(bos.mean()), head_bos_mass_min=bos.min(axis=(1, 3)))


def softmax_family(scales, size_per_trigger: int = 32, seed: int = 0, test_size: int = 500,
                   triggers=TRAINING_TRIGGERS) -> dict:
    """Measure `softmax_construction` at every scale c. Returns arrays (one entry per c):

    - ``worst_case_error``, ``bos_mass_min``, ``bos_mass_mean``: on `stress_inputs`
      (every trigger in J, corners included);
    - ``random_max_error``, ``random_bos_mass_min``: on `test_size` random sequences whose triggers are
      drawn as in training, from {2, ..., L-1} (the test set's seed, 12345): the setting of the 500-sequence
      check whose rounded numbers chapter 05 quotes. Its largest error is the bias coordinate of row L-2 in a
      sequence whose trigger is L-1, ``(L-2)/(e^c + L-2)``; its smallest BOS mass, row L-1's ``e^c/(e^c + L-1)``;
    - ``test_max_error``, ``test_bos_mass_min``: on `test_size` test sequences (j = 7, seed 12345), where
      the largest error is row L-1's bias coordinate, ``(L-2)/(e^c + L-1)``;
    - ``exact_worst_case_error``: the formula of `construction_worst_case`.

    Each construction goes through `models.for_training` before it is measured (``python -m minitorch
    reproduce`` puts it on the fast path, as the models it trains).
    """
    scales = checks.real_numbers("softmax_family", "scales", scales)
    if scales.ndim != 1:
        raise TypeError(f"softmax_family: scales must be a list of numbers (one scale c per construction), got "
                        f"{scales.tolist()!r:.80}; write softmax_family([c]) for one")
    test_size = checks.integer("softmax_family", "test_size", test_size)  # not make_test_set's size, never given
    checks.memory("softmax_family", "each test set of test_size sequences", (test_size, SEQUENCE_LENGTH, WIDTH))
    stress = stress_inputs(size_per_trigger, seed, triggers)
    test_x, _, test_triggers = make_test_set(size=test_size)
    random_x, _, random_triggers = make_batch(test_size, np.random.default_rng(TEST_SEED))
    columns = {name: [] for name in ("worst_case_error", "bos_mass_min", "bos_mass_mean", "random_max_error",
                                     "random_bos_mass_min", "test_max_error", "test_bos_mass_min",
                                     "exact_worst_case_error")}
    for scale in scales:
        model = for_training(softmax_construction(scale))
        measured = worst_case(model, inputs=stress)
        for name in ("worst_case_error", "bos_mass_min", "bos_mass_mean"):
            columns[name].append(measured[name])
        for prefix, inputs in (("random", (random_x, random_triggers)), ("test", (test_x, test_triggers))):
            measured = worst_case(model, inputs=inputs)
            columns[f"{prefix}_max_error"].append(measured["worst_case_error"])
            columns[f"{prefix}_bos_mass_min"].append(measured["bos_mass_min"])
        columns["exact_worst_case_error"].append(construction_worst_case(scale)[0] if scale >= 0 else np.nan)
    return dict(scale=scales, **{name: np.array(values) for name, values in columns.items()})


def trigger_row_weights(model: AttentionModel, contents, trigger: int) -> dict:
    """The trigger row of a one-layer, one-head model on the all-equal inputs X_j(z), one per row of `contents`
    (B, d): its weight on BOS (``bos``, a_j0), on each content key (``content_key``, the mean of a_j1..a_j,j-1,
    and ``content_spread``, their largest minus smallest) and on the trigger (``trigger_key``, a_jj), each (B,);
    and ``sum_ratio`` S = (a_j0 + a_jj) / (a content key's weight), the quantity Lemma 5's first step bounds."""
    attention_model("trigger_row_weights", model)
    if len(model.layers) != 1 or model.layers[0].heads != 1:
        raise ValueError(f"trigger_row_weights: Lemma 5 is about one layer with one head, got {model.name}")
    trigger = checks.integer("trigger_row_weights", "trigger", trigger, minimum=2)  # a content key before it
    if np.ndim(contents) != 2 or np.shape(contents)[1] != model.config["width"] - 3:
        raise ValueError(f"trigger_row_weights: contents must be (B, d) with d = {model.config['width'] - 3} content "
                         f"coordinates for a model of width {model.config['width']}, got shape {np.shape(contents)}")
    _, (weights,) = predict_with_attention(model, all_equal_inputs(contents, trigger))
    row = weights[:, 0, trigger, :trigger + 1]  # (B, j+1): BOS, the j - 1 content keys, the trigger
    content = row[:, 1:trigger]  # (B, j-1): equal tokens, equal weights
    per_key = content.mean(axis=1)
    return dict(bos=row[:, 0], content_key=per_key, content_spread=content.max(axis=1) - content.min(axis=1),
                trigger_key=row[:, trigger], sum_ratio=(row[:, 0] + row[:, trigger]) / per_key)


def relu_error_upper_bound(model: AttentionModel, triggers=TRAINING_TRIGGERS) -> dict:
    """An upper bound on the worst-case error δ of a one-layer, one-head ReLU model, over every input with
    contents in [-1, 1]^d and trigger in J; `worst_case` bounds δ from below, this from above (chapter 06).

    With ``M = W_Q^T W_K`` the scores are ``s_ik = x_i^T M x_k``, bilinear in the tokens. The bound holds when two
    certificates hold, each checked exactly over the whole cube of contents:

    - no score of a non-trigger row (or of row 0) is positive, so those rows are exactly 0 (no weight on BOS,
      no error). A content query c + e_b against a key of free content c' scores at most
      ``M_bk + c·M_Cb + ||M_bC + M_CC^T c||_1`` (its maximum over c'), a convex function of c whose maximum sits at
      a corner: all 2^d corners are tried;
    - every score of the trigger row on a non-BOS key is positive, so that row is a polynomial in the contents.

    The trigger row's error is then ``(1/j)(max(s_j0, 0) W e_0 + Σ_{k<j} T(c_j, c_k) + U(c_j))`` with one term per
    content key and one for the trigger; each term is a constant, plus a linear part whose size is bounded by an
    l1 norm, plus a rest bounded through ``|c_j^T M_CC c| <= ||M_CC||_{∞→1}`` (computed exactly over the corners).
    Returns ``worst_case_error_upper`` (inf when a certificate fails), ``non_trigger_score_max`` (<= 0 certifies the
    first) and ``trigger_score_min`` (> 0 certifies the second). Exact arithmetic on the stored weights: the
    model's own floating-point rounding (about 1e-7 in float32) comes on top.
    """
    attention_model("relu_error_upper_bound", model)
    if len(model.layers) != 1 or model.layers[0].heads != 1 or model.config["normaliser"] != "relu" or model.residual:
        raise ValueError(f"relu_error_upper_bound: needs a one-layer, one-head ReLU model without a residual "
                         f"connection, got {model.name}")
    positions = stress_triggers("relu_error_upper_bound", triggers)
    layer = model.layers[0]
    M = layer.W_Q.weight.data.astype(float).T @ layer.W_K.weight.data.astype(float)  # (n, n): s_ik = x_i^T M x_k
    W = layer.W_O.weight.data.astype(float) @ layer.W_V.weight.data.astype(float)  # the value map
    width = M.shape[0]
    bos, flag, bias, content = BOS, TRIGGER, width - 1, np.arange(2, width - 1)
    mixing = M[np.ix_(content, content)]  # M_CC: (d, d)
    corners = np.array(np.meshgrid(*[(-1.0, 1.0)] * len(content), indexing="ij")).reshape(len(content), -1).T
    cube_norm = np.abs(corners @ mixing).sum(axis=1).max()  # ||M_CC||_{∞→1} = max over u, v in the cube of u^T M_CC v
    towards_keys = np.abs(M[bias, content] + corners @ mixing).sum(axis=1)  # max over a key's content, per corner c
    non_trigger = max(
        M[bias, bos] + np.abs(M[content, bos]).sum(),  # a content query on BOS
        (M[bias, bias] + corners @ M[content, bias] + towards_keys).max(),  # on another content key
        (M[bias, flag] + corners @ M[content, flag] + towards_keys).max(),  # on the trigger, after it
        M[bias, bias] + np.abs(M[content, bias] + M[bias, content]).sum() + cube_norm,  # on itself
        M[bos, bos])  # row 0, BOS on itself
    spread = np.abs(M[content, bias]).sum() + np.abs(M[flag, content]).sum() + cube_norm  # |s_jk - M_tb| at most
    spread_self = np.abs(M[content, flag] + M[flag, content]).sum() + cube_norm  # |s_jj - M_tt| at most
    trigger_min = min(M[flag, bias] - spread, M[flag, flag] - spread_self)
    result = dict(non_trigger_score_max=float(non_trigger), trigger_score_min=float(trigger_min))
    if non_trigger > 0 or trigger_min <= 0:
        return dict(result, worst_case_error_upper=float("inf"))
    bos_score = np.abs(M[content, bos]).sum() * np.array([-1.0, 1.0]) + M[flag, bos]  # s_j0 lies in this interval
    from_bos = np.maximum(bos_score, 0.0)[:, None] * W[:, bos]  # (2, n): max(s_j0, 0) W e_0 at both ends
    worst = 0.0
    for r in range(width):
        own = (content == r).astype(float)  # the target's share of coordinate r: c_r for a content coordinate
        key_constant = M[flag, bias] * W[r, bias] - (r == bias)  # a content key's term T at zero content
        key_linear = np.abs(M[flag, bias] * W[r, content] - own).sum()
        key_rest = spread * (abs(W[r, bias]) + np.abs(W[r, content]).sum())
        self_constant = M[flag, flag] * W[r, flag] - (r == flag)  # the trigger's own term U at zero content
        self_linear = np.abs(M[flag, flag] * W[r, content] - own).sum()
        self_rest = spread_self * (abs(W[r, flag]) + np.abs(W[r, content]).sum())
        for j in positions:
            high = (from_bos[:, r].max() + (j - 1) * (key_constant + key_linear + key_rest)
                    + self_constant + self_linear + self_rest) / j
            low = (from_bos[:, r].min() + (j - 1) * (key_constant - key_linear - key_rest)
                   + self_constant - self_linear - self_rest) / j
            worst = max(worst, high, -low)
    return dict(result, worst_case_error_upper=float(worst))
