"""Where a small ``solvers.train(..., solver="auto")`` call spends its time (issue 47): each
stage of ``train`` wrapped and timed, one Numba thread, ``calls`` calls after ``warm`` (the
median of the fastest quarter: the scheduler's quanta make plain medians bimodal on a loaded
machine), microseconds.

    python -m bench regression_stages [--calls 200] [--warm 5] [--tol 1e-3] [--out FILE.json]

Stages: ``validate`` (``train.validate_params``), ``features`` (``train.prepare_features``),
``rank`` (``auto.rank``), ``race`` (``portfolio.run`` less the winner's fit inside it),
``fit`` (the fit handler of the candidate that ran last), ``metadata``
(``train.training_metadata``); ``total`` the whole call, ``fastest`` its fastest call.  The
stages are wrapped by the names ``solvers.train`` calls, so the file runs against any tree
of the project (``PYTHONPATH`` chooses it): run it beside itself on two trees, at the same
time, to compare them.  It imports nothing of ``bench`` but ``bench.paths`` and the
command-line declaration (``bench.commands``).
"""

from __future__ import annotations

import importlib
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime

import numba
import numpy as np

import solvers
from bench.commands import Command, option
from bench.paths import dataset_path
from solvers import auto, portfolio

#: the module (``solvers.train`` the name is the function)
train_module = importlib.import_module("solvers.train")

#: (label, dataset, train's keywords): the sets of bench/README's table and two more
CASES = (
    ("heart, logistic, 1", "heart_scale", {"loss": "logistic", "C": 1.0}),
    ("diabetes, logistic, 10", "diabetes_scale", {"loss": "logistic", "C": 10.0}),
    ("australian, logistic, 1", "australian_scale", {"loss": "logistic", "C": 1.0}),
    ("mg, L2-SVR, 0.1", "regression/mg_scale",
     {"task": "regression", "loss": "squared_epsilon_insensitive", "C": 0.1}),
    ("housing, L2-SVR, 1", "regression/housing_scale",
     {"task": "regression", "loss": "squared_epsilon_insensitive", "C": 1.0}),
    ("bodyfat, L1-SVR, 1", "regression/bodyfat_scale",
     {"task": "regression", "loss": "epsilon_insensitive", "C": 1.0}),
)

_spent: dict[str, float] = {}


def _timed(name: str, function):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _spent[name] = _spent.get(name, 0.0) + time.perf_counter() - start
    return wrapper


def _instrument() -> None:
    train_module.validate_params = _timed("validate", train_module.validate_params)
    train_module.prepare_features = _timed("features", train_module.prepare_features)
    train_module.training_metadata = _timed("metadata", train_module.training_metadata)
    auto.rank = _timed("rank", auto.rank)
    portfolio.run = _timed("portfolio", portfolio.run)
    handler_for = train_module.fit_handler

    def fit_handler(*args, **kwargs):
        return _timed("fit", handler_for(*args, **kwargs))

    train_module.fit_handler = fit_handler


def fastest_quarter_median(values) -> float:
    ordered = sorted(values)
    return statistics.median(ordered[:max(1, len(ordered) // 4)])


def measure(label: str, name: str, settings: dict, calls: int, warm: int, tol: float) -> dict:
    data = solvers.read_svmlight(dataset_path(name))
    if settings.get("task") == "regression":
        settings = {**settings, "epsilon": 0.1 * float(np.std(data.y))}
    rows = []
    for k in range(warm + calls):
        _spent.clear()
        start = time.perf_counter()
        result = solvers.train(data, solver="auto", tol=tol, **settings)
        total = time.perf_counter() - start
        if k >= warm:
            stages = dict(_spent)
            stages["race"] = stages.get("portfolio", 0.0) - stages.get("fit", 0.0)
            stages["total"] = total
            rows.append(stages)
    names = ("total", "validate", "features", "rank", "race", "fit", "metadata")
    summary = {stage: round(1e6 * fastest_quarter_median([r.get(stage, 0.0) for r in rows]), 1)
               for stage in names}
    summary["fastest"] = round(1e6 * min(r["total"] for r in rows), 1)
    summary["winner"] = result.choice.candidate if result.choice else None
    summary["strategy"] = result.choice.strategy if result.choice else None
    summary["status"] = str(result.status)
    summary["objective"] = result.objective
    return {"case": label, **summary}


def run_command(args) -> int:
    numba.set_num_threads(1)
    _instrument()
    began = datetime.now(UTC).isoformat(timespec="seconds")
    load = [os.getloadavg()[0]]
    tree = os.path.dirname(os.path.dirname(os.path.abspath(solvers.__file__)))
    rows = [measure(label, name, dict(settings), args.calls, args.warm, args.tol)
            for label, name, settings in CASES]
    load.append(os.getloadavg()[0])
    document = {"tree": tree, "began": began,
                "ended": datetime.now(UTC).isoformat(timespec="seconds"),
                "load_average": load, "calls": args.calls, "tol": args.tol, "rows": rows}
    text = json.dumps(document, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0


COMMAND = Command(
    "regression_stages", "where a small train(solver='auto') call spends its time, by stage",
    run_command, description=__doc__,
    options=(option("--calls", type=int, default=200, help="timed calls per case"),
             option("--warm", type=int, default=5, help="untimed calls first"),
             option("--tol", type=float, default=1e-3, help="every call's tol"),
             option("--out", default=None, help="also write the JSON record here")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["regression_stages", *sys.argv[1:]]))
