"""minitorch: a small NumPy autograd engine and the attention-sink experiments.

The book's chapters introduce each module in turn; the most used names are
re-exported here:

    >>> import minitorch
    >>> x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    array([2., 4.])
"""

import sys

if sys.argv[:1] == ["-m"]:  # python -m minitorch...: a command is starting (sys.argv[0] is '-m' until it runs)
    import signal

    _hold = getattr(signal, "pthread_sigmask", lambda how, signals: None)  # (POSIX only)
    _stops = [getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name)]
    _hold(signal.SIG_BLOCK, _stops)  # a stop while the handler below loads waits for it, not a traceback
    try:
        from minitorch.outputs.signals import stop_quietly_while_starting
        stop_quietly_while_starting()  # Ctrl-C while the library loads: one line, as later, not a traceback
    finally:
        _hold(signal.SIG_UNBLOCK, _stops)

from minitorch.tensor import Tensor, tensor, no_grad, is_grad_enabled, topological_order, unbroadcast
from minitorch.ops import (
    add, sub, mul, div, neg, pow, exp, log, relu, sigmoid, matmul, sum, mean, max,
    reshape, permute, transpose, getitem, where, masked_fill, concatenate, stack,
)
from minitorch.softmax import softmax
from minitorch.gradcheck import gradcheck, GradcheckError
from minitorch.seeding import manual_seed, default_generator
from minitorch import nn, optim

__all__ = [
    "Tensor", "tensor", "no_grad", "is_grad_enabled", "topological_order", "unbroadcast",
    "add", "sub", "mul", "div", "neg", "pow", "exp", "log", "relu", "sigmoid", "matmul", "sum", "mean", "max",
    "reshape", "permute", "transpose", "getitem", "where", "masked_fill", "concatenate", "stack",
    "softmax", "gradcheck", "GradcheckError", "manual_seed", "default_generator", "nn", "optim",
]
