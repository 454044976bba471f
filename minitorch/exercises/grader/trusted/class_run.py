"""``python -m minitorch.exercises grade``: a folder of submissions graded in parallel into a gradebook.

The exercises and the seed (a fresh secret one unless given) are recorded in the owner-only OUT/run.json before any
student; a resume keeps them and the students graded, and refuses other settings. Ctrl-C keeps those finished.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import datetime
import fcntl
import json
import os
import secrets
import signal
import time
from pathlib import Path

from minitorch.exercises.grader.trusted import isolation as sandbox
from minitorch.exercises.grader.trusted.gradebook import (ADJUSTMENTS_NAME, FEEDBACK_FOLDER, PRIVATE_FOLDER, RUN_NAME,
                                                          maximum_of, read_adjustments, read_run,
                                                          refuse_unknown_students, results_digest, write_gradebook,
                                                          write_run)
from minitorch.exercises.grader.trusted.grading import Run, grade_submission, results_json
from minitorch.exercises.grader.trusted.worker_library import StudentFiles
from minitorch.exercises.grader.trusted.student_text import shown
from minitorch.exercises.grader.trusted.submissions import Entry, content_hash, entries, named, student_of
from minitorch.exercises.registry import (MANIFEST, ExerciseError, chosen, load_exercises, read_manifest_data,
                                          secret_output_refused, select, sort_key)
from minitorch.outputs import OutputPathError, check_output_folder, scratch_folder, write_atomically
from minitorch.tools.exit_policy import STOPPING_SIGNALS, describe_os_error, ensure_open_files, stopped_by


def chosen_exercises(args, root: Path) -> tuple[list[str], str]:
    """(the exercise IDs, where they came from): --only/--chapter, else --edition's manifest, else every one."""
    if (args.only or args.chapter) and args.edition:
        raise ExerciseError("choose the exercises with --only/--chapter or with --edition, not both")
    exercises, source = load_exercises(root), "every exercise (no --only, --chapter or --edition)"
    if args.only or args.chapter:
        exercises, source = chosen(exercises, args.only, args.chapter), "--only/--chapter"
    elif args.edition:
        manifest = read_manifest_data(Path(args.edition))
        if manifest is None:
            raise ExerciseError(f"--edition {args.edition}: no minitorch/exercises/edition.json there; name the folder "
                                f"of the student edition you made (python -m minitorch.exercises student-edition)")
        named = f"--edition {args.edition}: its {MANIFEST}"
        if not manifest["handed_out"]:  # select() would read "none" as "every exercise"
            raise ExerciseError(f"{named} hands out no exercise (a solutions edition?), so there is nothing to grade; "
                                f"name the edition you handed out, or the exercises with --only")
        try:
            exercises, source = select(exercises, only=manifest["handed_out"]), f"the edition {args.edition}"
        except ExerciseError as error:
            raise ExerciseError(f"{named} hands out {error}") from None
    return [exercise.id for exercise in exercises], source


def run_settings(args, root: Path, recorded: dict) -> tuple[dict, str]:
    """(this run's settings, where its exercises came from): unless chosen, a recorded run's exercises and seed, else
    a fresh secret seed of 128 bits (never 0, the public seed of the students' own runs)."""
    if args.only or args.chapter or args.edition:
        ids, source = chosen_exercises(args, root)
        edition = str(Path(args.edition).resolve()) if args.edition else ""
    elif recorded.get("exercises"):
        ids, edition = list(recorded["exercises"]), recorded.get("edition", "")
        source = "as recorded in run.json" + (f": the edition {edition}" if edition else "")
    else:
        raise ExerciseError("name what you handed out: --edition YOUR_STUDENT_EDITION (or --only 3.1,3.2 or "
                            "--chapter 3); a copy cannot say which exercises count")
    seed = args.exercise_seed if args.exercise_seed is not None else recorded.get("exercise_seed")
    seed = seed if isinstance(seed, int) else 2**128 + secrets.randbits(128)
    return {"exercise_seed": seed, "exercises": ids, "edition": edition, "timeout": args.timeout,
            "budget": args.budget}, source


def settings_differences(recorded: dict, wanted: dict) -> list[str]:
    """What differs between the run recorded in run.json and this one, in words (never the seeds themselves); the
    isolation once `wanted` has it (it is chosen, a worker started, after the cheaper checks)."""
    differences = []
    for name, option in (("exercises", "exercises"), ("edition", "--edition"), ("grader_version", "grader"),
                         ("timeout", "--timeout"), ("budget", "--budget"), ("exercise_seed", ""),
                         ("isolation_kind", "--isolation")):
        if name not in wanted or recorded.get(name, wanted[name]) == wanted[name]:
            continue
        if name == "exercise_seed":
            differences.append("another --exercise-seed than the one recorded in run.json")
        else:
            differences.append(f"{option} {_in_words(wanted[name])} (recorded: {_in_words(recorded[name])})")
    return differences


