"""Compile everything a training job or a prediction can run, once per process.

Worker processes call :func:`warm_up` at start so that the first job does not pay for
compilation: the shared core's kernels (:func:`solvers.core.warm_up`), the loss layer's, the
SVMlight parser's, and what each registered solver calls beyond them (its spec's ``warm_up``
hook: mfn's clipped-loss and Gram kernels, the least-squares family's kernel rows, cache and
SMO loops).  No solver is trained: each hook calls its kernels on a few rows.  The kernels are
compiled with ``cache=True``, so after the first process on a machine this mostly loads
machine code from ``__pycache__``.

Once per machine, not once per process: :func:`warm_up` holds an exclusive file lock per step
(:func:`compile_lock`) while it compiles it, so that when a service starts its web process and
its workers at once on a cold cache, each step is compiled by one of them while the others
compile other steps or wait, then load what it wrote (seconds) instead of compiling the same
kernels side by side on the same cores.  The
waiters say that they wait, and everyone reports its steps (``progress(k, n, what)``), so a
watchdog can tell a compiling or waiting process from a hung one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from solvers.auto import measured_wins
from solvers.core.kernels import KERNEL_CODES, Kernel, column_operand, kernel_decision
from solvers.core.warmup import warm_up as warm_up_core
from solvers.data import warm_up_parser
from solvers.losses import LOSSES, get_loss
from solvers.models import LinearModel, OrdinalModel
from solvers.problems import balancing_shift
from solvers.registry import list_solvers


def warm_up_losses() -> None:
    """The loss layer's kernels, for every registered loss (lp at p = 1.5: its own code)."""
    xi = np.array([-1.0, 0.5, 2.5])
    weight = np.ones(3)
    for name in LOSSES:
        loss = get_loss(name, 1.5)
        loss.sum(xi, weight)
        loss.value(xi)
        loss.derivative(xi)
        if loss.code is not None:
            loss.curvature(xi)
        loss.prox(xi, weight)
        loss.conjugate_sum(np.zeros(3), weight)


def warm_up_problems() -> None:
    """The problem layer's kernels: the free bias's balancing shift."""
    balancing_shift(np.array([0.5, 0.2, 0.0]), np.array([1.0, -1.0, -1.0]), np.zeros(3),
                    np.ones(3))


def warm_up_prediction(parallel: bool = True) -> None:
    """The models' decision functions (linear, one-vs-rest, ordinal; the kernel model's are the
    least-squares family's warm-up)."""
    X = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0]])
    models = [LinearModel(np.ones((1, 3)), np.zeros(1), [-1.0, 1.0]),
              LinearModel(np.ones((3, 3)), np.zeros(3), [0.0, 1.0, 2.0]),
              OrdinalModel(np.ones(3), np.array([0.0, 1.0]), [1.0, 2.0, 3.0])]
    for model in models:
        for flag in ((False, True) if parallel else (False,)):
            model.predict(X, parallel=flag)


Progress = Callable[[int, int, str], None]
"""``progress(done, total, what)``: a warm-up's steps as they begin (``what`` is "compiling
STEP", ``done`` the steps done before it) and as they end (``what`` the step, ``done`` counting
it), and ``(done, total, "waiting ...")`` every few seconds while another process holds the
step's lock."""

#: How often a process waiting for the compile lock says so (seconds).
WAIT_REPORT_S = 2.0


