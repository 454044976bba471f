"""The grader's trusted side: the instructor's processes, where every grade is decided
(see `minitorch.exercises.grader`)."""
