"""Causal attention with a choice of normaliser (chapter 03).

For queries ``q_i`` and keys ``k_k`` the scores are ``s_ik = q_i · k_k``. A
*normaliser* turns the score matrix into attention weights ``a_ik``, with
``a_ik = 0`` for future keys ``k > i`` (the causal mask):

- ``"softmax"``: ``a_ik = exp(s_ik) / Σ_{k' ≤ i} exp(s_ik')``. Every row lies
  on the probability simplex: it sums to 1.
- ``"relu"``: ``a_ik = max(s_ik, 0) / max(i, 1)`` (0-based query ``i``). The
  divisor is fixed, the number of visible non-BOS tokens; a row may sum to
  anything, including 0.

A normaliser is one function ``(scores, causal_mask) -> weights`` registered
with `register_normaliser`; models pick it by name. A normaliser may also
declare numbers it learns (its *parameters*, passed to it by keyword) and ask
for an output gate on each head; `minitorch.paper.sink_free` registers five that
do without a sink.
"""

from __future__ import annotations

import functools
import inspect
import sys
from dataclasses import dataclass, field

import numpy as np

from minitorch import checks, ops
from minitorch.softmax import softmax
from minitorch.tensor import Tensor, as_tensor

# name -> the function (scores, future, **parameters) -> weights. The dict lives on the package, so a re-import of
# this file (the chapters' autoreload after an edit, chapter 00) keeps what other modules and cells registered.
NORMALISERS: dict = sys.modules[__name__.rpartition(".")[0]].__dict__.setdefault("_normalisers", {})


@dataclass(frozen=True)
class NormaliserOptions:
    """What a model must build for a normaliser, beyond W_Q, W_K, W_V, W_O.

    parameters: parameter name -> function ``heads -> initial array``; the
        layer holds one `Parameter` per name and passes it to the normaliser
        by keyword.
    output_gate: if True, the layer multiplies each head's output by a
        sigmoid gate ``σ(W_G^h x_i)`` before W_O.
    """

    parameters: dict = field(default_factory=dict)
    output_gate: bool = False


NORMALISER_OPTIONS: dict = sys.modules[__name__.rpartition(".")[0]].__dict__.setdefault(
    "_normaliser_options", {})  # name -> NormaliserOptions, beside NORMALISERS, kept likewise


def register_normaliser(name: str, parameters: dict | None = None, output_gate: bool = False):
    """Decorator: make a normaliser available to models under `name`.

    ``register_normaliser("sink_logit", parameters={"sink_logit": lambda heads: np.zeros((heads, 1, 1, 1))})``
    declares a learned number per head, named ``sink_logit``, starting at 0.
    """
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"register_normaliser: the name must be a non-empty string, got {name!r}")
    if parameters is not None and not (isinstance(parameters, dict) and all(
            isinstance(key, str) and callable(initial) for key, initial in parameters.items())):
        raise TypeError(f"register_normaliser: parameters must be a dict of parameter name -> function "
                        f"(heads -> initial array), got {parameters!r:.80} ({type(parameters).__name__})")
    output_gate = checks.flag("register_normaliser", "output_gate", output_gate)

    def register(function):
        if not callable(function):
            raise TypeError(f"register_normaliser: a normaliser must be a function (scores, future) -> weights, got "
                            f"{function!r:.60} ({type(function).__name__})")
        _takes_scores_and_future(name, function, parameters or {})
        taken = NORMALISERS.get(name)
        redefined = taken is not None and _defined_at(taken) == _defined_at(function)
        if taken is not None and not redefined:  # re-running the cell that defines it is fine
            raise ValueError(f"register_normaliser: the name {name!r} is taken by {_defined_at(taken)}; "
                             f"known: {sorted(NORMALISERS)}")
        NORMALISERS[name] = function
        NORMALISER_OPTIONS[name] = NormaliserOptions(dict(parameters or {}), output_gate)
        return function
    return register


