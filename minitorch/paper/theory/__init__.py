"""The theory of chapters 05, 06 and 09, in four modules, one job each; every name is also ``theory.<name>``.

Notation (chapters 03-05). Tokens ``x_k`` in R^n, 0-based positions, BOS at k = 0, trigger at j.
Coordinates: 0 BOS flag (e_0), 1 trigger flag (e_t), 2..n-2 content (d = n - 3 of them), n-1 bias
channel (e_b). A single head has weights ``a_ik``, value map ``W = W_O W_V`` and output
``ŷ_i = Σ_k a_ik W x_k``. Worst-case error: ``δ = sup max_i ||ŷ_i - y_i||_∞`` over every input whose
contents lie in [-1, 1]^d and whose trigger lies in the set J.

- `constructions`: hand-built weights in the library's own models (Theorem 3's ReLU head, the
  softmax family, the counterexamples and Theorem 2's residual models); exercises 5.1 and 6.1.
- `bounds`: Theorems 1 and 2 as formulas (ε_0, the least BOS mass for an error, its inverse), Lemma 5's
  bounds on the trigger row, and the error floor of one layer of sigmoid attention (chapter 10).
- `proof_steps`: each step of the two proofs as a function whose sides a test can compare on any
  model and input.
- `worst_case`: the numerical companions: stress inputs and a model's measured worst case (a lower bound on δ),
  and for a single ReLU head an upper bound.

The figure of chapter 05 that puts them together is `minitorch.paper.plotting.plot_error_vs_bos_mass`.
"""

from minitorch.paper.theory.constructions import (  # noqa: F401
    construction_worst_case, fixed_trigger_counterexample, load_head, query_key_direction, relu_construction,
    softmax_construction, trigger_row_sink_construction, two_layer_construction, unit_vectors, value_map,
)
from minitorch.paper.theory.bounds import (  # noqa: F401
    TRAINING_TRIGGERS, affine_fit_of_reciprocal, gap_bound, theorem1_bos_lower_bound, theorem1_error_lower_bound,
    theorem2_bos_lower_bound, trigger_row_bounds, trigger_separation, value_norm,
)
from minitorch.paper.theory.worst_case import (  # noqa: F401
    all_equal_inputs, predict_with_attention, relu_error_upper_bound, row_errors, softmax_family, stress_inputs,
    trigger_row_weights, worst_case,
)
from minitorch.paper.theory.proof_steps import (  # noqa: F401
    attention_average, determinant_lemma_sides, in_token_hull, non_bos_average, non_trigger_row_sides,
    random_token_hull_points, residual_streams, separating_corner, theorem2_stream_sides, theorem2_witness,
    trigger_row_decomposition, trigger_row_slack, value_words,
)
