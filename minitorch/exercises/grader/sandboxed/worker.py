"""The sandboxed worker that runs a student's code while a class is graded (chapter 11, "How grading works").

The grader starts it once per student, inside the sandbox (`minitorch.exercises.grader.trusted.sandbox`), by path::

    python -I worker.py CONTROL_FD

It imports NumPy once and then waits on its control socket. For each exercise X the grader sends the
library (the grader's library in which every exercise's function is a stand-in that asks the grader,
`minitorch.exercises.grader.sandboxed.stand_in`), the exercise's ID and the student's file that defines X's function,
together with a fresh socket. The worker forks a child that imports the library, reads the student's file,
takes X's function alone and swaps it in (`minitorch.exercises.grader.sandboxed.student_function`): reading, parsing and
compiling the student's code happen here, inside the sandbox and its budget, never in the grader. The child
then answers the test's calls on its socket: a call names a probe (`grader.sandboxed.probes`) and its
arguments, and the answer is the probe's value or the exception it raised, as data
(`minitorch.exercises.grader.channel`). The worker itself never imports the minitorch package, so that each child
imports its own.

Control messages (grader -> worker -> grader):
    {"start": library_folder, "exercise": "X.Y", "student_file": path} then one socket  ->  {"started": pid}
    {"wait": pid, "seconds": s}                                  ->  {"status": "exit 0" | "signal 9" | "running"}
    {"kill": pid}                                                ->  {"status": ...}
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import sys
import time
from pathlib import Path


def _load_channel():
    """channel.py beside this file, under a private name: importing it as minitorch.exercises.grader.channel would
    import the minitorch package into the worker, and every child must import its own."""
    spec = importlib.util.spec_from_file_location("_grading_channel", Path(__file__).with_name("channel.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv) -> int:
    channel = _load_channel()
    control = socket.socket(fileno=int(argv[1]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the grader stops a worker; a terminal's Ctrl-C is its
    import numpy  # noqa: F401  (imported once here, shared by every child)
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
                os._exit(_serve(message, socket.socket(fileno=descriptors[0])))
            for descriptor in descriptors:
                os.close(descriptor)
            channel.send(control, {"started": pid})
        elif "wait" in message:
            channel.send(control, {"status": _status(int(message["wait"]), float(message.get("seconds", 0)))})
        elif "kill" in message:
            try:
                os.kill(int(message["kill"]), signal.SIGKILL)
            except ProcessLookupError:
                pass
            channel.send(control, {"status": _status(int(message["kill"]), 5.0)})
        reap_exited()


def _status(pid: int, seconds: float) -> str:
    """'exit N', 'signal N' or 'running' (still so after `seconds`)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return "gone"
        if done:
            return f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
        if time.monotonic() >= deadline:
            return "running"
        time.sleep(0.01)


def reap_exited() -> None:
    """Collect the exit status of every child that has ended (no zombies are left)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _serve(start: dict, connection: socket.socket) -> int:
    """A child: import the library, swap in the student's function, answer calls until the grader closes."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.path.insert(0, start["start"])
    from minitorch.exercises.grader import channel  # the library's own (the grader's code)
    from minitorch.exercises.grader.sandboxed import probes, stand_in

    stand_in.CONNECTION = connection  # the stand-ins of the other exercises ask the grader through it
    serving = os.getpid()
    problem = _install(start["exercise"], start["student_file"], connection, channel)
    while True:
        _end_if_forked(serving)
        try:
            request = channel.receive(connection)
        except channel.ChannelClosed:
            return 0
        if problem is not None:  # every test of this exercise gets the same reason
            connection.sendall(channel.encode(problem))
            continue
        try:
            probe = getattr(probes, request["call"]) if not request["call"].startswith("_") else None
            if not callable(probe):
                raise LookupError(f"no probe named {request['call']!r}")
            answer = {"value": probe(*request.get("args", ()), **request.get("kwargs", {}))}
            frame = channel.encode(answer)
        except BaseException as error:  # the student's code raised (or exited): that is the answer
            frame = channel.encode(channel.error_message(error))
        _end_if_forked(serving)
        connection.sendall(frame)


def _end_if_forked(serving: int) -> None:
    """A process the student's code forked, come back here (its copy of the call returned or raised): it ends
    at once, so that only the child that got a request answers it."""
    if os.getpid() != serving:
        os._exit(0)


def _install(exercise_id: str, student_file: str, connection, channel) -> dict | None:
    """Swap the student's function for exercise `exercise_id` into the library; None, or the message that
    answers every call when it cannot be graded (not found, does not compile, too large, a helper outside).
    The function's source goes to the grader first, before defining the function runs any of the student's
    code (a default value): the grader's checks on how an answer is written read that."""
    import importlib

    from minitorch.exercises import registry
    from minitorch.exercises.grader.sandboxed import student_function as found

    exercise, sent = registry.EXERCISES[exercise_id], False
    try:
        data = Path(student_file).read_bytes()[:registry.MAX_MODULE_BYTES + 1]
        text = found.module_text(data, exercise, registry.MAX_MODULE_BYTES)
        node = found.find(text, exercise, registry.MAX_FUNCTION_LINES)
        sent = True
        connection.sendall(channel.encode({"source": found.function_text(text, node)}))  # as Python reads it
        module = importlib.import_module(exercise.python_module)
        outside = found.helpers_outside(node, dir(module))
        if outside:
            raise found.StudentFunctionError(found.HELPER_OUTSIDE, found.helper_message(exercise, outside))
        try:
            function = found.compile_alone(node, exercise.module, vars(module))
        except SyntaxError as error:
            raise found.StudentFunctionError(found.DOES_NOT_COMPILE, f"{found.DOES_NOT_COMPILE}: {exercise.module}: "
                                                                     f"{error.msg} (line {error.lineno})") from None
        found.swap_in(getattr(module, exercise.function), function)
    except found.StudentFunctionError as error:
        problem = {"grading": {"kind": error.kind, "message": str(error)}}
    except Exception as error:  # defining the function ran the student's code (a default value), and it raised
        problem = {"grading": {"kind": "crashed", "message": f"crashed while defining {exercise.function}: "
                                                             f"{type(error).__name__}: {error}"[:2000]}}
    else:
        return None
    if not sent:
        connection.sendall(channel.encode({"source": None}))
    return problem


if __name__ == "__main__":
    sys.exit(main(sys.argv))
