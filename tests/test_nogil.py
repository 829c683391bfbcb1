"""The serial kernels the web process calls per request release the GIL (``nogil=True``).

A request thread that predicts or parses for a second must not freeze the event loop and every
other request thread for that second.  Each test runs one long call (prediction with each kind
of model, parsing an in-memory SVMlight body) while a side thread loops, noting the time at most
once a millisecond.  A call that held the GIL would stop the side thread for its whole length:
no note at all in the middle half of the call, and one stall as long as the call.  The call is
calibrated to take about ``_TARGET_SECONDS`` on this machine and must take at least
``_MIN_SECONDS``; the side thread must have run at least ``_MIN_NOTES`` distinct milliseconds
in the middle half (unloaded it runs nearly all of them, hundreds) and never have stalled for
half the call (unloaded: a few milliseconds).  Both bounds leave a factor of tens for a busy
machine, where the operating system shares the cores between the two threads and others.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from solvers.core.kernels import Kernel
from solvers.core.sparse import matvec_serial
from solvers.data import SVMLightStreamParser
from solvers.data import svmlight as svmlight_module
from solvers.models import KernelModel, LinearModel

pytestmark = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="needs compiled kernels")

_TARGET_SECONDS = 0.6
_MIN_SECONDS = 0.25
_MIN_NOTES = 5


class SideThread:
    """A Python thread that loops while the block runs, counting its iterations and noting the
    time whenever a millisecond has passed since its last note."""

    def __init__(self):
        self.iterations = 0
        self.notes: list[float] = []
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        notes = self.notes
        last = -1.0
        while not self._stop:
            now = time.perf_counter()
            self.iterations += 1
            if now - last >= 1e-3:
                notes.append(now)
                last = now

    def __enter__(self) -> SideThread:
        self._thread.start()
        while not self.notes:  # running before the call starts
            time.sleep(1e-3)
        return self

    def __exit__(self, *exc) -> None:
        self._stop = True
        self._thread.join()

    def notes_between(self, start: float, end: float) -> int:
        return sum(1 for t in self.notes if start < t < end)

    def longest_stall(self, start: float, end: float) -> float:
        """The longest time in [start, end] during which the side thread noted nothing."""
        inside = [start, *(t for t in self.notes if start < t < end), end]
        return max(b - a for a, b in zip(inside, inside[1:], strict=False))


@dataclass
class Observation:
    seconds: float
    middle_notes: int
    longest_stall: float
    side_iterations: int


def observe(call) -> Observation:
    """Run ``call()`` on this thread while a :class:`SideThread` runs."""
    with SideThread() as side:
        before = side.iterations
        start = time.perf_counter()
        call()
        end = time.perf_counter()
        iterations = side.iterations - before
    quarter = (end - start) / 4
    return Observation(end - start, side.notes_between(start + quarter, end - quarter),
                       side.longest_stall(start, end), iterations)


def calibrated(make_call, target: float = _TARGET_SECONDS, max_scale: int = 1 << 30):
    """``make_call(scale)`` for a scale at which one call takes about ``target`` seconds here
    (the work grows linearly with the scale).  The first call compiles the kernels."""
    scale = 1
    call = make_call(scale)
    call()
    while True:
        start = time.perf_counter()
        call()
        seconds = time.perf_counter() - start
        if seconds >= target / 4 or scale >= max_scale:
            break
        scale = min(max_scale, scale * 8)
        call = make_call(scale)
    scale = min(max_scale, max(scale, int(scale * target / max(seconds, 1e-6))))
    return make_call(scale), scale


def observe_long(make_call, max_scale: int = 1 << 30) -> Observation:
    """Observe a call calibrated to take ``_TARGET_SECONDS`` (grown and observed again while it
    takes less than ``_MIN_SECONDS``: a calibration on a momentarily slow machine)."""
    call, scale = calibrated(make_call, max_scale=max_scale)
    seen = observe(call)
    for _ in range(3):
        if seen.seconds >= _MIN_SECONDS or scale >= max_scale:
            break
        scale = min(max_scale, 2 * scale)
        seen = observe(make_call(scale))
    return seen


def assert_side_thread_ran(seen: Observation) -> None:
    assert seen.seconds >= _MIN_SECONDS, f"the call was too short to tell: {seen}"
    assert seen.middle_notes >= _MIN_NOTES, f"the side thread was blocked: {seen}"
    assert seen.longest_stall < seen.seconds / 2, f"the side thread was blocked: {seen}"


# -- workloads: make_call(scale) ----------------------------------------------------------------


def _random_csr(rng, n_rows: int, n_features: int, per_row: int) -> sp.csr_matrix:
    indices = np.sort(rng.random((n_rows, n_features)).argsort(axis=1)[:, :per_row], axis=1)
    indptr = np.arange(0, n_rows * per_row + 1, per_row)
    return sp.csr_matrix((rng.standard_normal(n_rows * per_row), indices.ravel(), indptr),
                         shape=(n_rows, n_features))


def binary_linear_prediction(scale: int):
    """matvec_serial, the kernel of a binary linear model's scores, over ``scale`` rows of
    2**20 entries each.  The rows share their entries (even rows span them all, odd rows are
    empty), so the work grows without the memory."""
    rng = np.random.default_rng(0)
    entries, n_features = 1 << 20, 1 << 16
    indices = rng.integers(0, n_features, entries).astype(np.int32)
    data = rng.standard_normal(entries)
    n_rows = 2 * scale
    indptr = np.zeros(n_rows + 1, dtype=np.int32)
    indptr[1::2] = entries
    w = rng.standard_normal(n_features)
    out = np.empty(n_rows)
    return lambda: matvec_serial(indptr, indices, data, w, 0.5, out)


def multiclass_linear_prediction(scale: int):
    """A one-vs-rest linear model with ``scale`` classes (matmat_serial)."""
    rng = np.random.default_rng(1)
    X = _random_csr(rng, 4000, 200, 50)
    model = LinearModel(rng.standard_normal((scale + 2, 200)), np.zeros(scale + 2),
                        np.arange(scale + 2))
    return lambda: model.decision_function(X)


def kernel_prediction(scale: int):
    """An RBF kernel model of 1000 support vectors scoring ``scale`` rows
    (kernel_decision_serial, row norms)."""
    rng = np.random.default_rng(2)
    support = _random_csr(rng, 1000, 40, 20)
    model = KernelModel(support, rng.standard_normal((1, 1000)), [0.1], [-1.0, 1.0],
                        Kernel("rbf", gamma=0.1))
    X = _random_csr(rng, scale, 40, 20)
    return lambda: model.decision_function(X)


def _svmlight_block(rng, n_lines: int = 1000, per_line: int = 20) -> bytes:
    lines = []
    for i in range(n_lines):
        columns = np.sort(rng.choice(500, per_line, replace=False)) + 1
        values = rng.random(per_line)
        features = " ".join(f"{c}:{v:.15f}" for c, v in zip(columns, values, strict=True))
        lines.append(f"{1 if i % 2 else -1} {features}\n")
    return "".join(lines).encode()


def svmlight_parse(scale: int):
    """An in-memory SVMlight body of ``scale`` blocks of 1000 lines fed in one piece, as the
    service's prediction route does."""
    body = _svmlight_block(np.random.default_rng(3)) * scale

    def parse():
        parser = SVMLightStreamParser(decompress=None)
        parser.feed(body)
        parser.finish()

    return parse


