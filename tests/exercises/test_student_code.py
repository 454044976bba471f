"""Specification of the grader's side of a student's worker (grader/trusted/worker_client.py, isolation.py,
worker.py, student_function.py): whatever a student's function does, the grader gets data back, or a clear
"timed out", "crashed" or reason why the function cannot be graded, and no process of the student's outlives
the worker.

Each test writes a body for exercise 3.1's function (causal_mask) in a copy of this book, gives the worker the
run's stand-in library and that copy's file, and calls the probe the way a graded test does, with the strongest
isolation available.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from minitorch.exercises.grader.trusted import isolation as sandbox
from minitorch.exercises.grader.channel import StudentError
from minitorch.exercises.grader.trusted.worker_library import copy_student_files, give_library, prepare_base
from minitorch.exercises.registry import EXERCISES, MAX_FUNCTION_LINES, ROOT, replace_bodies
from minitorch.exercises.grader.trusted.worker_client import Crashed, GradingOutcome, Refused, TimedOut, WorkerPool


def strongest_isolation() -> tuple[sandbox.Isolation, str]:
    """bubblewrap where it runs, else none; and why not bubblewrap (empty if it is in force)."""
    if shutil.which("bwrap") is None:
        return sandbox.choose("none"), "the bwrap command is not installed"
    try:
        return sandbox.choose("bubblewrap"), ""
    except sandbox.IsolationError as error:  # installed but unusable here (a container without user namespaces)
        return sandbox.choose("none"), str(error)


def isolations() -> dict[str, sandbox.Isolation | str]:
    """{mode: its Isolation, or why it cannot be had here} for every mode."""
    found = {}
    for kind in sandbox.KINDS:
        try:
            found[kind] = sandbox.choose(kind)
        except sandbox.IsolationError as error:
            found[kind] = str(error)
    return found


def passable(tmp_path: Path) -> Path:
    """A folder like `tmp_path` that a student's user can pass through to its library (pytest's lie in
    /tmp/pytest-of-root, which only root may enter): in /tmp, mode 711, removed at exit, as the grader's own."""
    folder = Path(tempfile.mkdtemp(prefix="minitorch-test-"))
    os.chmod(folder, 0o711)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


ISOLATION, NO_BUBBLEWRAP = strongest_isolation()
ISOLATIONS = isolations()
MODES = [pytest.param(isolation, id=mode, marks=pytest.mark.skipif(isinstance(isolation, str), reason=str(isolation)))
         for mode, isolation in ISOLATIONS.items()]
SANDBOXES = MODES[:2]  # bubblewrap and chroot
CAUSAL_MASK = EXERCISES["3.1"]