def _takes_scores_and_future(name: str, function, parameters: dict) -> None:
    """TypeError unless `function` can be called as attend calls a normaliser: ``(scores, future, **parameters)``
    (a function whose signature Python cannot read is let through)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(None, None, **dict.fromkeys(parameters))
    except TypeError:
        takes = f" and its parameters {sorted(parameters)} by name" if parameters else ""
        raise TypeError(f"register_normaliser: the normaliser {name!r} must take (scores, future){takes}, got a "
                        f"function of {signature}") from None


def _defined_at(function) -> str:
    """Where a normaliser is defined, ``module.qualified_name``: a function's own, a callable object's class's, a
    partial's written around its function's; the same again when the cell that registers it runs again."""
    if isinstance(function, functools.partial):
        return f"functools.partial({_defined_at(function.func)})"
    if not hasattr(function, "__qualname__"):  # a callable object
        function = type(function)
    return f"{getattr(function, '__module__', None)}.{function.__qualname__}"


def get_normaliser(name: str):
    """The normaliser registered under `name` (ValueError listing the known ones)."""
    if name not in NORMALISERS:
        raise ValueError(f"unknown attention normaliser {name!r}; known: {sorted(NORMALISERS)}")
    return NORMALISERS[name]


def normaliser_options(name: str) -> NormaliserOptions:
    """The parameters and gate the normaliser `name` declared (none, for a plain one)."""
    get_normaliser(name)  # an unknown name is an error here too
    return NORMALISER_OPTIONS.get(name, NormaliserOptions())


def _length(length) -> tuple:
    length = checks.integer("causal_mask", "length", length, minimum=0)
    checks.memory("causal_mask", "a mask", (length, length), itemsize=1)
    return (length,)


@checks.inputs_checked_by(_length)
def causal_mask(length: int) -> np.ndarray:
    """Exercise 3.1: the boolean (L, L) mask, True where key k lies in the future of query i (k > i)."""
    return np.triu(np.ones((length, length), dtype=bool), k=1)


def _scores_tensor(owner: str, scores) -> Tensor:
    """A normaliser's scores as a Tensor (an array of them becomes one, as the operations make it); what is no
    array of scores is refused, naming it."""
    if not isinstance(scores, (Tensor, np.ndarray, list, tuple)):
        raise TypeError(f"{owner}: scores must be a Tensor (or an array) of shape (..., L, L), got "
                        f"{type(scores).__name__}")
    return as_tensor(scores)


def mask_for(owner: str, scores: Tensor, future) -> np.ndarray:
    """The mask `future`, checked to fit the scores (..., L, L): boolean (L, L), as causal_mask(L) makes it."""
    future = np.asarray(future)
    try:
        fits = np.broadcast_shapes(future.shape, scores.shape) == scores.shape
    except ValueError:
        fits = False
    if not fits or future.ndim == 0:
        length = scores.shape[-1] if scores.ndim else "L"
        raise ValueError(f"{owner}: the mask `future` has shape {future.shape} and the scores {scores.shape}; the "
                         f"mask must be ({length}, {length}), as causal_mask({length}) makes it")
    if future.dtype != bool:  # (masked_fill and where would refuse it in their own names)
        raise TypeError(f"{owner}: the mask `future` must be boolean (True on the future keys), as causal_mask(L) "
                        f"makes it, got dtype {future.dtype}")
    return future


def normaliser_inputs(owner: str, scores, future, normaliser: str | None = None, finite: bool = True) -> tuple:
    """A normaliser's inputs, checked: the scores as a Tensor (an array of them becomes one, for every normaliser
    alike), with no +inf or NaN score if `finite` (`check_scores`: softpick and ReLU would turn +inf into NaN
    weights), and the mask `future`, fitted to them (`mask_for`); errors name `owner` (and `normaliser`)."""
    scores = _scores_tensor(owner, scores)
    if finite:
        check_scores(scores._data, normaliser, owner=owner)
    return scores, mask_for(owner, scores, future)


def _scores_as_tensor(scores, future) -> tuple:
    """`softmax_attention`'s inputs: scores as a Tensor (the softmax refuses +inf and NaN scores itself) and a mask
    that fits them."""
    return normaliser_inputs("softmax_attention", scores, future, finite=False)


@register_normaliser("softmax")
@checks.inputs_checked_by(_scores_as_tensor)
def softmax_attention(scores: Tensor, future: np.ndarray) -> Tensor:
    """Exercise 3.2: softmax over the visible keys (scores (..., L, L), `future` the causal mask): future
    keys get score -inf, hence weight 0."""
    return softmax(scores.masked_fill(future, -np.inf), axis=-1)


def _finite_scores(scores, future) -> tuple:
    """`relu_attention`'s inputs: scores with no +inf or NaN (ReLU would turn +inf into NaN at the masked
    entries, inf times the mask's 0), checked as `attend` checks them, as a Tensor."""
    return normaliser_inputs("relu_attention", scores, future, "relu")


