"""Constructions: hand-built weights, loaded into the library's own models (chapters 04-06, 09).

Each returns a model of `minitorch.paper.models`, so that it runs through the real forward pass:

- `relu_construction` (Theorem 3): ReLU weights that solve the task exactly, with no sink (exercise 6.1);
- `softmax_construction` (chapter 05's softmax family, scale c): a sink whose strength is c (exercise 5.1),
  with `construction_worst_case`, the family's exact worst-case error and smallest BOS mass;
- `fixed_trigger_counterexample`: why Theorem 1 needs two trigger positions;
- `two_layer_construction` (Theorem 2): one layer sinks, the other does not;
- `trigger_row_sink_construction` (Theorem 2): no head sinks at a non-trigger row.

`unit_vectors` names the coordinates of a token, `query_key_direction` checks the unit vector u along which
the two exact constructions point their queries and keys, and `load_head` writes one head's four matrices into
a model; `value_map` reads a head's ``W = W_O W_V`` back out.
"""

from __future__ import annotations

import numpy as np

from minitorch import checks
from minitorch.paper.models import AttentionModel, ResidualModel, SingleLayerModel, attention_model
from minitorch.paper.task import BOS, SEQUENCE_LENGTH, TEST_TRIGGER, TRIGGER, WIDTH
from minitorch.tensor_checks import named_float_array

MIN_WIDTH = 4  # BOS flag, trigger flag, at least one content coordinate, bias channel


