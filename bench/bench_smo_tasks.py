"""``python -m bench smo_tasks``: ``smo``'s other LIBSVM svm_types against LIBSVM
(scikit-learn's ``SVR``, ``NuSVR``, ``OneClassSVM``, ``NuSVC``) side by side in one run.

    python -m bench smo_tasks [--quick] [--repeats R] [--out DIR]

Problems (RBF, gamma = 1 / n_features, LIBSVM's default, given to both; ``cache_mb`` =
``CACHE_MB`` for both):

* epsilon-SVR (C = 1, epsilon = 0.1) and nu-SVR (C = 1, nu = 0.5) on cpusmall (8,192 rows;
  quick: a seeded 3,000) and abalone (4,177 rows; quick: 2,000), data/regression/;
* one-class (nu = 0.1) on ijcnn1's first 5,000 rows (quick: 2,000);
* nu-SVC (nu = 0.3) on dna (2,000 rows, 3 classes, one-vs-one).

Runners:

* ``smo kkt``: ``stop_rule="kkt"``, ``kkt_tol=1e-3``: LIBSVM's own rule and tolerance;
* ``smo gap``: the default, a certified relative duality gap of 1e-6;
* ``LIBSVM``: the scikit-learn estimator, ``tol=1e-3``, shrinking on.

Both run on one thread.  Each problem: one warm-up run of every runner (Numba compilation,
discarded), then ``repeats`` runs with the runners' order rotating; the median training time
is reported with the ratio ``smo kkt`` / LIBSVM, and LIBSVM's dual objective f = 1/2
alpha'Q alpha + p'alpha against ours (both recomputed here in float64 from the models'
coefficients; LIBSVM's a little worse at its tol 1e-3).  The load average at start and end is
recorded: the machine is shared, timings move with it.

Writes ``smo_tasks.json`` and ``smo_tasks.md`` to ``--out`` (default
bench/results/smo_tasks) and prints the Markdown.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVR, NuSVC, NuSVR, OneClassSVM

import solvers
from bench.bench_smo import interleaved, publish
from bench.commands import Command, out, quick, repeats
from bench.harness import machine_description
from bench.paths import dataset_path

CACHE_MB = 200.0
#: name: (svm_type, file, rows (None: all), quick rows, n_features, parameters)
PROBLEMS = {
    "cpusmall eps-SVR": ("epsilon_svr", "regression/cpusmall_scale", None, 3000, 12,
                         {"C": 1.0, "epsilon": 0.1}),
    "cpusmall nu-SVR": ("nu_svr", "regression/cpusmall_scale", None, 3000, 12,
                        {"C": 1.0, "nu": 0.5}),
    "abalone eps-SVR": ("epsilon_svr", "regression/abalone_scale", None, 2000, 8,
                        {"C": 1.0, "epsilon": 0.1}),
    "abalone nu-SVR": ("nu_svr", "regression/abalone_scale", None, 2000, 8,
                       {"C": 1.0, "nu": 0.5}),
    "ijcnn1 one-class": ("one_class", "ijcnn1", 5000, 2000, 22, {"nu": 0.1}),
    "dna nu-SVC": ("nu_svc", "dna.scale", None, None, 180, {"nu": 0.3}),
}
ESTIMATORS = {"epsilon_svr": SVR, "nu_svr": NuSVR, "one_class": OneClassSVM,
              "nu_svc": NuSVC}


def problem(name: str, quick: bool) -> solvers.Dataset:
    _, file, rows, quick_rows, d, _ = PROBLEMS[name]
    data = solvers.read_svmlight(dataset_path(file), n_features=d)
    if quick and quick_rows is not None:
        rows = quick_rows
    if rows is not None and rows < data.n_samples:
        if file == "ijcnn1":
            keep = np.arange(rows)
        else:
            keep = np.sort(np.random.default_rng(0).permutation(data.n_samples)[:rows])
        data = data.subset(keep)
    return data


def _dual(svm_type: str, S, coef: np.ndarray, targets, params: dict, gamma: float) -> float:
    """LIBSVM's f = 1/2 alpha'Q alpha + p'alpha from a single function's coefficients (nu-SVC:
    1/2 c'K c of each pair, LIBSVM's obj after the 1/r rescaling, summed by the caller)."""
    quad = 0.5 * coef @ rbf_kernel(S, S, gamma=gamma) @ coef
    if svm_type == "epsilon_svr":
        return float(quad + params["epsilon"] * np.abs(coef).sum() - targets @ coef)
    if svm_type == "nu_svr":
        return float(quad - targets @ coef)
    return float(quad)


def _pairs(coef: np.ndarray, n_support) -> list[tuple[np.ndarray, np.ndarray]]:
    """LIBSVM's one-vs-one layout: (rows, coefficients) of each pair (a, b): class a's SVs'
    in row b - 1 of ``dual_coef_``, class b's in row a."""
    starts = np.concatenate([[0], np.cumsum(n_support)])
    k = len(n_support)
    out = []
    for a in range(k):
        for b in range(a + 1, k):
            rows = np.r_[starts[a]:starts[a + 1], starts[b]:starts[b + 1]]
            out.append((rows, np.concatenate([coef[b - 1, starts[a]:starts[a + 1]],
                                              coef[a, starts[b]:starts[b + 1]]])))
    return out


