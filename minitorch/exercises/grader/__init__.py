"""The class grader, in three parts that its folders show (chapter 11, "How grading works").

- `trusted/`: what runs in the instructor's own processes and decides every grade: the command
  (`class_run`), one copy from unpacking to results.json (`grading`), the check process's side of a
  student's worker (`worker_client`), the grader's answers to the stand-ins (`reference_answers`), what a worker is
  given (`worker_library`), the isolation and what a worker sees of the machine (`isolation`), the
  submissions (`submissions`), the gradebook (`gradebook`) and the Gradescope bundle (`gradescope`). No student
  code runs here, and nothing here parses a student's file.
- `sandboxed/`: what runs inside a student's sandbox: the worker (`worker`), which takes the exercise's function
  alone from the student's file (`student_function`), the stand-ins of every other exercise (`stand_in`), and
  what a graded test asks of the student's code (`probes`). A worker's library holds this folder, the protocol
  and the table, never the trusted side.
- `channel`: the protocol both sides speak, data-only messages checked against limits as they are read.
"""