def refused_unless_regrade(args, out: Path, recorded: dict, record: dict) -> list[str]:
    """The differences of this run's settings from run.json's; ExerciseError naming them unless --regrade: a resume
    under other settings would leave grades made under two in one gradebook, recorded as made under the last."""
    differences = settings_differences(recorded, record)
    if differences and not args.regrade:
        raise ExerciseError(f"{out} was graded with other settings; this run would use {'; '.join(differences)}. "
                            f"To regrade every student with these settings add --regrade (adjustments.csv is "
                            f"kept), or grade into a new --out")
    return differences


def _in_words(setting) -> str:
    """A setting as an option writes it: "1.2, 2.2" for a list, 7 for 7.0, (none) for nothing."""
    if isinstance(setting, list):
        return ", ".join(setting)
    return f"{setting:g}" if isinstance(setting, float) else str(setting or "(none)")


def submission_hashes(found: dict[str, Entry]) -> tuple[dict[str, Entry], dict[str, str]]:
    """(the entries, each that cannot be read within the limits with its reason; {student: content hash})."""
    hashes, checked = {}, dict(found)
    for student, entry in found.items():
        try:
            hashes[student] = content_hash(entry)
        except Exception as error:  # (beyond the limits, an unreadable folder, a name the file system refuses)
            why = str(error) if isinstance(error, ExerciseError) else \
                f"its files could not be read ({type(error).__name__}: {shown(error)})"
            checked[student] = dataclasses.replace(entry, problem=why)
            hashes[student] = content_hash(checked[student])
    return checked, hashes


def students_to_grade(args, found: dict[str, Entry], out: Path, ids: list[str], hashes: dict[str, str],
                      recorded_hashes: dict[str, str], recorded_results: dict[str, str]
                      ) -> tuple[dict[str, Entry], list[str], list[str], list[str]]:
    """(the entries to grade, the students kept, those regraded because their submission changed, and those
    regraded because a file grade wrote of theirs is not as written: their results.json in feedback/ is not the one
    recorded (the handed-back folder is no record), or their private/STUDENT/answers.json is gone (similarity.md
    compares those))."""
    complete = {student for student in found if is_complete(out / FEEDBACK_FOLDER / student, ids)}
    altered = sorted(student for student in complete if recorded_results.get(student) != results_digest(out, student)
                     or answers_gone(out, student))
    complete -= set(altered)
    if args.student:
        named = [_student_named(name, found) for part in args.student for name in part.split(",") if name.strip()]
        unknown = [name for name in named if name not in found]
        if unknown:
            raise ExerciseError(f"--student {', '.join(unknown)}: no such entry in {args.submissions} (it holds "
                                f"{', '.join(sorted(found)[:10])}{', ...' if len(found) > 10 else ''})")
        todo = {name: found[name] for name in [*named, *altered]}
        return todo, sorted(complete - set(named)), [], sorted(set(altered) - set(named))
    if args.regrade:
        return dict(found), [], [], []
    changed = sorted(student for student in complete if recorded_hashes.get(student) != hashes[student])
    kept = sorted(complete - set(changed))
    return {student: entry for student, entry in found.items() if student not in kept}, kept, changed, altered


def _student_named(name: str, found: dict[str, Entry]) -> str:
    """The student `--student NAME` means: NAME as written (or in another Unicode form) or without spaces at its ends,
    or the entry of that name graded under a safe one (the entry '-rf' as 'student -rf-submission')."""
    by_name = {**{student_of(entry.path.name): student for student, entry in found.items()},
               **{student: student for student in found}}  # (a student's own name first)
    for candidate in (name, name.strip()):
        if (match := named(candidate, by_name)) is not None:
            return by_name[match]
    return name.strip()


def answers_gone(out: Path, student: str) -> bool:
    """True if OUT/private/STUDENT/answers.json, which grade writes for every student it grades, is not there."""
    return not (out / PRIVATE_FOLDER / student / "answers.json").is_file()


def is_complete(out_dir: Path, exercise_ids) -> bool:
    """True if out_dir/results.json is a finished grade of these exercises: a resume keeps it."""
    try:
        extra = json.loads((Path(out_dir) / "results.json").read_text(encoding="utf-8"))["extra_data"]
        return extra["complete"] and not extra.get("retry") and sorted(extra["exercises"]) == sorted(exercise_ids)
    except (OSError, ValueError, KeyError, TypeError):
        return False


