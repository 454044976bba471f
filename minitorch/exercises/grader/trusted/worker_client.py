"""How a graded test reaches the student's code: the ``student`` fixture (chapter 11, "How grading works").

`Direct` runs the probes here, on the copy under test (a student's own run). `WorkerPool` (class grading: the plan
MINITORCH_GRADING_PLAN names) runs them in the student's sandboxed worker and decides the test here, where no
student code runs; it answers the stand-ins only for the exercises the graded one needs, and flags any other request.
"""

from __future__ import annotations

import collections
import functools
import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

from minitorch.exercises.grader import channel
from minitorch.exercises.grader.sandboxed import probes
from minitorch.exercises.grader.sandboxed import student_function as found
from minitorch.exercises.grader.trusted import isolation
from minitorch.exercises.registry import EXERCISES, read_manifest_data

DOWNS_PER_EXERCISE = 2  # tests of one exercise that may time out or crash before the rest fail unrun
CONTROL_PATIENCE = 10.0  # seconds the worker's control loop gets to answer (it runs no student code)
OUTPUT_KEPT = 4000  # characters of the worker's printed output kept for a crash's message


class GradingOutcome(Exception):
    """How a test ended when the grader, not a check, decides it; `kind` is its kind in the gradebook."""

    kind = "failed"

    def __init__(self, message: str, kind: str | None = None):
        super().__init__(message)
        self.kind = kind or self.kind


class WorkerDown(GradingOutcome):
    """The student's code did not answer."""


class TimedOut(WorkerDown):
    kind = "timed out"


class Crashed(WorkerDown):
    kind = "crashed"


class Refused(GradingOutcome):
    """The exercise's code asked the grader for an exercise it does not need: it earns nothing."""

    kind = "refused"


class Direct:
    """The probes, run in this process on the library under test, their answers as the channel would carry them."""

    def __getattr__(self, name: str):
        probe = None if name.startswith("_") else getattr(probes, name, None)
        if not callable(probe):
            raise AttributeError(f"the student fixture has no probe named {name!r} (see grader/sandboxed/probes.py)")

        @functools.wraps(probe)
        def call(*args, **kwargs):
            return channel.as_data(probe(*args, **kwargs))
        return call


class ThroughWorker:
    """The probes, run in the student's worker for one test of one exercise."""

    def __init__(self, pool: "WorkerPool", exercise_id: str):
        self.pool, self.exercise_id, self.started = pool, exercise_id, time.monotonic()
        self.calls = 0  # a graded test that never reached the student's code cannot pass

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return functools.partial(self._call, name)

    def _call(self, name: str, *args, **kwargs):
        self.calls += 1
        return self.pool.call(self.exercise_id, self.started, name, *args, **kwargs)


