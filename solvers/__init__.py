"""svmsvc's solver library: data, the shared Numba core, problems, solvers and models.

Usable on its own (no web or SQL imports)::

    import solvers
    ds = solvers.read_svmlight("a9a")
    result = solvers.train(ds, solver="mfn", C=1.0)
    result.model.predict(ds.X)
"""

import os as _os

# Numba's OpenMP threads spin after every parallel region by default (libgomp: ~3 ms); on a
# machine shared by several worker processes (or with a busy Python thread between kernels)
# the spinning steals the cores the work needs.  A passive wait alone makes every region pay
# for waking a sleeping thread (~40 us on the 2-core VM), which CGLS does twice per iteration;
# a bounded spin of 10,000 (~0.1 ms, libgomp's GOMP_SPINCOUNT overrides the policy's 0) keeps
# back-to-back regions cheap (~1 us) without the long spin.  Both must be set before the
# OpenMP runtime loads.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
_os.environ.setdefault("GOMP_SPINCOUNT", "10000")

from solvers.base import (
    InvalidParametersError,
    Solution,
    SolverParams,
    SolverSpec,
    Termination,
    UnknownSolverError,
    WarmStart,
)
from solvers.data import (
    Dataset,
    SVMLightFormatError,
    SVMLightLimitError,
    SVMLightStreamParser,
    read_svmlight,
    write_svmlight,
)
from solvers.evaluate import evaluate  # noqa: E402  (the function: solvers.evaluate(model, ds))
from solvers.models import LinearModel, Model, ModelExportError, ModelFormatError, load_model
from solvers.monitor import IterationRecord, ListMonitor, Monitor, Reporter
from solvers.problems import BinaryProblem, CrammerSingerProblem, OrdinalProblem
from solvers.registry import get_solver, list_solvers
from solvers.train import TrainResult, train
from solvers.warmup import warm_up

__all__ = [
    "BinaryProblem",
    "CrammerSingerProblem",
    "Dataset",
    "InvalidParametersError",
    "IterationRecord",
    "LinearModel",
    "ListMonitor",
    "Model",
    "ModelExportError",
    "ModelFormatError",
    "Monitor",
    "OrdinalProblem",
    "Reporter",
    "SVMLightFormatError",
    "SVMLightLimitError",
    "SVMLightStreamParser",
    "Solution",
    "SolverParams",
    "SolverSpec",
    "Termination",
    "TrainResult",
    "UnknownSolverError",
    "WarmStart",
    "get_solver",
    "list_solvers",
    "evaluate",
    "load_model",
    "read_svmlight",
    "train",
    "warm_up",
    "write_svmlight",
]