@register_normaliser("relu")
@checks.inputs_checked_by(_finite_scores)
def relu_attention(scores: Tensor, future: np.ndarray) -> Tensor:
    """Exercise 3.3: ``max(s_ik, 0) / max(i, 1)`` on visible keys, 0 on future keys (scores (..., L, L))."""
    length = scores.shape[-1]
    row_divisor = np.maximum(np.arange(length), 1).reshape(length, 1)  # (L, 1): max(i, 1)
    visible = np.logical_not(future).astype(scores.dtype)  # (L, L): 1 on keys k <= i, 0 on future keys
    return ops.relu(scores) * visible / row_divisor


def attend(queries: Tensor, keys: Tensor, values: Tensor, normaliser: str = "softmax",
           **parameters: Tensor) -> tuple[Tensor, Tensor]:
    """Causal attention for any leading batch/head axes: ``O = normaliser(Q Kᵀ) V``.

    queries, keys, values: (..., L, d). Returns ``(output, weights)``: the output
    ``o_i = Σ_k a_ik v_k`` of shape (..., L, d) and the weights (..., L, L), detached
    (a record for plots and metrics). Keyword `parameters` go to the normaliser,
    e.g. ``sink_logit=S``. Every step is an ordinary minitorch operation, so the
    backward comes for free (`minitorch.fast.attention` fuses the three steps
    into one operation, for the opt-in fast path).
    """
    check_attention_shapes(queries, keys, values)
    check_normaliser_parameters(normaliser, parameters)
    scores = queries @ keys.transpose(-2, -1)  # (..., L, d) @ (..., d, L) -> (..., L, L): s_ik = q_i · k_k
    if normaliser != "softmax":  # (the softmax refuses such scores itself: exercise 2.4)
        check_scores(scores._data, normaliser)
    weights = get_normaliser(normaliser)(scores, causal_mask(scores.shape[-1]), **parameters)  # (..., L, L)
    check_normaliser_result(normaliser, weights, scores.shape)
    check_finite_inputs(normaliser, scores._data, values._data, queries._data, keys._data)
    return weights @ values, weights.detach()  # (..., L, L) @ (..., L, d) -> (..., L, d)


def check_normaliser_result(normaliser: str, weights, shape: tuple) -> None:
    """TypeError or ValueError unless a normaliser returned a Tensor of its scores' shape (..., L, L) with weight 0
    on every future key and no negative weight: a registered one that returns an ndarray, or drops an axis, would
    fail later in words that do not name it, and one that ignores the mask would train a model that reads ahead
    without a word."""
    if not isinstance(weights, Tensor):
        raise TypeError(f"attend: the normaliser {normaliser!r} must return the weights as a Tensor of its scores' "
                        f"shape {shape}, got {type(weights).__name__} (build them with minitorch operations, so that "
                        f"backward reaches the scores)")
    if weights.shape != shape:
        raise ValueError(f"attend: the normaliser {normaliser!r} must return weights of its scores' shape {shape} "
                         f"(..., L, L), got {weights.shape}")
    if normaliser not in ("softmax", "relu"):  # the book's two mask by construction (exercises 3.2, 3.3)
        check_no_weight_on_future_keys(normaliser, weights._data)
        usable = (weights._data >= 0) & (weights._data < np.inf)  # False at a negative weight, NaN and inf
        if not usable.all():  # the metrics refuse such weights only later, after the training
            first = tuple(int(index) for index in np.argwhere(~usable)[0])
            weight = weights._data[first]
            why = ("attention weights are >= 0, as every normaliser's are (a negative weight would subtract a value)"
                   if weight < 0 else "attention weights are finite numbers (NaN or inf makes every output it "
                   "reaches NaN)")
            raise ValueError(f"attend: the normaliser {normaliser!r} gave the weight {weight:.3g} (row {first[-2]}, "
                             f"key {first[-1]}); {why}")


def weight_on_a_future_key(weights: np.ndarray) -> tuple | None:
    """The index (..., row i, key k) of the first weight other than 0 on a future key k > i of `weights`
    (..., L, L), or None: a causal map has none. (np.triu, not `causal_mask`: the measures of chapters 03 and 09
    check their maps with this, and their exercises must not wait for exercise 3.1's answer.)"""
    leaks = np.triu(weights != 0, k=1)  # (..., L, L): True where a future key k > i got weight
    return tuple(int(index) for index in np.argwhere(leaks)[0]) if leaks.any() else None


