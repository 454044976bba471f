"""The sandboxed worker that runs a student's code while a class is graded (chapter 00, "How grading works").

The grader starts it once per student, inside the sandbox (`minitorch.exercises.sandbox`), by path::

    python -I worker.py CONTROL_FD

It imports NumPy once and then waits on its control socket. For each exercise the grader sends the
folder of that exercise's library (the grader's library with the student's code in that one exercise's
region, and stand-ins that ask the grader for every other exercise) together with a fresh socket; the
worker forks a child that imports that library and answers the test's calls on that socket: a call
names a probe (`minitorch.exercises.probes`) and its arguments, and the answer is the probe's value or
the exception it raised, as data (`minitorch.exercises.channel`). The worker itself never imports the
minitorch package, so that each child imports its own exercise's library.

Control messages (grader -> worker -> grader):
    {"start": library_folder} then one socket passed with it  ->  {"started": pid}
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
    """channel.py beside this file, under a private name: importing it as minitorch.exercises.channel would
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
                os._exit(_serve(message["start"], socket.socket(fileno=descriptors[0])))
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


def _serve(library: str, connection: socket.socket) -> int:
    """A child: import the exercise's library and answer calls until the grader closes the socket."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.path.insert(0, library)
    from minitorch.exercises import channel, probes  # this exercise's library (the grader's code)

    channel.CONNECTION = connection  # the stand-ins of the other exercises ask the grader through it
    while True:
        try:
            request = channel.receive(connection)
        except channel.ChannelClosed:
            return 0
        try:
            probe = getattr(probes, request["call"]) if not request["call"].startswith("_") else None
            if not callable(probe):
                raise LookupError(f"no probe named {request['call']!r}")
            answer = {"value": probe(*request.get("args", ()), **request.get("kwargs", {}))}
            frame = channel.encode(answer)
        except BaseException as error:  # the student's code raised (or exited): that is the answer
            frame = channel.encode(channel.error_message(error))
        connection.sendall(frame)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
