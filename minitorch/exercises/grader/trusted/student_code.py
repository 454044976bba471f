"""How a graded test reaches the student's code: the ``student`` fixture (chapter 11, "How grading works").

A graded test writes ``student.softmax(scores, axis=-1)``; the fixture decides where that runs:

- `Direct` (a student's own ``pytest -m ex2_4``, or an instructor checking one trusted copy): the probe
  (`minitorch.exercises.grader.sandboxed.probes`) runs here, on the copy under test, and its answer is passed through
  the channel's format so that both modes see the same data.
- `ThroughWorker` (the class grader and the Gradescope bundle, when MINITORCH_GRADING_PLAN names a plan):
  the probe runs in the student's sandboxed worker (`minitorch.exercises.grader.sandboxed.worker`), where the test's own
  exercise is the student's function and every other one a stand-in; this process, which decides pass or
  fail, never runs the student's code. It answers the stand-ins' requests with its reference library
  (`grader.trusted.services`), only for the exercises the table says the graded one needs: any other
  request is refused, and the exercise earns nothing (it is flagged). A test's calls together get the plan's
  timeout; the student's whole grading gets the plan's budget. A worker that hangs, dies or sends what the
  channel refuses fails the test as *timed out* or *crashed* and is replaced; after two such tests of one
  exercise, its remaining tests fail at once.
"""

from __future__ import annotations

import collections
import functools
import json
import os
import socket
import threading
import time
from pathlib import Path

import numpy as np

from minitorch.exercises.grader import channel
from minitorch.exercises.grader.sandboxed import probes
from minitorch.exercises.grader.trusted import sandbox
from minitorch.exercises.registry import EXERCISES, MAX_FUNCTION_LINES, MAX_MODULE_BYTES, read_manifest_data
from minitorch.exercises.grader.sandboxed import student_function as found
from minitorch.gradcheck import GradcheckError, compare_with_finite_differences

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
    """The student's code did not answer: `kind` is "timed out" or "crashed"."""

    kind = "crashed"


class TimedOut(WorkerDown):
    kind = "timed out"


class Crashed(WorkerDown):
    kind = "crashed"


class Refused(GradingOutcome):
    """The exercise's code asked the grader for an exercise it does not need: it earns nothing."""

    kind = "refused"


class Direct:
    """The probes, run in this process on the library under test."""

    def __getattr__(self, name: str):
        if name.startswith("_") or not callable(getattr(probes, name, None)):
            raise AttributeError(f"the student fixture has no probe named {name!r} (see grader/sandboxed/probes.py)")
        probe = getattr(probes, name)

        @functools.wraps(probe)
        def call(*args, **kwargs):
            return channel.as_data(probe(*args, **kwargs))
        return call


