"""The paper's models: attention only, no MLP, no LayerNorm, no biases (chapter 03).

- `AttentionLayer`: H heads, each of full width n. For head h,
  ``q_i = W_Q^h x_i``, ``k_i = W_K^h x_i``, ``v_i = W_V^h x_i``, weights
  ``a^h_ik`` from the chosen normaliser, head output ``Σ_k a^h_ik v_k``; the H
  head outputs are concatenated and mapped back to width n by ``W_O``.
  A normaliser may add parameters of its own (``sink_logit``, one per head)
  or an output gate ``o^h_i ← o^h_i ⊙ σ(W_G^h x_i)`` (`minitorch.paper.sink_free`).
- `SingleLayerModel`: one layer, no residual: ``ŷ = Attention(x)``.
- `ResidualModel`: ``x ← x + Attention_l(x)`` for each layer l; ``ŷ`` is the
  final residual stream.

Weights start as N(0, 0.02²). ``forward(x, return_attention=True)`` also
returns, for each layer, the attention weights as an array (B, H, L, L).
"""

from __future__ import annotations

import inspect
import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np

from minitorch import checks, ops
from minitorch.outputs import UnwritableFileError, check_input_file, checked_path, given_path, write_atomically
from minitorch.paper.attention import attend, normaliser_options
from minitorch.nn import Linear, Module, Parameter
from minitorch.tensor import Tensor, as_tensor

INIT_STD = 0.02
MAX_WEIGHTS = 100_000_000  # 0.8 GB in float64; the paper's largest model has 16,384 (4 layers x 4 heads, width 16)


def check_size(owner: str, width: int, heads: int, layers: int) -> None:
    """Refuse, before allocating, a model too large to hold: each layer has 4 H n^2 weights (W_Q, W_K, W_V, W_O)."""
    weights = 4 * heads * width**2 * layers
    if weights > MAX_WEIGHTS:
        raise ValueError(f"{owner}: width {width}, {heads} head(s) and {layers} layer(s) make {weights:,} weights "
                         f"({weights * 8 / 2**30:,.1f} GiB in float64); this NumPy engine builds models of up to "
                         f"{MAX_WEIGHTS:,} (the paper's largest has 16,384)")