def run_ours(name: str, data: solvers.Dataset, **stop):
    svm_type, *_, params = PROBLEMS[name]
    gamma = 1.0 / data.n_features
    clock = time.perf_counter()
    result = solvers.train(data, solver="smo", svm_type=svm_type, gamma=gamma,
                           cache_mb=CACHE_MB, **params, **stop)
    seconds = time.perf_counter() - clock
    model = result.model
    S = model.support_vectors_
    if svm_type == "nu_svc":
        dual = sum(0.5 * c @ rbf_kernel(S, S, gamma=gamma) @ c for c in model.coef_)
    else:
        lookup = {row.tobytes(): i for i, row in enumerate(data.X.toarray())}
        targets = np.array([data.y[lookup[s.tobytes()]] for s in S.toarray()])
        dual = _dual(svm_type, S, model.coef_[0], targets, params, gamma)
    return seconds, float(dual), {
        "iterations": sum(s.extras["smo_iterations"] for s in result.subproblems),
        "n_support": model.n_support,
        "gap": max(s.extras["relative_duality_gap"] for s in result.subproblems)}


def run_libsvm(name: str, data: solvers.Dataset):
    svm_type, *_, params = PROBLEMS[name]
    gamma = 1.0 / data.n_features
    estimator = ESTIMATORS[svm_type](gamma=gamma, tol=1e-3, cache_size=CACHE_MB, **params)
    clock = time.perf_counter()
    if svm_type == "one_class":
        estimator.fit(data.X)
    else:
        estimator.fit(data.X, data.y)
    seconds = time.perf_counter() - clock
    coef = estimator.dual_coef_
    coef = coef.toarray() if sp.issparse(coef) else np.asarray(coef)
    S = data.X[estimator.support_]
    if svm_type == "nu_svc":
        dual = sum(0.5 * c @ rbf_kernel(S[rows], S[rows], gamma=gamma) @ c
                   for rows, c in _pairs(coef, estimator.n_support_))
    else:
        dual = _dual(svm_type, S, coef[0], data.y[estimator.support_], params, gamma)
    return seconds, float(dual), {"iterations": int(np.sum(estimator.n_iter_)),
                                  "n_support": int(estimator.support_.shape[0])}


RUNNERS = {
    "smo kkt": lambda name, data: run_ours(name, data, stop_rule="kkt", kkt_tol=1e-3),
    "smo gap": lambda name, data: run_ours(name, data),
    "LIBSVM": run_libsvm,
}


def run_command(args) -> int:
    machine = machine_description()
    rows = []
    for name in PROBLEMS:
        data = problem(name, args.quick)
        times, last = interleaved(RUNNERS, lambda run, n=name, d=data: run(n, d),
                                  args.repeats)
        reference = last["LIBSVM"][0]
        for runner, (dual, extra) in last.items():
            rows.append({"problem": name, "rows": data.n_samples, "runner": runner,
                         "seconds": statistics.median(times[runner]), "times": times[runner],
                         "dual": dual, "dual_vs_libsvm": (dual - reference) / abs(reference),
                         **extra})
    return publish(args, "smo_tasks", machine, rows, "smo kkt", "LIBSVM",
                   ["problem", "rows", "runner", "median s", "ratio to LIBSVM",
                    "f vs LIBSVM", "iterations", "SVs"],
                   lambda r, base: [r["problem"], str(r["rows"]), r["runner"],
                                    f"{r['seconds']:.3f}", f"{r['seconds'] / base:.2f}",
                                    f"{r['dual_vs_libsvm']:+.1e}", str(r["iterations"]),
                                    str(r["n_support"])])


COMMAND = Command(
    "smo_tasks", "smo's nu-SVC, one-class and SVRs against LIBSVM (scikit-learn)", run_command,
    description=__doc__,
    options=(
        quick(),
        repeats(3),
        out(Path(__file__).parent / "results" / "smo_tasks")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["smo_tasks", *sys.argv[1:]]))
