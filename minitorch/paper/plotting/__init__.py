"""Figures: four modules of figures, one subject each, and `canvas`; every name is also ``plotting.<name>``.

Conventions follow the paper's figures: keys on the x axis, queries on the
y axis, positions labelled 1-based (BOS is position 1, the test trigger is
position 8), colour scale fixed to [0, 1] (ReLU weights above 1 are drawn in red, beyond it).
Every function returns a matplotlib Figure; `save` writes it to disk.

- `error_vs_bos_mass`: Theorem 1 against trained models (chapter 05).
- `attention_maps`: attention heat maps, the paper's Fig. 3 and head grids (chapters 03, 06-09).
- `training_figures`: the sink forming through training, head by head, and as an animation (chapters 07-09).
- `beyond_figures`: the experiments beyond the paper (chapter 10).
- `canvas`: matplotlib with its backend checked (`plt`), and `save`.
"""

from minitorch.paper.plotting.canvas import plt, save  # noqa: F401
from minitorch.paper.plotting.error_vs_bos_mass import plot_error_vs_bos_mass  # noqa: F401
from minitorch.paper.plotting.attention_maps import (  # noqa: F401
    COLOUR_MAP, attention_heatmap, head_grid_figure, single_layer_figure,
)
from minitorch.paper.plotting.training_figures import (  # noqa: F401
    attention_animation, head_bos_mass_figure, head_split_settled, sink_forming_figure,
)
from minitorch.paper.plotting.beyond_figures import (  # noqa: F401
    log_law_figure, price_of_a_sink_figure, seeds_figure, zoo_maps_figure, zoo_mass_figure,
)
