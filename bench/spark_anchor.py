"""Spark MLlib's ``LinearSVC`` as the distributed path's anchor (issue 51), in an interpreter
of its own (``python -m venv DIR && DIR/bin/pip install pyspark``; Java from Debian's
``openjdk-17-jre-headless``), run as the oneDAL and Snap ML anchors are (:mod:`bench.interpreter`).

The problem is section 2.1's with the hinge loss and no bias:

    minimize  1/2 ||w||^2 + C sum_i max(0, 1 - y_i w.x_i)

and Spark's ``LinearSVC`` minimizes (1/n) sum_i max(0, 1 - y_i w.x_i) + regParam/2 ||w||^2
(OWL-QN over ``treeAggregate``), the same problem divided by C n when regParam = 1/(C n),
``standardization=False`` (Spark still scales the features inside, with the penalty
rescaled to the original space) and ``fitIntercept=False``.  The mapping is checked by the
objective values, not assumed: Spark's own last objective times C n against this library's
objective of the coefficients Spark returns (:func:`spark_runs` reports both).

Spark has no certified gap, so its time to a relative distance g from the optimum is the
fit time of the smallest ``maxIter`` of a schedule whose coefficients' objective (computed
here, on all the rows) is within g of the optimum (``tol`` set tiny so that ``maxIter``
ends each fit), and, finer, the iteration of the longest fit's objective history that first
gets there at that fit's mean time per iteration (an estimate); every fit reads nothing
(the rows are cached and counted before the first one, whose JVM warm-up is one discarded
fit).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import solvers
from bench.interpreter import interpreter, run_worker

#: maxIter of the fits whose objectives give Spark's time to a gap
SCHEDULE = (10, 50, 200)

# Runs in the Spark interpreter: argv = SVMlight path, n_features, C, the maxIter schedule
# (commas), partitions; prints {"rows", "read_seconds", "runs": [{"max_iter", "seconds",
# "iterations", "objective", "coefficients"}]}.
_WORKER = r"""
import json, sys, time
from pyspark.sql import SparkSession, functions as F
from pyspark.ml.classification import LinearSVC
path, d, C = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
schedule = [int(x) for x in sys.argv[4].split(",")]
partitions = int(sys.argv[5])
memory = sys.argv[6] if len(sys.argv) > 6 else "2g"
spark = (SparkSession.builder.master("local[2]").appName("svmsvc-anchor")
         .config("spark.ui.enabled", "false").config("spark.driver.memory", memory)
         .config("spark.sql.shuffle.partitions", str(partitions)).getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
start = time.perf_counter()
rows = (spark.read.format("libsvm").option("numFeatures", d).load(path)
        .withColumn("label", (F.col("label") > 0).cast("double"))
        .repartition(partitions).cache())
n = rows.count()
read_seconds = time.perf_counter() - start
def fit(max_iter):
    svc = LinearSVC(regParam=1.0 / (C * n), standardization=False, fitIntercept=False,
                    maxIter=max_iter, tol=1e-15, aggregationDepth=2)
    t = time.perf_counter()
    model = svc.fit(rows)
    seconds = time.perf_counter() - t
    history = list(model.summary().objectiveHistory) if callable(model.summary) else \
        list(model.summary.objectiveHistory)
    return {"max_iter": max_iter, "seconds": seconds, "iterations": len(history) - 1,
            "objective": history[-1] if history else None, "history": history,
            "coefficients": model.coefficients.toArray().tolist()}
fit(2)  # the JVM's warm-up, discarded
runs = [fit(m) for m in schedule]
print(json.dumps({"rows": n, "read_seconds": read_seconds, "runs": runs}))
spark.stop()
"""


def spark_python(given: str | None) -> str | None:
    """The Spark interpreter: ``given``, else ``$SVMSVC_SPARK_PYTHON``; None when absent."""
    return interpreter(given, "SVMSVC_SPARK_PYTHON")


def spark_runs(python: str, data: solvers.Dataset, path: Path, C: float,
               schedule=SCHEDULE, partitions: int = 2, driver_memory: str = "2g") -> dict:
    """Spark's fits on the SVMlight file ``path`` (``data``'s rows) at each ``maxIter`` of
    ``schedule``: seconds, iterations, Spark's objective times C n and this library's
    objective of the coefficients (hinge, no bias, C) on ``data``.  ``driver_memory``:
    ``spark.driver.memory`` (on ``local[2]`` the one JVM's heap, which caches the rows)."""
    out = run_worker(python, _WORKER, path, data.n_features, repr(C),
                     ",".join(str(m) for m in schedule), partitions, driver_memory)[-1]
    problem = solvers.BinaryProblem(data.X, np.where(data.y > 0, 1.0, -1.0), C=C,
                                    loss="hinge", bias="none")
    runs = []
    for run in out["runs"]:
        beta = np.append(np.asarray(run.pop("coefficients")), 0.0)
        objective = float(problem.objective(beta))
        scaled = None if run["objective"] is None else run["objective"] * C * out["rows"]
        runs.append({**run, "objective_here": objective, "spark_objective_scaled": scaled})
    return {"rows": out["rows"], "read_seconds": out["read_seconds"], "runs": runs}


def seconds_to(runs: list[dict], optimum: float, gap: float) -> tuple[float | None, int | None]:
    """(fit seconds, maxIter) of the first fit within relative ``gap`` of ``optimum``."""
    for run in runs:
        if (run["objective_here"] - optimum) / abs(optimum) <= gap:
            return run["seconds"], run["max_iter"]
    return None, None


def iterations_to(runs: list[dict], optimum: float, gap: float, C: float, rows: int
                  ) -> tuple[int | None, float | None]:
    """From the longest fit's objective history (Spark's own values times C n, checked
    against this library's by :func:`spark_runs`): the first iteration within relative
    ``gap`` of ``optimum`` and its time estimated at that fit's mean seconds per iteration
    (an estimate: the measured times are :func:`seconds_to`'s)."""
    longest = max(runs, key=lambda r: r["iterations"])
    per_iteration = longest["seconds"] / max(longest["iterations"], 1)
    for k, value in enumerate(longest["history"]):
        if (value * C * rows - optimum) / abs(optimum) <= gap:
            return k, k * per_iteration
    return None, None
