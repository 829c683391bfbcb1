"""``python -m bench smo``: ``smo`` (C-SVC by SMO) against LIBSVM (scikit-learn's SVC)
side by side in one run.

    python -m bench smo [--quick] [--repeats R] [--out DIR]

Problems (RBF, gamma="scale", C = 1; every column scaled to [-1, 1] by its largest |x|,
svmguide1 being published unscaled): svmguide1 (3,089 rows), a9a and ijcnn1 (seeded subsets of
5,000 and 10,000 rows; quick: 2,000 and 4,000) and dna (2,000 rows, 3 classes, one-vs-one).
Runners, each with the same C, gamma and ``cache_mb`` = ``CACHE_MB``:

* ``smo kkt``: ``stop_rule="kkt"``, ``kkt_tol=1e-3``: LIBSVM's own rule and tolerance;
* ``smo gap``: the default, a certified relative duality gap of 1e-6;
* ``SVC``: scikit-learn's SVC (LIBSVM 3.x inside), ``tol=1e-3``, shrinking on.

Both run on one thread: our SMO computes each kernel row serially (the loop is sequential in
nature), LIBSVM is single-threaded.  Each problem: one warm-up run of every runner (Numba
compilation, discarded), then ``repeats`` runs with the runners' order rotating; the median
training time is reported, with the ratio ``smo kkt`` / ``SVC``, the relative difference of
the dual objectives (ours from the model's records, LIBSVM's recomputed from its dual
coefficients) and the test accuracy on the shipped test file (a9a.t, ijcnn1.t, dna.scale.t,
svmguide1.t; the first 5,000 rows of a9a.t and ijcnn1.t).  The load average at start and end
is recorded: the machine is shared, timings move with it.

Writes ``smo.json`` and ``smo.md`` to ``--out`` (default bench/results/smo) and prints the
Markdown.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

import solvers
from bench.commands import Command, out, quick, repeats
from bench.harness import machine_description
from bench.paths import dataset_path

C = 1.0
CACHE_MB = 200.0
PROBLEMS = {  # name: (train file, rows (None: all), test file, n_features)
    "svmguide1": ("svmguide1", None, "svmguide1.t", 4),
    "a9a": ("a9a", 5000, "a9a.t", 123),
    "ijcnn1": ("ijcnn1", 10000, "ijcnn1.t", 22),
    "dna": ("dna.scale", None, "dna.scale.t", 180),
}
QUICK_ROWS = {"a9a": 2000, "ijcnn1": 4000}
TEST_ROWS = 5000


def _load(name: str, n_features: int) -> solvers.Dataset:
    return solvers.read_svmlight(dataset_path(name), n_features=n_features)


def _scaled(train: solvers.Dataset, test: solvers.Dataset):
    peak = np.asarray(abs(train.X).max(axis=0).todense()).ravel()
    scale = sp.diags(1.0 / np.where(peak > 0, peak, 1.0))
    return (solvers.Dataset(sp.csr_matrix(train.X @ scale), train.y),
            solvers.Dataset(sp.csr_matrix(test.X @ scale), test.y))


def problem(name: str, quick: bool):
    file, rows, test_file, d = PROBLEMS[name]
    train = _load(file, d)
    if quick and name in QUICK_ROWS:
        rows = QUICK_ROWS[name]
    if rows is not None and rows < train.n_samples:
        keep = np.sort(np.random.default_rng(0).permutation(train.n_samples)[:rows])
        train = train.subset(keep)
    test = _load(test_file, d)
    if test.n_samples > TEST_ROWS:
        test = test.subset(np.arange(TEST_ROWS))
    return _scaled(train, test)


def _libsvm_dual(svc: SVC, X, gamma: float) -> float:
    """sum |beta| - 1/2 beta'K beta of every binary problem of SVC (one-vs-one blocks)."""
    coef = svc.dual_coef_.toarray() if sp.issparse(svc.dual_coef_) else svc.dual_coef_
    sv = X[svc.support_]
    starts = np.concatenate([[0], np.cumsum(svc.n_support_)])
    k = len(svc.classes_)
    total = 0.0
    p = 0
    for a in range(k):
        for b in range(a + 1, k):
            # LIBSVM's layout: the coefficients of pair (a, b) for class a's SVs are in row
            # b - 1, for class b's in row a
            rows_a = np.arange(starts[a], starts[a + 1])
            rows_b = np.arange(starts[b], starts[b + 1])
            beta = np.concatenate([coef[b - 1, rows_a], coef[a, rows_b]])
            Z = sv[np.concatenate([rows_a, rows_b])]
            K = rbf_kernel(Z, Z, gamma=gamma)
            total += np.abs(beta).sum() - 0.5 * beta @ K @ beta
            p += 1
    return float(total)


def run_ours(train, test, **params):
    clock = time.perf_counter()
    result = solvers.train(train, solver="smo", C=C, kernel="rbf", gamma="scale",
                           cache_mb=CACHE_MB, **params)
    seconds = time.perf_counter() - clock
    dual = sum(s.extras["dual_objective"] for s in result.subproblems)
    accuracy = float(np.mean(result.model.predict(test.X) == test.y))
    iterations = sum(s.extras["smo_iterations"] for s in result.subproblems)
    return seconds, dual, accuracy, {"iterations": iterations,
                                     "n_support": result.model.n_support,
                                     "gap": max(s.extras["relative_duality_gap"]
                                                for s in result.subproblems)}


