"""The course around the book: graded exercises, the student edition, grading (chapter 00).

- `registry`: the table of exercises (ID, title, points, the function a student writes, what its grading
  needs), the stubs' errors, the editions' manifests; `edition`: the student edition, a copy with the chosen
  functions stubbed.
- Grading a returned copy (chapter 00, "How grading works"): `submissions` (finding and unpacking copies),
  `libraries` (the stand-in library and the student's files a worker is given), `sandbox` (the isolation:
  bubblewrap, an unprivileged user, or none) and `worker` (the process that runs a student's code),
  `student_function` (taking one function from a student's file), `stand_in` (every other exercise asks
  the grader), `channel` (the data-only messages between them and the grader), `probes` (what a graded
  test asks of a student's code), `services` (the grader's answers to the stand-ins), `student_code` (the
  tests' ``student`` fixture, on either side), `grading` (one copy, from unpacking to results.json),
  `gradebook` (feedback, grades.csv, summary, figure), `grade_command` (a class, in parallel), `gradescope`
  (the Gradescope autograder bundle).
- ``python -m minitorch.exercises``: the command line (`__main__`).

This package's __init__ imports nothing: the sandboxed worker imports its modules one by one.
"""