def pool_for(tmp_path: Path, body: str, timeout: float = 5.0, budget: float = 120.0, exercise=CAUSAL_MASK,
             source: bytes | None = None, isolation: sandbox.Isolation | None = None) -> WorkerPool:
    """A worker pool for a copy whose `exercise` function has the body `body` (unindented), or whose file is
    `source` (bytes), if given; in `isolation` (the strongest by default), as a student of its own."""
    isolation = isolation or ISOLATION
    if isolation.tree:  # (bubblewrap started as the student's user opens its library as that user)
        tmp_path = passable(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "minitorch", copy / "minitorch", ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / exercise.module
    if source is None:
        source = replace_bodies(path.read_text(), {exercise.function: body}, exercise.module).encode()
    path.write_bytes(source)
    give_library(prepare_base(ROOT, tmp_path / "base"), tmp_path / "lib")
    found = copy_student_files(copy, [exercise], tmp_path / "lib")
    assert exercise.id in found.copied, found
    (tmp_path / "home").mkdir()
    plan = {"isolation": isolation.__dict__, "uid": isolation.fresh_uid(), "library_root": str(tmp_path / "lib"),
            "home": str(tmp_path / "home"), "exercises": {exercise.id: f"student/{exercise.module}"},
            "timeout": timeout, "budget": budget}
    return WorkerPool(json.loads(json.dumps(plan)))


@pytest.fixture
def pools():
    made = []
    yield made
    for pool in made:
        pool.close()


@pytest.mark.skipif(bool(NO_BUBBLEWRAP), reason=NO_BUBBLEWRAP)
def test_bubblewrap_runs_the_python_of_a_virtual_environment_in_tmp(tmp_path):
    # The README suggests a virtual environment; one in /tmp must not vanish under the sandbox's own empty /tmp.
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, f"could not make a virtual environment: {made.stderr}"
    chosen = subprocess.run([str(venv / "bin" / "python"), "-c",
                             "from minitorch.exercises.grader.trusted import isolation; "
                             "print(isolation.choose('bubblewrap').kind)"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert chosen.returncode == 0 and chosen.stdout.strip() == "bubblewrap", (
        f"a grader run from a virtual environment in {tmp_path} cannot use bubblewrap:\n{chosen.stderr[-1500:]}")


def call(pool: WorkerPool, probe: str = "causal_mask", *args, exercise_id: str = "3.1"):
    return pool.call(exercise_id, time.monotonic(), probe, *(args or (4,)))


@pytest.mark.parametrize("isolation", MODES)
def test_a_correct_function_answers_with_data(tmp_path, pools, isolation):
    pools.append(pool := pool_for(tmp_path, "return np.triu(np.ones((length, length), dtype=bool), k=1)",
                                  isolation=isolation))
    mask = call(pool)["mask"]
    assert isinstance(mask, np.ndarray) and mask.dtype == bool and mask.shape == (4, 4)
    np.testing.assert_array_equal(mask, np.triu(np.ones((4, 4), dtype=bool), k=1))


def test_an_exception_of_the_students_code_arrives_as_itself(tmp_path, pools):
    pools.append(pool := pool_for(tmp_path, "raise ValueError(f'no mask of length {length}')"))
    with pytest.raises(ValueError, match="no mask of length 4"):
        call(pool)


@pytest.mark.parametrize("body, expected", [
    ("raise KeyboardInterrupt", "KeyboardInterrupt, raised by the code itself"),
    ("import sys\nsys.exit(0)", "SystemExit"),
    ("import pytest\npytest.exit('stop grading')", r"pytest\.exit\(\) was called"),
], ids=["KeyboardInterrupt", "sys.exit", "pytest.exit"])
def test_code_that_raises_what_is_not_an_error_fails_its_test_saying_so(tmp_path, pools, body, expected):
    pools.append(pool := pool_for(tmp_path, body))
    with pytest.raises(StudentError, match=expected):
        call(pool)


def test_a_hang_times_out_and_after_two_the_exercise_fails_at_once(tmp_path, pools):
    pools.append(pool := pool_for(tmp_path, "while True:\n    pass", timeout=1.0))
    for _ in range(2):
        started = time.monotonic()
        with pytest.raises(TimedOut, match="timed out after 1 s"):
            call(pool)
        assert time.monotonic() - started < 10, "the grader stops waiting at the test's timeout"
    started = time.monotonic()
    with pytest.raises(TimedOut, match="not run: 2 tests of exercise 3.1 already timed out"):
        call(pool)
    assert time.monotonic() - started < 0.5


def test_an_exit_in_the_middle_of_a_test_is_a_crash_with_its_status(tmp_path, pools):
    pools.append(pool := pool_for(tmp_path, "import os\nos._exit(3)"))
    with pytest.raises(Crashed, match="exit status 3 before the test ended"):
        call(pool)


def test_garbage_written_to_the_channel_is_a_crash_not_data(tmp_path, pools):
    body = ("from minitorch.exercises.grader.sandboxed import stand_in\nimport struct\n"
            "stand_in.CONNECTION.sendall(struct.pack('>I', 12) + b'not a frame!')\nreturn None")
    pools.append(pool := pool_for(tmp_path, body))
    with pytest.raises(Crashed, match="not plain data"):
        call(pool)


@pytest.mark.parametrize("probe", ["gradients", "local_gradients"])
def test_a_backward_rule_that_writes_into_its_upstream_gradient_fails_graded_as_in_the_students_run(tmp_path, pools,
                                                                                                     probe):
    """`grad *= 2` would change a gradient the engine shares in the student's own run (their tests fail) but
    score full marks when graded, on a private copy. Both hand the rule a read-only gradient."""
    body = "grad *= 2\nreturn grad * b / 2, grad * a / 2"
    pools.append(pool := pool_for(tmp_path, body, exercise=EXERCISES["1.2"]))
    inputs = [np.arange(1.0, 7.0).reshape(2, 3), np.arange(2.0, 8.0).reshape(2, 3)]
    with pytest.raises(ValueError, match="read-only"):
        pool.call("1.2", time.monotonic(), probe, "mul", inputs, np.ones((2, 3)))


def test_a_process_the_students_code_forks_never_answers_the_graders_calls(tmp_path, pools):
    """A fork inside the function returns twice: the copy in the forked process (here it raises) must end, not
    answer this call or read the next one from the shared socket."""
    body = """import os, time
if os.fork() == 0:
    raise RuntimeError("the forked copy's own failure")
time.sleep(0.3)
return np.triu(np.ones((length, length), dtype=bool), k=1)"""
    pools.append(pool := pool_for(tmp_path, body))
    for length in (4, 3):  # every call gets its own answer
        mask = call(pool, "causal_mask", length)["mask"]
        np.testing.assert_array_equal(mask, np.triu(np.ones((length, length), dtype=bool), k=1))


def test_the_grader_never_answers_for_the_exercise_under_test(tmp_path, pools):
    body = "from minitorch.exercises.grader.sandboxed.stand_in import ask_grader\nreturn ask_grader('3.1', length)"
    pools.append(pool := pool_for(tmp_path, body))
    for _ in range(2):  # the test that asked, and every later test of the exercise, fail
        with pytest.raises(Refused, match="asked the grader for exercise '3.1', which it does not need; exercise "
                                          "3.1 earns nothing"):
            call(pool)


def test_asking_for_another_exercises_function_it_does_not_need_is_refused_and_flagged(tmp_path, pools):
    """Exercise 2.4's stable_softmax calling 3.2's softmax_attention (the grader's, through its stand-in) must
    earn nothing: 2.4 does not need 3.2 (registry.EXERCISES)."""
    assert "3.2" not in EXERCISES["2.4"].needs
    body = ("from minitorch.paper import attention\nimport numpy as np\n"
            "return attention.softmax_attention(scores, np.zeros(scores.shape[-2:], dtype=bool))")
    pools.append(pool := pool_for(tmp_path, body, exercise=EXERCISES["2.4"]))
    with pytest.raises(Refused, match="asked the grader for exercise '3.2'"):
        pool.call("2.4", time.monotonic(), "softmax", np.zeros((2, 2)), -1)
    assert "2.4" in pool.refused, "the copy is flagged"


@pytest.mark.parametrize("body, fails_with", [
    ("return (grad * b)[..., None], grad * a", "no broadcast explains it"),
    ("return np.broadcast_to(grad * b, (5, *np.shape(grad))), grad * a", "gradient"),
], ids=["a shape no broadcast explains", "a broadcastable shape"])
def test_an_honest_answer_of_a_wrong_shape_fails_its_test_and_is_never_refused(tmp_path, pools, body, fails_with):
    """A backward rule's gradient goes through the engine's unbroadcast, which may ask sum_to_shape (2.1): that is
    the library's call, not the student's, so a wrong shape fails as a mistake, and the copy is not flagged."""
    pools.append(pool := pool_for(tmp_path, body, exercise=EXERCISES["1.2"]))
    inputs = [np.arange(1.0, 7.0).reshape(2, 3), np.arange(2.0, 8.0).reshape(2, 3)]
    try:
        answer = pool.call("1.2", time.monotonic(), "gradients", "mul", inputs, np.ones((2, 3)))
    except Refused as refused:
        pytest.fail(f"an honest mistake was refused as if the code asked for another exercise: {refused}")
    except Exception as error:  # the engine's own error about the gradient's shape: the student's mistake
        assert fails_with in str(error), error
    else:
        claimed = answer["gradients"][0]
        assert np.shape(claimed) != (2, 3) or not np.allclose(claimed, inputs[1]), "the wrong answer looked right"
    assert pool.refused == {}, f"the copy was flagged: {pool.refused}"


def test_a_stand_in_the_exercise_needs_is_answered_with_the_graders_result_and_gradient(tmp_path, pools):
    """3.2 needs 2.4: a student's softmax_attention on the grader's stable_softmax gets values and gradients."""
    assert "2.4" in EXERCISES["3.2"].needs
    body = "return softmax(scores.masked_fill(future, -np.inf), axis=-1)"
    pools.append(pool := pool_for(tmp_path, body, exercise=EXERCISES["3.2"]))
    scores, future = np.arange(9.0).reshape(3, 3), np.triu(np.ones((3, 3), dtype=bool), 1)
    weights = pool.call("3.2", time.monotonic(), "softmax_attention", scores, future)["weights"]
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)
    gradients = pool.call("3.2", time.monotonic(), "gradients", "softmax_attention", [scores], np.ones((3, 3)),
                          future=future)["gradients"]
    np.testing.assert_allclose(gradients[0], 0.0, atol=1e-12)  # rows of a softmax sum to one: Σ ∂/∂s = 0


def test_the_generic_probe_calls_an_exercise_on_data_with_tensors_in_and_out_as_arrays(tmp_path, pools):
    """probes.call("3.2", scores, future): the scores become a Tensor (the signature says so), the answer an array;
    the same through the worker as in a student's own run."""
    from minitorch.exercises.grader.trusted.worker_client import Direct
    body = "return softmax(scores.masked_fill(future, -np.inf), axis=-1)"
    pools.append(pool := pool_for(tmp_path, body, exercise=EXERCISES["3.2"]))
    scores, future = np.arange(9.0).reshape(3, 3), np.triu(np.ones((3, 3), dtype=bool), 1)
    expected = pool.call("3.2", time.monotonic(), "softmax_attention", scores, future)["weights"]
    for answer in (pool.call("3.2", time.monotonic(), "call", "3.2", scores, future=future),
                   Direct().call("3.2", scores, future)):
        assert isinstance(answer, np.ndarray), f"the generic probe answered a {type(answer).__name__}, not an array"
        np.testing.assert_allclose(answer, expected, err_msg="the generic probe's answer differs from the probe's")
    weights, triggers = np.tril(np.full((1, 1, 4, 4), 0.25)), np.array([2])  # a causal map
    np.testing.assert_array_equal(Direct().call("3.4", weights, triggers),
                                  Direct().bos_mass_at_non_trigger_rows(weights, triggers))


@pytest.mark.parametrize("indent", ["", "        "], ids=["column-0", "deeper"])
def test_exercise_markers_of_an_old_edition_anywhere_change_nothing(tmp_path, pools, indent):
    body = (f"{indent}# BEGIN EXERCISE 3.1\n"
            "return np.triu(np.ones((length, length), dtype=bool), k=1)\n"
            f"{indent}# END EXERCISE 3.1")
    pools.append(pool := pool_for(tmp_path, body))
    assert call(pool)["mask"].shape == (4, 4)


def test_a_latin_1_file_with_its_coding_cookie_is_graded(tmp_path, pools):
    text = (ROOT / CAUSAL_MASK.module).read_text()
    text = "# -*- coding: latin-1 -*-\n" + replace_bodies(
        text, {"causal_mask": "# Größe: L × L\nreturn np.triu(np.ones((length, length), dtype=bool), k=1)\n"},
        CAUSAL_MASK.module).replace("×", "x")
    pools.append(pool := pool_for(tmp_path, "", source=text.encode("latin-1", errors="replace")))
    assert call(pool)["mask"].shape == (4, 4)


@pytest.mark.parametrize("spoil, kind, said", [
    (lambda text: replace_bodies(text, {"causal_mask": "return _upper(length)\n"}, CAUSAL_MASK.module)
     + "\n\ndef _upper(length):\n    return np.triu(np.ones((length, length), dtype=bool), k=1)\n",
     "helper outside the function", "write helpers (functions, imports, constants) inside causal_mask"),
    (lambda text: text.replace("def causal_mask(", "def _old_causal_mask(")
     + "\n\ncausal_mask = lambda length: np.triu(np.ones((length, length), dtype=bool), k=1)\n",
     "function not found", "defines no function causal_mask at its top level"),
], ids=["a helper outside the function", "a lambda (the student's own run must not die with an AttributeError)"])
def test_what_the_grader_refuses_gets_the_same_message_in_the_students_own_run(tmp_path, pools, spoil, kind, said):
    from minitorch.exercises.grader.trusted.worker_client import grading_problem

    text = spoil((ROOT / CAUSAL_MASK.module).read_text())
    pools.append(pool := pool_for(tmp_path, "", source=text.encode()))
    with pytest.raises(GradingOutcome) as graded:
        call(pool)
    assert graded.value.kind == kind and said in str(graded.value), graded.value
    # The student's own run (an edition: the manifest lists the module's names) says the same, word for word.
    edition = tmp_path / "edition"
    shutil.copytree(Path(pool.plan["library_root"]).parent / "copy" / "minitorch", edition / "minitorch")
    from minitorch.exercises.edition import module_names
    manifest = {"handed_out": ["3.1"], "module_names": {CAUSAL_MASK.module: module_names(
        (ROOT / CAUSAL_MASK.module).read_text())}}
    (edition / "minitorch" / "exercises" / "edition.json").write_text(json.dumps(manifest))
    script = ("import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path\n"
              "from minitorch.exercises.grader.trusted.worker_client import grading_problem\n"
              "print(grading_problem('3.1', Path(sys.argv[1])))")
    local = subprocess.run([sys.executable, "-c", script, str(edition)], capture_output=True, text=True, timeout=120)
    assert local.stdout.strip() == str(graded.value), local.stderr


def test_an_answer_too_large_to_send_is_the_graders_outcome_not_an_error_the_code_raised(tmp_path, pools):
    """A 400 MB mask: the check log said the array cannot be sent, but the student read 'raised ValueError', and
    their code raised nothing. It is the grader's outcome, worded with the channel's limit and not the answer's size
    (which the hidden inputs decide)."""
    from minitorch.exercises.grader.trusted.student_text import what_happened

    pools.append(pool := pool_for(tmp_path, "return np.ones((3000, 3000), dtype=bool)"))
    with pytest.raises(GradingOutcome) as graded:
        call(pool)
    assert graded.value.kind == "failed" and str(graded.value).startswith("the answer cannot be sent to the grader"), (
        f"an answer the channel cannot carry is not an error the student's code raised: {graded.value!r}")
    said = what_happened("failed", str(graded.value), "3.1")
    assert "4,194,304 elements" in said and "9,000,000" not in said and "raised" not in said, said


def test_a_huge_function_is_refused_unread_within_the_budget(tmp_path, pools):
    body = "x = 0\n" * (MAX_FUNCTION_LINES + 10) + "return np.triu(np.ones((length, length), dtype=bool), k=1)"
    pools.append(pool := pool_for(tmp_path, body))
    with pytest.raises(GradingOutcome, match=f"may have at most {MAX_FUNCTION_LINES:,}") as graded:
        call(pool)
    assert graded.value.kind == "too large"


def test_a_file_beyond_the_size_limit_is_never_copied(tmp_path):
    copy = tmp_path / "copy"
    (copy / "minitorch" / "paper").mkdir(parents=True)
    (copy / CAUSAL_MASK.module).write_bytes(b"#" * (2 << 20))
    found = copy_student_files(copy, [CAUSAL_MASK], tmp_path / "lib")
    assert "too large" in found.missing["3.1"] and not (tmp_path / "lib" / "student").exists()


def test_a_function_that_does_not_compile_or_is_missing_says_so(tmp_path, pools):
    pools.append(pool := pool_for(tmp_path, "return (", exercise=CAUSAL_MASK))
    with pytest.raises(GradingOutcome, match="does not compile") as graded:
        call(pool)
    assert graded.value.kind == "does not compile"


def test_an_expression_too_deep_for_python_does_not_compile_and_is_no_crash_of_a_default_value():
    """mul_backward's body `z = 0 + 0 + ... (100,000 terms)`: Python's parser ran out of recursion, and the student
    read 'crashed: defining the function raised RecursionError (a default value on its def line ...)', though the
    function has no default value."""
    from minitorch.exercises.grader.sandboxed import student_function as found

    exercise = EXERCISES["1.2"]
    body = "z = " + " + ".join(["0"] * 100_000) + "\nreturn grad * b, grad * a"
    text = replace_bodies((ROOT / exercise.module).read_text(encoding="utf-8"), {exercise.function: body},
                          exercise.module)
    with pytest.raises(found.StudentFunctionError) as refused:
        found.compile_alone(found.find(text, exercise), exercise.module, {})
    said = str(refused.value)
    assert refused.value.kind == "does not compile" and "nested too deeply for Python to compile" in said, (
        f"an expression too deep for Python's parser does not compile; the student should read why: {said}")


@pytest.mark.parametrize("later", [
    "try:  # my version\n    def mul_backward(grad, a, b):\n        return grad * b, grad * a\n"
    "except Exception:\n    pass\n",
    "if True:\n    def mul_backward(grad, a, b):\n        return grad * b, grad * a\n",
    "class mul_backward:\n    pass\n", "from operator import mul as mul_backward\n"],
    ids=["def-in-try", "def-in-if", "class", "import-as"])
def test_a_function_defined_again_after_its_def_is_not_taken_and_the_line_is_named(later):
    """The top-level def mul_backward left a stub, a working one defined again below inside try: (Python keeps the
    later one, so the student's own run passed): the grader took the stub alone and said 'not attempted'."""
    from minitorch.exercises.grader.sandboxed import student_function as found

    exercise = EXERCISES["1.2"]
    text = (ROOT / exercise.module).read_text(encoding="utf-8") + "\n\n"
    line = text.count("\n") + 1 + next(n for n, text_line in enumerate(later.splitlines()) if "mul_b" in text_line)
    with pytest.raises(found.StudentFunctionError) as refused:
        found.find(text + later, exercise)
    said = str(refused.value)
    assert refused.value.kind == "function not found" and f"mul_backward again at line {line}" in said, (
        f"a second definition of mul_backward must be refused, naming its line {line}: {said}")
    method = "class Later:\n    def mul_backward(self):\n        return 0\n"  # a method binds no module name
    assert found.find(text + method, exercise).lineno < line, "a method of the same name is no second definition"


def test_the_students_time_budget_fails_what_is_left(tmp_path, pools):
    body = "import time\nif length == 5:\n    time.sleep(2)\nreturn None"
    pools.append(pool := pool_for(tmp_path, body, budget=6.0, timeout=30))
    call(pool, "causal_mask", 4)  # starts the worker
    with pytest.raises(TimedOut, match="budget of 6 s"):
        for _ in range(4):  # 8 s of sleeping: the budget runs out on the way
            call(pool, "causal_mask", 5)


LOOKER = """import os, subprocess
found = []
def sees(path):
    try:
        os.listdir(path) if os.path.isdir(path) else open(path, "rb").close()
    except FileNotFoundError:
        return False
    except OSError:
        return os.path.lexists(path)  # there, though unreadable
    return True
found += [path for path in $paths if sees(path)]
folder = os.getcwd()  # its cwd and every folder above it
while True:
    found += [os.path.join(folder, name) for name in (".git", "tests/hidden", "minitorch/softmax.py")
              if sees(os.path.join(folder, name))]
    if folder == os.path.dirname(folder):
        break
    folder = os.path.dirname(folder)
for pid in [pid for pid in (os.listdir("/proc") if os.path.isdir("/proc") else []) if pid.isdigit()]:
    for way in ("cwd", "root", "root" + $checkout):  # (the grader's cwd is its checkout)
        found += [f"/proc/{pid}/{way}/{name}" for name in ("minitorch/softmax.py", ".git")
                  if sees(f"/proc/{pid}/{way}/{name}")]
for command in (["git", "-C", $checkout, "show", "HEAD:minitorch/softmax.py"], ["git", "log", "-1"]):
    try:
        if subprocess.run(command, capture_output=True, timeout=30).returncode == 0:
            found.append(" ".join(command))
    except (OSError, subprocess.SubprocessError):
        pass
for folder in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", os.environ["HOME"]):
    try:
        open(os.path.join(folder, $left), "w").write("left behind")
    except OSError:
        pass
raise ValueError(repr(found))"""


@pytest.mark.parametrize("isolation", SANDBOXES)
def test_a_sandboxed_copy_finds_nothing_of_the_grader_or_another_student_and_leaves_nothing(tmp_path, pools,
                                                                                             isolation):
    """The issue's reader, in each sandbox: it looks for the grader's checkout (its paths, /proc, its own cwd and
    the folders above it, git), .git, tests/hidden, /run and the uid registry an earlier grader kept there, a file
    shared in the machine's /tmp, other users' files, and another student graded beside it; it finds none. What it
    writes (home, /tmp, /var/tmp, /dev/shm, /run/lock) is gone when its check ends."""
    left, shared = f"left-{os.getpid()}-{time.monotonic_ns()}", Path(tempfile.gettempdir(), f"shared-{os.getpid()}")
    shared.write_text("a file for whoever looks")
    atexit.register(shared.unlink, missing_ok=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "looker").mkdir()
    pools.append(other := pool_for(tmp_path / "other", "import os, builtins\nbuiltins.kept = open(os.environ['HOME'] "
                                   "+ '/mine', 'w')\nreturn np.zeros((length, length), dtype=bool)",
                                   isolation=isolation))
    call(other)  # its worker keeps running, holding its file
    others = [other.plan["home"], other.plan["library_root"], str(other.worker.root or "/nothing/else")]
    paths = [str(ROOT), str(ROOT / ".git"), str(ROOT / "tests" / "hidden"), str(ROOT / "minitorch" / "softmax.py"),
             str(ROOT / "chapters"), "/run", "/run/minitorch-grading-uids.json", str(shared), "/home", "/etc/passwd",
             *others, f"{sandbox.SANDBOX_ROOT}/home/mine", "/tmp/mine"]
    body = LOOKER.replace("$paths", repr(paths)).replace("$checkout", repr(str(ROOT))).replace("$left", repr(left))
    pools.append(looker := pool_for(tmp_path / "looker", body, timeout=60, isolation=isolation))
    with pytest.raises(ValueError) as seen:
        call(looker)
    assert str(seen.value) == "[]", f"a sandboxed copy ({isolation.kind}) found: {seen.value}"
    folders = [Path(looker.plan["home"]).parent, *(Path(folder) for folder in ("/tmp", "/var/tmp", "/dev/shm",
                                                                                "/run/lock"))]
    assert any(Path(looker.plan["home"]).parent.rglob("root-*")) == (isolation.kind == "chroot"), \
        "the chroot's root of its own is beside the student's scratch"
    looker.close()
    kept = [str(path) for folder in folders for path in (folder.rglob(left) if folder == folders[0] else
                                                          folder.glob(left))]
    assert kept == [], f"files the copy wrote outlived its check: {kept}"
    assert not any(folders[0].rglob("root-*")), "the worker's own root outlived it"


@pytest.mark.parametrize("isolation", MODES)
def test_no_process_the_student_starts_outlives_the_worker(tmp_path, pools, isolation):
    """A daemon (double fork, new session, SIGHUP ignored) keeps running; when the worker stops, no process of
    this run is left (counted by the run's marker, so another grading on the machine does not count)."""
    body = ("import os, signal, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            "        signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
            "        while True:\n            time.sleep(1)\n    os._exit(0)\ntime.sleep(1)\nreturn None")
    pool = pool_for(tmp_path, body, isolation=isolation)
    call(pool)
    running = sandbox.processes_of_run(isolation.run_marker)
    assert len(running) >= 3, f"the worker, its exercise child and the daemon should be running: {running}"
    pool.close()
    time.sleep(0.5)
    left = [pid for pid in sandbox.processes_of_run(isolation.run_marker) if _alive(pid)]
    assert left == [], f"processes of the student's worker survived it: {left}"
    assert pool.uids is None or sandbox.processes_of(pool.uids, sandbox.UID_BLOCK) == [], (
        "a process of the student's users survived")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return not Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"


def test_a_copy_of_an_edition_from_before_exercises_were_functions_is_refused_in_one_line(tmp_path):
    from minitorch.exercises.registry import ExerciseError

    copy = tmp_path / "copy"
    (copy / "minitorch" / "exercises").mkdir(parents=True)
    (copy / "minitorch" / "exercises" / "edition.json").write_text(json.dumps(
        {"handed_out": ["3.1"], "made_from": "a1e9307", "files": {"minitorch/ops.py": "0" * 64}}))
    with pytest.raises(ExerciseError, match="an edition made before exercises became functions") as refused:
        copy_student_files(copy, [CAUSAL_MASK], tmp_path / "lib")
    assert "\n" not in str(refused.value)


def test_how_an_answer_is_written_is_read_from_the_source_sent_before_any_student_code_ran(tmp_path, pools):
    """A looping make_targets that, once called, turns off tracing and sends the grader a loop-free 'source':
    the grader keeps the source the worker read from the file first."""
    from loop_rule import loops_in

    body = ("import sys\nsys.settrace(None)\nfrom minitorch.exercises.grader import channel\n"
            "from minitorch.exercises.grader.sandboxed import stand_in\n"
            "stand_in.CONNECTION.sendall(channel.encode({'source': 'def make_targets(x, triggers, residual):\\n"
            "    return x'}))\n"
            "y = x.copy() if residual else np.zeros_like(x)\nfor b in range(x.shape[0]):\n"
            "    y[b, triggers[b]] += x[b, 1:triggers[b] + 1].mean(axis=0)\nreturn y")
    pools.append(pool := pool_for(tmp_path, body, exercise=EXERCISES["4.1"]))
    x, triggers = np.zeros((2, 16, 16)), np.array([3, 5])
    pool.call("4.1", time.monotonic(), "make_targets", x, triggers)  # sends its forged source
    source = pool.call("4.1", time.monotonic(), "function_source", "4.1")
    assert "for b in range" in source and "for (line 10 of make_targets)" in loops_in(source), (
        source, loops_in(source))


def test_the_source_the_grader_reads_is_cut_where_python_cuts_lines(tmp_path, pools):
    """A form feed and a U+2028 in comments, CRLF line ends: the worker cut the function with str.splitlines(), which
    splits at both, and the grader read an honest loop-free make_targets as 'source that does not parse' (0/2)."""
    from loop_rule import loops_in

    exercise = EXERCISES["4.1"]
    body = ("# the tokens 1..j FORM-FEED of each sequence LINE-SEPARATOR, BOS left out\n"
            "positions = np.arange(x.shape[1])\nup_to = (positions >= 1) & (positions <= triggers[:, None])\n"
            "means = np.add.reduce(up_to[:, :, None] * x, axis=1) / triggers[:, None]\n"
            "y = x.copy() if residual else np.zeros_like(x)\ny[np.arange(len(x)), triggers] += means\nreturn y\n")
    text = replace_bodies((ROOT / exercise.module).read_text(), {exercise.function: body}, exercise.module)
    text = text.replace("FORM-FEED", "\x0c").replace("LINE-SEPARATOR", "\u2028").replace("\n", "\r\n")
    pools.append(pool := pool_for(tmp_path, "", exercise=exercise, source=text.encode()))
    x, triggers = np.random.default_rng(0).normal(size=(3, 6, 5)), np.array([2, 5, 1])
    answer = pool.call("4.1", time.monotonic(), "make_targets", x, triggers)
    assert np.allclose(answer["targets"][np.arange(3), triggers], [x[b, 1:j + 1].mean(axis=0)
                                                                  for b, j in enumerate(triggers)])
    source = pool.call("4.1", time.monotonic(), "function_source", "4.1")
    assert "\x0c" in source and "\u2028" in source and source.rstrip().endswith("return y"), repr(source)
    assert loops_in(source) == [], loops_in(source)


def test_the_grader_refuses_a_request_that_would_make_it_allocate_before_allocating(tmp_path, pools):
    """5.1 needs 3.1: causal_mask(40000) asked of the grader would take it 1.6 GB; it is refused unallocated."""
    from minitorch.exercises.grader.trusted.reference_answers import MAX_INTEGER

    body = "from minitorch.paper.attention import causal_mask\nreturn causal_mask(40000)"
    pools.append(pool := pool_for(tmp_path, body, exercise=EXERCISES["5.1"]))
    with pytest.raises(ValueError, match=f"for sizes up to {MAX_INTEGER}, got 40000"):
        pool.call("5.1", time.monotonic(), "softmax_construction", 2.0)


def test_a_function_name_assigned_again_after_its_def_is_not_taken(tmp_path, pools):
    """`causal_mask = None` after a right def must not score full marks, since the library would call None."""
    text = (ROOT / CAUSAL_MASK.module).read_text() + "\n\ncausal_mask = None\n"
    pools.append(pool := pool_for(tmp_path, "", source=text.encode()))
    with pytest.raises(GradingOutcome, match="assigns causal_mask again at line"):
        call(pool)
