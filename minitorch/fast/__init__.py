"""The fast path: every trick that makes training faster, in one place, switched on by `speed_up`.

The book's code (the engine, `minitorch.paper`) is written to be read, and it is what runs unless
a caller asks for speed: ``python -m minitorch reproduce`` and ``python -m minitorch bench`` ask,
with ``model = fast.speed_up(model)``. What that changes, and where each trick lives:

- `layer`: each `AttentionLayer` is replaced by a `FusedAttentionLayer` holding the same parameters,
  five graph nodes per layer instead of about twenty: the three projections of every head as one
  batched product (`project_blocks`), ``W_O`` applied head by head (`apply_output_blocks`), each with
  its backward written beside it;
- `attention`: scores, normaliser and weighted sum as one graph node with a hand-written backward;
  the book's softmax and ReLU run there as hand-fused array code (`hand_fused`, the instructor's one copy
  of those answers, which a student edition leaves out: there the student's own functions run);
- `hand_fused`: that array code, and the benchmark's floor, `NumpyStep`;
- `arrays`: the softmax's max and sum over the 16 keys, faster than NumPy's reductions;
- `memory`: glibc asked to keep freed memory for reuse (process-wide; a no-op without glibc).

The same computation in another order: the tests (tests/fast/) keep the values and gradients of
both paths equal to float precision, and a short training run on both ends at the same weights.
Floating-point rounding differs in the last bits, so a long float32 run on the fast path need not
stop at exactly the step the readable path stops at. ``python -m minitorch bench`` times both.
"""

from __future__ import annotations

from minitorch.fast.layer import FusedAttentionLayer
from minitorch.fast.memory import keep_freed_memory
from minitorch.paper import models
from minitorch.paper.models import AttentionModel


def use_for_training() -> None:
    """Train every model of this process's runs on the fast path (`reproduce`, `beyond` and the softmax family
    go through `minitorch.paper.models.for_training`); the commands call this once."""
    models.use_training_path(speed_up)


def speed_up(model: AttentionModel) -> AttentionModel:
    """Put `model` on the fast path, in place, and return it: its layers become `FusedAttentionLayer`s
    holding the very same parameters (an optimizer built before or after sees no difference), and
    this process keeps freed memory for reuse."""
    if not isinstance(model, AttentionModel):
        raise TypeError(f"speed_up: expected a model from minitorch.paper.build_model, got {type(model).__name__}")
    keep_freed_memory()
    model.layers = [FusedAttentionLayer.taking_over(layer) for layer in model.layers]
    return model