class AttentionLayer(Module):
    """Multi-head causal self-attention with full-width heads (chapter 03).

    The three steps of multi-head attention: project every token with ``W_Q``, ``W_K``, ``W_V`` and
    split the results into H heads; attend in each head (`attention.attend`); merge the heads' outputs
    and map them back to width n with ``W_O``. The heads are the leading axis of the arrays in between,
    so that a normaliser's own parameters, one per head, are (H, 1, 1, 1) and broadcast over the rest.
    This is the layer that trains unless a caller asks for speed (`minitorch.fast.speed_up` swaps in a
    layer computing the same numbers in fewer, larger steps).
    """

    def __init__(self, width: int, heads: int, normaliser: str, rng: np.random.Generator, dtype=np.float64):
        options = normaliser_options(normaliser)  # an unknown name fails now, not at the first forward pass
        width = checks.integer("AttentionLayer", "width", width)
        heads = checks.integer("AttentionLayer", "heads", heads)
        check_size("AttentionLayer", width, heads, 1)
        self.width, self.heads, self.normaliser = width, heads, normaliser
        linear = dict(bias=False, init_std=INIT_STD, rng=rng, dtype=dtype)
        self.W_Q = Linear(width, heads * width, **linear)
        self.W_K = Linear(width, heads * width, **linear)
        self.W_V = Linear(width, heads * width, **linear)
        self.W_O = Linear(heads * width, width, **linear)
        # drawn after W_O, so that a one-layer model's W_Q..W_O are a softmax model's of the same seed
        self.normaliser_parameters, self.output_gate = tuple(options.parameters), options.output_gate
        for name, initial in options.parameters.items():
            if hasattr(self, name):
                raise ValueError(f"AttentionLayer: normaliser {normaliser!r} names a parameter {name!r}, "
                                 f"which would replace the layer's attribute of that name")
            setattr(self, name, _initial_parameter(normaliser, name, initial(heads), dtype))
        if self.output_gate:
            self.W_G = Linear(width, heads * width, **linear)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """x: (B, L, n). Returns (output (B, L, n), weights (B, H, L, L))."""
        x = self.checked_input(x)
        queries = self.split_heads(self.W_Q(x))  # (B, L, H*n) -> (H, B, L, n): q^h_i = W_Q^h x_i
        keys = self.split_heads(self.W_K(x))  # (H, B, L, n)
        values = self.split_heads(self.W_V(x))  # (H, B, L, n)
        heads_out, weights = attend(queries, keys, values, self.normaliser,
                                    **self.normaliser_arguments())  # (H, B, L, n), (H, B, L, L)
        if self.output_gate:  # o^h_i ← o^h_i ⊙ σ(W_G^h x_i)
            heads_out = heads_out * self.gate(x)
        update = self.W_O(self.merge_heads(heads_out))  # (H, B, L, n) -> (B, L, H*n) -> (B, L, n)
        return update, weights.permute(1, 0, 2, 3)  # weights (H, B, L, L) -> (B, H, L, L)

    def checked_input(self, x) -> Tensor:
        """`x` as a Tensor (an array becomes one) of shape (B, L, n) for this layer's width n, or a ValueError naming
        its shape: the heads are split from a (B, L, H*n) projection, which another shape would not give."""
        x = as_tensor(x, like=self.W_Q.weight)
        if x.ndim != 3 or x.shape[-1] != self.width:
            raise ValueError(f"{type(self).__name__}: x must have shape (B, L, {self.width}) (batch, positions, "
                             f"width), got {x.shape}")
        return x

    def split_heads(self, projected: Tensor) -> Tensor:
        """(B, L, H*n) -> (H, B, L, n): columns h*n..(h+1)*n, head h's, become slice h."""
        batch, length, _ = projected.shape
        per_head = projected.reshape(batch, length, self.heads, self.width)  # (B, L, H, n)
        return per_head.permute(2, 0, 1, 3)  # (B, L, H, n) -> (H, B, L, n)

    def merge_heads(self, heads_out: Tensor) -> Tensor:
        """(H, B, L, n) -> (B, L, H*n): the heads' outputs concatenated, head h in columns h*n..(h+1)*n."""
        _, batch, length, _ = heads_out.shape
        return heads_out.permute(1, 2, 0, 3).reshape(batch, length, self.heads * self.width)

    def normaliser_arguments(self) -> dict:
        """The normaliser's own parameters, by name (none for softmax and ReLU)."""
        return {name: getattr(self, name) for name in self.normaliser_parameters}

    def gate(self, x: Tensor) -> Tensor:
        """The output gate σ(W_G^h x_i) of every head: (B, L, n) -> (H, B, L, n)."""
        return ops.sigmoid(self.split_heads(self.W_G(self.checked_input(x))))


class AttentionModel(Module):
    """A stack of attention layers; subclasses say whether it is residual."""

    _RESIDUAL = False

    @property
    def residual(self) -> bool:
        """Whether each layer adds its update to the residual stream: fixed by the model's class, as its config, its
        name and its saved file say."""
        return self._RESIDUAL

    @residual.setter
    def residual(self, value) -> None:
        raise AttributeError(f"{type(self).__name__}.residual is fixed by the model's kind (its config and its saved "
                             f"file say residual={self._RESIDUAL}; forward and train would disagree with them); build "
                             f"the other kind: build_model(..., residual={not self._RESIDUAL})")

    def __init__(self, width: int = 16, heads: int = 1, layers: int = 1, normaliser: str = "softmax",
                 seed: int = 0, dtype=np.float64):
        owner = type(self).__name__
        width, heads = checks.integer(owner, "width", width), checks.integer(owner, "heads", heads)
        layers, seed = checks.integer(owner, "layers", layers), checks.integer(owner, "seed", seed, minimum=0)
        check_size(owner, width, heads, layers)
        if not isinstance(normaliser, str):
            raise TypeError(f"{owner}: normaliser must be a name such as 'softmax', got {normaliser!r}")
        rng = np.random.default_rng(seed)
        self.config = dict(width=width, heads=heads, layers=layers, normaliser=normaliser,
                           residual=self.residual, dtype=np.dtype(dtype).name)
        self.layers = [AttentionLayer(width, heads, normaliser, rng, dtype) for _ in range(layers)]

    def forward(self, x, return_attention: bool = False):
        """x: (B, L, n) -> prediction (B, L, n) [, list of per-layer weights (B, H, L, L)]."""
        if return_attention is not True and return_attention is not False:  # 'no' would count as true
            return_attention = checks.flag(type(self).__name__, "return_attention", return_attention)
        layers = check_layers(type(self).__name__, self)
        x = as_tensor(x, like=layers[0].W_Q.weight)
        if x.ndim != 3 or x.shape[-1] != self.config["width"] or x.shape[1] == 0:
            raise ValueError(f"{type(self).__name__}: expected input of shape (B, L, {self.config['width']}) with "
                             f"L >= 1 (a sequence holds at least its BOS token), got {x.shape}")
        heads = self.config["heads"]
        checks.memory(type(self).__name__, "the attention weights (B, H, L, L)",
                      (x.shape[0], heads, x.shape[1], x.shape[1]), x.dtype.itemsize)  # L = 60,000: 27 GiB
        attention = []
        for layer in layers:
            update, weights = layer(x)
            x = x + update if self.residual else update
            attention.append(weights.data)
        return (x, attention) if return_attention else x

    @property
    def name(self) -> str:
        config = self.config
        return f"{config['normaliser']}_{config['layers']}x{config['heads']}"


