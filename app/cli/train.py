"""``svmsvc train``: train a model on an SVMlight file and write it (with LIBLINEAR's short
options, :mod:`app.cli.liblinear`), printing each iteration on stderr."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from app.cli.common import EXIT_SOLVER_FAILED, CLIError, add_data_options, parse_grid, read_dataset
from app.cli.liblinear import (
    LIBLINEAR_TYPES,
    cross_validation_accuracy,
    liblinear_params,
    number_option,
)
from app.cli.solver_options import add_solver_options, params_from_args


def add_train_command(commands, solver_spec) -> None:
    train = commands.add_parser("train", help="train a model on an SVMlight file")
    train.add_argument("file")
    train.add_argument("model", nargs="?", default=None,
                       help="write the model here (as LIBLINEAR's train FILE MODEL)")
    train.add_argument("--solver", default="auto",
                       help="solver name (see 'svmsvc solvers'; default auto)")
    train.add_argument("--model-out",
                       help="write the model here (default: MODEL, else FILE's base name "
                            "plus .model in the current directory, as LIBLINEAR does)")
    train.add_argument("--format", choices=("auto", "liblinear", "npz"), default="auto",
                       help="model file format: liblinear, LIBLINEAR's text (what its "
                            "predict and a user's scripts read); npz, this library's archive "
                            "(any model, with its metadata); auto (default): liblinear when "
                            "the model has that form and loses nothing predict uses in it (a "
                            "linear classifier of numeric labels without probability "
                            "estimates), else npz, saying why")
    train.add_argument("--quiet", "-q", action="store_true",
                       help="no per-iteration progress (-q: LIBLINEAR's)")
    liblinear = train.add_argument_group(
        "LIBLINEAR's options (docs/service.md, section 'svmsvc train with LIBLINEAR's "
        "options'); numbers may be written 2^k")
    liblinear.add_argument("-s", dest="ll_type", type=int, default=None, metavar="TYPE",
                           help="LIBLINEAR's solver type: " + "; ".join(
                               f"{t}: {m.describe}" for t, m in LIBLINEAR_TYPES.items()) +
                                "; the others are refused, saying why (given: -B defaults "
                                "to -1, no bias, as in LIBLINEAR)")
    liblinear.add_argument("-c", dest="ll_C", type=number_option, default=None,
                           metavar="COST", help="C (LIBLINEAR's -c, default 1)")
    liblinear.add_argument("-e", dest="ll_eps", type=number_option, default=None,
                           metavar="EPS", help="-s 1, 3, 4, 12, 13 (dual_cd): LIBLINEAR's "
                                               "stopping rule, the projected gradient's "
                                               "spread at most EPS (12, 13: its 1-norm at "
                                               "most EPS times the first pass's; default "
                                               "0.1)")
    liblinear.add_argument("-p", dest="ll_p", type=number_option, default=None,
                           metavar="EPS", help="-s 11, 12, 13: the epsilon of the "
                                               "epsilon-insensitive loss (default 0.1)")
    liblinear.add_argument("-B", dest="ll_bias", type=number_option, default=None,
                           metavar="BIAS", help="BIAS > 0: a constant feature of value BIAS "
                                                "appended to every example, its weight "
                                                "regularized as the others (bias="
                                                "regularized, bias_scale=BIAS); BIAS < 0: "
                                                "no bias (LIBLINEAR's default, -1)")
    liblinear.add_argument("-b", dest="ll_probability", type=int, choices=(0, 1),
                           default=None, metavar="PROBABILITY",
                           help="1: train with probability estimates (LIBSVM's train -b 1, "
                                "--probability true), which predict -b 1 prints; 0: without")
    liblinear.add_argument("-v", dest="ll_folds", type=int, default=None, metavar="K",
                           help="K-fold cross-validation at this C instead of training: "
                                "prints 'Cross Validation Accuracy = x%%' (no model written)")
    liblinear.add_argument("-C", dest="ll_search", action="store_true",
                           help="search C by cross-validation (K folds of -v, default 5, over "
                                "C = 2^-5 .. 2^5, or --C-grid): prints 'Best C = c  CV "
                                "accuracy = x%%' (no model written)")
    liblinear.add_argument("--C-grid", dest="ll_grid", default=None,
                           help="-C's grid, as cv's --C (default 2^-5:2^5)")
    add_data_options(train)
    if solver_spec is not None:
        add_solver_options(train, solver_spec)
    train.set_defaults(handler=lambda args: cmd_train(args, solver_spec))


def cmd_train(args, spec) -> int:
    """Train and write the model (with LIBLINEAR's -v or -C: cross-validate instead)."""
    import solvers
    from solvers.train import validate_params

    params = {**params_from_args(spec, args), **liblinear_params(args, spec)}
    params = validate_params(spec.name, params)[1]  # before a long read: a typo fails at once
    ds = read_dataset(args.file, args.n_features, args.zero_based)
    if args.ll_search or args.ll_folds is not None:
        _print_cross_validation_accuracy(args, spec, params, ds)
        return 0
    monitor = None if args.quiet else _ProgressPrinter()
    result = solvers.train(ds, solver=spec.name, params=params, monitor=monitor)
    _report_training(result)
    _write_model(args, result)
    return 0 if result.status in ("converged", "max_iter") else EXIT_SOLVER_FAILED


def _print_cross_validation_accuracy(args, spec, params, ds) -> None:
    """LIBLINEAR's line for -v (the accuracy at this C) or -C (the best C of the grid)."""
    folds = 5 if args.ll_folds is None else args.ll_folds
    given = params.model_dump()
    if args.ll_search:
        grid = parse_grid(args.ll_grid or "2^-5:2^5")
        best_C, accuracy = cross_validation_accuracy(ds, spec, given, folds, grid)
        print(f"Best C = {best_C:g}  CV accuracy = {100.0 * accuracy:g}%")
    else:
        _, accuracy = cross_validation_accuracy(ds, spec, given, folds, [params.C])
        print(f"Cross Validation Accuracy = {100.0 * accuracy:g}%")


def _report_training(result) -> None:
    """On stderr: what auto chose and why, the warnings, why the solver stopped, and the
    objective, iterations and time."""
    if result.choice is not None:
        print(f"auto: {result.choice.reason}", file=sys.stderr)
        for run in result.choice.runs:
            print(f"auto: {run['candidate']} ({run['threads']} thread(s)) {run['outcome']} "
                  f"after {run['seconds']:.3g} s", file=sys.stderr)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(result.message, file=sys.stderr)
    print(f"objective {result.objective:.12g} after {result.iterations} iterations in "
          f"{result.elapsed:.3f} s", file=sys.stderr)


def _write_model(args, result) -> None:
    """Write the model to --model-out, else MODEL, else the data file's base name plus
    .model in the current directory (as LIBLINEAR does), in the --format asked."""
    model_out = args.model_out or args.model
    if model_out is None:  # as LIBLINEAR does: the data file's base name plus .model, here
        model_out = Path(args.file).name + ".model"
        print(f"no --model-out: writing the model to {model_out}", file=sys.stderr)
    args.model_out = model_out
    model = result.model
    text_refusal = liblinear_refusal(model)
    if args.format == "liblinear" and text_refusal is not None:
        raise CLIError(f"--format liblinear: {text_refusal}; write it with --format npz")
    if args.format == "npz" or text_refusal is not None:
        model.save(args.model_out)
        written = "as an npz archive" + (f" ({text_refusal})" if args.format == "auto" else "")
    else:
        Path(args.model_out).write_text(model.to_liblinear())
        written = "in LIBLINEAR's format"
    print(f"model written to {args.model_out} {written}", file=sys.stderr)


def liblinear_refusal(model) -> str | None:
    """None when LIBLINEAR's model file holds everything ``predict`` uses of ``model`` (so
    ``--format auto`` writes it), else why not."""
    if not hasattr(model, "to_liblinear"):
        return f"a {model.kind} model has no LIBLINEAR form"
    if model.calibrated and not model.liblinear_keeps_probabilities():
        return "LIBLINEAR's file has no place for the model's probability sigmoids"
    if model.classes_.dtype.kind not in "iuf":
        return "LIBLINEAR's file holds numeric labels only"
    return None


class _ProgressPrinter:
    """Monitor printing one line per iteration on stderr."""

    def report(self, record) -> None:
        extras = record.extras
        if "factor_step" in extras:  # the low-rank factorization: no objective yet
            from app.jobs.state import progress_stage

            residual = ("" if math.isnan(record.optimality)
                        else f"  residual trace {record.optimality:.3e} of the kernel's")
            print(f"{progress_stage(extras)}  t={record.elapsed:8.3f}s{residual}",
                  file=sys.stderr)
            return
        where = f" class {extras['class']}" if "class" in extras else ""
        print(
            f"iter {record.iteration:4d}{where}  t={record.elapsed:8.3f}s  "
            f"objective={record.objective:.10g}  optimality={record.optimality:.3e}",
            file=sys.stderr,
        )

    def stop_reason(self):
        return None