class ThroughWorker:
    """The probes, run in the student's worker for one exercise."""

    def __init__(self, pool: "WorkerPool", exercise_id: str):
        self.pool, self.exercise_id, self.started = pool, exercise_id, time.monotonic()
        self.calls = 0  # a graded test that never reached the student's code cannot pass (tests/conftest.py)

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
        self.plan = plan
        self.isolation = sandbox.Isolation(**plan["isolation"])
        self.uids = plan.get("uid")  # the first of the student's own users (as root), or None
        self.workers_started = 0
        self.deadline = time.monotonic() + float(plan["budget"])
        self.timeout = float(plan["timeout"])
        self.worker: sandbox.Worker | None = None
        self.child: tuple[str, int, socket.socket] | None = None  # (exercise, pid, socket)
        self.downs: dict[str, list[WorkerDown]] = collections.defaultdict(list)
        self.output = collections.deque(maxlen=OUTPUT_KEPT)
        self.refused: dict[str, str] = {}  # exercise ID -> why it earns nothing
        self.sources: dict[str, str | None] = {}  # exercise ID -> its function's source, as the worker first sent it

    # --- calls -------------------------------------------------------------------------------------

    def call(self, exercise_id: str, test_started: float, probe: str, *args, **kwargs):
        if exercise_id in self.refused:
            raise Refused(self.refused[exercise_id])
        if len(self.downs[exercise_id]) >= DOWNS_PER_EXERCISE:
            last = self.downs[exercise_id][-1]
            raise type(last)(f"not run: {len(self.downs[exercise_id])} tests of exercise {exercise_id} already "
                             f"{last.kind} ({last})")
        deadline = min(test_started + self.timeout, self.deadline)
        if time.monotonic() >= self.deadline:
            raise TimedOut(f"not run: the student's time budget of {self.plan['budget']:g} s is used up")
        try:
            _, _, connection = self._child_for(exercise_id)
            if probe == "function_source":  # what the worker read before any of the student's code ran
                return self._source(exercise_id, connection, deadline)
            channel.send(connection, {"call": probe, "args": list(args), "kwargs": kwargs}, deadline)
            answered, value = self._answer(exercise_id, connection, deadline)
        except WorkerDown as down:
            self.downs[exercise_id].append(down)
            self._drop_child()
            raise
        except TimeoutError:
            budget = time.monotonic() >= self.deadline - 0.01
            down = TimedOut(f"timed out: the student's time budget of {self.plan['budget']:g} s ran out"
                            if budget else f"timed out after {self.timeout:g} s (the test's time limit)")
            self.downs[exercise_id].append(down)
            self._drop_child()
            raise down from None
        except (channel.ChannelClosed, OSError) as error:
            down = Crashed(self._crash_message(error))
            self.downs[exercise_id].append(down)
            raise down from None
        if exercise_id in self.refused:
            raise Refused(self.refused[exercise_id])
        if answered == "error":
            raise value  # the student's code raised it (rebuilt from data by the channel)
        return value

    def _source(self, exercise_id: str, connection: socket.socket, deadline: float) -> str:
        """The source of the student's function as the worker's child read it from the file, sent before it
        defined the function: no code of the student's had run, so none can have changed it. The grader's checks
        on how an answer is written parse it here."""
        if exercise_id not in self.sources:
            try:
                first = channel.receive(connection, deadline)
            except channel.ChannelError as error:
                raise Crashed(f"crashed: the worker sent something that is not plain data ({error})") from None
            if not isinstance(first, dict) or "source" not in first:
                raise Crashed("crashed: the worker did not send the function's source first")
            self._keep_source(exercise_id, first["source"])
        source = self.sources[exercise_id]
        if not isinstance(source, str):  # the function could not be taken: the worker says why
            channel.send(connection, {"call": "function_source", "args": [exercise_id]}, deadline)
            answered, value = self._answer(exercise_id, connection, deadline)
            raise value if answered == "error" else Crashed("crashed: the worker answered without a function")
        return source

    def _keep_source(self, exercise_id: str, source) -> None:
        """Keep the first source the worker sent for the exercise, and record its fingerprint for the class's
        similarity table (`similarity.answer_event`) in the check process's record."""
        if exercise_id in self.sources:
            return
        self.sources[exercise_id] = source
        record = os.environ.get("MINITORCH_GRADING_RECORD")
        if record:
            from minitorch.exercises.grader.trusted.similarity import answer_event
            with open(record, "a", encoding="utf-8") as file:
                file.write(json.dumps(answer_event(exercise_id, source)) + "\n")

    def _answer(self, exercise_id: str, connection: socket.socket, deadline: float):
        while True:
            try:
                message = channel.receive(connection, deadline)
            except channel.ChannelError as error:
                self._drop_child()
                raise Crashed(f"crashed: the worker sent something that is not plain data ({error})") from None
            if not isinstance(message, dict):
                self._drop_child()
                raise Crashed("crashed: the worker's answer is not a message")
            if "source" in message and set(message) == {"source"}:  # sent first, before any call; later ones are
                self._keep_source(exercise_id, message["source"])  # the student's and change nothing
            elif "service" in message:  # the grader's work for the student, within the student's time
                reply = self._serve(exercise_id, message)
                try:
                    channel.send(connection, reply, deadline)
                except channel.ChannelError as error:
                    channel.send(connection, channel.error_message(error), deadline)
            elif "value" in message:
                return "value", message["value"]
            elif "error" in message:
                return "error", channel.rebuild_error(message["error"])
            elif "grading" in message and isinstance(message["grading"], dict):  # the function could not be taken
                return "error", GradingOutcome(str(message["grading"].get("message"))[:2000],
                                               kind=_known_kind(message["grading"].get("kind")))
            else:
                self._drop_child()
                raise Crashed("crashed: the worker's answer is neither a value nor an error")

    def _serve(self, exercise_id: str, message: dict) -> dict:
        """The grader's answer for a function exercise `exercise_id` needs (never for itself); a request for any
        other is refused, and the exercise flagged: its remaining tests fail, and the gradebook gives it 0."""
        from minitorch.exercises.grader.trusted import services

        asked = message.get("service")
        if asked not in EXERCISES[exercise_id].needs:
            self.refused.setdefault(exercise_id, f"refused: while exercise {exercise_id} was graded, its code asked "
                                                 f"the grader for exercise {str(asked)[:20]!r}, which it does not "
                                                 f"need; exercise {exercise_id} earns nothing")
            return channel.error_message(PermissionError(self.refused[exercise_id]))
        try:
            return services.answer(asked, message)
        except Exception as error:  # the stand-in's inputs were wrong: the student's code sees the error
            return channel.error_message(error)

    # --- the worker and its children ---------------------------------------------------------------

    def _child_for(self, exercise_id: str) -> tuple[str, int, socket.socket]:
        if self.child is not None and self.child[0] == exercise_id:
            return self.child
        self._drop_child()
        worker = self._worker()
        if worker.outlived_by_processes():  # an earlier exercise's processes would cost this one: a fresh worker
            self._stop_worker()
            worker = self._worker()
            worker.outlived_by_processes()
        grader_end, child_end = socket.socketpair()
        try:
            start = {"start": worker.library("base"), "exercise": exercise_id,
                     "student_file": worker.library(self.plan["exercises"][exercise_id])}
            control_deadline = time.monotonic() + CONTROL_PATIENCE
            channel.send(worker.control, start, control_deadline)
            socket.send_fds(worker.control, [b"x"], [child_end.fileno()])
            started = channel.receive(worker.control, control_deadline)
            pid = int(started["started"])
        except (OSError, EOFError, TimeoutError, ValueError, KeyError, TypeError) as error:
            grader_end.close()
            self._stop_worker()
            raise Crashed(f"crashed: the sandbox could not start the exercise ({type(error).__name__}: {error}); "
                          f"{self._recent_output()}") from None
        finally:
            child_end.close()
        self.child = (exercise_id, pid, grader_end)
        return self.child

    def _worker(self) -> sandbox.Worker:
        if self.worker is not None and self.worker.process.poll() is None:
            return self.worker
        self._stop_worker()
        reader, writer = os.pipe()
        output = os.fdopen(writer, "wb")
        uid = None if self.uids is None else self.uids + self.workers_started % sandbox.UID_BLOCK
        self.workers_started += 1
        self.worker = sandbox.start(self.isolation, Path(self.plan["library_root"]), Path(self.plan["home"]), output,
                                    uid)
        output.close()
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

    def _crash_message(self, error: BaseException) -> str:
        """Why the child's socket closed: its exit status, from the worker."""
        status = "unknown"
        if self.child is not None and self.worker is not None:
            try:
                deadline = time.monotonic() + CONTROL_PATIENCE
                channel.send(self.worker.control, {"wait": self.child[1], "seconds": 2.0}, deadline)
                status = str(channel.receive(self.worker.control, deadline).get("status"))
            except (OSError, EOFError, TimeoutError, ValueError, AttributeError):
                self._stop_worker()
        self._drop_child()
        return crash_message(status, self._recent_output())

    def _drop_child(self) -> None:
        """Close the exercise child's socket and have the worker kill it."""
        if self.child is None:
            return
        _, pid, connection = self.child
        self.child = None
        connection.close()
        if self.worker is None:
            return
        try:
            deadline = time.monotonic() + CONTROL_PATIENCE
            channel.send(self.worker.control, {"kill": pid}, deadline)
            channel.receive(self.worker.control, deadline)
        except (OSError, EOFError, TimeoutError, ValueError):
            self._stop_worker()

    def _stop_worker(self) -> None:
        if self.worker is not None:
            sandbox.stop(self.worker)
            self.worker = None
        self.child = None

    def close(self) -> None:
        if self.child is not None:
            self.child[2].close()
            self.child = None
        self._stop_worker()


