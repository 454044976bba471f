"""Measuring sinks (chapters 03, 08 and 09).

All functions take attention weights ``a`` as an array of shape (B, H, L, L)
(sequence, head, query i, key k), as returned per layer by
``model(x, return_attention=True)``, and the trigger positions j (B,).

- *BOS mass* of row i: ``a_i0``, the weight query i puts on BOS.
- *Non-trigger rows*: ``i ∈ {1, ..., L-1}``, ``i ≠ j``. Row 0 is left out on
  purpose: its only visible key is BOS, so a softmax row 0 is 1 on BOS for
  every model, sink or not.
- *Trigger row*: row j, where the model must read its input. A single softmax head with a small enough
  worst-case error over three or more trigger positions puts about 1/j on each of keys 1..j and little on
  BOS there on the inputs whose contents are all equal (Lemma 5 of chapter 05; chapter 07 measures a trained
  head on the test set); a ReLU head may scale its row and use BOS as a constant input (chapter 08's trained
  head: 0.178 on BOS and 0.428 on each key at j = 7).
- Gu et al.'s sink score (ICLR 2025): ``α_k = (1/(L-k)) Σ_{i ≥ k} â_ik``
  (0-based k; the mean weight key k receives from the queries that see it),
  where ``â`` is ``a`` with each row divided by its sum. A head sinks at k
  if ``α_k > ε`` (ε = 0.3); the share of heads that sink at k is Gu et al.'s ``Sink_{k+1}^ε`` (they count
  tokens from 1), so the share at BOS, k = 0, is their ``Sink_1^ε``.
  A ReLU row can be all zero, making ``â`` 0/0: we set such a row of ``â``
  to 0 (a row that attends to nothing puts nothing on the sink) and report
  the share of all-zero rows separately (`zero_row_share`).
"""

from __future__ import annotations

import numpy as np

from minitorch import checks
from minitorch.paper.attention import weight_on_a_future_key

# Two thresholds, two definitions of "sinks":
SINK_BOS_MASS = 0.9  # this book's: a head sinks if its mean BOS mass at non-trigger rows is at least this
SINK_THRESHOLD = 0.3  # Gu et al.'s ε (ICLR 2025): a head sinks at key k if α_k > ε


def _check(weights: np.ndarray, triggers=None, owner: str = "metrics") -> np.ndarray:
    """`weights` as (B, H, L, L) numbers >= 0 and 0 on future keys (every normaliser's are), or an error naming
    `owner`; `triggers`, if given, must be B integers j in 1..L-1 (`checks.positions`)."""
    weights = np.asarray(weights)
    if weights.ndim == 3:
        weights = weights[:, None]  # (B, L, L) -> (B, 1, L, L): one head
    if weights.ndim != 4 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"{owner}: attention weights must have shape (B, H, L, L) or (B, L, L), got {weights.shape}")
    if not checks.is_real(weights.dtype):
        raise TypeError(f"{owner}: attention weights must be real numbers, got dtype {weights.dtype}")
    checks.real_numbers(owner, "attention weights", weights)  # a nan row would pass for an all-zero row
    if (weights < 0).any():  # Gu's score divides by a row's sum: -a would read as an all-zero row
        raise ValueError(f"{owner}: attention weights must be >= 0 (a normaliser's output), got a weight of "
                         f"{weights.min()}")
    leak = weight_on_a_future_key(weights)  # a transposed map would give α_k > 1 and a BOS mass of 0
    if leak is not None:
        raise ValueError(f"{owner}: attention weights must be 0 on every future key (k > i), as a causal map's are; "
                         f"got {weights[leak]:.3g} at sequence {leak[0]}, head {leak[1]}, row {leak[2]}, key "
                         f"{leak[3]} (is the map transposed? its axes are (B, H, query i, key k))")
    if triggers is None:
        return weights
    if np.shape(triggers) != (weights.shape[0],):
        raise ValueError(f"{owner}: triggers must have shape (B,) = ({weights.shape[0]},), got {np.shape(triggers)}")
    checks.positions(owner, "triggers", triggers, length=weights.shape[-1])
    return weights


