"""The child of ``python -m bench ab_cutting_plane``: one source tree, one case, as JSON.

    PYTHONPATH=TREE python bench/ab_cutting_plane_child.py CASE

Run as a file by :mod:`bench.ab_cutting_plane` with ``PYTHONPATH`` set to the tree measured
(which may predate this file and the rest of this tree's bench): it imports nothing but the
standard library until it runs, then that tree's ``solvers`` and ``bench.problems``.
"""

from __future__ import annotations

import json
import os
import sys
import time

TIME_LIMIT = 60.0
BINARY_METHODS = ("cpa", "ocas", "gca2", "tca")
CS_METHODS = ("ocas", "gca2", "tca")
LL_EPS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8)


# -- the child: one tree, one case --------------------------------------------------------------


def _child(case: str) -> dict:
    import numpy as np
    from liblinear.liblinear import parameter
    from liblinear.liblinear import problem as ll_problem
    from liblinear.liblinearutil import train as ll_train
    from threadpoolctl import threadpool_limits

    import solvers
    from bench.paths import dataset_path
    from bench.problems import BenchProblem
    from solvers.cutting_plane import CuttingPlaneParams, solve, solve_crammer_singer
    from solvers.monitor import ListMonitor
    from solvers.problems import CrammerSingerProblem

    name, C, *only = case.split(":")
    C = float(C)
    out = {"case": case, "load": os.getloadavg()[0], "ours": {}, "liblinear": []}
    with threadpool_limits(limits=1, user_api="blas"):
        if name.startswith("cs-"):
            ds = solvers.read_svmlight(dataset_path(name[3:]))
            labels = np.searchsorted(ds.classes, ds.y)
            problem = CrammerSingerProblem(ds.X, labels, ds.classes.shape[0], C=C)
            runner, methods, tol, flag = solve_crammer_singer, CS_METHODS, 1e-3, 4
            X, y = ds.X, ds.y
            from bench.anchors import liblinear_crammer_singer_weights

            def ll_objective(model):
                return problem.objective(liblinear_crammer_singer_weights(
                    model, ds.classes, problem.n_features))
        else:
            bench_problem = BenchProblem(name, "hinge", "regularized", C)
            problem = bench_problem.binary_problem()
            runner, methods, tol, flag = solve, BINARY_METHODS, 1e-6, 3
            train = bench_problem.train_dataset()
            X, y = train.X, train.y
            from bench.anchors import liblinear_beta

            def ll_objective(model):
                return problem.objective(liblinear_beta(model, problem.n_features))
        # compile / load the cache of every kernel (the QP solvers too) before timing
        runner(problem, CuttingPlaneParams(C=C, max_iter=30))
        for method in (only or methods):
            monitor = ListMonitor(time_limit=TIME_LIMIT)
            start = time.perf_counter()
            solution = runner(problem, CuttingPlaneParams(C=C, method=method, tol=tol),
                              monitor)
            seconds = time.perf_counter() - start
            e = solution.extras
            out["ours"][method] = {
                "trace": [(r.elapsed, r.objective) for r in monitor.records],
                "seconds": seconds, "iterations": solution.iterations,
                "status": str(solution.status), "lower_bound": e["lower_bound"],
                "oracle": e["time_oracle"], "qp": e["time_qp"],
                "line_search": e["time_line_search"]}
        prob = ll_problem(y, X)
        prob.set_bias(1.0)
        for eps in LL_EPS:
            param = parameter(f"-s {flag} -c {C!r} -e {eps!r} -B 1 -q")
            start = time.perf_counter()
            model = ll_train(prob, param)
            seconds = time.perf_counter() - start
            out["liblinear"].append((seconds, ll_objective(model)))
    out["load_end"] = os.getloadavg()[0]
    return out


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1])))
