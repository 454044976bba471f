"""Run the author's released PyTorch scripts and log how many steps each model took.

    python -m minitorch.tools.authors_scripts CHECKOUT [--log FILE] [--only 1x1,2x2]

The book's step counts come from its own runs (``figures/results.md``). The paper gives none; the only outside
counts the book quotes are those of one run of the author's released code
(github.com/YuvMilo/sinks-are-provably-necessary), and this command is how that run was made: it runs the
checkout's three scripts as its README says (``figure_code/fig_single_layer.py``, then ``fig_multilayer.py`` with
2 layers x 2 heads and with 4 x 4), with their defaults (seed 0, 50,000 steps at most) on the CPU with one thread,
and reads each model's step count from the scripts' own progress bars: a bar shows the steps it finished, and the
last one, the step that met the stop, is still running when the loop breaks, so steps = last count + 1. The
scripts' figures go to a temporary folder that is deleted; nothing is written into the checkout or into this
repository unless ``--log`` names a file, which is rewritten after each script, so a run stopped part way keeps
the scripts it finished; a file already there is replaced only if it is such a log (``--force`` replaces any), as
checked before the scripts run. ``--only`` runs some of the three (1x1, 2x2, 4x4). None of the author's code is
part of this repository: CHECKOUT is a clone you made yourself
(``git clone https://github.com/YuvMilo/sinks-are-provably-necessary``).

Where PyTorch (and tqdm, which the scripts import) is missing, the command says so and skips, with exit status 0:
the comparison is optional. CHECKOUT is checked first, as --log is: a path that is no clone of the author's code
is refused (exit status 2) before the packages are looked for, so no one installs PyTorch to learn of it.
``figures/authors_scripts.md`` is the log of one such run.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import importlib.util
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from minitorch.outputs import OutputPathError, OwnFile, check_output_file, write_atomically
from minitorch.tools.options import CommandParser, refuse_options

# (model shape, the script and its arguments), in the order of the author's README
SCRIPTS = (
    ("1x1", ("figure_code/fig_single_layer.py",)),
    ("2x2", ("figure_code/fig_multilayer.py", "--num_layers", "2", "--num_heads", "2")),
    ("4x4", ("figure_code/fig_multilayer.py", "--num_layers", "4", "--num_heads", "4")),
)
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
# one redraw of the scripts' tqdm bar, e.g. "Training (softmax):   2%|▏   | 960/50000 [00:01<01:10, ...]"
PROGRESS = re.compile(r"Training \((?P<label>[^)]*)\):[^|\r\n]*\|[^|\r\n]*\|\s*(?P<count>\d+)/(?P<total>\d+)")
COMMAND = "python -m minitorch.tools.authors_scripts"
CLONE = "https://github.com/YuvMilo/sinks-are-provably-necessary"
LOG_START = f"# A run of the author's released scripts\n\nMade by `{COMMAND} "  # how every log_markdown begins


def _is_a_log(path: Path) -> bool:
    """Whether the file at `path` begins as every log does: the mark that lets --log replace it unasked."""
    with open(path, encoding="utf-8") as file:
        return file.read(len(LOG_START)) == LOG_START


OWN_LOG = OwnFile("a log this command wrote (it begins \"# A run of the author's released scripts\")", _is_a_log)


def missing_requirements() -> list[str]:
    """The packages the author's scripts import that are not installed here."""
    return [name for name in ("torch", "tqdm", "numpy", "matplotlib") if importlib.util.find_spec(name) is None]


def steps_from_progress(output: str) -> dict[str, int]:
    """Each training's step count from the progress bars in a script's output: {label: last count + 1}.

    The bar counts finished steps; the loop breaks inside the step that met the stop, so that step is not
    counted by the bar (a run that used every step of its budget shows the total, and took that many)."""
    last: dict[str, tuple[int, int]] = {}
    for match in PROGRESS.finditer(output):
        last[match["label"]] = (int(match["count"]), int(match["total"]))
    return {label: count + (count < total) for label, (count, total) in last.items()}


def last_progress_lines(output: str) -> dict[str, str]:
    """The last redraw of each training's bar, as the scripts printed it."""
    lines: dict[str, str] = {}
    for piece in re.split(r"[\r\n]+", output):
        match = PROGRESS.search(piece)
        if match:
            lines[match["label"]] = piece.strip()
    return lines


def versions(checkout: Path) -> dict[str, str]:
    """What the run ran on: Python, the packages, the checkout's commit (if it is a git clone)."""
    found = {"python": platform.python_version(), "platform": platform.platform()}
    for name in ("torch", "numpy", "matplotlib", "tqdm"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    try:
        found["checkout commit"] = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], check=True,
                                                  capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        found["checkout commit"] = "unknown (not a git clone)"
    return found