class WorkerPool:
    """One student's worker, and the one exercise child it runs at a time, seen from the grader's side."""

    def __init__(self, plan: dict):
        self.plan, self.isolation = plan, isolation.Isolation(**plan["isolation"])
        self.uids = plan.get("uid")  # the first of the student's own users (as root), or None
        self.deadline, self.timeout = time.monotonic() + float(plan["budget"]), float(plan["timeout"])
        self.worker: isolation.Worker | None = None
        self.child: tuple[str, int, socket.socket] | None = None  # (exercise, pid, socket)
        self.workers_started, self.downs = 0, collections.defaultdict(list)
        self.output = collections.deque(maxlen=OUTPUT_KEPT)
        self.refused: dict[str, str] = {}  # exercise ID -> why it earns nothing
        self.sources: dict[str, str | None] = {}  # exercise ID -> its function's source, as the worker first read it

    def call(self, exercise_id: str, test_started: float, probe: str, *args, **kwargs):
        """The probe's answer; what the student's code raised; or a GradingOutcome (refused, timed out, crashed,
        or why the function cannot be graded). A test's calls together get the plan's timeout."""
        downs = self.downs[exercise_id]
        if exercise_id in self.refused:
            raise Refused(self.refused[exercise_id])
        if len(downs) >= DOWNS_PER_EXERCISE:
            raise type(downs[-1])(f"not run: {len(downs)} tests of exercise {exercise_id} already {downs[-1].kind} "
                                  f"({downs[-1]})")
        if time.monotonic() >= self.deadline:
            raise TimedOut(f"not run: the student's time budget of {self.plan['budget']:g} s is used up")
        deadline = min(test_started + self.timeout, self.deadline)
        try:
            connection = self._child_for(exercise_id, deadline)
            if probe == "function_source" and isinstance(self.sources[exercise_id], str):
                return self.sources[exercise_id]  # read from the file before any of the student's code ran
            channel.send(connection, {"call": probe, "args": list(args), "kwargs": kwargs}, deadline)
            answer = self._answer(exercise_id, connection, deadline)
        except TimeoutError:
            down = TimedOut(f"timed out: the student's time budget of {self.plan['budget']:g} s ran out"
                            if time.monotonic() >= self.deadline - 0.01 else
                            f"timed out after {self.timeout:g} s (the test's time limit)")
        except channel.ChannelError as error:
            down = Crashed(f"crashed: the worker sent something that is not plain data ({error})")
        except (channel.ChannelClosed, OSError):
            down = Crashed(self._crash_message())
        except WorkerDown as error:
            down = error
        else:
            if exercise_id in self.refused:
                raise Refused(self.refused[exercise_id])
            if isinstance(answer, Exception):  # the student's code raised it, or its function cannot be graded
                raise answer
            return answer
        downs.append(down)
        self._drop_child()
        raise down from None

    def _answer(self, exercise_id: str, connection: socket.socket, deadline: float):
        """The child's answer (a value, or an exception to raise), serving its stand-ins' requests meanwhile."""
        while True:
            message = channel.receive(connection, deadline)
            if not isinstance(message, dict):
                raise Crashed("crashed: the worker's answer is not a message")
            if "service" in message:  # the grader's work for the student, within the student's time
                try:
                    channel.send(connection, self._serve(exercise_id, message), deadline)
                except channel.ChannelError as error:
                    channel.send(connection, channel.error_message(error), deadline)
            elif "value" in message:
                return message["value"]
            elif "error" in message:
                return channel.rebuild_error(message["error"])
            elif isinstance(message.get("grading"), dict):  # the function could not be taken
                kind = message["grading"].get("kind")
                kind = kind if kind in (*found.KINDS, "crashed") else "failed"
                return GradingOutcome(str(message["grading"].get("message"))[:2000], kind=kind)
            elif set(message) != {"source"}:  # (a later source is the student's own, and changes nothing)
                raise Crashed("crashed: the worker's answer is neither a value nor an error")

    def _serve(self, exercise_id: str, message: dict) -> dict:
        """The grader's answer for an exercise `exercise_id` needs; any other request is refused, and flagged."""
        from minitorch.exercises.grader.trusted import reference_answers  # (the instructor's: no edition holds it)

        asked = message.get("service")
        if asked not in EXERCISES[exercise_id].needs:
            self.refused.setdefault(exercise_id, f"refused: while exercise {exercise_id} was graded, its code asked "
                                                 f"the grader for exercise {str(asked)[:20]!r}, which it does not "
                                                 f"need; exercise {exercise_id} earns nothing")
            return channel.error_message(PermissionError(self.refused[exercise_id]))
        try:
            return reference_answers.answer(asked, message)
        except Exception as error:  # the stand-in's inputs were wrong: the student's code sees the error
            return channel.error_message(error)

    def _child_for(self, exercise_id: str, deadline: float) -> socket.socket:
        """The socket of the exercise's child, started if need be, the function's source read first."""
        if self.child is not None and self.child[0] == exercise_id:
            return self.child[2]
        self._drop_child()
        worker = self._worker()
        if worker.outlived_by_processes():  # an earlier exercise's processes would cost this one: a fresh worker
            self._stop_worker()
            worker = self._worker()
            worker.outlived_by_processes()
        grader_end, child_end = socket.socketpair()
        try:
            control_deadline = time.monotonic() + CONTROL_PATIENCE
            start = {"start": exercise_id, "student_file": f"{worker.library}/{self.plan['exercises'][exercise_id]}"}
            channel.send(worker.control, start, control_deadline)
            socket.send_fds(worker.control, [b"x"], [child_end.fileno()])
            self.child = (exercise_id, int(channel.receive(worker.control, control_deadline)["started"]), grader_end)
        except (OSError, EOFError, TimeoutError, ValueError, KeyError, TypeError) as error:
            grader_end.close()
            self._stop_worker()
            raise Crashed(f"crashed: the sandbox could not start the exercise ({type(error).__name__}: {error}); "
                          f"{self._recent_output()}") from None
        finally:
            child_end.close()
        first = channel.receive(grader_end, deadline)
        if not isinstance(first, dict) or set(first) != {"source"}:
            raise Crashed("crashed: the worker did not send the function's source first")
        if exercise_id not in self.sources:  # kept, and its fingerprint recorded for the similarity table
            self.sources[exercise_id] = first["source"]
            if os.environ.get("MINITORCH_GRADING_RECORD"):
                from minitorch.exercises.grader.trusted.similarity import answer_event
                with open(os.environ["MINITORCH_GRADING_RECORD"], "a", encoding="utf-8") as record:
                    record.write(json.dumps(answer_event(exercise_id, first["source"])) + "\n")
        return grader_end

    def _worker(self) -> isolation.Worker:
        if self.worker is not None and self.worker.process.poll() is None:
            return self.worker
        self._stop_worker()
        reader, writer = os.pipe()
        uid = None if self.uids is None else self.uids + self.workers_started % isolation.UID_BLOCK
        self.workers_started += 1
        with os.fdopen(writer, "wb") as output:
            self.worker = isolation.start(self.isolation, Path(self.plan["library_root"]), Path(self.plan["home"]),
                                          output, uid)
        threading.Thread(target=self._drain, args=(reader,), daemon=True).start()
        return self.worker

    def _drain(self, reader: int) -> None:
        """Keep the end of what the worker prints (a crash's message quotes it); never block the worker."""
        with os.fdopen(reader, "rb") as pipe:
            for chunk in iter(lambda: pipe.read1(4096), b""):
                self.output.extend(chunk.decode("utf-8", "replace"))

    def _recent_output(self) -> str:
        text = "".join(self.output).strip()
        return f"it printed: ...{text[-1500:]}" if text else "it printed nothing"

    def _crash_message(self) -> str:
        """'crashed: ...', saying how the child ended (its status, from the worker) and what it printed last."""
        kind, _, number = self._drop_child(after=2.0).partition(" ")
        if kind == "exit":
            how = (f"the code ended the process with exit status {number} before the test ended (os._exit, or exit "
                   f"at the C level)")
        elif kind == "signal":
            try:
                name = signal.Signals(int(number)).name
            except ValueError:
                name = f"signal {number}"
            hint = {"SIGSEGV": " (a segmentation fault)", "SIGKILL": " (killed, perhaps out of memory)",
                    "SIGXCPU": " (the CPU time limit)", "SIGXFSZ": " (a file grew past the size limit)",
                    "SIGINT": " (an interrupt the code sent itself)"}.get(name, "")
            how = f"the process died by {name}{hint}"
        else:
            how = "the process ended"
        return f"crashed: {how}; {self._recent_output()}"

    def _drop_child(self, after: float = 0.0) -> str:
        """Have the worker end the exercise's child (after `after` seconds to end by itself): how it ended."""
        if self.child is None:
            return "unknown"
        _, pid, connection = self.child
        self.child, status = None, "unknown"
        try:
            deadline = time.monotonic() + CONTROL_PATIENCE + after
            channel.send(self.worker.control, {"end": pid, "after": after}, deadline)
            status = str(channel.receive(self.worker.control, deadline).get("status"))
        except (OSError, EOFError, TimeoutError, ValueError, AttributeError):
            self._stop_worker()
        connection.close()
        return status

    def _stop_worker(self) -> None:
        if self.child is not None:
            self.child[2].close()
            self.child = None
        if self.worker is not None:
            isolation.stop(self.worker)
            self.worker = None

    def close(self) -> None:
        self._stop_worker()


