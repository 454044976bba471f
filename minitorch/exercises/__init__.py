"""The course around the book: graded exercises, the student edition, grading (chapters 00 and 11).

- `registry`: the table of exercises (ID, title, points, the function a student writes, what its grading
  needs), the stubs' errors, the editions' manifests.
- `edition`: the student edition, a copy with the chosen functions stubbed, and carrying a student's work
  over from last week's copy.
- `grader`: the class grader and the Gradescope bundle, its trusted side, its sandboxed side and the protocol
  between them each in a folder of its own (see `minitorch.exercises.grader`).
- ``python -m minitorch.exercises``: the command line (`__main__`).

This package's __init__ imports nothing: the sandboxed worker imports its modules one by one.
"""
