"""``python -m bench lssvm``: the least-squares SVM family against scikit-learn's SVC and
a dense direct solve, in one run.

    python -m bench lssvm [--quick] [--repeats R] [--out DIR]

1. Scaling (Joshi et al., Fig. 3): nested training subsets of mushrooms of k twelfths of the
   data (the paper's partition sizes; k = 1, 2, 3, 4, 6, 8, 11, quick: 1-3), the last twelfth
   held out for accuracy.  RBF gamma = 1, C = 0.5 (the paper's C_J = 2C = 1), A = 1e4,
   ``cache_mb`` = 512 (every kernel row of the largest subset fits).  Runners: ``lssvm``
   (method auto: Cholesky up to 3000 rows, projected CG beyond), ``lssvm`` CG, ``relaxed_lssvm``
   2SMO and SesquiSMO, ``proximal_svm`` (auto), a dense direct solve of (7) (the bordered
   (n+1) system by NumPy/LAPACK, the kernel matrix by scikit-learn's ``rbf_kernel``) and
   scikit-learn's ``SVC(kernel="rbf")`` (LIBSVM: the hinge loss, a different problem; same
   gamma, C and cache, for scale).  Each size: one warm-up run of every runner (discarded,
   Numba compilation), then ``repeats`` runs, the runner order rotating between repeats;
   the figure is the median training time (prediction is not timed).  Quadratic fits
   t = a x^2 + b x + c in x = k are given as the paper gives them.
2. Table 1: 10-fold stratified cross-validation of the classical LS-SVM, 2SMO and SesquiSMO
   (same parameters): mean accuracy +- standard error, median training time per fold, mean
   support vectors; mushrooms, and Pima and Breast-W both as the scaled LIBSVM copies and
   with the raw UCI features recovered from them (the paper's setting, see
   tests/test_lssvm_table1.py).  The methods take turns going first from fold to fold.

Writes ``lssvm.json``, ``lssvm.md`` and ``lssvm_scaling.png`` to ``--out`` (default
bench/results/lssvm) and prints the Markdown.  The load average at start and end is recorded:
other processes on the machine distort timings.
"""

from __future__ import annotations

import json
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

C = 0.5
GAMMA = 1.0
A = 1e4
CACHE_MB = 512
OURS = {
    "lssvm": {"solver": "lssvm"},
    "lssvm CG": {"solver": "lssvm", "method": "iterative"},
    "2SMO": {"solver": "relaxed_lssvm", "A": A},
    "SesquiSMO": {"solver": "relaxed_lssvm", "A": A, "variant": "sesquismo"},
    "proximal_svm": {"solver": "proximal_svm"},
}
TABLE1_METHODS = {"LSSVM": OURS["lssvm"], "2SMO": OURS["2SMO"],
                  "SesquiSMO": OURS["SesquiSMO"]}
PAPER_TABLE1 = {  # accuracy (%) and training time (s) from the paper's Table 1
    "mushrooms": {"LSSVM": (99.98, 7.005), "2SMO": (100.0, 4.27), "SesquiSMO": (100.0, 4.04)},
    "pima": {"LSSVM": (65.96, 0.100), "2SMO": (65.96, 0.073), "SesquiSMO": (65.96, 0.069)},
    "breast-w": {"LSSVM": (85.53, 0.044), "2SMO": (91.19, 0.020),
                 "SesquiSMO": (91.19, 0.021)},
}
PIMA_RANGES = np.array([[0, 17], [0, 199], [0, 122], [0, 99], [0, 846], [0, 67.1],
                        [0.078, 2.42], [21, 81]])
PIMA_DECIMALS = [0, 0, 0, 0, 0, 1, 3, 0]


# -- data ---------------------------------------------------------------------------------------


def load(name: str) -> solvers.Dataset:
    return solvers.read_svmlight(dataset_path(name))


def raw_pima(scaled: solvers.Dataset) -> solvers.Dataset:
    """Pima's UCI features from LIBSVM's [-1, 1] scaling (known ranges, 6-digit files)."""
    X = scaled.X.toarray()
    lo, hi = PIMA_RANGES[:, 0], PIMA_RANGES[:, 1]
    raw = lo + (X + 1.0) / 2.0 * (hi - lo)
    for j, decimals in enumerate(PIMA_DECIMALS):
        raw[:, j] = np.round(raw[:, j], decimals)
    return solvers.Dataset(sp.csr_matrix(raw), scaled.y)


def raw_breast_w(scaled: solvers.Dataset) -> solvers.Dataset:
    """The nine Wisconsin attributes (1..10) of columns 2-10 (column 1 is the sample id)."""
    X = scaled.X.toarray()[:, 1:]
    return solvers.Dataset(sp.csr_matrix(np.round(1.0 + (X + 1.0) * 4.5)), scaled.y)


# -- runners: train (timed), then decision values on the test rows (not timed) ---------------