def unit_vectors(width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(e_0, e_t, e_b, content)``: the BOS flag, trigger flag and bias unit vectors,
    and a boolean mask (n,) of the d = n - 3 content coordinates."""
    width = checks.integer("unit_vectors", "width (BOS, trigger, >= 1 content, bias)", width, minimum=MIN_WIDTH)
    identity = np.eye(width)
    content = np.zeros(width, dtype=bool)
    content[2:width - 1] = True
    return identity[BOS], identity[TRIGGER], identity[width - 1], content


def load_head(model: AttentionModel, layer: int, head: int, W_Q, W_K, W_V, W_O) -> AttentionModel:
    """Write one head's four n x n matrices into `model` (in place; returns it).

    The matrices act on column vectors, as in the chapter: ``q = W_Q x``.
    `nn.Linear` stores exactly that matrix (it computes ``x @ weight.T``), so
    head h owns rows h*n:(h+1)*n of W_Q, W_K, W_V and columns h*n:(h+1)*n of W_O.
    """
    attention = _layer_with_head("load_head", model, layer, head)
    width = attention.width
    block = slice(head * width, (head + 1) * width)
    matrices = dict(W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O)
    for name, matrix in matrices.items():  # all four checked before any is written: a refused one changes nothing
        matrix = checks.real_numbers("load_head", name, matrix)
        if matrix.shape != (width, width):
            raise ValueError(f"load_head: {name} must have shape ({width}, {width}), got {matrix.shape}")
        # in the model's dtype: 1e40 would become inf in a float32 model, with only NumPy's warning
        matrices[name] = named_float_array(f"load_head: {name}", matrix, attention.W_Q.weight.dtype)
    attention.W_Q.weight.data[block, :] = matrices["W_Q"]
    attention.W_K.weight.data[block, :] = matrices["W_K"]
    attention.W_V.weight.data[block, :] = matrices["W_V"]
    attention.W_O.weight.data[:, block] = matrices["W_O"]
    return model


def _layer_with_head(owner: str, model: AttentionModel, layer: int, head: int):
    """``model.layers[layer]``, once `layer` and `head` are checked to exist (counted from 0), or a ValueError."""
    layer, head = checks.integer(owner, "layer", layer, minimum=0), checks.integer(owner, "head", head, minimum=0)
    attention_model(owner, model)
    if layer >= len(model.layers):
        raise ValueError(f"{owner}: layer {layer} is not a layer of this model (it has {len(model.layers)}: "
                         f"0..{len(model.layers) - 1})")
    attention = model.layers[layer]
    if head >= attention.heads:
        raise ValueError(f"{owner}: head {head} is not a head of layer {layer} (it has {attention.heads}: "
                         f"0..{attention.heads - 1})")
    return attention


def value_map(model: AttentionModel, layer: int = 0, head: int = 0) -> np.ndarray:
    """The head's value map ``W = W_O W_V`` restricted to that head: (n, n)."""
    attention = _layer_with_head("value_map", model, layer, head)
    block = slice(head * attention.width, (head + 1) * attention.width)
    return attention.W_O.weight.data[:, block] @ attention.W_V.weight.data[block, :]



def query_key_direction(direction, width: int, owner: str = "query_key_direction", name: str = "direction"
                        ) -> np.ndarray:
    """The unit vector u along which a construction's queries and keys point: `direction` checked, as a float
    array of shape (n,) with norm 1 (to 1e-9); None means ``e_0``. Only ``u . u = 1`` enters the scores, so
    any unit vector gives the same attention (chapters 05 and 06). `owner` and `name` name the construction
    and its argument in errors."""
    width = checks.integer(owner, "width", width, minimum=MIN_WIDTH)
    checks.memory(owner, "the head's four (n, n) matrices", (4, width, width))  # before np.eye(width)
    if direction is None:
        return np.eye(width)[BOS]
    u = checks.real_numbers(owner, name, direction)
    if u.shape != (width,):
        raise ValueError(f"{owner}: {name} must be a unit vector of shape ({width},) (the width n), got shape "
                         f"{u.shape}")
    if abs(np.linalg.norm(u) - 1.0) > 1e-9:  # a longer u scales every score by |u|^2: a sink of another strength
        raise ValueError(f"{owner}: {name} must be a unit vector (norm 1), got norm {np.linalg.norm(u):.6g}")
    return u


def relu_construction(width: int = WIDTH, direction=None) -> SingleLayerModel:
    """Theorem 3: one ReLU head that solves the task exactly, with no sink (chapter 06): the trigger row
    puts 1/j on each of keys 1..j (the exact mean) and every other row is 0. Its weights are
    `relu_construction_weights` (exercise 6.1), with u the unit vector `direction` (None: u = e_0)."""
    u = query_key_direction(direction, width, "relu_construction")
    model = SingleLayerModel(width, heads=1, normaliser="relu")
    return load_head(model, 0, 0, *relu_construction_weights(u, width))


def _direction_and_width(u, width) -> tuple:
    """`relu_construction_weights`' inputs, checked: u a unit vector of shape (n,), n at least 4."""
    owner = "relu_construction_weights"
    return query_key_direction(u, width, owner, "u"), checks.integer(owner, "width", width, minimum=MIN_WIDTH)


@checks.inputs_checked_by(_direction_and_width)
def relu_construction_weights(u: np.ndarray, width: int) -> tuple:
    """Exercise 6.1: the matrices ``(W_Q, W_K, W_V, W_O)``, each (n, n), of one ReLU head that solves the
    task exactly with no sink. Its scores s_ik = q_i . k_k are 1 on keys 1..j of the trigger row and 0 at
    every other row i >= 1, and its value map W_O W_V is I: every non-trigger row of its attention is 0 and
    the trigger row puts 1/j on each of keys 1..j, so the head outputs the mean of tokens 1..j at j and 0
    elsewhere. Every query and key is a multiple of the unit vector `u` (shape (n,));
    `unit_vectors(width)` gives e_0, e_t, e_b and the content mask."""
    _, e_t, e_b, _ = unit_vectors(width)
    W_Q = np.outer(u, e_t)  # q_i = [x_i is the trigger] u
    W_K = np.outer(u, e_b + e_t)  # k_k = [x_k is not BOS] u
    identity = np.eye(width)
    return W_Q, W_K, identity, identity


def softmax_construction(scale: float, width: int = WIDTH, direction=None) -> SingleLayerModel:
    """The softmax family of chapter 05: a sink whose strength is the scale c. A non-trigger row i puts
    ``e^c / (e^c + i)`` on BOS, the trigger row ``e^-c / (e^-c + j)``; BOS's value is 0. Its weights are
    `softmax_construction_weights` (exercise 5.1), with u the unit vector `direction` (None: u = e_0)."""
    scale = checks.finite_number("softmax_construction", "scale", scale)
    u = query_key_direction(direction, width, "softmax_construction")
    model = SingleLayerModel(width, heads=1, normaliser="softmax")
    return load_head(model, 0, 0, *softmax_construction_weights(scale, u, width))


def _scale_direction_and_width(scale, u, width) -> tuple:
    """`softmax_construction_weights`' inputs, checked: a finite scale c (of either sign), u a unit vector of
    shape (n,), n at least 4."""
    owner = "softmax_construction_weights"
    return (checks.finite_number(owner, "scale", scale), query_key_direction(u, width, owner, "u"),
            checks.integer(owner, "width", width, minimum=MIN_WIDTH))


@checks.inputs_checked_by(_scale_direction_and_width)
def softmax_construction_weights(scale: float, u: np.ndarray, width: int) -> tuple:
    """Exercise 5.1: the matrices ``(W_Q, W_K, W_V, W_O)``, each (n, n), of one softmax head with a sink of
    strength c = `scale`: only the BOS key gets a non-zero score, +c from a content query and -c from the
    trigger, so a non-trigger row i puts ``e^c / (e^c + i)`` on BOS and the trigger row
    ``e^-c / (e^-c + j)``; BOS's value is 0 and every other token's value is the token itself. Queries and
    keys are multiples of the unit vector `u` (shape (n,)); `unit_vectors(width)` gives e_0, e_t, e_b and the
    content mask."""
    e_0, e_t, e_b, _ = unit_vectors(width)
    W_Q = scale * np.outer(u, e_b - e_t)  # q_i = +c u at content tokens, -c u at the trigger
    W_K = np.outer(u, e_0)  # k_k = u at BOS, 0 elsewhere
    W_V = np.eye(width) - np.outer(e_0, e_0)  # BOS's value is 0; other tokens keep their value
    return W_Q, W_K, W_V, np.eye(width)


def construction_worst_case(scale: float, length: int = SEQUENCE_LENGTH) -> tuple[float, float]:
    """Exact ``(worst-case error, min BOS mass)`` of `softmax_construction` (scale c >= 0).

    Row L-1 (a non-trigger row whenever j < L-1) sees L-1 non-BOS tokens; with
    every content at +1 its output is ``(L-1)/(e^c + L-1)`` in each content
    coordinate, the largest error anywhere; its BOS mass ``e^c/(e^c + L-1)`` is
    the smallest. So ``1 - min BOS mass = worst-case error`` along the family.
    """
    scale = checks.positive_number("construction_worst_case", "scale", scale, allow_zero=True)  # the formula's range
    # L >= 3: row L-1 must be a non-trigger row for some trigger j in 1..L-2
    length = checks.integer("construction_worst_case", "length", length, minimum=3)
    visible = length - 1
    error = visible / (np.exp(scale) + visible)
    return float(error), float(1.0 - error)


def fixed_trigger_counterexample(trigger: int = TEST_TRIGGER, sharpness: float = 1e4, separation: float = 60.0,
                                 width: int = WIDTH) -> SingleLayerModel:
    """A softmax head with tiny worst-case error when the trigger is always at `trigger`,
    but BOS mass only 1/(i+1) at row i < j on inputs whose contents all sit at the corner 1.

    Content tokens have value ``W x_k = c_k - 1`` (1 = all-ones corner): zero at the
    corner. Non-trigger rows score BOS ``G d`` and content key k ``G Σ_m c_k[m]``
    (G = sharpness): keys far from the corner get weight ``e^{-G ||c_k - 1||_1}``,
    keys at the corner tie with BOS. The trigger's value is tuned to this one j,
    so the model fails when the trigger moves: Theorem 1 needs two positions. G and the
    separation M are numbers > 0.
    """
    # G < 0 would give the far keys the weight; M <= 0 would let content queries read the trigger key
    sharpness = checks.positive_number("fixed_trigger_counterexample", "sharpness", sharpness)
    separation = checks.positive_number("fixed_trigger_counterexample", "separation", separation)
    e_0, e_t, e_b, content = unit_vectors(width)
    trigger = checks.integer("fixed_trigger_counterexample", "trigger", trigger, minimum=1)
    if trigger >= SEQUENCE_LENGTH:
        raise ValueError(f"fixed_trigger_counterexample: trigger must lie in 1..{SEQUENCE_LENGTH - 1}, got {trigger}")
    corner = content.astype(float)  # c* = (1, ..., 1) on the content coordinates
    d = int(content.sum())
    identity = np.eye(width)
    u_score, u_avoid, u_trigger = identity[0], identity[1], identity[2]  # three directions of query/key space
    W_Q = np.outer(u_score + u_avoid, e_b) + np.outer(u_trigger, e_t)
    W_K = (sharpness * np.outer(u_score, corner)  # content key: G c* . c_k
           + np.outer(sharpness * d * u_score - separation * u_trigger, e_0)  # BOS: G d, or -M for the trigger query
           - separation * np.outer(u_avoid, e_t))  # the trigger key: -M for content queries
    W = np.diag(corner)  # content -> content
    W -= np.outer(corner, e_b)  # bias channel: subtract the corner
    W += np.outer((trigger - 1) * corner + (trigger - 1) * e_b + e_t, e_t)  # trigger: repair the mean at this j
    model = SingleLayerModel(width, heads=1, normaliser="softmax")
    return load_head(model, 0, 0, W_Q, W_K, W, identity)


def _running_average_head(width: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(W_Q, W_K) of a head that spreads its weight evenly over the non-BOS keys
    (BOS score -c at every non-BOS query): BOS mass ``e^-c / (e^-c + i)``, no sink."""
    e_0, e_t, e_b, _ = unit_vectors(width)
    return np.outer(e_0, e_b + e_t), -scale * np.outer(e_0, e_0)


def two_layer_construction(scale: float = 20.0, width: int = WIDTH, heads: int = 2) -> ResidualModel:
    """Theorem 2, "not every head must sink": a residual model, 2 layers, in which
    only layer 0's head 0 sinks.

    Layer 0, head 0 is `softmax_construction`'s head (sinks, writes the mean): the
    weights of exercise 5.1 with u = e_0. Every other head spreads its weight over
    the non-BOS keys (BOS mass about ``e^-c / i``): with ``heads=1`` layer 1's head
    has ``W_O = 0``; with ``heads=2`` layer 0's head 1 has ``W_O = 0`` and layer 1's
    two heads share their attention and have opposite value maps
    ``±(I - e_0 e_0^T)``, so they cancel.
    """
    scale = checks.finite_number("two_layer_construction", "scale", scale)
    if heads not in (1, 2):
        raise ValueError(f"two_layer_construction: heads must be 1 or 2, got {heads}")
    model = ResidualModel(width, heads=heads, layers=2, normaliser="softmax")
    e_0, _, _, _ = unit_vectors(width)
    identity, zero = np.eye(width), np.zeros((width, width))
    without_bos = identity - np.outer(e_0, e_0)
    load_head(model, 0, 0, *softmax_construction_weights(scale, e_0, width))
    W_Q, W_K = _running_average_head(width, scale)
    if heads == 1:
        return load_head(model, 1, 0, W_Q, W_K, without_bos, zero)
    load_head(model, 0, 1, W_Q, W_K, without_bos, zero)
    load_head(model, 1, 0, W_Q, W_K, without_bos, identity)
    return load_head(model, 1, 1, W_Q, W_K, without_bos, -identity)


def trigger_row_sink_construction(scale: float = 30.0, width: int = WIDTH, layers: int = 2) -> ResidualModel:
    """Theorem 2, "the sink may sit at the trigger row": a residual model with 2 heads
    per layer in which NO head puts more than ``e^-c / (e^-c + i)`` on BOS at any
    non-trigger row i, yet the error is about ``L e^-c``.

    Layer 0: heads A and B spread their weight over the non-BOS keys at every
    non-trigger row (identical attention there) with opposite value maps
    ``±(I - e_0 e_0^T)``: they cancel. At the trigger row A still averages, and
    so writes the mean, while B's query flips sign and B sinks onto BOS, whose
    value is 0. B is the softmax construction of scale -c (exercise 5.1, u = e_0:
    BOS scores -c at content rows, +c at the trigger) with its value map negated.
    Later layers hold a cancelling pair of running-average heads.
    """
    scale = checks.finite_number("trigger_row_sink_construction", "scale", scale)
    layers = checks.integer("trigger_row_sink_construction", "layers", layers)
    model = ResidualModel(width, heads=2, layers=layers, normaliser="softmax")
    e_0, _, _, _ = unit_vectors(width)
    identity = np.eye(width)
    without_bos = identity - np.outer(e_0, e_0)
    W_Q, W_K = _running_average_head(width, scale)
    load_head(model, 0, 0, W_Q, W_K, without_bos, identity)  # A: averages at every row
    B_Q, B_K, B_V, B_O = softmax_construction_weights(-scale, e_0, width)
    load_head(model, 0, 1, B_Q, B_K, B_V, -B_O)  # B: BOS score +c at the trigger, -c elsewhere
    for layer in range(1, layers):
        load_head(model, layer, 0, W_Q, W_K, without_bos, identity)
        load_head(model, layer, 1, W_Q, W_K, without_bos, -identity)
    return model