def lock_path(what: str = "") -> Path:
    """The lock file of one warm-up step (``what``) of this installation's kernels: one set
    per package directory and Numba cache directory (the cache lives beside the sources
    unless ``NUMBA_CACHE_DIR`` says otherwise), which is what the locks guard."""
    package = str(Path(__file__).resolve().parent)
    cache = os.environ.get("NUMBA_CACHE_DIR", "")
    digest = hashlib.sha256(f"{package}\0{cache}\0{what}".encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"svmsvc-kernels-{digest}.lock"


@contextlib.contextmanager
def compile_lock(total: int, progress: Progress | None = None,
                 what: str = "") -> Iterator[None]:
    """Hold the machine's compile lock of step ``what`` (an exclusive ``flock``, released by
    the kernel when its holder dies, so a killed compiler never blocks the others),
    reporting the wait."""
    with open(lock_path(what), "a+b") as handle:
        waited_since = None
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                now = time.monotonic()
                if progress is not None and (waited_since is None
                                             or now - waited_since >= WAIT_REPORT_S):
                    progress(0, total, "waiting for another process compiling the kernels")
                    waited_since = now
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def compile_lock_if_free(what: str = "") -> Iterator[bool]:
    """The compile lock of step ``what`` if no other process holds it (yields True, held for
    the block), else at once False."""
    with open(lock_path(what), "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def warm_up_kernel_prediction() -> None:
    """The kernel models' decision function, serial, for every kernel."""
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    for name in KERNEL_CODES:
        kernel_decision(X, X, Kernel(name, 0.5, 2, 1.0), np.ones((1, 2)), np.zeros(1),
                        parallel=False, Z_columns=column_operand(X))


def serving_steps() -> list[tuple[str, Callable[[], None]]]:
    """What a web process runs: parsing and serial prediction (no solver)."""
    return [("SVMlight parser", warm_up_parser),
            ("prediction", lambda: warm_up_prediction(parallel=False)),
            ("kernel prediction", warm_up_kernel_prediction)]


def shared_steps(parallel: bool = True) -> list[tuple[str, Callable[[], None]]]:
    """The layers every solver runs on: the core, the parser, the losses, the problem layer
    and prediction."""
    return [("core kernels", lambda: warm_up_core(parallel=parallel)),
            ("SVMlight parser", warm_up_parser),
            ("losses", warm_up_losses),
            ("problem layer", warm_up_problems),
            ("prediction", lambda: warm_up_prediction(parallel))]


def worker_steps(parallel: bool = True) -> list[tuple[str, Callable[[], None]]]:
    """What a service's worker compiles before it takes jobs: the shared layers for int32
    indices (what the parser gives unless a matrix has 2^31 entries or columns; int64 ones
    compile when a job brings such data) and without the parser (a worker reads stored
    arrays).  Each solver's own kernels come later (``app.jobs.worker``)."""
    return [("core kernels (int32 indices)",
             lambda: warm_up_core(parallel=parallel, index_widths=(32,))),
            ("losses", warm_up_losses),
            ("problem layer", warm_up_problems),
            ("prediction", lambda: warm_up_prediction(parallel))]


def solver_steps() -> dict[str, Callable[[], None]]:
    """Each registered solver's own kernels beyond the shared layers (its spec's ``warm_up``
    hook), by solver name, those ``auto`` runs first most often first
    (:func:`solvers.auto.measured_wins`: on the measurements of 2026-11-27 mfn 51, dual_cd
    44, cutting_plane 26 of the fastest certified runs, alm 4), so that a service compiling
    them one after another while idle has the likely first job's soonest (alm's alone took a
    minute and a half of CPU cold: it no longer goes first)."""
    wins = measured_wins()
    specs = [spec for spec in list_solvers() if spec.warm_up is not None]
    specs.sort(key=lambda spec: -wins.get(spec.name, 0))  # stable: ties keep the registry's
    return {spec.name: spec.warm_up for spec in specs}


def warm_up_steps(parallel: bool = True) -> list[tuple[str, Callable[[], None]]]:
    """The warm-up, step by step: the shared layers, then each solver's own kernels."""
    return shared_steps(parallel) + [(f"solver {name}", step)
                                     for name, step in solver_steps().items()]


def warm_up(parallel: bool = True, progress: Progress | None = None,
            serving: bool = False,
            steps: list[tuple[str, Callable[[], None]]] | None = None) -> float:
    """Compile (or load from the on-disk cache) every kernel; returns the seconds it took
    (the waits included).  ``progress`` hears each step.  ``serving``: only what a web
    process runs (:func:`serving_steps`), not the solvers; ``steps``: these steps instead (a
    worker's shared layers, say).

    Each step has its own lock: a process takes the first step no other process is
    compiling, so that a service starting on a cold cache compiles its steps side by side
    in its processes, each step once; when every step left is another process's, it waits
    for the first and then loads what that process wrote."""
    start = time.perf_counter()
    if steps is None:
        steps = serving_steps() if serving else warm_up_steps(parallel)
    left = list(steps)
    total = len(left)

    def run(what: str, step: Callable[[], None]) -> None:
        if progress is not None:  # a first step on a cold cache takes minutes: say which
            progress(total - len(left), total, f"compiling {what}")
        step()

    while left:
        free = None  # the first step no other process holds, run under its lock
        for index, (what, step) in enumerate(left):
            with compile_lock_if_free(what) as acquired:
                if acquired:
                    run(what, step)
                    free = index
                    break
        if free is None:  # every step left is another process's: wait for the first
            free, (what, step) = 0, left[0]
            with compile_lock(total, progress, what):
                run(what, step)
        del left[free]
        if progress is not None:
            progress(total - len(left), total, what)
    return time.perf_counter() - start
