"""The course around the book: graded exercises, the student edition, grading (chapter 00).

- `registry`: the exercises (IDs, titles, points), their regions in the library, the stubs' errors, the
  editions' manifests; `edition`: the student edition, a copy with the chosen regions stubbed.
- Grading a returned copy (chapter 00, "How grading works"): `submissions` (finding and unpacking copies),
  `grafting` (one library per exercise, holding the student's code for that exercise only), `sandbox`
  (the isolation: bubblewrap, an unprivileged user, or none) and `worker` (the process that runs a
  student's code), `channel` (the data-only messages between them and the grader), `probes` (what a graded
  test asks of a student's code), `services` (the grader's answers for every other exercise),
  `student_code` (the tests' ``student`` fixture, on either side), `grading` (one copy, from unpacking to
  results.json), `gradebook` (feedback, grades.csv, summary, figure), `grade_command` (a class, in
  parallel), `gradescope` (the Gradescope autograder bundle).
- ``python -m minitorch.exercises``: the command line (`__main__`).
"""

from minitorch.exercises.registry import (EXERCISES, Exercise, ExerciseError, find_regions, load_exercises,
                                          scan_file, select, sort_key, stub_error, stub_message, stub_source)
from minitorch.exercises.edition import make_student_edition, strip_solutions

__all__ = ["EXERCISES", "Exercise", "ExerciseError", "find_regions", "load_exercises", "scan_file", "select",
           "sort_key", "stub_error", "stub_message", "stub_source", "make_student_edition", "strip_solutions"]
