"""``python -m minitorch.exercises grade``: a folder of submissions, graded in parallel, into a gradebook.

The per-student work is `grading.grade_submission`; this module chooses the exercises, runs the
students on --jobs threads (each waiting on its own child processes), prints progress, resumes, and
writes the gradebook at the end (also after Ctrl-C, from the students finished).
"""

from __future__ import annotations

import collections
import concurrent.futures
import datetime
import time
import zipfile
from pathlib import Path

from minitorch.exercises.edition import manifest_ids, read_manifest
from minitorch.exercises.gradebook import write_gradebook
from minitorch.exercises.grading import grade_submission, grader_version, is_complete, project_in, stop_grading
from minitorch.exercises.registry import ExerciseError, load_exercises, select, sort_key


def submissions_in(folder: Path) -> dict[str, Path]:
    """Student ID -> their folder or .zip, for every entry of `folder` (hidden entries skipped)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ExerciseError(f"{folder} is not a folder of submissions")
    found = {}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir() or entry.suffix == ".zip":
            student = entry.name[:-4] if entry.suffix == ".zip" else entry.name
            if student in found:
                raise ExerciseError(f"{student} has both a folder and a .zip in {folder}; keep one")
            found[student] = entry
    if not found:
        raise ExerciseError(f"{folder} holds no submissions (one folder or .zip per student)")
    return found


def class_manifest(submissions: dict[str, Path]) -> list[str] | None:
    """The exercises the class's edition handed out: the manifest most students' copies hold."""
    votes = collections.Counter()
    for path in submissions.values():
        try:
            manifest = read_manifest(project_in(path, path)) if path.is_dir() else _zipped_manifest(path)
        except (ExerciseError, OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile):
            continue
        votes[tuple(manifest) if manifest is not None else None] += 1
    if not votes:
        return None
    chosen = votes.most_common(1)[0][0]
    return list(chosen) if chosen is not None else None


def _zipped_manifest(archive: Path) -> list[str] | None:
    with zipfile.ZipFile(archive) as opened:
        names = sorted((n for n in opened.namelist() if n.endswith("minitorch/exercises/edition.json")), key=len)
        if not names:
            return None
        return manifest_ids(opened.read(names[0]).decode("utf-8"), f"{archive}:{names[0]}")


def chosen_exercises(args, root: Path, submissions: dict[str, Path]) -> list[str]:
    exercises = load_exercises(root)
    only = [part.strip() for part in args.only.split(",") if part.strip()]
    try:
        chapters = [int(part) for part in args.chapter.split(",") if part.strip()]
    except ValueError:
        raise ExerciseError(f"--chapter takes chapter numbers such as 3 or 1,2, got {args.chapter!r}") from None
    if only or chapters:
        return [exercise.id for exercise in select(exercises, only=only, chapters=chapters)]
    handed_out = class_manifest(submissions)
    if handed_out is None:
        return [exercise.id for exercise in exercises]
    known = {exercise.id for exercise in exercises}
    return sorted((i for i in handed_out if i in known), key=sort_key)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


def grade_class(args, root: Path) -> int:
    if args.jobs < 1 or args.timeout <= 0 or args.exercise_seed < 0:
        raise ExerciseError("--jobs must be at least 1, --timeout positive and --exercise-seed non-negative")
    submissions = submissions_in(Path(args.submissions))
    ids = chosen_exercises(args, root, submissions)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kept = [s for s in submissions if not args.force and is_complete(out / s, ids, args.exercise_seed)]
    todo = {s: p for s, p in submissions.items() if s not in kept}
    run = {"exercise_seed": args.exercise_seed, "timeout": args.timeout, "grader_version": grader_version(root),
           "graded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "exercises": ids}
    print(f"Grading {len(todo)} of {len(submissions)} students on exercises {', '.join(ids)} "
          f"(seed {args.exercise_seed}, {args.timeout:g} s per test, {args.jobs} at a time)"
          + (f"; keeping {len(kept)} already graded (--force grades them again)" if kept else ""), flush=True)
    started, done, failed = time.monotonic(), 0, []
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)
    try:
        futures = {pool.submit(grade_submission, path, out / student, exercise_ids=ids, seed=args.exercise_seed,
                               timeout=args.timeout, grader_root=root): student for student, path in todo.items()}
        for future in concurrent.futures.as_completed(futures):
            done += 1
            student = futures[future]
            try:
                graded = future.result()
            except ExerciseError:  # e.g. the grader's own tests could not be collected
                raise
            except Exception as error:  # a bug of the grader's, or the disk: say so, go on with the others
                failed.append(student)
                print(f"[{done}/{len(todo)}] {student}: NOT GRADED, the grader failed: {type(error).__name__}: "
                      f"{error}", flush=True)
                continue
            elapsed = time.monotonic() - started
            eta = elapsed / done * (len(todo) - done)
            flags = graded["extra_data"]["flags"]
            print(f"[{done}/{len(todo)}] {student}: {graded['score']:.2f} / {graded['extra_data']['max_score']}"
                  + (f"  ({'; '.join(flags)})" if flags else "")
                  + f"   {_minutes(elapsed)} elapsed, about {_minutes(eta)} left", flush=True)
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        stop_grading()
        rows = write_gradebook(out, ids, run, submissions)
        print(f"\nInterrupted: kept the {len(rows)} students graded so far in {out}; run the same command again "
              f"to grade the rest.", flush=True)
        return 130
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    rows = write_gradebook(out, ids, run, submissions)
    print(f"Graded {len(rows)} students in {_minutes(time.monotonic() - started)}: {out / 'grades.csv'}, "
          f"{out / 'summary.md'}, per student STUDENT/results.json and STUDENT/feedback.md")
    if failed:
        print(f"NOT graded (run again to retry): {', '.join(failed)}")
        return 1
    return 0
