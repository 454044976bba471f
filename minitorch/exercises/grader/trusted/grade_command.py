"""``python -m minitorch.exercises grade``: a folder of submissions, graded in parallel, into a gradebook.

The per-student work is `grading.grade_submission`; this module checks the options and the output folder
before any work, chooses the exercises (from the instructor, never from a student's copy) and the seed
(a fresh secret one of 128 bits unless given), records them in OUT/run.json (owner-only) before any
student, refuses to resume a run with other settings, chooses and checks the isolation (its first line
says which is in force and what a worker could read), decides who to grade (the students not graded
yet, those whose submission's content changed, --student, or everyone with --regrade), runs them on
--jobs threads, prints progress, and writes the gradebook at the end: also after Ctrl-C, SIGTERM, SIGHUP or
any other signal that would end it, from the students finished.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import json
import os
import queue
import secrets
import shutil
import signal
import tempfile
import time
from pathlib import Path

from minitorch.exercises.grader.trusted import sandbox
from minitorch.exercises.grader.trusted.gradebook import (ADJUSTMENTS_NAME, FEEDBACK_FOLDER, PRIVATE_FOLDER,
                                                          RUN_NAME, ensure_adjustments_file, feedback_folder,
                                                          maximum_of, private_folder, read_adjustments, read_run,
                                                          refuse_unknown_students, write_gradebook, write_run)
from minitorch.exercises.grader.trusted.grading import Run, grade_submission, is_complete, results_json, stop_grading
from minitorch.exercises.grader.trusted.libraries import StudentFiles
from minitorch.exercises.registry import (ExerciseError, load_exercises, read_manifest_data, secret_output_refused,
                                          select)
from minitorch.exercises.grader.trusted.student_text import capped, shown
from minitorch.exercises.grader.trusted.submissions import Entry, content_hash, entries
from minitorch.outputs import OutputPathError, check_output_folder, write_atomically
from minitorch.tools.exit_policy import STOPPING_SIGNALS, describe_os_error, ensure_open_files, signal_name


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


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


def fresh_seed() -> int:
    """A secret exercise seed of 128 random bits (2**128 is added so that it is never the public 0)."""
    return 2**128 + secrets.randbits(128)


def submission_hashes(found: dict[str, Entry]) -> tuple[dict[str, Entry], dict[str, str]]:
    """(the entries, each that cannot be read within the limits now with its reason; {student: content hash}).
    Whatever goes wrong with one entry is that entry's reason not to be graded: the class goes on."""
    hashes, checked = {}, dict(found)
    for student, entry in found.items():
        try:
            hashes[student] = content_hash(entry)
        except ExerciseError as error:
            checked[student] = dataclasses.replace(entry, problem=str(error))
        except Exception as error:  # (an unreadable folder, a name the file system refuses, ...)
            checked[student] = dataclasses.replace(entry, problem=f"its files could not be read "
                                                                  f"({type(error).__name__}: {shown(error)})")
        if student not in hashes:
            hashes[student] = content_hash(checked[student])
    return checked, hashes


def settings_differences(recorded: dict, wanted: dict) -> list[str]:
    """What differs between the run recorded in run.json and this one, in words (never the seeds themselves)."""
    differences = []
    if "exercise_seed" in recorded and recorded["exercise_seed"] != wanted["exercise_seed"]:
        differences.append("another --exercise-seed than the one recorded in run.json")
    if "exercises" in recorded and list(recorded["exercises"]) != list(wanted["exercises"]):
        differences.append(f"exercises {', '.join(wanted['exercises'])} (recorded: "
                           f"{', '.join(recorded['exercises'])})")
    if recorded.get("edition", "") != wanted["edition"] and "edition" in recorded:
        differences.append(f"--edition {wanted['edition'] or '(none)'} (recorded: {recorded['edition'] or '(none)'})")
    if "grader_version" in recorded and recorded["grader_version"] != wanted["grader_version"]:
        differences.append(f"grader {wanted['grader_version']} (recorded: {recorded['grader_version']})")
    for name, option in (("timeout", "--timeout"), ("budget", "--budget")):
        if name in recorded and name in wanted and recorded[name] != wanted[name]:
            differences.append(f"{option} {wanted[name]:g} (recorded: {recorded[name]:g})")
    return differences


