"""LIBLINEAR's multi-core build (``liblinear-multicore`` on PyPI, option ``-m``) as an anchor.

It installs a module named ``liblinear`` like liblinear-official, so it cannot share their
environment: it lives in its own virtual environment (``bench/.venvs/liblinear-multicore``,
made on first use with the interpreter that runs the benchmarks) and is called as a
subprocess.  The training set goes over once as an SVMlight file; the subprocess reads it with
LIBLINEAR's own reader, then times only ``train`` for each tolerance of the schedule (as the
liblinear-official runner does) and sends back the weights, whose objective is evaluated here
by :class:`solvers.BinaryProblem`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import solvers
from bench.anchors import LIBLINEAR_EPS_SCHEDULE, Liblinear, Run, _accuracy
from bench.problems import BenchProblem
from solvers.core import csr_matvec
from solvers.models import as_feature_matrix

VENV = Path(__file__).resolve().parent / ".venvs" / "liblinear-multicore"
PACKAGE = "liblinear-multicore"

# Runs inside the multi-core environment: argv = data file, solver type, C, bias, threads,
# eps...; prints one JSON object per eps: {"eps", "seconds", "w" (with the bias weight last),
# "labels"}.
_WORKER = r"""
import json, sys, time
from liblinear.liblinearutil import svm_read_problem, train, problem, parameter
path, solver_type, C, bias, threads = sys.argv[1:6]
y, x = svm_read_problem(path)
prob = problem(y, x)
prob.set_bias(float(bias))
for eps in sys.argv[6:]:
    param = parameter(f"-s {solver_type} -c {C} -e {eps} -B {bias} -m {threads} -q")
    start = time.perf_counter()
    model = train(prob, param)
    seconds = time.perf_counter() - start
    n = model.get_nr_feature() + (1 if model.bias >= 0 else 0)
    w = [model.w[i] for i in range(n)]
    print(json.dumps({"eps": float(eps), "seconds": seconds, "w": w,
                      "labels": list(model.get_labels()), "nr_feature": model.get_nr_feature()}),
          flush=True)
"""


class MulticoreUnavailable(RuntimeError):
    pass


_UNAVAILABLE: str | None = None  # why the environment cannot be made ("" once it exists)


def python() -> Path:
    """The environment's interpreter, made (venv + pip install) on first use."""
    interpreter = VENV / "bin" / "python"
    if interpreter.exists():
        return interpreter
    VENV.parent.mkdir(parents=True, exist_ok=True)
    steps = ([sys.executable, "-m", "venv", str(VENV)],
             [str(interpreter), "-m", "pip", "install", "-q", PACKAGE])
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise MulticoreUnavailable(f"{' '.join(step)} failed: {done.stderr.strip()[-500:]}")
    return interpreter


class LiblinearMulticore:
    """liblinear-multicore ``-s solver_type -m threads``, ``-B bias_scale``."""

    anchor = True

    def __init__(self, solver_type: int, threads: int = 2,
                 eps_schedule=LIBLINEAR_EPS_SCHEDULE):
        self.solver_type = solver_type
        self.threads = threads
        self.eps_schedule = eps_schedule
        self.name = f"liblinear-multicore -s {solver_type} -m {threads}"
        self._files: dict = {}

    def supports(self, problem: BenchProblem) -> bool:
        """The problem is LIBLINEAR's, and the environment exists or can be made (without a
        package index the anchor is left out, with the reason on stderr, once)."""
        if not Liblinear.solves(self.solver_type, problem):
            return False
        global _UNAVAILABLE
        if _UNAVAILABLE is None:
            try:
                python()
                _UNAVAILABLE = ""
            except MulticoreUnavailable as exc:
                _UNAVAILABLE = str(exc)
                print(f"liblinear-multicore left out: {exc}", file=sys.stderr)
        return not _UNAVAILABLE

    def _data_file(self, problem: BenchProblem) -> Path:
        key = (problem.dataset, problem.n_rows)
        if key not in self._files:
            handle = tempfile.NamedTemporaryFile(prefix="llmc-", suffix=".svm", delete=False)
            handle.close()
            solvers.write_svmlight(problem.train_dataset(), handle.name)
            self._files = {key: Path(handle.name)}  # one dataset at a time
        return self._files[key]

    def fits(self, problem: BenchProblem) -> list[tuple[float, np.ndarray]]:
        """(seconds, beta) for each eps of the schedule."""
        bias = problem.bias_scale if problem.bias == "regularized" else -1
        command = [str(python()), "-c", _WORKER, str(self._data_file(problem)),
                   str(self.solver_type), repr(problem.C), str(bias), str(self.threads),
                   *(repr(eps) for eps in self.eps_schedule)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
        if done.returncode != 0:
            raise MulticoreUnavailable(done.stderr.strip()[-1000:])
        n_features = problem.train_dataset().n_features
        out = []
        for line in done.stdout.splitlines():
            fit = json.loads(line)
            w = np.asarray(fit["w"], dtype=np.float64)
            if fit["labels"][0] != 1:
                w = -w
            beta = np.zeros(n_features + 1)
            nr = fit["nr_feature"]
            beta[:nr] = w[:nr]
            if bias >= 0:
                beta[-1] = w[nr]
            out.append((fit["seconds"], beta))
        return out

    def run(self, problem: BenchProblem) -> Run:
        bp = problem.binary_problem()
        fits = self.fits(problem)
        trace = [(seconds, bp.objective(beta)) for seconds, beta in fits]
        w, intercept = bp.split(fits[-1][1])

        def predict(X):
            scores = csr_matvec(as_feature_matrix(X, w.shape[0]), w, intercept)
            return np.where(scores > 0, 1.0, -1.0)

        return Run(self.name, trace, trace[-1][0], trace[-1][1],
                   _accuracy(predict, problem.test_dataset()),
                   f"eps schedule {self.eps_schedule[0]:g}..{self.eps_schedule[-1]:g}")