def per_layer(owner: str, per_layer_weights) -> list:
    """`per_layer_weights` as a list, one array per layer, or a ValueError naming `owner`: one layer's (B, H, L, L)
    array in its place would be read with its sequences as layers and each sequence's heads as sequences, without
    a word (the list of no layer would give nan)."""
    if isinstance(per_layer_weights, (list, tuple)) and len(per_layer_weights):
        return list(per_layer_weights)
    shape = per_layer_weights.shape if isinstance(per_layer_weights, np.ndarray) else None
    got = f"{per_layer_weights!r:.60}" if shape is None else f"an array of shape {shape}" + (
        " (one layer's? write [weights])" if len(shape) == 4 else "")
    raise ValueError(f"{owner}: per_layer_weights must be a non-empty list of (B, H, L, L) arrays, one per layer, "
                     f"got {got}")


def non_trigger_rows(triggers: np.ndarray, length: int) -> np.ndarray:
    """Boolean (B, L): True at rows i >= 1 with i != j."""
    length = checks.integer("non_trigger_rows", "length", length, minimum=2)
    triggers = checks.positions("non_trigger_rows", "triggers", triggers, length)
    checks.memory("non_trigger_rows", "the positions 0..L-1", (length,))
    checks.memory("non_trigger_rows", "the mask (B, L)", (len(triggers), length), itemsize=1)
    positions = np.arange(length)
    return (positions >= 1) & (positions != triggers[:, None])


def measured_rows(owner: str, triggers, length: int, each_row_from: int | None = None) -> np.ndarray:
    """`non_trigger_rows` (B, L) for a measure that averages over them, or a ValueError naming `owner` where it
    would average over no row (NumPy's nan and warning, or its error at a minimum): sequences with no non-trigger
    row (L < 3: row 0 is BOS's own, row 1 the trigger's) or, for a measure per row i >= `each_row_from`, a row
    that is the trigger row of every sequence (the test set's fixed trigger leaves row 7 so)."""
    length = checks.integer(owner, "length", length)
    if length < 3:
        raise ValueError(f"{owner}: sequences of length {length} have no non-trigger row (row 0 is BOS's own, "
                         f"row j the trigger's); the measures need sequences of length L >= 3")
    rows = non_trigger_rows(checks.positions(owner, "triggers", triggers, length), length)
    if each_row_from is not None:  # row 0 is BOS's own, never a non-trigger row: from 0 every map would be refused
        each_row_from = checks.integer(owner, "each_row_from", each_row_from, minimum=1, maximum=length - 1)
    empty = [] if each_row_from is None else [i for i in range(each_row_from, length) if not rows[:, i].any()]
    if empty:
        raise ValueError(f"{owner}: row {empty[0]} is the trigger row of every sequence (of length {length}), so "
                         f"none gives its measure; give sequences with other triggers too (task.make_batch draws "
                         f"them in 2..L-1), not one trigger for all")
    return rows


def _weights_and_triggers(weights, triggers):
    return _check(weights, triggers, "bos_mass_at_non_trigger_rows"), np.asarray(triggers)


def _weights_alone(weights, triggers=None):
    return _check(weights, triggers, "gu_sink_scores"), triggers


@checks.inputs_checked_by(_weights_and_triggers)
def bos_mass_at_non_trigger_rows(weights: np.ndarray, triggers: np.ndarray) -> np.ndarray:
    """Exercise 3.4: the BOS weights ``a_i0`` at non-trigger rows: (B, H, L-2) (sequence, head, row), for
    weights (B, H, L, L) and triggers (B,), both checked before they arrive."""
    batch, heads, length, _ = weights.shape
    rows = non_trigger_rows(triggers, length)  # (B, L): True at rows i >= 1, i != j
    kept = weights[..., 0].transpose(0, 2, 1)[rows]  # a_i0, (B, L, H) -> (B*(L-2), H), sequence by sequence
    return kept.reshape(batch, length - 2, heads).transpose(0, 2, 1)  # -> (B, H, L-2)


def non_trigger_row_mass(weights, triggers) -> np.ndarray:
    """Total weight ``Σ_k a_ik`` of each non-trigger row: (B, H, L-2). The rows are picked by
    `bos_mass_at_non_trigger_rows` (exercise 3.4), given a causal map whose key 0 holds its row's total."""
    weights = _check(weights, triggers, "non_trigger_row_mass")
    totals = np.zeros_like(weights)
    totals[..., 0] = weights.sum(axis=-1)  # (B, H, L, L): Σ_k a_ik at key 0, which every row sees
    return bos_mass_at_non_trigger_rows(totals, triggers)