class SingleLayerModel(AttentionModel):
    """One attention layer and no residual: the setting of Theorems 1 and 3."""

    def __init__(self, width: int = 16, heads: int = 1, normaliser: str = "softmax", seed: int = 0, dtype=np.float64):
        super().__init__(width, heads, 1, normaliser, seed, dtype)


class ResidualModel(AttentionModel):
    """``x ← x + Attention_l(x)`` for each layer: the setting of Theorem 2."""

    _RESIDUAL = True


def attention_model(owner: str, model) -> AttentionModel:
    """`model`, once checked to be one of these attention models with the layers its config describes
    (`check_layers`), or an error naming `owner`."""
    if not isinstance(model, AttentionModel):
        raise TypeError(f"{owner}: model must be an attention model (build_model(...)), got {type(model).__name__}")
    check_layers(owner, model)
    return model


def _initial_parameter(normaliser: str, name: str, value, dtype) -> Parameter:
    """The Parameter `name` of a layer of `normaliser`, from its initialiser's `value` (e.g. sink_logit: zeros of
    shape (H, 1, 1, 1)), or an error naming both: the initialiser is the user's own function."""
    try:
        return Parameter(value, dtype=dtype)
    except (TypeError, ValueError):
        raise TypeError(f"AttentionLayer: the initial value of parameter {name!r} of normaliser {normaliser!r} must "
                        f"be an array of numbers, got {value!r:.60} ({type(value).__name__})") from None


def non_finite_weight(model: AttentionModel) -> str:
    """How the first parameter of `model` that holds NaN or inf does (``layers.0.W_Q.weight holds 64 NaN or inf
    value(s) of 64``), or "" when every weight is finite."""
    for name, parameter in model.named_parameters():
        bad = ~np.isfinite(parameter._data)
        if bad.any():
            return f"{name} holds {int(bad.sum())} NaN or inf value(s) of {bad.size}"
    return ""


def finite_weights(owner: str, model: AttentionModel, when: str = "") -> None:
    """ValueError naming `owner` and the first parameter that holds NaN or inf (`when`: "before any step"): what
    follows would be NaN and blame something else (training, the learning rate; the theory, a NaN error)."""
    bad = non_finite_weight(model)
    if bad:
        raise ValueError(f"{owner}: the model's {bad}{' ' + when if when else ''}; build the model afresh or load "
                         f"finite weights")


def check_layers(owner: str, model: AttentionModel) -> list:
    """``model.layers``, once checked to be the stack ``model.config`` describes: as many attention layers as it
    says (at least one), each of its width, heads, normaliser and dtype, of its kind (residual or not); or an error
    naming `owner`, the position and what is there. Forward passes, metrics and the theory walk this list and trust
    every layer to attend."""
    layers, config = model.layers, model.config
    if not isinstance(layers, (list, tuple)):
        raise TypeError(f"{owner}: model.layers must be a list of attention layers, got {type(layers).__name__}")
    if not layers:
        raise ValueError(f"{owner}: the model has no layers (model.layers is empty); its config says "
                         f"{config['layers']} attention layer(s)")
    for index, layer in enumerate(layers):
        if not isinstance(layer, AttentionLayer):
            raise TypeError(f"{owner}: model.layers[{index}] is a {type(layer).__name__}, not an attention layer "
                            f"(AttentionLayer); every layer of this model attends")
        built = dict(width=layer.width, heads=layer.heads, normaliser=layer.normaliser,
                     dtype=layer.W_Q.weight.dtype.name)
        described = {key: config[key] for key in built}
        if built != described:
            raise ValueError(f"{owner}: model.layers[{index}] is an attention layer with {built}; the model's "
                             f"config describes {described}")
        check_projections(owner, f"model.layers[{index}]", layer)
    if len(layers) != config["layers"]:
        raise ValueError(f"{owner}: model.layers holds {len(layers)} attention layers; the model's config says "
                         f"{config['layers']}")
    residual = config.get("residual")
    if not isinstance(residual, (bool, np.bool_)) or residual != model.residual:  # it would load as the other kind
        raise ValueError(f"{owner}: the model's config says residual={residual!r}, but it is a "
                         f"{type(model).__name__} (residual={model.residual}), fixed by its kind; build the other "
                         f"kind: build_model(..., residual={not model.residual})")
    return layers