def run_settings(args, root: Path, recorded: dict | None) -> tuple[list[str], str, str, int]:
    """(exercise IDs, where they came from, the edition's folder or "", the seed) of this run. Without a choice of
    exercises a recorded run's are used, else the command refuses; without --exercise-seed the recorded seed is
    used, else a fresh secret one is drawn."""
    if args.only or args.chapter or args.edition:
        ids, source = chosen_exercises(args, root)
        edition = str(Path(args.edition).resolve()) if args.edition else ""
    elif recorded is not None and recorded.get("exercises"):
        ids, edition = list(recorded["exercises"]), recorded.get("edition", "")
        source = f"as recorded in run.json{f': the edition {edition}' if edition else ''}"
    else:
        raise ExerciseError("name what you handed out: --edition YOUR_STUDENT_EDITION (or --only 3.1,3.2 or "
                            "--chapter 3); a copy cannot say which exercises count")
    if args.exercise_seed is not None:
        seed = args.exercise_seed
    elif recorded is not None and isinstance(recorded.get("exercise_seed"), int):
        seed = recorded["exercise_seed"]
    else:
        seed = fresh_seed()
    return ids, source, edition, seed


def students_to_grade(args, found: dict[str, Entry], out: Path, ids: list[str], hashes: dict[str, str],
                      recorded_hashes: dict[str, str]) -> tuple[dict[str, Entry], list[str], list[str]]:
    """(the entries to grade, those kept, those regraded because their submission changed)."""
    if args.student:
        named = [name.strip() for part in args.student for name in part.split(",") if name.strip()]
        unknown = [name for name in named if name not in found]
        if unknown:
            raise ExerciseError(f"--student {', '.join(unknown)}: no such entry in {args.submissions} (it holds "
                                f"{', '.join(sorted(found)[:10])}{', ...' if len(found) > 10 else ''})")
        others_graded = sorted(s for s in set(found) - set(named)
                               if is_complete(feedback_folder(out, s), ids))  # (not: ungraded)
        return {name: found[name] for name in named}, others_graded, []
    if args.regrade:
        return dict(found), [], []
    complete = {student for student in found if is_complete(feedback_folder(out, student), ids)}
    changed = sorted(student for student in complete if recorded_hashes.get(student) != hashes[student])
    kept = sorted(complete - set(changed))
    return {s: e for s, e in found.items() if s not in kept}, kept, changed


class Stopped(KeyboardInterrupt):
    """A signal that would end the run (SIGTERM, SIGHUP, SIGQUIT, ...): handled as Ctrl-C is; the command then
    exits with 128 + its number (143 for SIGTERM, 129 for SIGHUP), as a shell reports a process the signal ended."""

    def __init__(self, number: int):
        super().__init__(signal_name(number))
        self.number = number


def _stop_on_signals():
    """Make every signal that would end the run (SIGTERM from a scheduler or kill, SIGHUP from a closed terminal,
    SIGQUIT, SIGUSR1, ...: `commands.STOPPING_SIGNALS`) take the Ctrl-C path; returns the handlers to restore."""
    def handler(number, frame):
        raise Stopped(number)

    return {number: signal.signal(number, handler) for number in STOPPING_SIGNALS}