def trigger_row(weights, triggers) -> np.ndarray:
    """Row j of each sequence: (B, H, L)."""
    weights = _check(weights, triggers, "trigger_row")
    return weights[np.arange(weights.shape[0]), :, np.asarray(triggers), :]


@checks.inputs_checked_by(_weights_alone)
def gu_sink_scores(weights: np.ndarray, triggers=None) -> np.ndarray:
    """Exercise 3.5: Gu et al.'s ``α_k`` for every head and key, averaged over sequences: (H, L), for
    weights (B, H, L, L), checked before they arrive (`triggers` is not used)."""
    row_sums = weights.sum(axis=-1, keepdims=True)  # (B, H, L, 1)
    safe_sums = np.where(row_sums > 0, row_sums, 1.0)
    normalised = np.where(row_sums > 0, weights / safe_sums, 0.0)  # an all-zero row stays 0
    length = weights.shape[-1]
    queries_seeing_key = length - np.arange(length)  # key k is seen by rows k..L-1
    return normalised.sum(axis=2).mean(axis=0) / queries_seeing_key  # (B, H, L) -> (H, L)


def zero_row_share(weights) -> float:
    """The share of attention rows whose weights are all zero (possible only without softmax)."""
    weights = _check(weights, owner="zero_row_share")
    if weights.size == 0:
        raise ValueError(f"zero_row_share: no attention rows to count (weights of shape {weights.shape})")
    return float((weights.sum(axis=-1) == 0).mean())


def _sink_share_inputs(per_layer_weights, key: int = 0, threshold: float = SINK_THRESHOLD):
    layers = [_check(weights, owner="sink_share") for weights in per_layer("sink_share", per_layer_weights)]
    key = checks.integer("sink_share", "key", key, minimum=0)
    for layer, weights in enumerate(layers):
        if key >= weights.shape[-1]:
            raise ValueError(f"sink_share: key {key} is not a key of layer {layer}'s sequences of length "
                             f"{weights.shape[-1]}")
    threshold = checks.finite_number("sink_share", "threshold", threshold)
    if not 0 <= threshold < 1:  # 0 <= α <= 1: with ε < 0 every head would sink, with ε >= 1 none
        raise ValueError(f"sink_share: threshold must be a number in [0, 1) (α lies in [0, 1]), got {threshold}")
    return layers, key, threshold


@checks.inputs_checked_by(_sink_share_inputs)
def sink_share(per_layer_weights, key: int = 0, threshold: float = SINK_THRESHOLD) -> float:
    """Exercise 9.1: the share of all heads (all layers) with ``α_key > ε``: Gu et al.'s ``Sink_{key+1}^ε``
    (they count tokens from 1; `gu_sink_scores` gives the α of one layer's heads)."""
    scores = np.concatenate([gu_sink_scores(weights)[:, key] for weights in per_layer_weights])  # (layers*H,)
    return float((scores > threshold).mean())


def head_table(per_layer_weights, triggers) -> list[dict]:
    """One row per (layer, head): the sink measures of chapter 09, for a list of (B, H, L, L) arrays, one per
    layer, and triggers (B,); sequences of length L < 3 have no non-trigger row to measure (`measured_rows`)."""
    table = []
    for layer, weights in enumerate(per_layer("head_table", per_layer_weights)):
        weights = _check(weights, triggers, "head_table")
        measured_rows("head_table", triggers, weights.shape[-1])  # a mean over no row would be nan
        bos = bos_mass_at_non_trigger_rows(weights, triggers)  # (B, H, L-2)
        mass = non_trigger_row_mass(weights, triggers)
        at_trigger = trigger_row(weights, triggers)  # (B, H, L)
        alpha = gu_sink_scores(weights)  # (H, L)
        for head in range(weights.shape[1]):
            table.append(dict(
                layer=layer, head=head,
                bos_mass_mean=float(bos[:, head].mean()),
                bos_mass_min=float(bos[:, head].min()),
                row_mass_max=float(mass[:, head].max()),
                trigger_bos=float(at_trigger[:, head, 0].mean()),
                gu_alpha_bos=float(alpha[head, 0]),
                gu_sinks=bool(alpha[head, 0] > SINK_THRESHOLD),
            ))
    return table