def check_projections(owner: str, name: str, layer: AttentionLayer) -> None:
    """An error naming `owner`, the layer and the projection unless each of W_Q, W_K, W_V (and W_G, with an output
    gate) is a Linear from width n to H*n and W_O one from H*n back to n, none with a bias: a replaced one of
    another size failed in reshape, in words that named neither."""
    width, hidden = layer.width, layer.heads * layer.width
    projections = dict(W_Q=(width, hidden), W_K=(width, hidden), W_V=(width, hidden), W_O=(hidden, width))
    if layer.output_gate:
        projections["W_G"] = (width, hidden)
    for projection, (inputs, outputs) in projections.items():
        linear = getattr(layer, projection, None)
        if not isinstance(linear, Linear):
            raise TypeError(f"{owner}: {name}.{projection} must be a Linear({inputs}, {outputs}), got "
                            f"{type(linear).__name__}")
        if (linear.in_features, linear.out_features) != (inputs, outputs):
            raise ValueError(f"{owner}: {name}.{projection} must be a Linear({inputs}, {outputs}) (width n = "
                             f"{width}, {layer.heads} head(s)), got Linear({linear.in_features}, "
                             f"{linear.out_features})")
        if linear.weight.shape != (outputs, inputs):  # a Linear of the right size given a weight of another
            raise ValueError(f"{owner}: {name}.{projection}.weight must have shape ({outputs}, {inputs}), got "
                             f"{linear.weight.shape}")
        if linear.bias is not None:  # forward would add it; load_model would refuse the saved file's extra key
            raise ValueError(f"{owner}: {name}.{projection} must be a Linear({inputs}, {outputs}) without a bias (as "
                             f"the model builds it: bias=False), got one with a bias")


def build_model(width: int, heads: int, layers: int, normaliser: str, residual: bool, seed: int = 0,
                dtype=np.float64) -> AttentionModel:
    """The model a configuration describes (as stored in ``model.config``)."""
    if checks.flag("build_model", "residual", residual):
        return ResidualModel(width, heads, layers, normaliser, seed, dtype)
    if layers != 1:
        raise ValueError(f"build_model: a non-residual model has exactly 1 layer, got layers={layers}")
    return SingleLayerModel(width, heads, normaliser, seed, dtype)


def as_built(model: AttentionModel) -> AttentionModel:
    """The model as it is: the readable path."""
    return model


_training_path = as_built  # what every model of the commands' runs goes through before it trains


def training_path():
    """The function every model of `reproduce`, `beyond` and the softmax family goes through before it trains:
    `as_built` (the readable path), unless a command asked for speed (`minitorch.fast.use_for_training`)."""
    return _training_path


def use_training_path(path) -> None:
    """Make `path` (a function from a model to the model to train) the training path of this process; a
    process pool's workers are given the same (`reproduce.run_in_processes`)."""
    global _training_path
    if not callable(path):
        raise TypeError(f"use_training_path: path must be a function from a model to the model to train (as_built, "
                        f"or minitorch.fast.speed_up), got {path!r:.60} ({type(path).__name__})")
    _training_path = path


def for_training(model: AttentionModel) -> AttentionModel:
    """`model` on the training path."""
    return _training_path(model)