def grade_class(args, root: Path) -> int:
    """Check the options, the submissions and OUT before any work, record the run, grade, write the gradebook."""
    if (Path(args.submissions) / "minitorch" / "__init__.py").is_file():
        raise ExerciseError(f"{args.submissions} is a copy of the project, not a folder of copies: put each student's "
                            f"copy (a folder or a .zip) in one folder, and name that folder")
    found = entries(Path(args.submissions))
    try:
        out = check_output_folder(args.out, option="--out", inputs=[args.submissions])
    except OutputPathError as error:
        raise ExerciseError(str(error)) from None
    secret_output_refused(out, "--out", root)
    if args.edition and Path(args.edition).resolve().is_relative_to(Path(args.submissions).resolve()):
        raise ExerciseError(f"--edition {args.edition}: lies inside SUBMISSIONS {args.submissions}, so it is a "
                            f"student's returned copy, and a student's own copy never decides what counts; name the "
                            f"student edition you made and handed out")
    recorded = read_run(out)
    if recorded is None and out.is_dir() and any(out.iterdir()):  # someone's own files: grading would replace them
        raise ExerciseError(f"--out {out} holds files and no {RUN_NAME} of an earlier grading, so they are not the "
                            f"grader's (grades.csv, summary.md there would be replaced); choose a new or empty folder")
    record, source = run_settings(args, root, recorded or {})
    run = Run(record["exercises"], record["exercise_seed"], args.timeout, args.budget, sandbox.Isolation("none"), root)
    record["grader_version"] = run.version
    refused_unless_regrade(args, out, recorded or {}, record)
    if (Path(root) / MANIFEST).exists():  # as gradescope-bundle refuses: no hidden tests, no reference answers
        raise ExerciseError(f"{root} is a student edition ({MANIFEST} exists): it holds no hidden tests, so the public "
                            f"tests would earn every point; grade from the full book, the instructor's checkout")
    out.mkdir(parents=True, exist_ok=True, mode=0o700)  # grades: for you only (give each student their folder)
    with only_run_in(out, recorded):
        return _prepare_and_grade(args, root, out, run, record, recorded, found, source)


@contextlib.contextmanager
def only_run_in(out: Path, recorded: dict | None):
    """The gradebook `out` for this run alone (a lock on its folder, released as the run ends): a second grade into
    it at the same time, a TA's, graded the same students on another seed, and run.json kept one of the seeds."""
    lock = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ExerciseError(f"--out {out} is being graded by another grade run right now (yours, or another "
                                f"user's); wait for it to end, or grade into another --out") from None
        except OSError:  # (a file system without locks, some network ones: the run goes on unguarded)
            pass
        if read_run(out) != recorded:  # that run ended between this one's reading run.json and the lock
            raise ExerciseError(f"--out {out}: another grade run changed {RUN_NAME} as this one started; run the "
                                f"command again")
        yield
    finally:
        os.close(lock)