def ours(params):
    def fit(train):
        result = solvers.train(train, C=C, gamma=GAMMA, cache_mb=CACHE_MB, **params)
        model = result.model
        extras = result.subproblems[0].extras
        return model.predict, {"n_support": getattr(model, "n_support", None),
                               "iterations": result.iterations,
                               "method": extras.get("method"),
                               "cache_hit_rate": extras.get("cache_hit_rate")}
    return fit


def dense_direct(train):
    """System (7) with Omega = D K D as one dense (n+1) x (n+1) LU solve."""
    X, y = train.X, np.where(train.y == train.classes[1], 1.0, -1.0)
    n = y.size
    M = np.empty((n + 1, n + 1))
    M[0, 0] = 0.0
    M[0, 1:] = M[1:, 0] = y
    M[1:, 1:] = rbf_kernel(X, gamma=GAMMA)
    M[1:, 1:] *= np.outer(y, y)
    M[np.arange(1, n + 1), np.arange(1, n + 1)] += 1.0 / (2.0 * C)
    solution = np.linalg.solve(M, np.concatenate([[0.0], np.ones(n)]))
    coef, b = y * solution[1:], solution[0]

    def predict(X_test):
        scores = rbf_kernel(X_test, X, gamma=GAMMA) @ coef + b
        return np.where(scores > 0, train.classes[1], train.classes[0])
    return predict, {"n_support": n}


def svc(train):
    model = SVC(kernel="rbf", gamma=GAMMA, C=C, cache_size=CACHE_MB).fit(train.X, train.y)
    return model.predict, {"n_support": int(model.n_support_.sum())}


def runners() -> dict:
    out = {name: ours(params) for name, params in OURS.items()}
    out["dense direct (7)"] = dense_direct
    out["sklearn SVC"] = svc
    return out


def timed(fit, train):
    """(wall seconds, process CPU seconds over all threads, predict, info)."""
    start, cpu = time.perf_counter(), time.process_time()
    predict, info = fit(train)
    return time.perf_counter() - start, time.process_time() - cpu, predict, info


# -- 1. scaling -----------------------------------------------------------------------------------


def scaling(twelfths, repeats, log) -> dict:
    ds = load("mushrooms")
    order = np.random.default_rng(0).permutation(ds.n_samples)
    twelfth = ds.n_samples // 12
    test = ds.subset(np.sort(order[11 * twelfth:]))
    fits = runners()
    names = list(fits)
    rows = []
    for k in twelfths:
        train = ds.subset(np.sort(order[:k * twelfth]))
        times = {name: [] for name in names}
        cpu = {name: [] for name in names}
        results = {}
        for name in names:  # warm-up
            _, _, predict, info = timed(fits[name], train)
            results[name] = (float(np.mean(predict(test.X) == test.y)), info)
        for repeat in range(repeats):
            shift = repeat % len(names)
            for name in names[shift:] + names[:shift]:
                seconds, cpu_seconds, _, _ = timed(fits[name], train)
                times[name].append(seconds)
                cpu[name].append(cpu_seconds)
        for name in names:
            accuracy, info = results[name]
            row = {"k": k, "n": train.n_samples, "runner": name,
                   "median_seconds": statistics.median(times[name]), "seconds": times[name],
                   "median_cpu_seconds": statistics.median(cpu[name]),
                   "accuracy": accuracy, **info}
            rows.append(row)
            log(f"  n={train.n_samples:5d} {name:18s} {row['median_seconds']:8.3f} s  "
                f"(CPU {row['median_cpu_seconds']:7.3f} s)  accuracy {100 * accuracy:.2f}%")
    fits_by_runner = {}
    for name in names:
        ks = np.array([r["k"] for r in rows if r["runner"] == name], dtype=float)
        ts = np.array([r["median_seconds"] for r in rows if r["runner"] == name])
        if ks.size >= 3:
            fits_by_runner[name] = [float(c) for c in np.polyfit(ks, ts, 2)]
    return {"test_rows": test.n_samples, "rows": rows, "quadratic_fits": fits_by_runner}


# -- 2. Table 1 -----------------------------------------------------------------------------------


def table1(datasets, log) -> list[dict]:
    out = []
    names = list(TABLE1_METHODS)
    for label, paper_key, ds in datasets:
        folds = ds.stratified_folds(10, seed=0)
        accuracy = {name: [] for name in names}
        seconds = {name: [] for name in names}
        cpu = {name: [] for name in names}
        support = {name: [] for name in names}
        for k in range(10):
            train, test = ds.subset(folds != k), ds.subset(folds == k)
            for name in names[k % 3:] + names[:k % 3]:
                elapsed, cpu_seconds, predict, info = timed(ours(TABLE1_METHODS[name]), train)
                accuracy[name].append(float(np.mean(predict(test.X) == test.y)))
                seconds[name].append(elapsed)
                cpu[name].append(cpu_seconds)
                support[name].append(info["n_support"])
        for name in names:
            acc = 100 * np.array(accuracy[name])
            row = {"dataset": label, "method": name, "accuracy": float(acc.mean()),
                   "stderr": float(acc.std() / np.sqrt(acc.size)),
                   "median_seconds": statistics.median(seconds[name]),
                   "median_cpu_seconds": statistics.median(cpu[name]),
                   "seconds": seconds[name], "n_support": float(np.mean(support[name])),
                   "paper": PAPER_TABLE1.get(paper_key, {}).get(name)}
            out.append(row)
            log(f"  {label:24s} {name:10s} {row['accuracy']:6.2f} +- {row['stderr']:.2f}%  "
                f"{row['median_seconds']:7.3f} s/fold (CPU {row['median_cpu_seconds']:.3f})  "
                f"SV {row['n_support']:.0f}")
    return out