def crash_message(status: str, output: str) -> str:
    """'crashed: ...' for a worker child that ended with `status` ('exit 0', 'signal 11', ...)."""
    kind, _, number = status.partition(" ")
    if kind == "exit":
        how = (f"the code ended the process with exit status {number} before the test ended "
               f"(os._exit, or exit at the C level)")
    elif kind == "signal":
        import signal as signals
        try:
            name = signals.Signals(int(number)).name
        except ValueError:
            name = f"signal {number}"
        hint = {"SIGSEGV": " (a segmentation fault)", "SIGKILL": " (killed, perhaps out of memory)",
                "SIGXCPU": " (the CPU time limit)", "SIGXFSZ": " (a file grew past the size limit)",
                "SIGINT": " (an interrupt the code sent itself)"}.get(name, "")
        how = f"the process died by {name}{hint}"
    else:
        how = "the process ended"
    return f"crashed: {how}; {output}"


def check_gradients(student, expression: str, inputs, seed: int = 0, **options) -> bool:
    """Check the gradients the student's code computes for the named expression (`probes.EXPRESSIONS`) at
    `inputs` against central differences of the expression computed here (when a class is graded, by the
    grader's library): ℓ = Σ w ⊙ output for a random w drawn from `seed`. True, or GradcheckError."""
    __tracebackhide__ = True
    points = [np.array(value, dtype=np.float64) for value in inputs]
    weights = np.random.default_rng(seed).standard_normal(np.shape(probes.forward(expression, points, **options)))
    answer = student.gradients(expression, [point.copy() for point in points], weights, **options)
    claimed = answer.get("gradients") if isinstance(answer, dict) else None
    if not isinstance(claimed, list):
        raise GradcheckError(f"gradcheck failed for {expression}: the gradients came back as {type(claimed).__name__}")
    claimed = [np.zeros_like(point) if gradient is None else gradient for point, gradient in zip(points, claimed)] + \
        claimed[len(points):]

    def objective() -> float:
        return float((probes.forward(expression, points, **options) * weights).sum())

    return compare_with_finite_differences(expression, points, claimed, objective)


