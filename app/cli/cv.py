"""``svmsvc cv``: cross-validate a solver over a grid of C (and gamma), with a progress bar,
the table, the best point, an optional refit and plot."""

from __future__ import annotations

import sys

from app.cli.common import CLIError, add_data_options, parse_grid, read_dataset
from app.cli.solver_options import add_solver_options, params_from_args


def add_cv_command(commands, solver_spec) -> None:
    cv = commands.add_parser("cv", help="cross-validate a solver over a grid of C (and gamma)")
    cv.add_argument("file")
    cv.add_argument("--solver", default="auto",
                    help="solver name (see 'svmsvc solvers'; default auto)")
    cv.add_argument("--C", default="2^-5:2^5",
                    help="grid of C: numbers or 2^k separated by commas, or a range 2^a:2^b "
                         "(default 2^-5:2^5)")
    cv.add_argument("--gamma", default=None,
                    help="grid of the kernel's gamma (kernel solvers), as --C")
    cv.add_argument("--folds", type=int, default=5, help="number of folds (default 5)")
    cv.add_argument("--scoring", default="accuracy",
                    choices=("accuracy", "balanced_accuracy", "f1_macro", "precision_macro",
                             "recall_macro", "roc_auc", "average_precision"),
                    help="the fold score the best C maximizes (default accuracy; ordinal "
                         "regression: the mean absolute rank error)")
    cv.add_argument("--seed", type=int, default=0, help="seed of the stratified folds")
    cv.add_argument("--jobs", type=int, default=None,
                    help="folds fitted at once, one thread each (default: one per Numba "
                         "thread; 1: one after another)")
    cv.add_argument("--fit-gap", type=float, default=None,
                    help="certified relative duality gap every fold's fit stops at "
                         "(default 1e-3; 0: the solver's own rule)")
    cv.add_argument("--cold", action="store_true",
                    help="solve every point from scratch, even where the solver shares work "
                         "along C (to see what the warm path buys)")
    cv.add_argument("--model-out", help="refit at the best point and write the model here")
    cv.add_argument("--plot", help="write the cross-validation curve to this image file")
    cv.add_argument("--quiet", action="store_true", help="no progress bar")
    add_data_options(cv)
    if solver_spec is not None:
        add_solver_options(cv, solver_spec, exclude=("C", "gamma"))
    cv.set_defaults(handler=lambda args: cmd_cv(args, solver_spec))


def cmd_cv(args, spec) -> int:
    """Cross-validate over the grid and print the table and the best point; refit and plot
    when asked."""
    from solvers.model_selection import cross_validate

    params = params_from_args(spec, args) if spec is not None else {}
    C = parse_grid(args.C)
    gamma = parse_grid(args.gamma) if args.gamma else None
    ds = read_dataset(args.file, args.n_features, args.zero_based)
    total = args.folds * len(C) * (len(gamma) if gamma else 1)
    result = cross_validate(ds, spec.name, C=C, gamma=gamma, folds=args.folds, seed=args.seed,
                            refit=bool(args.model_out), progress=_ProgressBar(total, args.quiet),
                            n_jobs=args.jobs, warm_start=not args.cold,
                            scoring=args.scoring,
                            **({} if args.fit_gap is None else {"fit_gap": args.fit_gap or None}),
                            **params)
    if result.choice is not None:
        print(f"auto: {result.choice['reason']}", file=sys.stderr)
    _print_table(result, with_gamma=bool(gamma))
    _print_best_point(result)
    if args.model_out:
        result.model.save(args.model_out)
        print(f"model refitted at the best point written to {args.model_out}",
              file=sys.stderr)
    if args.plot:
        _plot_cv(result, args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


def _print_table(result, with_gamma: bool) -> None:
    """One line per grid point: C (and gamma), the mean fold score, its spread, the mean
    training objective and the seconds."""
    metric = "mean abs. rank error" if result.metric == "mean_absolute_rank_error" \
        else result.metric
    header = f"{'C':>12} " + (f"{'gamma':>12} " if with_gamma else "") + \
        f"{metric:>20} {'std':>8} {'objective':>14} {'seconds':>9}"
    print(header)
    for row in result.scores:
        print(f"{row.C:12.6g} " + (f"{row.gamma:12.6g} " if with_gamma else "") +
              f"{row.mean:20.6f} {row.std:8.4f} {row.objective:14.8g} {row.seconds:9.3f}")


def _print_best_point(result) -> None:
    """The best point, and how the search ran (folds, warm or cold C path, the fits'
    stopping rule, folds at once)."""
    best = f"best C = {result.best_C:g}" + \
        ("" if result.best_gamma is None else f", gamma = {result.best_gamma:g}")
    stop = (f"each fit to a certified relative gap of {result.fit_gap:g} "
            f"({result.fit_gap_parameter})" if result.fit_gap_parameter is not None
            else "each fit to the solver's own rule")
    at_once = f", {result.parallel_folds} folds at once" if result.parallel_folds > 1 else ""
    print(f"{best} ({result.folds}-fold, {'warm-started' if result.warm_start else 'cold'} "
          f"C path, {stop}{at_once})")


def _plot_cv(result, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        raise CLIError("--plot needs matplotlib (pip install matplotlib)") from None
    figure, axes = plt.subplots(figsize=(6, 4))
    for gamma in sorted({row.gamma for row in result.scores}, key=lambda g: g or 0.0):
        rows = [row for row in result.scores if row.gamma == gamma]
        label = None if gamma is None else f"gamma={gamma:g}"
        axes.errorbar([r.C for r in rows], [r.mean for r in rows], yerr=[r.std for r in rows],
                      marker="o", capsize=3, label=label)
    axes.set_xscale("log", base=2)
    axes.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes.set_xlabel("C")
    axes.set_ylabel(result.metric.replace("_", " "))
    axes.set_title(f"{result.solver}: {result.folds}-fold cross-validation")
    if any(row.gamma is not None for row in result.scores):
        axes.legend()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


class _ProgressBar:
    """One line on stderr, redrawn after every fit of the cross-validation."""

    def __init__(self, total: int, quiet: bool):
        self.total = total
        self.done = 0
        self.quiet = quiet

    def __call__(self, fold, C, gamma, score) -> None:
        self.done += 1
        if self.quiet:
            return
        width = 30
        filled = width * self.done // self.total
        where = f"fold {fold + 1} C={C:g}" + ("" if gamma is None else f" gamma={gamma:g}")
        print(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {where}"
              f" score={score:.4f}   ", end="", file=sys.stderr, flush=True)
        if self.done == self.total:
            print(file=sys.stderr)