def grade_class(args, root: Path) -> int:
    if (Path(args.submissions) / "minitorch" / "__init__.py").is_file():
        raise ExerciseError(f"{args.submissions} is a copy of the project, not a folder of copies: put each "
                            f"student's copy (a folder or a .zip) in one folder, and name that folder")
    found = entries(Path(args.submissions))
    if not found:
        raise ExerciseError(f"{args.submissions} holds no submissions (one folder or .zip per student)")
    try:
        out = check_output_folder(args.out, option="--out", inputs=[args.submissions])
    except OutputPathError as error:
        raise ExerciseError(str(error)) from None
    secret_output_refused(out, "--out")
    recorded = read_run(out)
    if recorded is None and out.is_dir() and any(out.iterdir()):  # someone's own files: grading would overwrite them
        raise ExerciseError(f"--out {out} holds files and no {RUN_NAME} of an earlier grading, so they are not the "
                            f"grader's (grades.csv, summary.md there would be replaced); choose a new or empty folder")
    ids, source, edition, seed = run_settings(args, root, recorded)
    run = Run(ids, seed, args.timeout, args.budget, sandbox.Isolation("none"), root)
    wanted = {"exercise_seed": seed, "exercises": ids, "edition": edition, "grader_version": run.version,
              "timeout": args.timeout, "budget": args.budget}
    differences = settings_differences(recorded, wanted) if recorded is not None else []
    if differences and not args.regrade:
        raise ExerciseError(f"{out} was graded with other settings; this run would use {'; '.join(differences)}. "
                            f"To regrade every student with these settings add --regrade (adjustments.csv is "
                            f"kept), or grade into a new --out")
    out.mkdir(parents=True, exist_ok=True, mode=0o700)  # grades: for you only (give each student their folder)
    refuse_unknown_students(out, read_adjustments(out, maximum_of(ids)), found,  # a typo stops the run now
                            f"are not in {args.submissions} (the names are its entries, a .zip without .zip; one "
                            f"whose name is hidden, not printable or a formula is graded as NAME-submission)")
    found, hashes = submission_hashes(found)
    recorded_hashes = dict((recorded or {}).get("submissions", {})) if not differences else {}
    todo, kept, changed = students_to_grade(args, found, out, ids, hashes, recorded_hashes)
    guarded = {"your library's reference answers": root / "minitorch" / "softmax.py", "your tests": root / "tests",
               "the submissions": Path(args.submissions).resolve(), "the gradebook folder": out}
    ensure_open_files("grading")
    run.isolation = sandbox.choose(args.isolation, {what: str(path) for what, path in guarded.items()}, args.jobs)
    print(f"Isolation: {run.isolation.describe()}", flush=True)
    print(f"Grading {len(todo)} of {len(found)} students on exercises {', '.join(ids)} ({source}; "
          f"{args.timeout:g} s per test, {args.budget:g} s per student, {args.jobs} at a time)"
          + (f"; keeping {len(kept)} already graded (--regrade grades everyone again, --student NAME one)"
             if kept else ""), flush=True)
    if changed:
        print(f"Regrading {len(changed)} whose submission changed since it was graded: {', '.join(changed)}",
              flush=True)
    earlier = sorted(path.name for path in out.iterdir() if (path / "results.json").is_file())
    if earlier:  # a gradebook of an earlier version of the grader kept each student's folder beside its files
        print(f"Note: {out} holds {len(earlier)} student folders of an earlier layout ({capped(earlier, 5, 'folders')})"
              f", each with the check log that quotes the seed: this grader writes {out / FEEDBACK_FOLDER}/STUDENT "
              f"(to hand back) and {out / PRIVATE_FOLDER}/STUDENT; remove the old ones", flush=True)
    recorded_seed = (recorded or {}).get("exercise_seed")
    if seed != recorded_seed:
        print(f"Exercise seed: {'yours (--exercise-seed)' if args.exercise_seed is not None else 'a fresh secret one'}"
              f", recorded in {out / RUN_NAME} (owner-only); the same command resumes with it", flush=True)
    elif args.regrade:
        print(f"Exercise seed: the one recorded in {out / RUN_NAME}", flush=True)
    if seed == 0:
        print("WARNING: exercise seed 0 is the seed of the students' own test runs: they know every graded input. "
              "Leave --exercise-seed out for a fresh secret one.", flush=True)
    record = {**wanted, "isolation": run.isolation.describe(),
              "graded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "submissions": {s: h for s, h in recorded_hashes.items() if s in found and s not in todo}}
    write_run(out, record)  # before any student: a resume compares its settings with these
    ensure_adjustments_file(out)
    (out / FEEDBACK_FOLDER).mkdir(exist_ok=True)
    (out / PRIVATE_FOLDER).mkdir(exist_ok=True)
    os.chmod(out / PRIVATE_FOLDER, 0o700)  # the check logs quote the seed: yours only, wherever OUT is shared
    scratch = Path(tempfile.mkdtemp(prefix="minitorch-grading-"))
    os.chmod(scratch, 0o711)
    slots = queue.Queue()
    for slot in range(args.jobs):
        slots.put(slot)

    def grade(entry: Entry) -> dict:
        slot = slots.get()
        private = private_folder(out, entry.student)
        try:
            private.mkdir(parents=True, exist_ok=True, mode=0o700)
            graded = grade_submission(entry, feedback_folder(out, entry.student), run, slot, scratch,
                                      log_file=private / "check-log.txt", answers_file=private / "answers.json")
        finally:
            slots.put(slot)
        return graded

    started, done, failed, graded_now = time.monotonic(), 0, [], 0
    previous_handlers = _stop_on_signals()
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
                why = describe_os_error(error) if isinstance(error, OSError) else f"{type(error).__name__}: {error}"
                print(f"[{done}/{len(todo)}] {student}: NOT GRADED, the grader failed: {shown(why)}", flush=True)
                write_failure_row(out, todo[student], run, why)
                continue
            graded_now += 1
            record["submissions"][student] = hashes[student]
            write_run(out, record)  # the hash of what was graded: a later change is seen, whatever stops this run
            elapsed = time.monotonic() - started
            flags = graded["extra_data"]["flags"]
            print(f"[{done}/{len(todo)}] {student}: {graded['score']:g} / {graded['extra_data']['max_score']}"
                  + (f"  ({shown('; '.join(flags))})" if flags else "")
                  + f"   {_minutes(elapsed)} elapsed, about {_minutes(elapsed / done * (len(todo) - done))} left",
                  flush=True)
    except KeyboardInterrupt as interruption:
        for number in STOPPING_SIGNALS:  # a second signal must not cut the clean-up short
            signal.signal(number, signal.SIG_IGN)
        pool.shutdown(wait=False, cancel_futures=True)
        stop_grading(run)
        pool.shutdown(wait=True)  # the students being graded stop, writing nothing
        rows = write_gradebook(out, ids, record, found, root, compare_answers=False)  # (promptly)
        what = str(interruption) if isinstance(interruption, Stopped) else "Ctrl-C"
        print(f"\nInterrupted: the {graded_now} students graded in this run are kept ({len(rows)} in "
              f"{out / 'grades.csv'}); those being graded were stopped and nothing of theirs was written. Run the "
              f"same command again to grade them and the rest. (Stopped by {what}.)", flush=True)
        return 128 + (interruption.number if isinstance(interruption, Stopped) else signal.SIGINT)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(scratch, ignore_errors=True)
        for number, handler in previous_handlers.items():
            signal.signal(number, handler)
    rows = write_gradebook(out, ids, record, found, root)
    print(f"Graded {graded_now} students in {_minutes(time.monotonic() - started)} ({len(rows)} in the gradebook): "
          f"{out / 'grades.csv'} (with your {out / ADJUSTMENTS_NAME}), {out / 'summary.md'}, "
          f"{out / 'similarity.md'} (answers students share); to hand back, one folder per student in "
          f"{out / FEEDBACK_FOLDER} (feedback.md, results.json); for you only, {out / PRIVATE_FOLDER} (the check "
          f"logs, with the full failures on the hidden inputs)")
    if failed:
        print(f"NOT graded (run again to retry): {', '.join(failed)}")
        return 1
    return 0


def write_failure_row(out: Path, entry: Entry, run: Run, why: str) -> None:
    """The row of a student whose grading failed on the grader's side (a bug, the disk): score 0 and why, kept in
    the gradebook until the next run grades them again (`is_complete` is False for it). Nothing if even this
    cannot be written (the disk is full)."""
    graded = results_json(entry.student, run, {}, StudentFiles(), 0.0,
                          f"not graded: the grader failed ({why}); run the command again", entry=entry)
    graded["extra_data"]["retry"] = True
    try:
        folder = feedback_folder(out, entry.student)
        folder.mkdir(parents=True, exist_ok=True)
        write_atomically(folder / "results.json", json.dumps(graded, indent=1) + "\n")
    except Exception:  # (the reason it failed may well be the reason this fails)
        pass
