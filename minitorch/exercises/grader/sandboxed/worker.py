"""The sandboxed worker: a student's code, one forked child per exercise (chapter 11, "How grading works").

The grader starts it in the sandbox, from its library, as ``python -I .../sandboxed/worker.py CONTROL_FD``. It
imports the library once, then obeys two control messages: {"start": "X.Y", "student_file": path} with a socket
(answered {"started": pid}) and {"end": pid, "after": seconds} (answered {"status": "exit N" | "signal N"}). A
child reads the student's file, swaps in the exercise's function alone and answers the test's probe calls.
"""

from __future__ import annotations

import importlib
import os
import signal
import socket
import sys
import time
from pathlib import Path


ANSWER_NOT_SENT = "the answer cannot be sent to the grader"  # (student_text words it for the student)


def main(argv) -> int:
    sys.path[0] = str(Path(__file__).resolve().parents[4])  # the library: base/minitorch/exercises/grader/sandboxed
    from minitorch.exercises.grader import channel
    from minitorch.exercises.grader.sandboxed import probes  # noqa: F401  (the library, imported for every child)

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the grader stops a worker, never a terminal's Ctrl-C
    control = socket.socket(fileno=int(argv[1]))
    while True:
        try:
            message = channel.receive(control)
        except (channel.ChannelClosed, OSError):
            return 0  # the grader is done with this student
        if "start" in message:
            _, descriptors, _, _ = socket.recv_fds(control, 1, 1)
            pid = os.fork()
            if pid == 0:
                control.close()
                os._exit(_serve(message["start"], message["student_file"], socket.socket(fileno=descriptors[0])))
            os.close(descriptors[0])
            channel.send(control, {"started": pid})
        else:
            channel.send(control, {"status": _end(int(message["end"]), float(message.get("after", 0)))})


def _end(pid: int, after: float) -> str:
    """Wait up to `after` seconds for the child to end by itself, then kill it; how it ended."""
    deadline = time.monotonic() + after
    try:
        ended, status = os.waitpid(pid, os.WNOHANG)
        while not ended and time.monotonic() < deadline:
            time.sleep(0.01)
            ended, status = os.waitpid(pid, os.WNOHANG)
        if not ended:
            os.kill(pid, signal.SIGKILL)
            ended, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return "gone"
    return f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"


def _serve(exercise_id: str, student_file: str, connection: socket.socket) -> int:
    """A child: swap in the student's function, then answer probe calls until the grader closes the socket."""
    from minitorch.exercises.grader import channel
    from minitorch.exercises.grader.sandboxed import probes, stand_in

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    stand_in.CONNECTION, serving = connection, os.getpid()  # the other exercises' stand-ins ask the grader through it
    problem = _install(exercise_id, student_file, connection)
    while True:
        _end_if_forked(serving)
        try:
            request = channel.receive(connection)
        except channel.ChannelClosed:
            return 0
        try:
            if problem is not None:  # every test of this exercise gets the same reason
                frame = channel.encode(problem)
            elif request["call"].startswith("_") or not callable(getattr(probes, request["call"], None)):
                raise LookupError(f"no probe named {request['call']!r}")
            else:
                value = getattr(probes, request["call"])(*request.get("args", ()), **request.get("kwargs", {}))
                frame = _answer_frame(value)
        except BaseException as error:  # the student's code raised (or exited): that is the answer
            frame = channel.encode(channel.error_message(error))
        _end_if_forked(serving)
        connection.sendall(frame)


def _answer_frame(value) -> bytes:
    """The frame of a probe's answer; one the channel cannot carry (too large, not plain data) is the grader's
    outcome, not an error of the student's code, which raised nothing ('raised ValueError', said of a 400 MB mask)."""
    from minitorch.exercises.grader import channel

    try:
        return channel.encode({"value": value})
    except channel.ChannelError as error:
        return channel.encode({"grading": {"kind": "failed", "message": f"{ANSWER_NOT_SENT}: {error}"[:2000]}})


def _end_if_forked(serving: int) -> None:
    """A copy the student's code forked, come back here: it ends, so that only the child answers the grader."""
    if os.getpid() != serving:
        os._exit(0)


def _install(exercise_id: str, student_file: str, connection: socket.socket) -> dict | None:
    """Swap the student's function into the library; None, or the message that answers every call when it cannot
    be graded. Its source goes to the grader first, before defining it runs any of the student's code."""
    from minitorch.exercises.grader import channel
    from minitorch.exercises.grader.sandboxed import student_function as found
    from minitorch.exercises.registry import EXERCISES

    exercise, source = EXERCISES[exercise_id], None
    try:
        text = found.read_module(student_file, exercise)
        node = found.find(text, exercise)
        source = found.function_text(text, node)  # as Python reads it
        connection.sendall(channel.encode({"source": source}))
        module = importlib.import_module(exercise.python_module)
        outside = found.helpers_outside(node, dir(module))
        if outside:
            raise found.StudentFunctionError(found.HELPER_OUTSIDE, found.helper_message(exercise, outside))
        try:
            function = found.compile_alone(node, exercise.module, vars(module))
        except SyntaxError as error:
            raise found.does_not_compile(exercise, error) from None
        found.swap_in(getattr(module, exercise.function), function)
        return None
    except found.StudentFunctionError as error:
        problem = {"grading": {"kind": error.kind, "message": str(error)}}
    except Exception as error:  # defining the function ran the student's code (a default value), and it raised
        problem = {"grading": {"kind": "crashed", "message": f"crashed while defining {exercise.function}: "
                                                             f"{type(error).__name__}: {error}"[:2000]}}
    if source is None:
        connection.sendall(channel.encode({"source": None}))
    return problem


if __name__ == "__main__":
    sys.exit(main(sys.argv))
