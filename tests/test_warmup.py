"""The warm-up compiles once per machine: a process that finds another compiling waits for it
(saying so), then loads the cache; every step is reported."""

from __future__ import annotations

import threading

from solvers.warmup import compile_lock, warm_up, warm_up_steps, worker_steps


def test_a_second_warm_up_waits_for_the_first_and_says_so():
    heard: list[tuple[int, int, str]] = []
    acquired = threading.Event()

    def second():
        with compile_lock(7, lambda *report: heard.append(report)):
            acquired.set()

    with compile_lock(7):
        waiter = threading.Thread(target=second)
        waiter.start()
        waiter.join(timeout=1.0)  # held here: it cannot have the lock yet
        assert not acquired.is_set()
    waiter.join(timeout=600.0)
    assert acquired.is_set()
    assert heard and heard[0] == (0, 7, "waiting for another process compiling the kernels")


def test_every_step_is_reported_in_order():
    heard: list[tuple[int, int, str]] = []
    warm_up(parallel=False, progress=lambda *report: heard.append(report))
    steps = [what for what, _ in warm_up_steps(parallel=False)]
    # another process on this machine may hold a step's lock (then that step comes later)
    ends = [report for report in heard if not report[2].startswith(("compiling ", "waiting "))]
    assert [done for done, _, _ in ends] == list(range(1, len(steps) + 1))
    assert sorted(what for _, _, what in ends) == sorted(steps)
    for done, total, what in ends:  # each step said when it began, before it ended
        assert heard.index((done - 1, total, f"compiling {what}")) < heard.index(
            (done, total, what))


def test_a_process_compiles_the_steps_no_other_process_is_compiling_first():
    """Each step has its own lock: with step "a" held elsewhere, a warm-up does "b" first,
    then waits for "a" (saying so) and runs it after the other process is done."""
    ran: list[str] = []
    heard: list[tuple[int, int, str]] = []
    held, release = threading.Event(), threading.Event()

    def other_process():
        with compile_lock(2, what="a"):
            held.set()
            release.wait(600)

    other = threading.Thread(target=other_process)
    other.start()
    assert held.wait(600)

    def step_b():
        ran.append("b")
        release.set()  # the other process finishes "a" while this one compiles "b"

    warm_up(steps=[("a", lambda: ran.append("a")), ("b", step_b)],
            progress=lambda *report: heard.append(report))
    other.join(600)
    assert ran == ["b", "a"]
    assert [report for report in heard if not report[2].startswith("waiting")] == [
        (0, 2, "compiling b"), (1, 2, "b"), (1, 2, "compiling a"), (2, 2, "a")]


def test_a_worker_starts_on_int32_indices_without_the_parser():
    steps = [what for what, _ in worker_steps(parallel=False)]
    assert steps == ["core kernels (int32 indices)", "losses", "problem layer", "prediction"]