def _prepare_and_grade(args, root: Path, out: Path, run: Run, record: dict, recorded: dict | None, found: dict,
                       source: str) -> int:
    """The checks that need OUT, the isolation (refused if not the one recorded), the students to grade; then
    run.json, and the grading."""
    refuse_unknown_students(out, read_adjustments(out, maximum_of(run.exercise_ids)), found,  # (a typo stops it)
                            f"are not in {args.submissions} (the names are its entries, a .zip without .zip; one "
                            f"whose name is hidden, not printable or a formula is graded as NAME-submission)")
    ensure_open_files("grading")
    guarded = {"your library's reference answers": root / "minitorch" / "softmax.py", "your tests": root / "tests",
               "the submissions": Path(args.submissions).resolve(), "the gradebook folder": out}
    run.isolation = sandbox.choose(args.isolation, {what: str(path) for what, path in guarded.items()}, args.jobs)
    record["isolation_kind"] = run.isolation.kind  # (a resume under another is refused as other settings are)
    differences = refused_unless_regrade(args, out, recorded or {}, record)
    print(f"Isolation: {run.isolation.describe()}")
    found, hashes = submission_hashes(found)
    recorded_hashes = {} if differences else dict((recorded or {}).get("submissions", {}))
    recorded_results = {} if differences else dict((recorded or {}).get("results", {}))
    todo, kept, changed, altered = students_to_grade(args, found, out, run.exercise_ids, hashes, recorded_hashes,
                                                     recorded_results)
    print(f"Grading {len(todo)} of {len(found)} students on exercises {', '.join(run.exercise_ids)} ({source}; "
          f"{args.timeout:g} s per test, {args.budget:g} s per student, {args.jobs} at a time)" + (
              f"; keeping {len(kept)} already graded (--regrade grades everyone again, --student NAME one)" if kept
              else ""))
    if changed:
        print(f"Regrading {len(changed)} whose submission changed since it was graded: {', '.join(changed)}")
    gone = [student for student in altered if answers_gone(out, student)]
    if gone:
        print(f"Regrading {len(gone)} whose {PRIVATE_FOLDER}/STUDENT/answers.json is gone (similarity.md compares "
              f"those): {', '.join(map(shown, gone))}")
    if set(altered) - set(gone):
        print(f"Regrading {len(altered) - len(gone)} whose {FEEDBACK_FOLDER}/STUDENT/results.json is not the one "
              f"the grader recorded (changed since, or written by an earlier grader): "
              f"{', '.join(shown(student) for student in altered if student not in gone)}")
    _say_who_left(args, out, found)
    _notes(args, out, run.seed, recorded)
    record.update(isolation=run.isolation.describe(), submissions={  # (a student's earlier grade stays until the new
        student: digest for student, digest in recorded_hashes.items() if student in found},  # one is complete)
        results={student: digest for student, digest in recorded_results.items() if student in found},
        found={student: entry.path.name for student, entry in found.items()},  # (canvas-csv: submitted, not graded)
        graded_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    write_run(out, record)  # before any student: a resume compares its settings with these
    (out / PRIVATE_FOLDER).mkdir(exist_ok=True)
    os.chmod(out / PRIVATE_FOLDER, 0o700)  # the check logs quote the seed: yours only
    with scratch_folder("minitorch-grading-", mode=0o711) as scratch:  # (one a killed run left is deleted)
        return _grade_all(args, out, run, record, found, todo, hashes, scratch)


def _say_who_left(args, out: Path, found: dict) -> None:
    """A student graded before whose entry is no longer in SUBMISSIONS leaves grades.csv: said, never silently."""
    folder = out / FEEDBACK_FOLDER
    left = sorted(path.name for path in folder.iterdir() if path.name not in found and
                  (path / "results.json").is_file()) if folder.is_dir() else []
    if left:
        print(f"Note: {len(left)} student(s) graded before are no longer in {args.submissions}: "
              f"{', '.join(map(shown, left[:20]))}{', ...' if len(left) > 20 else ''}; they leave grades.csv and "
              f"summary.md (their folders in {FEEDBACK_FOLDER}/ and {PRIVATE_FOLDER}/ stay). Put their entries back "
              f"to grade them again")


def _notes(args, out: Path, seed: int, recorded: dict | None) -> None:
    """Which seed grades, and the student folders an earlier grader left in OUT (their check logs quote its seed)."""
    earlier = sorted(shown(path.name) for path in out.iterdir() if (path / "results.json").is_file())
    if earlier:
        print(f"Note: {out} holds {len(earlier)} student folders of an earlier layout ({', '.join(earlier[:5])}"
              f"{', ...' if len(earlier) > 5 else ''}), each with the check log that quotes the seed: this grader "
              f"writes {out / FEEDBACK_FOLDER}/STUDENT (to hand back) and {out / PRIVATE_FOLDER}/STUDENT; remove them")
    if seed != (recorded or {}).get("exercise_seed"):
        print(f"Exercise seed: {'yours (--exercise-seed)' if args.exercise_seed is not None else 'a fresh secret one'}"
              f", recorded in {out / RUN_NAME} (owner-only); the same command resumes with it")
    elif args.regrade:
        print(f"Exercise seed: the one recorded in {out / RUN_NAME}")
    if seed == 0:
        print("WARNING: exercise seed 0 is the seed of the students' own test runs: they know every graded input. "
              "Leave --exercise-seed out for a fresh secret one.")


def _grade_all(args, out: Path, run: Run, record: dict, found: dict, todo: dict, hashes: dict, scratch: Path) -> int:
    """Grade `todo` on --jobs threads in `scratch`, printing each student's score; a failure on one entry becomes its
    row."""
    started, failed, graded_now = time.monotonic(), [], 0
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)

    def grade(entry: Entry) -> dict:
        private = out / PRIVATE_FOLDER / entry.student
        private.mkdir(parents=True, exist_ok=True, mode=0o700)
        return grade_submission(entry, out / FEEDBACK_FOLDER / entry.student, run, scratch_root=scratch,
                                log_file=private / "check-log.txt", answers_file=private / "answers.json")
    try:
        futures = {pool.submit(grade, entry): student for student, entry in todo.items()}
        for done, future in enumerate(concurrent.futures.as_completed(futures), start=1):
            student, elapsed = futures[future], time.monotonic() - started
            try:
                graded = future.result()
            except Exception as error:  # a bug of the grader's, or the disk: say so, go on with the others
                why = describe_os_error(error) if isinstance(error, OSError) else f"{type(error).__name__}: {error}"
                print(f"[{done}/{len(todo)}] {student}: NOT GRADED, the grader failed: {shown(why)}", flush=True)
                failed.append(student)
                write_failure_row(out, todo[student], run, why)
                record["results"][student] = results_digest(out, student)
                continue
            graded_now += 1
            record["submissions"][student] = hashes[student]
            record["results"][student] = results_digest(out, student)  # the grade: not the handed-back file
            write_run(out, record)  # what was graded: a later change is seen, whatever stops this run
            flags = graded["extra_data"]["flags"]
            print(f"[{done}/{len(todo)}] {student}: {graded['score']:g} / {graded['extra_data']['max_score']}"
                  + (f"  ({shown('; '.join(flags))})" if flags else "") + f"   {_minutes(elapsed)} elapsed, about "
                  f"{_minutes(elapsed / done * (len(todo) - done))} left", flush=True)
    except KeyboardInterrupt:  # (the command line turns SIGTERM, SIGHUP, ... into this, and exits with their code)
        for number in (signal.SIGINT, *STOPPING_SIGNALS):  # a second signal must not cut the clean-up short
            signal.signal(number, signal.SIG_IGN)
        pool.shutdown(wait=False, cancel_futures=True)
        run.stop()
        pool.shutdown(wait=True)  # the students being graded stop, writing nothing
        rows = write_gradebook(out, run.exercise_ids, record, found, run.grader_root, compare_answers=False)
        print(f"\nInterrupted: the {graded_now} students graded in this run are kept ({len(rows)} in "
              f"{out / 'grades.csv'}); those being graded were stopped and nothing of theirs was written. Run the "
              f"same command again to grade them and the rest. (Stopped by {stopped_by()}.)", flush=True)
        return 128 + signal.SIGINT
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    write_run(out, record)  # (a failure row's digest too)
    rows = write_gradebook(out, run.exercise_ids, record, found, run.grader_root)
    print(f"Graded {graded_now} students in {_minutes(time.monotonic() - started)} ({len(rows)} in {out}: grades.csv "
          f"with your {ADJUSTMENTS_NAME}, summary.md, similarity.md); hand back each student's folder of "
          f"{out / FEEDBACK_FOLDER}; {out / PRIVATE_FOLDER} (the full failures, on the hidden inputs) is yours only")
    if failed:
        print(f"NOT graded (run again to retry): {', '.join(failed)}")
    _say_other_editions(rows, run.exercise_ids, record.get("edition", ""))
    return 1 if failed else 0


