"""The sink-forming scrubber (chapter 07): a slider that moves through training, showing the mean attention
map of each run at that step, side by side, and each run's BOS mass at the non-trigger rows against the step.

`sink_scrubber_html` returns one piece of HTML: the numbers (written in when the chapter runs, as JSON) and a
plain script that draws them on canvases. It needs no kernel and no network: in the HTML book it works
offline, in Jupyter it works in a trusted notebook (GitHub, which runs no script, shows only its caption).

On paper a slider cannot move: printed, the scrubber shows instead a strip of snapshots (each run's map at
STRIP_SNAPSHOTS steps from the first to the last, their steps marked on the BOS-mass chart) and a text that
says so. The script finds its scrubber by a data attribute, not by its id, so that a page which renames ids
(the book's print.html prefixes each chapter's) keeps it working.
"""

from __future__ import annotations

import html
import json
from itertools import count

import numpy as np

from minitorch import checks
from minitorch.paper import metrics
from minitorch.paper.task import TEST_TRIGGER

STRIP_SNAPSHOTS = 6  # the printed strip: each run's map at this many steps, first and last included
# The printed page swaps the slider for the strip (the rules go with the scrubber, so printing works anywhere).
PRINT_STYLE = (".sink-scrubber .scrubber-paper{display:none}"
               "@media print{.sink-scrubber .scrubber-screen{display:none!important}"
               ".sink-scrubber .scrubber-paper{display:block!important}"
               ".sink-scrubber span.scrubber-paper{display:inline!important}"
               ".sink-scrubber .scrubber-strip{display:grid!important}"
               ".sink-scrubber{break-inside:avoid}}")
_instances = count()


def bos_mass_at_non_trigger_rows(weights: np.ndarray, trigger: int = TEST_TRIGGER) -> float:
    """The mean of a_i0 over the rows i >= 1, i != trigger, of one mean attention map (L, L): the mean of what
    `metrics.bos_mass_at_non_trigger_rows` (exercise 3.4) gives for the map as one sequence of one head."""
    weights = np.asarray(weights)
    non_trigger_rows("bos_mass_at_non_trigger_rows", weights, trigger)  # a map with such a row, or an error
    return float(metrics.bos_mass_at_non_trigger_rows(weights[None, None], np.array([trigger])).mean())


def non_trigger_rows(owner: str, weights: np.ndarray, trigger: int) -> list[int]:
    """The rows i >= 1, i != trigger, of a map (L, L), or an error naming `owner`: there must be one at least.

    With L <= 2 there is none: row 0 is BOS's own (its only key is itself, so a_00 = 1 whatever the head does)
    and row 1 the trigger's. The mean over no row is no number a chart could show: refused, not drawn as nan."""
    shape = np.shape(weights)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{owner}: weights must be one attention map (L, L), got shape {shape}")
    trigger = checks.integer(owner, "trigger", trigger)
    if shape[0] < 3 or trigger >= shape[0]:
        raise ValueError(f"{owner}: needs a map with a row besides BOS and the trigger, and a trigger in 1..L-1: "
                         f"L >= 3 and trigger < L, got L = {shape[0]} and trigger {trigger}")
    return [row for row in range(1, shape[0]) if row != trigger]