# -- the tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize("make_call", [binary_linear_prediction, multiclass_linear_prediction,
                                       kernel_prediction])
def test_prediction_lets_other_threads_run(make_call):
    assert_side_thread_ran(observe_long(make_call))


def test_parsing_lets_other_threads_run():
    # about 0.44 MB per block: at most ~450 MB of text
    assert_side_thread_ran(observe_long(svmlight_parse, max_scale=1000))


# -- the parser warm-up --------------------------------------------------------------------------


def _parser_kernels() -> dict:
    return {name: obj for name, obj in vars(svmlight_module).items()
            if isinstance(obj, numba.core.registry.CPUDispatcher)}


def test_parser_kernels_are_nogil():
    for name, kernel in _parser_kernels().items():
        if kernel.targetoptions.get("inline") == "always":
            continue  # compiled into its callers
        assert kernel.targetoptions.get("nogil"), name


_WARM_UP_CHECK = """
import gzip, json, time
from solvers.data import read_svmlight, warm_up_parser
from test_nogil import _parser_kernels

start = time.perf_counter()
seconds = warm_up_parser()
assert 0.0 < seconds <= time.perf_counter() - start  # the seconds the warm-up took
kernels = _parser_kernels()
compiled = {name: len(kernel.signatures) for name, kernel in kernels.items()}
text = b"# a comment\\n1 qid:3 cost:0.5 1:1 4:2.5e-1\\r\\n-1 qid:4 2:7 # far\\n"
for variant in [
    dict(source=text),
    dict(source=text, zero_based=True, n_features=10),
    dict(source=gzip.compress(b"1 sid:2 3:0.1234567890123456789\\n")),
    dict(source=b"2 1:1\\n-3 3000000000:1\\n"),
    dict(source=b"1 1:1\\n0 2:1\\n" * 40, chunk_size=7),
]:
    read_svmlight(**variant)
after = {name: len(kernel.signatures) for name, kernel in kernels.items()}
print(json.dumps({"compiled": compiled, "after": after}))
"""


@pytest.mark.slow
def test_warm_up_parser_compiles_what_parsing_runs():
    """In a fresh interpreter, parsing input of every kind after the warm-up compiles
    nothing more."""
    done = subprocess.run([sys.executable, "-c", _WARM_UP_CHECK], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)
    assert counts["compiled"]["_parse_lines"] == 2  # int32 and int64 column indices
    assert counts["compiled"]["_find_byte"] == 1
    assert counts["after"] == counts["compiled"]