# -- output -----------------------------------------------------------------------------------


def markdown(result: dict) -> str:
    machine = result["machine"]
    lines = [
        f"Machine: {machine['cpus']} CPUs ({machine['processor']}), numba threads "
        f"{machine['numba_threads']}; load average {result['load_start']:.2f} at start, "
        f"{result['load_end']:.2f} at end; {result['repeats']} repeats after a warm-up.", "",
        f"### Scaling on mushrooms (held-out {result['scaling']['test_rows']} rows)", "",
    ]
    rows = result["scaling"]["rows"]
    names = list(dict.fromkeys(r["runner"] for r in rows))
    sizes = list(dict.fromkeys(r["n"] for r in rows))
    lines.append("| runner | " + " | ".join(f"n={n}" for n in sizes) + " | accuracy |")
    lines.append("|---|" + "---:|" * len(sizes) + "---|")
    for name in names:
        own = [r for r in rows if r["runner"] == name]
        cells = " | ".join(f"{r['median_seconds']:.3f} ({r['median_cpu_seconds']:.2f})"
                           for r in own)
        low = min(100 * r["accuracy"] for r in own)
        high = max(100 * r["accuracy"] for r in own)
        accuracy = f"{low:.2f}" if low == high else f"{low:.2f}-{high:.2f}"
        lines.append(f"| {name} | {cells} | {accuracy}% |")
    lines += ["", "Median training seconds, wall (CPU over all threads); accuracy on the "
              "held-out rows (range over n).", ""]
    if result["scaling"]["quadratic_fits"]:
        lines.append("Quadratic fits t = a x^2 + b x + c, x = n in twelfths of the data:")
        lines.append("")
        for name, (a, b, c) in result["scaling"]["quadratic_fits"].items():
            lines.append(f"- {name}: t = {a:.4f} x^2 {b:+.4f} x {c:+.4f}")
        lines.append("")
    lines += ["### Table 1 (10-fold CV, RBF gamma = 1, C_J = 1, A = 1e4)", "",
              "| dataset | method | accuracy % | paper % | s / fold | CPU s / fold | paper s "
              "| SV |",
              "|---|---|---|---|---:|---:|---|---:|"]
    for r in result["table1"]:
        paper_acc, paper_s = r["paper"] if r["paper"] else ("—", "—")
        lines.append(f"| {r['dataset']} | {r['method']} | {r['accuracy']:.2f} ± "
                     f"{r['stderr']:.2f} | {paper_acc} | {r['median_seconds']:.3f} | "
                     f"{r['median_cpu_seconds']:.3f} | {paper_s} | {r['n_support']:.0f} |")
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["scaling"]["rows"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in dict.fromkeys(r["runner"] for r in rows):
        points = [(r["n"], r["median_seconds"]) for r in rows if r["runner"] == name]
        ax.plot(*zip(*points, strict=True), marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training rows (mushrooms)")
    ax.set_ylabel("median training time (s)")
    ax.set_title("RBF gamma=1, C_J=1: training time against n")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_command(args) -> None:
    repeats = args.repeats or (1 if args.quick else 3)
    twelfths = (1, 2, 3) if args.quick else (1, 2, 3, 4, 6, 8, 11)
    load_start = os.getloadavg()[0]
    print(f"load average at start: {load_start:.2f}")
    print("scaling study")
    scaling_result = scaling(twelfths, repeats, print)
    print("Table 1")
    pima, breast = load("diabetes_scale"), load("breast-cancer_scale")
    datasets = [("pima (raw)", "pima", raw_pima(pima)),
                ("breast-w (raw)", "breast-w", raw_breast_w(breast)),
                ("diabetes_scale", None, pima),
                ("breast-cancer_scale", None, breast)]
    if not args.quick:
        datasets.insert(0, ("mushrooms", "mushrooms", load("mushrooms")))
    table = table1(datasets, print)
    result = {"machine": machine_description(), "load_start": load_start,
              "load_end": os.getloadavg()[0], "repeats": repeats, "scaling": scaling_result,
              "table1": table}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lssvm.json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    (args.out / "lssvm.md").write_text(text)
    plot(result, args.out / "lssvm_scaling.png")
    print(text)


COMMAND = Command(
    "lssvm", "the least-squares family against dense direct solves and LIBSVM", run_command,
    description=__doc__, options=(
        quick("small sizes, one repeat"),
        repeats(None),
        out("bench/results/lssvm")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["lssvm", *sys.argv[1:]]))
