"""``python -m minitorch.exercises grade``: a folder of submissions, graded in parallel, into a gradebook.

The per-student work is `grading.grade_submission`; this module checks the options and the output folder
before any work, chooses the exercises (from the instructor, never from a student's copy), chooses and
checks the isolation (its first line says which is in force and what a worker could read), runs the
students on --jobs threads, prints progress, resumes, and writes the gradebook at the end (also after
Ctrl-C, from the students finished).
"""

from __future__ import annotations

import collections
import concurrent.futures
import datetime
import os
import queue
import shutil
import tempfile
import time
from pathlib import Path

from minitorch.exercises import sandbox
from minitorch.exercises.gradebook import write_gradebook
from minitorch.exercises.grading import Run, grade_submission, is_complete, stop_grading
from minitorch.exercises.registry import ExerciseError, load_exercises, read_manifest_data, select
from minitorch.exercises.submissions import Entry, entries
from minitorch.outputs import OutputPathError, check_output_folder


def chosen_exercises(args, root: Path) -> tuple[list[str], str]:
    """(the exercise IDs to grade, where the choice came from): --only/--chapter, else --edition's manifest,
    else every exercise. Never a student's copy: it could claim anything."""
    exercises = load_exercises(root)
    only = [part.strip() for part in args.only.split(",") if part.strip()]
    try:
        chapters = [int(part) for part in args.chapter.split(",") if part.strip()]
    except ValueError:
        raise ExerciseError(f"--chapter takes chapter numbers such as 3 or 1,2, got {args.chapter!r}") from None
    if (only or chapters) and args.edition:
        raise ExerciseError("choose the exercises with --only/--chapter or with --edition, not both")
    if only or chapters:
        return [exercise.id for exercise in select(exercises, only=only, chapters=chapters)], "--only/--chapter"
    if args.edition:
        manifest = read_manifest_data(Path(args.edition))
        if manifest is None:
            raise ExerciseError(f"--edition {args.edition}: no minitorch/exercises/edition.json there; name the folder "
                                f"of the student edition you made (python -m minitorch.exercises student-edition)")
        chosen = select(exercises, only=manifest["handed_out"])
        return [exercise.id for exercise in chosen], f"the edition {args.edition}"
    return [exercise.id for exercise in exercises], "every exercise (no --only, --chapter or --edition)"


def _what_copies_claim(found: dict[str, Entry]) -> collections.Counter:
    """How many copies (folders) hold each manifest: only to warn when the grading choice differs from it."""
    votes = collections.Counter()
    for entry in found.values():
        if entry.problem or not entry.path.is_dir():
            continue
        for candidate in (entry.path, *sorted(p for p in entry.path.iterdir() if p.is_dir() and not p.is_symlink())):
            try:
                manifest = read_manifest_data(candidate)
            except (ExerciseError, OSError):
                break
            if manifest is not None:
                votes[tuple(manifest["handed_out"])] += 1
                break
    return votes


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


def grade_class(args, root: Path) -> int:
    found = entries(Path(args.submissions))
    try:
        out = check_output_folder(args.out, option="--out", inputs=[args.submissions])
    except OutputPathError as error:
        raise ExerciseError(str(error)) from None
    ids, source = chosen_exercises(args, root)
    out.mkdir(parents=True, exist_ok=True)
    guarded = {"your library's reference answers": root / "minitorch" / "softmax.py", "your tests": root / "tests",
               "the submissions": Path(args.submissions).resolve(), "the gradebook folder": out}
    isolation = sandbox.choose(args.isolation, {what: str(path) for what, path in guarded.items()}, args.jobs)
    print(f"Isolation: {isolation.describe()}", flush=True)
    kept = [s for s, e in found.items() if not args.force and is_complete(out / s, ids)]
    todo = {s: e for s, e in found.items() if s not in kept}
    print(f"Grading {len(todo)} of {len(found)} students on exercises {', '.join(ids)} ({source}; "
          f"{args.timeout:g} s per test, {args.budget:g} s per student, {args.jobs} at a time)"
          + (f"; keeping {len(kept)} already graded (--force grades them again)" if kept else ""), flush=True)
    claimed = _what_copies_claim(found)
    if claimed and source.startswith("every") and claimed.most_common(1)[0][0] != tuple(ids):
        common, count = claimed.most_common(1)[0]
        print(f"Note: {count} of the copies say their edition handed out {', '.join(common)}; they are graded on "
              f"every exercise. To grade what you handed out, pass --edition YOUR_EDITION_FOLDER or --only.",
              flush=True)
    run = Run(ids, args.exercise_seed, args.timeout, args.budget, isolation, root)
    record = {"exercise_seed": args.exercise_seed, "timeout": args.timeout, "budget": args.budget,
              "isolation": isolation.describe(), "grader_version": run.version, "exercises": ids,
              "graded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    scratch = Path(tempfile.mkdtemp(prefix="minitorch-grading-"))
    os.chmod(scratch, 0o711)
    slots = queue.Queue()
    for slot in range(args.jobs):
        slots.put(slot)

    def grade(entry: Entry) -> dict:
        slot = slots.get()
        try:
            return grade_submission(entry, out / entry.student, run, slot, scratch,
                                    log_file=out / entry.student / "check-log.txt")
        finally:
            slots.put(slot)

    started, done, failed, graded_now = time.monotonic(), 0, [], 0
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)
    try:
        futures = {pool.submit(grade, entry): student for student, entry in todo.items()}
        for future in concurrent.futures.as_completed(futures):
            done += 1
            student = futures[future]
            try:
                graded = future.result()
            except Exception as error:  # a bug of the grader's, or the disk: say so, go on with the others
                failed.append(student)
                print(f"[{done}/{len(todo)}] {student}: NOT GRADED, the grader failed: {type(error).__name__}: "
                      f"{error}", flush=True)
                continue
            graded_now += 1
            elapsed = time.monotonic() - started
            flags = graded["extra_data"]["flags"]
            print(f"[{done}/{len(todo)}] {student}: {graded['score']:g} / {graded['extra_data']['max_score']}"
                  + (f"  ({'; '.join(flags)})" if flags else "")
                  + f"   {_minutes(elapsed)} elapsed, about {_minutes(elapsed / done * (len(todo) - done))} left",
                  flush=True)
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        stop_grading(run)
        pool.shutdown(wait=True)  # the students being graded stop, writing nothing
        rows = write_gradebook(out, ids, record, found)
        print(f"\nInterrupted: the {graded_now} students graded in this run are kept ({len(rows)} in "
              f"{out / 'grades.csv'}); those being graded were stopped and nothing of theirs was written. Run the "
              f"same command again to grade them and the rest.", flush=True)
        return 130
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(scratch, ignore_errors=True)
    rows = write_gradebook(out, ids, record, found)
    print(f"Graded {graded_now} students in {_minutes(time.monotonic() - started)} ({len(rows)} in the gradebook): "
          f"{out / 'grades.csv'}, "
          f"{out / 'summary.md'}; per student STUDENT/feedback.md and STUDENT/results.json (for the student) and "
          f"STUDENT/check-log.txt (the full failures on the hidden inputs: for you only)")
    if failed:
        print(f"NOT graded (run again to retry): {', '.join(failed)}")
        return 1
    return 0