def run_script(checkout: Path, arguments: tuple, figures: Path) -> tuple[str, float]:
    """Run one of the author's scripts from its checkout, on the CPU with one thread: (its output, seconds)."""
    command = [sys.executable, *arguments, "--output_dir", str(figures), "--device", "cpu"]
    started = time.perf_counter()
    finished = subprocess.run(command, cwd=checkout, env={**os.environ, **ONE_THREAD}, capture_output=True,
                              text=True, errors="replace")
    seconds = time.perf_counter() - started
    if finished.returncode != 0:
        raise RuntimeError(f"authors_scripts: {' '.join(arguments)} failed (exit status {finished.returncode}):\n"
                           + finished.stderr[-2000:])
    return finished.stdout + finished.stderr, seconds


def log_markdown(found: dict, runs: list[dict], total: float, command: str) -> str:
    """The log of a run: versions, then one row per trained model, then the bars' last lines."""
    lines = ["# A run of the author's released scripts", "",
             f"Made by `{command}` on "
             f"{datetime.date.today().isoformat()}: the checkout's scripts with their defaults (seed 0, at most "
             "50,000 steps), CPU, one thread. Steps = the progress bar's last count + 1 (the step that met the "
             "stop is not counted by the bar).", "", "| what | version |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in found.items()]
    lines += ["", "| model | steps | script | script wall time (s) |", "|---|---:|---|---:|"]
    for run in runs:
        for label, steps in run["steps"].items():
            lines.append(f"| {label} {run['shape']} | {steps:,} | `{' '.join(run['arguments'])}` "
                         f"| {run['seconds']:.0f} |")
    lines += ["", f"Wall time of the {len(runs)} script(s) run: {total:.0f} s (on a machine shared with other work).",
              "",
              "The last line of each progress bar:", "",
              "```"]
    lines += [f"{run['shape']}: {line}" for run in runs for line in run["lines"].values()]
    return "\n".join(lines + ["```", ""])


def main(argv=None) -> int:
    parser = CommandParser(prog=COMMAND, description=(__doc__ or "").split("\n")[0])
    parser.add_argument("checkout", help="a clone of github.com/YuvMilo/sinks-are-provably-necessary")
    parser.add_argument("--log", default=None, help="also write the log (Markdown) to this file, after each script")
    parser.add_argument("--only", default=None, help="comma-separated shapes to run, of 1x1, 2x2, 4x4 (default: all)")
    parser.add_argument("--force", action="store_true", help="replace --log even if it is not a log of this command")
    args = parser.parse_args(argv)
    shapes = [shape for shape, _ in SCRIPTS] if args.only is None else [name.strip() for name in args.only.split(",")]
    if not shapes or any(shape not in dict(SCRIPTS) for shape in shapes) or len(set(shapes)) != len(shapes):
        parser.error(f"--only: expected distinct shapes from 1x1, 2x2, 4x4, got {args.only!r}")
    if args.log is None:
        refuse_options(parser, ["--force"], "only to the file --log names; add --log, or leave --force out")
    try:  # before the scripts' minutes: a file of the user's named by mistake is never replaced unasked
        log = None if args.log is None else check_output_file(args.log, "--log", own=OWN_LOG, force=args.force)
    except OutputPathError as error:
        parser.error(str(error))
    checkout = Path(args.checkout)  # checked before the packages, as --log is: no one installs PyTorch to learn it
    if not checkout.is_dir():
        parser.error(f"{checkout}: {'is a file, not a folder' if checkout.exists() else 'no such folder'}; name the "
                     f"folder of a clone of the author's code (git clone {CLONE})")
    absent = sorted({arguments[0] for _, arguments in SCRIPTS if not (checkout / arguments[0]).is_file()})
    if absent:
        parser.error(f"{checkout} is not a checkout of the author's code: it has no {', '.join(absent)} (git clone "
                     f"{CLONE}, then name its folder)")
    missing = missing_requirements()
    if missing:
        print(f"skipped: the author's scripts need {', '.join(missing)}, not installed here (pip install "
              f"{' '.join(missing)}; the book itself needs none of them)")
        return 0
    found, runs = versions(checkout), []
    started = time.perf_counter()
    command = (f"{COMMAND} CHECKOUT" + (f" --log {args.log}" if args.log else "")
               + (f" --only {','.join(shapes)}" if args.only is not None else ""))
    with tempfile.TemporaryDirectory(prefix="authors-figures-") as figures:
        for shape, arguments in SCRIPTS:
            if shape not in shapes:
                continue
            print(f"running {' '.join(arguments)} ...", flush=True)
            output, seconds = run_script(checkout, arguments, Path(figures))
            runs.append(dict(shape=shape, arguments=arguments, seconds=seconds, steps=steps_from_progress(output),
                             lines=last_progress_lines(output)))
            print("  " + ", ".join(f"{label} {shape}: {steps:,} steps" for label, steps in runs[-1]["steps"].items())
                  + f" ({seconds:.0f} s)", flush=True)
            if log:  # after every script: a run stopped later keeps this one
                write_atomically(log, log_markdown(found, runs, time.perf_counter() - started, command),
                                 option="authors_scripts: --log")
    if log:
        print(f"wrote {args.log}")
    else:
        print(log_markdown(found, runs, time.perf_counter() - started, command))
    return 0


if __name__ == "__main__":
    from minitorch.tools.exit_policy import run_command

    sys.exit(run_command(main, name=COMMAND, exits=True))
