"""The command line: ``python -m minitorch <command>``.

    python -m minitorch reproduce [--quick] [--only 1x1,2x2] [--seed 0] [--out DIR] [--jobs 2]
    python -m minitorch reproduce --beyond [--quick] [--out DIR] [--jobs 2]   (chapter 10's experiments)
    python -m minitorch reproduce --seeds [--only 1x1] [--quick] [--out DIR] [--jobs 2]  (1x1, 2x2: ten seeds)
    python -m minitorch book [--out book] [--quick] [--only 03,07] [--jobs 2] [--keep-going] [--force]
                             [--no-pdf]
    python -m minitorch bench [...]        (the same as python -m minitorch.tools.bench [...])
"""

from __future__ import annotations

import os
import sys

from minitorch.checks import number_argument
from minitorch.outputs import OutputPathError
from minitorch.tools.exit_policy import stopped_by
from minitorch.tools.options import CommandParser, comma_list, given, refuse_options


def main(argv=None) -> int:
    parser = CommandParser(prog="python -m minitorch", description=(__doc__ or "").split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    reproduce = commands.add_parser("reproduce", help="train the paper's six models; write figures and results")
    reproduce.add_argument("--quick", action="store_true",
                           help="small step budgets: under a minute, not the paper's numbers")
    reproduce.add_argument("--only", type=comma_list("--only"), default=None,
                           help="comma-separated architectures to run, e.g. 1x1 or 1x1,2x2")
    reproduce.add_argument("--seed", type=number_argument("--seed", integer=True, minimum=0), default=0,
                           help="seed for weights and data (default 0, as in the paper)")
    reproduce.add_argument("--out", default=None,
                           help="output folder (default: runs/<name>, untracked: runs/full for the full run at seed "
                                "0, else e.g. runs/quick, runs/seed1_only-1x1; --out figures rewrites the book's "
                                "figures)")
    reproduce.add_argument("--jobs", type=number_argument("--jobs", integer=True, minimum=1),
                           default=min(2, os.cpu_count() or 1),
                           help="models trained at once, one process each (default: 2, or 1 on a 1-core machine)")
    reproduce.add_argument("--no-progress", action="store_true", help="no progress bar")
    reproduce.add_argument("--force", action="store_true",
                           help="replace an earlier, different run in the --out folder, all of its files (without "
                                "it, such a folder is refused before any work)")
    reproduce.add_argument("--beyond", action="store_true",
                           help="run chapter 10's experiments beyond the paper instead (default out: runs/beyond; "
                                "--out figures/beyond rewrites the book's)")
    reproduce.add_argument("--seeds", action="store_true",
                           help="train the 1x1 and 2x2 models (or those of --only) from seeds 0-9 instead (default "
                                "out: runs/seeds; --out figures/seeds rewrites the book's)")

    book = commands.add_parser("book", help="execute every chapter and write a static HTML book")
    book.add_argument("--out", default="book", help="output folder (default: book)")
    book.add_argument("--quick", action="store_true", help="run the chapters in quick mode (MINITORCH_QUICK=1)")
    book.add_argument("--only", type=comma_list("--only"), default=None,
                      help="comma-separated chapter numbers to build, e.g. 03,07")
    book.add_argument("--jobs", type=number_argument("--jobs", integer=True, minimum=1),
                      default=min(2, os.cpu_count() or 1),
                      help="chapters executed at once, one kernel each (default: 2, or 1 on a 1-core machine)")
    book.add_argument("--keep-going", action="store_true",
                      help="build every chapter even after one fails, write the book with the failed ones marked, "
                           "and list all failures at the end (without it, a failure leaves the earlier book)")
    book.add_argument("--chapters", default=None,
                      help="folder of NN_title.ipynb chapters (default: chapters/); a chapter that imports minitorch "
                           "must lie inside the project, where its set-up cell finds minitorch/")
    book.add_argument("--cell-timeout", type=number_argument("--cell-timeout", integer=True, minimum=1, maximum=86400),
                      default=600, help="whole seconds one cell may run before its chapter fails (default 600; the "
                                        "book's longest cell takes well under a minute)")
    book.add_argument("--force", action="store_true",
                      help="replace --out whole even if it holds files that are not part of an earlier book (they "
                           "are deleted)")
    book.add_argument("--no-pdf", action="store_true",
                      help="skip the printed edition's PDF (made by headless Chromium where it is installed)")

    commands.add_parser("bench", add_help=False,
                        help="time a training step: minitorch, a hand-written NumPy floor, PyTorch if installed; "
                             "see python -m minitorch.tools.bench --help")

    args, rest = parser.parse_known_args(argv)
    if args.command == "bench":
        from minitorch.tools.bench import main as bench

        return bench(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "book":
        from minitorch.tools.book.build import main as book

        return book(args)
    if args.command == "reproduce":
        from minitorch.fast import use_for_training
        use_for_training()  # every model of the run trains on the fast path: minitorch/fast/
        from minitorch.paper.reproduce import ARCHITECTURES, default_out, reproduce as run

        only = None if args.only is None else [name.strip() for name in args.only.split(",")]
        if only is not None:
            unknown = [name for name in only if name not in ARCHITECTURES]
            if unknown or len(set(only)) != len(only):
                parser.error(f"--only: expected distinct architectures separated by commas, from "
                             f"{', '.join(ARCHITECTURES)} (e.g. --only 1x1,2x2); got {args.only!r}"
                             + (f": unknown architecture(s) {unknown}" if unknown else ": a name twice"))
        try:
            if args.seeds:
                if args.beyond or given(reproduce, "--seed") or (only is not None and "4x4" in only):
                    parser.error("--seeds runs its own seeds of the 1x1 and 2x2 models: not with --beyond, --seed "
                                 "or --only 4x4")
                from minitorch.paper.beyond import run_seeds

                default_seeds = "runs/quick/seeds" if args.quick else "runs/seeds"  # figures/: by name only
                run_seeds(default_seeds if args.out is None else args.out, quick=args.quick, jobs=args.jobs,
                          force=args.force, shapes=only or ("1x1", "2x2"))
                return 0
            if args.beyond:
                refuse_options(reproduce, ["--only", "--seed"], "to the paper's six models, not to --beyond")
                from minitorch.paper.beyond import FULL, QUICK, run_beyond

                default_beyond = "runs/quick/beyond" if args.quick else "runs/beyond"  # figures/: by name only
                run_beyond(default_beyond if args.out is None else args.out, QUICK if args.quick else FULL,
                           jobs=args.jobs, force=args.force)
                return 0
            out = str(default_out(args.quick, only, args.seed)) if args.out is None else args.out
            run(out, quick=args.quick, only=only, seed=args.seed, progress=not args.no_progress, jobs=args.jobs,
                force=args.force)
        except OutputPathError as error:  # raised before any work
            parser.error(str(error))
        except KeyboardInterrupt:
            print(f"reproduce: interrupted by {stopped_by()}", file=sys.stderr)
            return 130
    return 0


if __name__ == "__main__":
    from minitorch.exercises.registry import exercise_needed  # a student edition's stubs: which exercise comes first
    from minitorch.tools.exit_policy import run_command

    sys.exit(run_command(main, name="python -m minitorch", explain=exercise_needed, exits=True))
