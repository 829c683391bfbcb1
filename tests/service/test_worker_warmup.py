"""A worker is ready on the shared kernels and compiles each solver's own later: while idle
(never holding up a job: the dispatcher gives a worker that says "warming" no job) or, for
the solver a job asks for, before that job trains (the time limit starting after)."""

from __future__ import annotations

import multiprocessing
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from app.core.config import Settings
from app.jobs import worker as worker_module
from app.jobs.executors.interface import Assignment
from app.jobs.executors.local import ProcessExecutor, _Worker
from app.jobs.worker import BACKGROUND_LOCK, JobSpec, SolverWarmUp
from app.metrics import ServiceMetrics
from solvers.warmup import compile_lock, solver_steps


def drain(connection) -> list:
    heard = []
    while connection.poll(0):
        heard.append(connection.recv())
    return heard


@pytest.fixture
def private_locks(tmp_path, monkeypatch):
    """The compile locks of this test alone (``solvers.warmup.lock_path`` is under the
    temporary directory): on the machine, another test's service has idle workers that hold
    the real background lock while they compile (the suite's other xdist worker, for one),
    and a worker that finds it held rightly compiles nothing (a full run under load on
    2026-12-07 failed so)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def warm_up_of(names: list[str], ran: list[str]) -> SolverWarmUp:
    warm = SolverWarmUp()
    warm.pending = {name: (lambda name=name: ran.append(name)) for name in names}
    return warm


def test_every_registered_solver_with_kernels_of_its_own_is_left_for_later():
    assert set(SolverWarmUp().pending) == set(solver_steps())
    assert {"alm", "smo", "lssvm"} <= set(solver_steps())


def test_an_idle_worker_compiles_one_solver_at_a_time_saying_so(private_locks):
    dispatcher, worker = multiprocessing.Pipe()
    ran: list[str] = []
    warm = warm_up_of(["alm", "smo"], ran)
    warm.compile_one_while_idle(worker)
    assert ran == ["alm"] and list(warm.pending) == ["smo"]
    assert drain(dispatcher) == [("warming", "alm"), ("compiled", "alm"), ("idle",)]


@contextmanager
def held_elsewhere(what: str):
    """The compile lock ``what`` held by "another process" for the block (a thread: flock
    conflicts between two opens of the file, threads included)."""
    held, release = threading.Event(), threading.Event()

    def other_process():
        with compile_lock(1, what=what):
            held.set()
            release.wait(600)

    other = threading.Thread(target=other_process)
    other.start()
    try:
        assert held.wait(600)
        yield
    finally:
        release.set()
        other.join(600)


@pytest.mark.parametrize(("left", "compiled"), [(["alm"], []), (["alm", "smo"], ["smo"])])
def test_it_leaves_a_solver_another_process_compiles_to_it(left, compiled, private_locks):
    dispatcher, worker = multiprocessing.Pipe()
    ran: list[str] = []
    warm = warm_up_of(left, ran)
    with held_elsewhere("solver alm"):
        warm.compile_one_while_idle(worker)
    assert ran == compiled and list(warm.pending) == ["alm"]
    assert drain(dispatcher) == ([("warming", "smo"), ("compiled", "smo"), ("idle",)]
                                 if compiled else [])


def test_one_worker_of_the_machine_compiles_while_idle_the_others_stay_free(private_locks):
    dispatcher, worker = multiprocessing.Pipe()
    ran: list[str] = []
    warm = warm_up_of(["alm", "smo"], ran)
    with held_elsewhere(BACKGROUND_LOCK):
        warm.compile_one_while_idle(worker)  # another worker compiles in the background
    assert ran == [] and drain(dispatcher) == []
    warm.compile_one_while_idle(worker)  # its turn now
    assert ran == ["alm"]


def test_a_job_that_came_in_goes_first(private_locks):
    dispatcher, worker = multiprocessing.Pipe()
    ran: list[str] = []
    warm = warm_up_of(["alm"], ran)
    dispatcher.send(("run", str(uuid.uuid4()), 1))
    warm.compile_one_while_idle(worker)
    assert ran == [] and list(warm.pending) == ["alm"]
    assert drain(dispatcher) == [("warming", "alm"), ("idle",)]
    assert worker.recv()[0] == "run"  # still there for the worker's loop


class _Sessions:
    @contextmanager
    def write(self):
        yield None


def job_spec(solver: str) -> JobSpec:
    return JobSpec(job_id=uuid.uuid4(), attempt=1, solver=solver, params={}, time_limit_s=None,
                   dataset_id=uuid.uuid4(), dataset_digest="0" * 64,
                   validation_dataset_id=None, validation_digest=None)


@pytest.mark.parametrize(("solver", "compiled"), [("mfn", ["mfn"]), ("alm", []),
                                                  ("auto", [])])
def test_a_job_compiles_its_solvers_kernels_first_but_auto_compiles_as_it_runs(
        monkeypatch, solver, compiled):
    """A named solver's kernels first if not compiled yet (alm's are here); an auto job
    compiles nothing first: what its race calls compiles lazily (issue 48: compiling every
    candidate's kernels first made the first a9a job wait 154 s; lazily the whole job took
    1.2 CPU seconds cold)."""
    messages: list[str | None] = []
    monkeypatch.setattr(worker_module, "set_running_message",
                        lambda session, job_id, attempt, message: messages.append(message))
    dispatcher, worker = multiprocessing.Pipe()
    ran: list[str] = []
    warm = warm_up_of(["mfn", "smo"], ran)
    spec = job_spec(solver)
    warm.prepare_job(spec, _Sessions(), worker)
    assert ran == compiled
    assert set(warm.pending) == {"mfn", "smo"} - set(compiled)
    if compiled:
        assert messages == [f"compiling the kernels of {', '.join(compiled)} "
                            f"(the first job on this machine)", None]
    else:
        assert messages == []
    assert drain(dispatcher) == [("compiled", name) for name in compiled] + [
        ("training", str(spec.job_id))]


def test_the_solvers_auto_runs_first_most_often_compile_first():
    """While idle, the solvers in the order of their measured wins (solvers.auto's
    measurements), alm, the longest to compile and rarely first, no longer first."""
    from solvers.auto import measured_wins

    wins = measured_wins()
    order = list(solver_steps())
    assert [wins.get(name, 0) for name in order] == sorted(
        (wins.get(name, 0) for name in order), reverse=True)
    assert order[0] == max(wins, key=wins.get) and order.index("alm") > order.index("dual_cd")


def test_a_worker_compiling_one_step_longer_than_the_limit_is_not_killed(monkeypatch):
    """A warm-up step that compiles past SVMSVC_WORKER_WARM_UP_TIMEOUT_S on a loaded machine
    (907 s at load 20, measured) uses CPU: watched for CPU_WATCH_S, heard, not killed; one
    that used less than CPU_BUSY_SHARE of a core meanwhile (a wait waking now and then) is."""
    from app.jobs.executors import local

    cpu_seconds = [5.0]
    monkeypatch.setattr(local, "process_cpu_seconds", lambda pid: cpu_seconds[0])
    executor = ProcessExecutor(Settings(data_dir="unused"), metrics=ServiceMetrics())
    killed: list[int] = []
    dispatcher, _ = multiprocessing.Pipe()
    process = SimpleNamespace(pid=12345, is_alive=lambda: True,
                              kill=lambda: killed.append(1))
    long_ago = time.monotonic() - 10 * executor._settings.worker_warm_up_timeout_s
    slot = _Worker(0, process, dispatcher, heard=long_ago)
    executor._workers.append(slot)

    def watched_for_the_window(used: float) -> None:
        executor._kill_hung()  # past the deadline: watched from now
        assert killed == [] and slot.cpu_seen is not None and slot.cpu_seen[0] == cpu_seconds[0]
        executor._kill_hung()  # within the window: not judged yet
        assert killed == [] and slot.cpu_seen is not None
        slot.cpu_seen = (cpu_seconds[0], time.monotonic() - local.CPU_WATCH_S - 1.0)
        cpu_seconds[0] += used
        executor._kill_hung()

    # 0.5 CPU-s in about 11 s: about 5% of a core, what a compile got at load 20
    watched_for_the_window(0.5)
    assert killed == [] and not slot.hung and slot.heard > long_ago and slot.cpu_seen is None
    slot.heard = long_ago
    # a hung wait: 10 ms of CPU in the window
    watched_for_the_window(0.01)
    assert killed == [1] and slot.hung


def test_the_pool_gives_no_job_to_a_worker_compiling_and_times_a_job_from_its_training():
    executor = ProcessExecutor(Settings(data_dir="unused"), metrics=ServiceMetrics())
    dispatcher, worker_end = multiprocessing.Pipe()
    process = SimpleNamespace(pid=100, is_alive=lambda: True)
    slot = _Worker(0, process, dispatcher, ready=True)
    executor._workers.append(slot)
    assert executor.idle() == 1

    worker_end.send(("warming", "alm"))
    executor._receive(slot)
    assert executor.idle() == 0
    assert executor.snapshot()[0].state == "compiling solver alm's kernels while idle"
    worker_end.send(("idle",))
    executor._receive(slot)
    assert executor.idle() == 1 and executor.snapshot()[0].state is None

    job_id = uuid.uuid4()
    slot.assignment = Assignment(job_id, 1, time_limit_s=10.0, started=time.monotonic() - 100)
    worker_end.send(("training", str(job_id)))
    executor._receive(slot)
    assert time.monotonic() - slot.assignment.started < 60  # the clock restarted