def save_model(model: AttentionModel, path) -> None:
    """Write the weights and the configuration to a NumPy ``.npz`` file (no pickle).

    Atomic: the file is written beside `path` under a temporary name, then
    moved over it, so a failed save never leaves a half-written model behind.
    """
    if not isinstance(model, AttentionModel):
        raise TypeError(f"save_model: expected a model (build_model, load_model), got {type(model).__name__}")
    path = given_path(path, "save_model: path", file=True)
    checked_path(path, "save_model: path", error=UnwritableFileError, file=True)  # e.g. a file where a folder is
    folder = Path(os.path.realpath(path)).parent  # a link's file goes where the link points
    if not folder.is_dir():
        through = f" (the symbolic link {path} points there)" if path.is_symlink() else ""
        raise FileNotFoundError(f"save_model: the folder {folder} does not exist{through}; create it first "
                                f"(Path({str(folder)!r}).mkdir(parents=True))")
    if path.is_dir():
        raise IsADirectoryError(f"save_model: {path} is a folder; name the file, e.g. {path / 'model.npz'}")
    config = json.dumps(model.config, default=_plain_number)  # NumPy integers in a config are plain numbers
    check_layers("save_model", model)  # a stack its config does not describe would save a file load_model refuses
    archive = io.BytesIO()
    np.savez(archive, __config__=np.array(config), **model.state_dict())
    write_atomically(path, archive.getvalue(), option="save_model: path")


def _plain_number(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"save_model: the model's config holds {value!r} ({type(value).__name__}), not JSON")


class ModelFileError(ValueError):
    """A file that `load_model` cannot read as a model saved by `save_model`."""


def load_model(path) -> AttentionModel:
    """Rebuild a model saved by `save_model`.

    A file that is not such a model raises ModelFileError naming the file and
    what is wrong with it (a missing file raises FileNotFoundError).
    """
    path = given_path(path, "load_model: path", file=True)

    def not_a_model(reason: str) -> ModelFileError:
        return ModelFileError(f"not a minitorch model file: {path}: {reason} (save_model writes these files)")

    check_input_file(path, "load_model", error=ModelFileError)  # a FIFO would block open() forever
    archive = None
    try:
        with open(path, "rb") as file:  # closed here even when NumPy fails midway (a truncated archive)
            archive = np.load(file, allow_pickle=False)
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise not_a_model("it holds a single NumPy array, not an .npz archive of weights and a config")
            if "__config__" not in archive.files:
                raise not_a_model(f"an .npz archive without a model config; it holds {sorted(archive.files)[:5]}")
            config_text = str(archive["__config__"])
            if len(set(archive.files)) != len(archive.files):  # a zip may hold one name twice: np.load keeps one
                twice = sorted({name for name in archive.files if archive.files.count(name) > 1})
                raise not_a_model(f"it holds {', '.join(twice)} twice")
            state = {name: archive[name] for name in archive.files if name != "__config__"}
    except (ModelFileError, FileNotFoundError, IsADirectoryError):
        raise
    except (EOFError, zipfile.BadZipFile, KeyError, OSError) as error:  # (never suggest allow_pickle: unsafe)
        raise not_a_model("the file is empty" if path.stat().st_size == 0 else
                          f"a truncated or damaged archive ({type(error).__name__}: {error})") from None
    except MemoryError:  # an array header claiming more than the file could hold (M27)
        raise not_a_model("an array in it claims more memory than this machine has (a damaged header?)") from None
    except ValueError as error:
        if str(error).startswith("Object arrays"):  # NumPy will not unpickle them (that could run code)
            raise not_a_model("it stores Python objects, not arrays of numbers") from None
        if isinstance(archive, np.lib.npyio.NpzFile):  # the archive opened; one of its arrays did not read
            raise not_a_model(f"an .npz archive with a truncated or damaged array ({error})") from None
        raise not_a_model("neither an .npz archive nor a .npy array") from None
    try:
        config = json.loads(config_text)
    except json.JSONDecodeError as error:
        raise not_a_model(f"its config is not JSON ({error})") from None
    except RecursionError:  # json's reader recurses once per level of nesting
        raise not_a_model("its config is JSON nested too deep to read, not a model's config") from None
    known = set(inspect.signature(build_model).parameters)
    required = {"width", "heads", "layers", "normaliser"}
    if not isinstance(config, dict) or set(config) - known or not required <= set(config):
        keys = sorted(config) if isinstance(config, dict) else type(config).__name__
        raise not_a_model(f"its config has keys {keys}; a model's are {sorted(known)}")
    try:
        model = build_model(**config)
        model.load_state_dict(state)
    except (TypeError, ValueError, KeyError) as error:
        raise not_a_model(f"its config or weights do not describe a model: {error}") from None
    if non_finite_weight(model):  # the first forward pass would blame the scores or the values
        raise not_a_model(non_finite_weight(model))
    return model
