"""The paper's science: the trigger-conditional task, attention models, training, metrics, theory, plots.

Built on the engine (`minitorch.tensor`, `ops`, `softmax`, `nn`, `optim`); chapters 03-10 use it:

- `task`: the trigger-conditional task (chapter 04).
- `attention`: causal attention, the softmax and ReLU normalisers, the normaliser registry (chapter 03);
  `sink_free`: five normalisers without a sink (chapter 10).
- `models`: the paper's attention-only models (chapter 03); `train`: the training loop (chapter 07).
- `metrics`, `theory`, `plotting`: what we measure, what we prove, what we draw (chapters 03, 05-09).
- `reproduce`, `beyond`: the paper's six runs and chapter 10's experiments (`python -m minitorch reproduce`).
"""

import os

from minitorch import checks


def quick_mode() -> bool:
    """Whether the chapters shrink their training: the environment variable MINITORCH_QUICK (the test suite and
    ``python -m minitorch book --quick`` set it to 1). 1/true/yes/on mean quick, 0/false/no/off or unset mean
    the reader's full settings; any other value is an error, never a silent "not quick"."""
    return checks.parse_flag(os.environ.get("MINITORCH_QUICK"), "the environment variable MINITORCH_QUICK")


# attention.py registers the paper's two normalisers (softmax, relu) and sink_free.py five more; importing
# sink_free here, once, makes all seven known by name wherever the paper's code is used.
from minitorch.paper import sink_free  # noqa: E402, F401