def scrubber_data(runs: dict, trigger: int = TEST_TRIGGER, owner: str = "scrubber_data") -> dict:
    """The numbers the scrubber draws: for each run (name -> [(step, weights (layers, H, L, L)), ...] as
    `train(..., snapshot_every=...)` keeps them) its steps, its first head's maps (rounded to 3 decimals,
    rows of L*L numbers) and their BOS mass at the non-trigger rows. Errors name `owner`, the function called."""
    if not isinstance(runs, dict):
        raise TypeError(f"{owner}: runs must be a non-empty dict {{name: result.snapshots, ...}}, got "
                        f"{runs!r:.60} ({type(runs).__name__})")
    if not runs:
        raise ValueError(f"{owner}: no runs given; pass {{name: result.snapshots, ...}}")
    trigger = checks.integer(owner, "trigger", trigger)  # (a plain int: the page's JSON holds it)
    data = {"trigger": trigger, "runs": []}
    for name, snapshots in runs.items():
        checks.snapshots(owner, f"run {name!r}", snapshots)
        if not snapshots:
            raise ValueError(f"{owner}: run {name!r} has no snapshots; train with snapshot_every=...")
        steps = [checks.integer(owner, f"the step of run {name!r}", step, minimum=0)
                 for step, _ in snapshots]
        if steps != sorted(steps):
            raise ValueError(f"{owner}: the snapshots of run {name!r} are not in training order")
        maps = [_first_head_map(owner, name, step, weights) for step, (_, weights) in zip(steps, snapshots)]
        non_trigger_rows(owner, maps[0], trigger)  # before any map is rounded
        lengths = sorted({map_.shape[-1] for map_ in maps})
        if len(lengths) > 1:  # the page draws every map of a run at one length
            raise ValueError(f"{owner}: the maps of run {name!r} have different lengths L ({lengths}); "
                             f"the scrubber shows one run at one L: give each length its own run")
        _check_finite(owner, name, steps, maps)
        data["runs"].append({"name": name, "steps": steps, "length": int(maps[0].shape[-1]),
                             "maps": [np.round(map_, 3).ravel().tolist() for map_ in maps],
                             "bos": [round(bos_mass_at_non_trigger_rows(map_, trigger), 4) for map_ in maps]})
    return data


def _first_head_map(owner: str, name, step: int, weights) -> np.ndarray:
    """The map (L, L) of layer 1, head 1 in a snapshot's weights (layers, H, L, L), or a ValueError naming the run,
    the step and the shape given: indexed first, a map (L, L) would lose its rows and report a shape never given."""
    weights = np.asarray(weights)
    if weights.ndim != 4 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"{owner}: the weights of run {name!r} at step {step} must be a snapshot's maps "
                         f"(layers, H, L, L), as train(..., snapshot_every=...) keeps them; got shape {weights.shape}")
    return weights[0, 0]  # (L, L): layer 1, head 1


def _check_finite(owner: str, name, steps: list[int], maps: list[np.ndarray]) -> None:
    """A ValueError naming the run and the first step whose map holds nan or inf: JSON has no such number, so
    the page's JSON.parse would fail and the scrubber draw nothing, without a word."""
    for step, map_ in zip(steps, maps):
        if not np.isfinite(map_).all():
            raise ValueError(f"{owner}: the attention map of run {name!r} at step {step} holds nan or "
                             f"inf (did the run diverge?); the scrubber draws only finite weights")