def run_svc(train, test):
    clock = time.perf_counter()
    svc = SVC(C=C, kernel="rbf", gamma="scale", tol=1e-3, cache_size=CACHE_MB).fit(train.X,
                                                                                train.y)
    seconds = time.perf_counter() - clock
    dual = _libsvm_dual(svc, train.X, svc._gamma)
    accuracy = float(np.mean(svc.predict(test.X) == test.y))
    return seconds, dual, accuracy, {"iterations": int(np.sum(svc.n_iter_)),
                                     "n_support": int(svc.support_.shape[0])}


RUNNERS = {
    "smo kkt": lambda tr, te: run_ours(tr, te, stop_rule="kkt", kkt_tol=1e-3),
    "smo gap": lambda tr, te: run_ours(tr, te),
    "SVC": run_svc,
}


def interleaved(runners: dict, call, repeats: int, warm_up: bool = True
                ) -> tuple[dict, dict]:
    """Each runner once to warm up (discarded; ``warm_up=False`` when the caller has warmed
    them), then ``repeats`` rounds with the runners' order rotating: ({runner: [seconds]},
    {runner: the rest of its last run's result}) of ``call(run) -> (seconds, *rest)``."""
    names = list(runners)
    for runner in names if warm_up else ():
        call(runners[runner])
    times = {r: [] for r in names}
    last = {}
    for repeat in range(repeats):
        for runner in names[repeat % len(names):] + names[:repeat % len(names)]:
            seconds, *rest = call(runners[runner])
            times[runner].append(seconds)
            last[runner] = rest
    return times, last


def geometric_mean(values) -> float:
    return math.exp(statistics.mean(math.log(v) for v in values))


def publish(args, stem: str, machine: dict, rows: list[dict], mine: str,
            reference: str | tuple[str, ...], header: list[str], cells, group=None,
            notes: tuple[str, ...] = ()) -> int:
    """The Markdown table (``header``, then ``cells(row, reference seconds)`` per row) and
    the ratio ``mine`` / ``reference`` per problem with their geometric mean, printed and
    written with the rows as ``stem``.md and ``stem``.json to ``args.out``.  ``reference``
    may name several runners: the fastest of them on each problem is the reference.  With
    ``group`` (a row's field, such as a tolerance) the problems are (problem, group) pairs
    and the geometric mean is given per group too; ``notes``: lines added at the end."""
    machine["load_average_at_end"] = os.getloadavg()[0]
    references = (reference,) if isinstance(reference, str) else tuple(reference)

    def case(r: dict) -> str:
        return r["problem"] if group is None else f"{r['problem']} at {r[group]:g}"

    problems = list(dict.fromkeys(case(r) for r in rows))
    seconds = {(case(r), r["runner"]): r["seconds"] for r in rows}
    base = {p: min(seconds[p, name] for name in references) for p in problems}
    ratios = {p: seconds[p, mine] / base[p] for p in problems}
    geomean = geometric_mean(ratios.values())
    lines = [f"Machine: {machine}", "", "| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cells(r, base[case(r)])) + " |" for r in rows]
    label = " or ".join(references) + (" (the faster)" if len(references) > 1 else "")
    lines += ["", f"{mine} / {label}: " + ", ".join(f"{k} {v:.2f}"
                                                   for k, v in ratios.items())
              + f"; geometric mean {geomean:.2f}"]
    by_group = {}
    if group is not None:
        for value in dict.fromkeys(r[group] for r in rows):
            by_group[f"{value:g}"] = geometric_mean(
                ratios[case(r)] for r in rows
                if r[group] == value and r["runner"] == mine)
        lines.append(f"geometric mean by {group}: " + ", ".join(
            f"{k} {v:.2f}" for k, v in by_group.items()))
    lines += notes
    text = "\n".join(lines)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"machine": machine, "rows": rows, "ratios": ratios, "geomean": geomean}
    if by_group:
        record[f"geomean_by_{group}"] = by_group
    (out / f"{stem}.json").write_text(json.dumps(record, indent=1))
    (out / f"{stem}.md").write_text(text + "\n")
    print(text)
    return 0


def run_command(args) -> int:
    machine = machine_description()
    rows = []
    for name in PROBLEMS:
        train, test = problem(name, args.quick)
        times, last = interleaved(RUNNERS, lambda run, tr=train, te=test: run(tr, te),
                                  args.repeats)
        reference = last["SVC"][0]
        for runner, (dual, accuracy, extra) in last.items():
            rows.append({"problem": name, "rows": train.n_samples, "runner": runner,
                         "seconds": statistics.median(times[runner]), "times": times[runner],
                         "dual": dual, "dual_vs_svc": (dual - reference) / abs(reference),
                         "accuracy": accuracy, **extra})
    return publish(args, "smo", machine, rows, "smo kkt", "SVC",
                   ["problem", "rows", "runner", "median s", "ratio to SVC", "dual vs SVC",
                    "test acc.", "iterations", "SVs"],
                   lambda r, base: [r["problem"], str(r["rows"]), r["runner"],
                                    f"{r['seconds']:.3f}", f"{r['seconds'] / base:.2f}",
                                    f"{r['dual_vs_svc']:+.1e}",
                                    f"{100 * r['accuracy']:.2f}%", str(r["iterations"]),
                                    str(r["n_support"])])


COMMAND = Command(
    "smo", "smo against LIBSVM (scikit-learn SVC, RBF kernel)", run_command, description=__doc__,
    options=(
        quick(),
        repeats(3),
        out(Path(__file__).parent / "results" / "smo")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["smo", *sys.argv[1:]]))