def check_no_weight_on_future_keys(normaliser: str, weights: np.ndarray) -> None:
    """ValueError unless a registered normaliser gave every future key (k > i) weight exactly 0: one that ignores
    the mask `future` lets a query read later tokens, and its model would be no causal model."""
    first = weight_on_a_future_key(weights)
    if first is not None:
        row, key = first[-2:]
        raise ValueError(f"attend: the normaliser {normaliser!r} put weight {weights[first]:.3g} on a "
                         f"future key (row {row}, key {key}); a causal normaliser gives every key k > i weight 0 "
                         f"(the mask `future` it is given is True there)")


def check_normaliser_parameters(normaliser: str, parameters: dict, owner: str = "attend") -> None:
    """TypeError unless `parameters` are the ones the normaliser declared (`register_normaliser`), by name: the
    softmax and ReLU take none, ``sink_logit`` takes ``sink_logit``."""
    declared = normaliser_options(normaliser).parameters
    if parameters.keys() == declared.keys():
        return  # the usual case, at once
    declared = sorted(declared)
    takes = f"takes {', '.join(f'{name}=' for name in declared)}" if declared else "takes no parameters"
    for name, value in parameters.items():
        if name not in declared:
            raise TypeError(f"{owner}: {name}={value!r:.40} is not a parameter of the normaliser {normaliser!r}, "
                            f"which {takes}")
    missing = [name for name in declared if name not in parameters]
    if missing:
        raise TypeError(f"{owner}: the normaliser {normaliser!r} {takes}; {', '.join(missing)} is missing")


def check_scores(scores: np.ndarray, normaliser: str | None, owner: str = "attend") -> None:
    """ValueError if a score is +inf or NaN (inputs too large, or not finite): the softmax refuses such scores
    itself, and another normaliser would turn them into NaN weights (ReLU: inf times the mask's 0; softpick:
    inf / inf) without a word. One maximum, not a pass that checks each score."""
    largest = scores.max() if scores.size else 0.0
    if np.isnan(largest) or largest == np.inf:
        raise ValueError(f"{owner}{f' ({normaliser})' if normaliser else ''}: the scores Q Kᵀ contain +inf or NaN "
                         f"(the inputs hold inf or NaN, or are so large that their products overflow); a score must "
                         f"be a finite number")


def check_finite_inputs(normaliser: str, scores: np.ndarray, values: np.ndarray, queries: np.ndarray,
                        keys: np.ndarray) -> None:
    """ValueError naming the inputs that hold inf or NaN, once the normaliser has run (the softmax refuses +inf and
    NaN scores itself, `check_scores` does for the others), if a score Q Kᵀ is -inf or a value is not finite: every
    normaliser reads a -inf score as a masked key, weight 0, and an inf value makes NaN outputs even where its weight
    is 0 (0 · inf), without a word. One minimum and one pass over the values."""
    if (not scores.size or scores.min() > -np.inf) and np.isfinite(values).all():
        return  # the usual case
    held = [name for name, array in (("queries", queries), ("keys", keys), ("values", values))
            if not np.isfinite(array).all()]
    culprit = (f"the {', '.join(held[:-1])}{' and ' if held[:-1] else ''}{held[-1]} hold inf or NaN" if held else
               "the scores Q Kᵀ contain -inf: the queries and keys are so large that their products overflow")
    raise ValueError(f"attend ({normaliser}): {culprit}; attention needs finite numbers (the causal mask, not an "
                     f"input, hides a key from a query)")


def check_attention_shapes(queries: Tensor, keys: Tensor, values: Tensor) -> None:
    """ValueError unless queries and keys have one shape (..., L, d) and values (..., L, d_v); TypeError unless
    all three are Tensors (a NumPy array's ``transpose(-2, -1)`` is not ``Tensor.transpose``)."""
    for name, value in (("queries", queries), ("keys", keys), ("values", values)):
        if not isinstance(value, Tensor):
            raise TypeError(f"attend: {name} must be a Tensor of shape (..., L, d), got {type(value).__name__}; "
                            f"wrap an array with minitorch.tensor(...)")
        if value.ndim < 2:
            raise ValueError(f"attend: {name} must have shape (..., L, d) (2 axes or more), got {value.shape}")
    if not (queries.shape == keys.shape and keys.shape[:-1] == values.shape[:-1]):
        raise ValueError(
            f"attend: queries {queries.shape}, keys {keys.shape} and values {values.shape} "
            f"must agree on every axis but the values' last"
        )
    checks.memory("attend", "the attention scores (..., L, L)", (*queries.shape[:-1], queries.shape[-2]),
                  queries.dtype.itemsize)