def sink_scrubber_html(runs: dict, trigger: int = TEST_TRIGGER) -> str:
    """The scrubber as HTML for ``display(HTML(...))``: runs is {name: snapshots, ...}, shown left to right.

    Run names are text, not HTML: escaped in the attribute, and every '<' of the data written as \\u003c, so
    that a name holding '</script>' cannot end the data's script element."""
    numbers = scrubber_data(runs, trigger, "sink_scrubber_html")
    data = json.dumps(numbers, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    name = f"sink-scrubber-{next(_instances)}"
    panels = "".join(
        f'<figure style="margin:0;flex:1 1 12rem;max-width:16rem">'
        f'<canvas width="256" height="256" style="width:100%;image-rendering:pixelated;border:1px solid #ccc" '
        f'role="img" aria-label="mean attention map of {html.escape(str(run))}"></canvas>'
        f'<figcaption style="font-size:0.85rem;text-align:center" aria-live="polite"></figcaption></figure>'
        for run in runs)
    return f"""<div class="sink-scrubber" data-scrubber="{name}" style="font-family:inherit;max-width:46rem">
<style>{PRINT_STYLE}</style>
<div class="scrubber-screen" style="display:flex;align-items:center;gap:0.6rem;flex-wrap:wrap">
<button type="button" class="scrubber-play" style="font:inherit;padding:0.1rem 0.6rem">&#9654; play</button>
<label style="flex:1 1 14rem;display:flex;align-items:center;gap:0.5rem">training step
<input type="range" class="scrubber-step" min="0" max="0" value="0" style="flex:1"></label>
<output class="scrubber-label" style="min-width:6rem;font-variant-numeric:tabular-nums">step 0</output>
</div>
<div class="scrubber-screen" style="display:flex;gap:1rem;flex-wrap:wrap;margin:0.6rem 0">{panels}</div>
<div class="scrubber-paper scrubber-strip" role="img" aria-label="the mean attention map of each run at
 {STRIP_SNAPSHOTS} steps of training, one row per run"></div>
<canvas class="scrubber-chart" width="720" height="220" style="width:100%;border:1px solid #eee" role="img"
 aria-label="BOS mass at the non-trigger rows against the training step, one line per run"></canvas>
<p style="font-size:0.85rem;color:#555;margin:0.3rem 0">Mean attention over the probe set (keys across, queries
down, BOS in the first column, trigger at position {trigger + 1}; colour scale 0 to 1) and, below, the BOS mass at
the non-trigger rows. <span class="scrubber-screen">Drag the slider, or focus it and use the arrow keys.</span>
<span class="scrubber-paper" style="display:none">Printed, the slider gives way to {STRIP_SNAPSHOTS} snapshots of
each run, from the first step to the last; their steps are marked on the chart.</span></p>
<script type="application/json" class="scrubber-data">{data}</script>
</div>
<script>{SCRIPT.replace("SCRUBBER_NAME", name).replace("STRIP_SNAPSHOTS", str(STRIP_SNAPSHOTS))}</script>
"""


# Plain JavaScript: draws the maps and the chart for the slider's step. Viridis, as matplotlib's default map,
# from five of its colours, interpolated.
SCRIPT = r"""
document.querySelectorAll('.sink-scrubber[data-scrubber="SCRUBBER_NAME"]').forEach(function (root) {
  if (root.dataset.ready) return;
  root.dataset.ready = "1";
  var data = JSON.parse(root.querySelector(".scrubber-data").textContent);
  var runs = data.runs;
  var colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"];
  var viridis = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  var steps = [];  /* every step at which some run has a snapshot, in order */
  runs.forEach(function (run) { run.steps.forEach(function (s) { if (steps.indexOf(s) < 0) steps.push(s); }); });
  steps.sort(function (a, b) { return a - b; });
  var slider = root.querySelector(".scrubber-step"), label = root.querySelector(".scrubber-label");
  var canvases = root.querySelectorAll("figure canvas"), captions = root.querySelectorAll("figure figcaption");
  var chart = root.querySelector(".scrubber-chart"), play = root.querySelector(".scrubber-play");
  slider.max = steps.length - 1;

  function colour(value) {
    var x = Math.max(0, Math.min(1, value)) * (viridis.length - 1), i = Math.min(Math.floor(x), viridis.length - 2);
    var t = x - i, a = viridis[i], b = viridis[i + 1];
    return "rgb(" + [0, 1, 2].map(function (c) { return Math.round(a[c] + t * (b[c] - a[c])); }).join(",") + ")";
  }
  function snapshotAt(run, step) {  /* the last snapshot taken at or before `step` */
    var index = 0;
    for (var i = 0; i < run.steps.length; i++) if (run.steps[i] <= step) index = i;
    return index;
  }
  function drawMap(canvas, values, length) {
    var context = canvas.getContext("2d"), cell = canvas.width / length;
    context.clearRect(0, 0, canvas.width, canvas.height);
    for (var i = 0; i < length; i++) for (var k = 0; k < length; k++) {
      context.fillStyle = k > i ? "#ffffff" : colour(values[i * length + k]);  /* future keys: masked, white */
      context.fillRect(k * cell, i * cell, Math.ceil(cell), Math.ceil(cell));
    }
  }
  function drawChart(marked) {  /* marked: the steps to mark with a dashed line */
    var context = chart.getContext("2d"), w = chart.width, h = chart.height, left = 44, bottom = 28, top = 10;
    var last = steps[steps.length - 1] || 1;
    function x(s) { return left + (w - left - 10) * s / last; }
    function y(v) { return top + (h - top - bottom) * (1 - v); }
    context.clearRect(0, 0, w, h);
    context.font = "12px sans-serif";
    context.fillStyle = "#333";
    context.strokeStyle = "#bbb";
    [0, 0.5, 1].forEach(function (v) {
      context.beginPath(); context.moveTo(left, y(v)); context.lineTo(w - 10, y(v)); context.stroke();
      context.fillText(v.toFixed(1), 8, y(v) + 4);
    });
    context.fillText("training step", w / 2 - 36, h - 6);
    context.fillText("0", left - 3, h - 12);
    context.fillText(String(last), w - 10 - 8 * String(last).length, h - 12);
    runs.forEach(function (run, r) {
      context.strokeStyle = colours[r % colours.length];
      context.lineWidth = 2;
      context.beginPath();
      run.steps.forEach(function (s, i) { (i ? context.lineTo : context.moveTo).call(context, x(s), y(run.bos[i])); });
      context.stroke();
      context.fillStyle = colours[r % colours.length];
      context.fillText(run.name + ": BOS mass", left + 10 + 130 * r, top + 14);
    });
    context.strokeStyle = "#d62728";
    context.lineWidth = 1;
    context.setLineDash([4, 3]);
    marked.forEach(function (step) {
      context.beginPath(); context.moveTo(x(step), top); context.lineTo(x(step), h - bottom); context.stroke();
    });
    context.setLineDash([]);
  }
  function show() {
    var step = steps[Number(slider.value)];
    label.textContent = "step " + step;
    runs.forEach(function (run, r) {
      var i = snapshotAt(run, step), stopped = step > run.steps[run.steps.length - 1];
      drawMap(canvases[r], run.maps[i], run.length);
      captions[r].textContent = run.name + ", step " + run.steps[i] + (stopped ? " (stopped)" : "") +
        ": BOS mass " + run.bos[i].toFixed(3);
    });
    drawChart([step]);
  }
  /* The printed strip: one row per run, the map at STRIP_SNAPSHOTS steps from the first to the last. */
  var strip = root.querySelector(".scrubber-strip"), count = Math.min(STRIP_SNAPSHOTS, steps.length), picked = [];
  for (var p = 0; p < count; p++) {
    var pick = steps[Math.round(p * (steps.length - 1) / Math.max(count - 1, 1))];
    if (picked.indexOf(pick) < 0) picked.push(pick);
  }
  strip.style.cssText = "grid-template-columns:auto repeat(" + picked.length + ",minmax(0,1fr));gap:0.3rem 0.4rem;" +
    "align-items:start;margin:0.6rem 0;font-size:0.7rem;line-height:1.3;text-align:center";
  runs.forEach(function (run) {
    var name = document.createElement("div");
    name.textContent = run.name;
    name.style.cssText = "writing-mode:vertical-rl;transform:rotate(180deg);font-weight:600;align-self:center";
    strip.appendChild(name);
    picked.forEach(function (step) {
      var i = snapshotAt(run, step), cell = document.createElement("div"), canvas = document.createElement("canvas");
      canvas.width = canvas.height = 256;
      canvas.style.cssText = "width:100%;image-rendering:pixelated;border:1px solid #ccc";
      drawMap(canvas, run.maps[i], run.length);
      var text = document.createElement("div");
      text.textContent = "step " + run.steps[i] + ": BOS " + run.bos[i].toFixed(2);
      cell.appendChild(canvas);
      cell.appendChild(text);
      strip.appendChild(cell);
    });
  });
  strip.dataset.steps = picked.join(" ");
  window.addEventListener("beforeprint", function () { drawChart(picked); });  /* the strip's steps, on paper */
  window.addEventListener("afterprint", show);
  var timer = null;
  play.addEventListener("click", function () {
    if (timer) { clearInterval(timer); timer = null; play.innerHTML = "&#9654; play"; return; }
    if (Number(slider.value) >= steps.length - 1) slider.value = 0;
    play.innerHTML = "&#10074;&#10074; pause";
    timer = setInterval(function () {
      if (Number(slider.value) >= steps.length - 1) { play.click(); return; }
      slider.value = Number(slider.value) + 1;
      show();
    }, 120);
  });
  slider.addEventListener("input", show);
  show();
});
"""
