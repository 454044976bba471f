"""The course around the book: graded exercises, the student edition, grading (chapter 00).

- `registry`: the exercises (IDs, titles, points), their regions in the library, the stubs' errors.
- `edition`: the student edition, a copy of the project with the chosen regions replaced by stubs.
- `grading`: one returned copy graded in isolation (its regions grafted into the grader's project,
  child processes with limits and time limits); `gradebook`: grades.csv, summary, figure, feedback;
  `grade_command`: ``python -m minitorch.exercises grade``, a whole class in parallel.
- ``python -m minitorch.exercises``: the command line (`__main__`).
"""

from minitorch.exercises.registry import (EXERCISES, Exercise, ExerciseError, find_regions, load_exercises,
                                          scan_file, select, sort_key, stub_error, stub_message, stub_source)
from minitorch.exercises.edition import make_student_edition, strip_solutions

__all__ = ["EXERCISES", "Exercise", "ExerciseError", "find_regions", "load_exercises", "scan_file", "select",
           "sort_key", "stub_error", "stub_message", "stub_source", "make_student_edition", "strip_solutions"]