def _say_other_editions(rows: list[dict], exercise_ids: list[str], edition: str) -> None:
    """A note if copies' own edition.json hands out other exercises than --edition's: the edition of another week,
    given by mistake, grades a whole class on the wrong exercises. (The copies still decide nothing.)"""
    other = [sorted(row["extra_data"]["handed_out"], key=sort_key) for row in rows
             if row["extra_data"].get("handed_out") is not None and set(row["extra_data"]["handed_out"]) != set(
                 exercise_ids)]
    if edition and other:
        most = max(other, key=other.count)
        print(f"Note: {len(other)} of {len(rows)} copies are of another edition (their edition.json hands out "
              f"{', '.join(most) or 'nothing'}{' or others' if other.count(most) < len(other) else ''}; this run "
              f"grades {', '.join(exercise_ids)}): is --edition {edition} the one you handed out?")


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


def write_failure_row(out: Path, entry: Entry, run: Run, why: str) -> None:
    """A student whose grading failed on the grader's side (a bug, the disk): a row with 0 and why, graded again by
    the next run. Nothing if even this cannot be written (the disk is full)."""
    graded = results_json(entry.student, run, {}, StudentFiles(), 0.0,
                          f"not graded: the grader failed ({why}); run the command again", entry=entry)
    graded["extra_data"]["retry"] = True
    try:
        (out / FEEDBACK_FOLDER / entry.student).mkdir(parents=True, exist_ok=True)
        write_atomically(out / FEEDBACK_FOLDER / entry.student / "results.json", json.dumps(graded, indent=1) + "\n")
    except Exception:  # (the reason it failed may well be the reason this fails)
        pass