def grading_problem(exercise_id: str, root: Path) -> str | None:
    """In a student's own run of an edition: what the grader would say instead of running the exercise's function
    (not found, does not compile, too large, a helper outside it), read from the file as the worker reads it."""
    exercise = EXERCISES[exercise_id]
    available = ((read_manifest_data(root) or {}).get("module_names") or {}).get(exercise.module)
    if available is None:  # the full book: no manifest of what its modules define
        return None
    try:
        node = found.find(found.read_module(Path(root) / exercise.module, exercise), exercise)
    except found.StudentFunctionError as error:
        return str(error)
    except OSError:
        return None  # (the import of the module has failed already, saying why)
    outside = found.helpers_outside(node, available)
    return found.helper_message(exercise, outside) if outside else None


def decided_outcome(exercise_id: str) -> GradingOutcome | None:
    """For a test of an exercise the grading plan decided before any test ran: its outcome; else None."""
    path = os.environ.get("MINITORCH_GRADING_PLAN")
    decided = _decided(path).get(exercise_id) if path else None
    return None if decided is None else GradingOutcome(decided[1], kind=decided[0])


@functools.lru_cache(maxsize=4)
def _decided(path: str) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8")).get("decided", {})


def from_environment():
    """`Direct()`, or a WorkerPool for the plan that MINITORCH_GRADING_PLAN names."""
    path = os.environ.get("MINITORCH_GRADING_PLAN")
    return WorkerPool(json.loads(Path(path).read_text(encoding="utf-8"))) if path else Direct()
