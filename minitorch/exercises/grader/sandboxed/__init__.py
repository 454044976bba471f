"""The grader's sandboxed side: what runs where a student's code runs (see `minitorch.exercises.grader`)."""