def check_local_gradients(student, expression: str, inputs, seed: int = 0, **options) -> bool:
    """Check the output's own backward rule, alone (`probes.local_gradients`: no other rule, no topological order, no
    sum_to_shape runs), against central differences of ℓ = Σ w ⊙ output computed here, for a random upstream
    gradient w drawn from `seed`: each gradient must have its input's shape (give inputs of one shape: a rule may
    answer at the broadcast shape). True, or GradcheckError naming the argument, the element and both values."""
    __tracebackhide__ = True
    points = [np.array(value, dtype=np.float64) for value in inputs]
    weights = np.random.default_rng(seed).standard_normal(np.shape(probes.forward(expression, points, **options)))
    claimed = student.local_gradients(expression, [point.copy() for point in points], weights, **options)
    if not isinstance(claimed, (list, tuple)):
        raise GradcheckError(f"gradcheck failed for {expression}'s backward rule: it returned "
                             f"{type(claimed).__name__}, not a tuple of one gradient per input")

    def objective() -> float:
        return float((probes.forward(expression, points, **options) * weights).sum())

    return compare_with_finite_differences(f"{expression}'s backward rule", points, list(claimed), objective)


def _known_kind(kind) -> str:
    known = (found.NOT_FOUND, found.DOES_NOT_COMPILE, found.TOO_LARGE, found.HELPER_OUTSIDE, "crashed")
    return kind if kind in known else "failed"


def grading_problem(exercise_id: str, root: Path) -> str | None:
    """In a student's own run: the message the grader gives instead of running the exercise's function (not found,
    a lambda, does not compile, too large, a helper written outside it), read from the file as the grader reads
    it; None if there is none, or in the full book (no manifest of what its module defines)."""
    manifest = read_manifest_data(root)
    exercise = EXERCISES[exercise_id]
    available = (manifest or {}).get("module_names", {}).get(exercise.module)
    if available is None:
        return None
    try:
        data = (Path(root) / exercise.module).read_bytes()[:MAX_MODULE_BYTES + 1]
        node = found.find(found.module_text(data, exercise, MAX_MODULE_BYTES), exercise, MAX_FUNCTION_LINES)
    except found.StudentFunctionError as error:
        return str(error)
    except OSError:
        return None  # (the import of the module has failed already, saying why)
    outside = found.helpers_outside(node, available)
    return found.helper_message(exercise, outside) if outside else None


def decided_outcome(exercise_id: str) -> GradingOutcome | None:
    """For a test of an exercise the grading plan decided before any test ran: its outcome; else None."""
    path = os.environ.get("MINITORCH_GRADING_PLAN")
    found = _decided(path).get(exercise_id) if path else None
    return None if found is None else GradingOutcome(found[1], kind=found[0])


@functools.lru_cache(maxsize=4)
def _decided(path: str) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8")).get("decided", {})


def from_environment():
    """`Direct()`, or a WorkerPool for the plan that MINITORCH_GRADING_PLAN names."""
    path = os.environ.get("MINITORCH_GRADING_PLAN")
    if not path:
        return Direct()
    return WorkerPool(json.loads(Path(path).read_text(encoding="utf-8")))
