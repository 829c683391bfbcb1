"""The ``svmsvc`` command line.

Library commands (``info``, ``train``, ``predict``, ``export``) need only the solver library;
the service commands import the web stack when they run.  Every failure the user can cause is
one line on stderr (``svmsvc: error: ...``) and exit status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import enum
import json
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXIT_USAGE = 2
EXIT_SOLVER_FAILED = 1


class CLIError(Exception):
    """An error to report in one line."""


# -- library commands -------------------------------------------------------------------------


def _read(path: str, n_features: int | None = None, zero_based: bool = False):
    import solvers

    if not Path(path).exists():
        raise CLIError(f"{path}: no such file")
    return solvers.read_svmlight(path, n_features=n_features, zero_based=zero_based)


def cmd_info(args) -> int:
    ds = _read(args.file, args.n_features, args.zero_based)
    stats = ds.stats().as_dict()
    stats["file"] = args.file
    if ds.qid is not None:
        stats["n_queries"] = int(len(set(ds.qid.tolist())))
    if ds.sample_weight is not None:
        stats["weighted"] = True
    if args.json:
        print(json.dumps(stats))
    else:
        for key, value in stats.items():
            print(f"{key:>12}: {value}")
    return 0


# -- solver options, generated from the parameter models ------------------------------------------
#
# Every field of a solver's parameter model becomes an option whose value is parsed as the
# field's annotation says: a union tries its members in order (numbers, then literal choices,
# then ``none`` for an optional field), booleans take true/false, a constraint such as
# ``Field(ge=0)`` (on the field or inside an ``Annotated`` member) is shown in the help.  The
# parsed value goes to the parameter model unchanged, so pydantic gives the verdict on ranges
# and on how fields combine.

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")
_SIGNS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}


@dataclass(frozen=True)
class _Spelling:
    """One way to write a value of a field: a parser (ValueError when the text is not this
    kind of value), its name in the usage line and in the help."""

    parse: Callable[[str], Any]
    metavar: str
    describe: str
    rank: int  # position in a union: numbers, then booleans, literal choices, text, none


def _bounds(constraints) -> dict[str, Any]:
    """{'gt': 0, 'lt': 1} ... from annotated-types constraints (FieldInfo objects included)."""
    found = {}
    for constraint in constraints:
        found.update(_bounds(getattr(constraint, "metadata", None) or []))
        found.update({name: getattr(constraint, name) for name in _SIGNS
                      if getattr(constraint, name, None) is not None})
    return found


def _number(kind: type, constraints) -> _Spelling:
    noun = "an integer" if kind is int else "a number"
    bounds = _bounds(constraints)
    low = next((key for key in ("gt", "ge") if key in bounds), None)
    high = next((key for key in ("lt", "le") if key in bounds), None)
    if low and high:
        noun += (f" in {'(' if low == 'gt' else '['}{bounds[low]}, "
                 f"{bounds[high]}{')' if high == 'lt' else ']'}")
    elif low or high:
        noun += f" {_SIGNS[low or high]} {bounds[low or high]}"
    return _Spelling(kind, "INT" if kind is int else "NUMBER", noun, 0)


def _spelled(value) -> str:
    """A value as the command line writes it."""
    if value is None:
        return "none"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _choices(values) -> list[_Spelling]:
    def exactly(text: str, value):
        def parse(given: str):
            if given != text:
                raise ValueError(given)
            return value

        return parse

    return [_Spelling(exactly(_spelled(v), v), _spelled(v), _spelled(v), 2) for v in values]


def _parse_bool(text: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ValueError(text)


def _parse_none(text: str) -> None:
    if text.lower() != "none":
        raise ValueError(text)


def _spellings(annotation, constraints=()) -> list[_Spelling]:
    """The ways to write a value of ``annotation``, in the order a union tries them."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *extra = typing.get_args(annotation)
        return _spellings(base, [*constraints, *extra])
    if origin in (typing.Union, types.UnionType):
        members = [s for a in typing.get_args(annotation) for s in _spellings(a, constraints)]
        return sorted(members, key=lambda s: s.rank)
    if origin is typing.Literal:
        return _choices(typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _choices(list(annotation))
    if annotation is bool:
        return [_Spelling(_parse_bool, "true|false", "true or false", 1)]
    if annotation in (int, float):
        return [_number(annotation, constraints)]
    if annotation is str:
        return [_Spelling(str, "TEXT", "any text", 3)]
    if annotation is type(None):
        return [_Spelling(_parse_none, "none", "none", 4)]
    raise TypeError(f"no command-line form for parameters of type {annotation!r}")


def _enumerate(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _option(field) -> tuple[Callable[[str], Any], str, str]:
    """(parser, metavar, allowed values in words) for a pydantic field."""
    spellings = _spellings(field.annotation, field.metadata)
    allowed = _enumerate([s.describe for s in spellings])

    def parse(text: str):
        for spelling in spellings:
            try:
                return spelling.parse(text)
            except ValueError:
                continue
        raise argparse.ArgumentTypeError(f"expected {allowed}, got {text!r}")

    return parse, "|".join(s.metavar for s in spellings), allowed


def _add_solver_options(parser: argparse.ArgumentParser, spec, exclude=()) -> None:
    group = parser.add_argument_group(f"parameters of solver {spec.name!r}")
    if "class_weight" in spec.params_model.model_fields:
        group.add_argument("-w", dest="class_weight_items", action="append",
                           metavar="LABEL=WEIGHT", default=None,
                           help="multiply C for the examples of LABEL by WEIGHT (LIBLINEAR's "
                                "-wi; repeat for several labels; 2^k accepted; a negative "
                                "label attached: -w-1=0.5)")
        group.add_argument("--class-weight", dest="class_weight_mode", choices=("balanced",),
                           default=None,
                           help="balanced: weight each class by n / (k n_c)")
    for name, field in spec.params_model.model_fields.items():
        if name in ("solver", "class_weight") or name in exclude:
            continue
        parse, metavar, allowed = _option(field)
        description = (field.description or "").strip()
        help_text = f"{description} Allowed: {allowed}. (default: {_spelled(field.default)})"
        group.add_argument("--" + name.replace("_", "-"), dest=f"param_{name}", type=parse,
                           metavar=metavar, default=argparse.SUPPRESS,
                           help=help_text.strip().replace("%", "%%"))  # argparse %-formats help


def _params_from_args(spec, args) -> dict:
    """The parameters given on the command line (an option not given is absent: an optional
    field given as ``none`` is None, not its default)."""
    given = vars(args)
    params = {name: given[f"param_{name}"] for name in spec.params_model.model_fields
              if f"param_{name}" in given}
    items, mode = given.get("class_weight_items"), given.get("class_weight_mode")
    if items and mode:
        raise CLIError("give -w LABEL=WEIGHT or --class-weight balanced, not both")
    if mode:
        params["class_weight"] = mode
    elif items:
        weights = {}
        for item in items:
            label, sep, weight = item.partition("=")
            if not sep or not label.strip():
                raise CLIError(f"-w {item!r}: write LABEL=WEIGHT, e.g. -w 1=10")
            weights[label.strip()] = parse_number(weight)
        params["class_weight"] = weights
    return params


def parse_number(text: str) -> float:
    """A number, or a power of two written ``2^k``."""
    item = text.strip()
    try:
        return 2.0 ** float(item[2:]) if item.startswith("2^") else float(item)
    except ValueError:
        raise CLIError(f"expected a number or 2^k, got {text!r}") from None


def solver_params(spec, args):
    """The solver's validated parameter object for the parsed command line."""
    from solvers.train import validate_params

    return validate_params(spec.name, _params_from_args(spec, args))[1]


class _ProgressPrinter:
    """Monitor printing one line per iteration on stderr."""

    def report(self, record) -> None:
        extras = record.extras
        where = f" class {extras['class']}" if "class" in extras else ""
        print(
            f"iter {record.iteration:4d}{where}  t={record.elapsed:8.3f}s  "
            f"objective={record.objective:.10g}  optimality={record.optimality:.3e}",
            file=sys.stderr,
        )

    def stop_reason(self):
        return None


@dataclass(frozen=True)
class LiblinearType:
    """What one of LIBLINEAR's ``-s`` solver types is here: the solver and the parameters
    that pose the same problem (and, for dual_cd, LIBLINEAR's stopping rule)."""

    solver: str
    params: dict[str, Any]
    describe: str
    eps: bool  # whether -e maps (dual_cd's projected-gradient spread, LIBLINEAR's rule)


#: LIBLINEAR's solver types that map cleanly onto a solver here (same problem; for dual_cd
#: the same algorithm and stopping rule, Hsieh et al. 2008 and Keerthi et al. 2008).
LIBLINEAR_TYPES: dict[int, LiblinearType] = {
    1: LiblinearType("dual_cd", {"loss": "squared_hinge", "stop_rule": "projected_gradient"},
                     "L2-regularized L2-loss SVC, dual (dual_cd, squared hinge)", True),
    2: LiblinearType("mfn", {"loss": "squared_hinge"},
                     "L2-regularized L2-loss SVC, primal (mfn, squared hinge: the same "
                     "problem by another primal Newton method; -e does not map)", False),
    3: LiblinearType("dual_cd", {"loss": "hinge", "stop_rule": "projected_gradient"},
                     "L2-regularized L1-loss SVC, dual (dual_cd, hinge)", True),
    4: LiblinearType("dual_cd", {"loss": "hinge", "multiclass": "crammer_singer",
                                 "stop_rule": "projected_gradient"},
                     "Crammer-Singer multi-class SVC (dual_cd, crammer_singer)", True),
}

#: LIBLINEAR's other types and why they are refused.
LIBLINEAR_REFUSED: dict[int, str] = {
    0: "L2-regularized logistic regression (primal): no solver here has the logistic loss",
    5: "L1-regularized L2-loss SVC: no solver here has an L1 regularizer",
    6: "L1-regularized logistic regression: no L1 regularizer nor logistic loss here",
    7: "L2-regularized logistic regression (dual): no solver here has the logistic loss",
    11: "L2-regularized L2-loss support vector regression: no regression here",
    12: "L2-regularized L2-loss support vector regression (dual): no regression here",
    13: "L2-regularized L1-loss support vector regression (dual): no regression here",
    21: "one-class SVM: no one-class problem here",
}


def _number_option(text: str) -> float:
    """An option's number, 2^k accepted (argparse's type: its error is a usage line)."""
    try:
        return parse_number(text)
    except CLIError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def liblinear_type(number: int) -> LiblinearType:
    """LIBLINEAR's ``-s number`` here, or a CLIError naming why not and what maps."""
    if number in LIBLINEAR_TYPES:
        return LIBLINEAR_TYPES[number]
    mapped = ", ".join(f"-s {t}" for t in LIBLINEAR_TYPES)
    reason = LIBLINEAR_REFUSED.get(number, "LIBLINEAR has no such solver type")
    raise CLIError(f"-s {number}: {reason}; the types that map here are {mapped} "
                   f"(see 'svmsvc train --help')")


def liblinear_params(args, spec) -> dict[str, Any]:
    """The parameters LIBLINEAR's short options set (to merge over the long options'): -s's
    problem, -c, -e, -B; CLIError for a combination that does not map."""
    params: dict[str, Any] = {}
    kind = LIBLINEAR_TYPES.get(args.ll_type) if args.ll_type is not None else None
    if kind is not None:
        params.update(kind.params)
        params["bias"] = "none"  # LIBLINEAR's default -B -1, unless -B says otherwise
        if kind.eps:
            params["eps"] = 0.1  # LIBLINEAR's default -e for the dual solvers
    if args.ll_C is not None:
        if args.ll_C <= 0:
            raise CLIError(f"-c {args.ll_C:g}: C must be positive")
        params["C"] = args.ll_C
    if args.ll_eps is not None:
        if kind is None and spec.name != "dual_cd":
            raise CLIError("-e is LIBLINEAR's stopping rule of its dual solvers: give it "
                           "with -s 1, 3 or 4 (or --solver dual_cd); other solvers stop on "
                           "--tol")
        if kind is not None and not kind.eps:
            raise CLIError(f"-e with -s {args.ll_type}: LIBLINEAR's primal stopping rule "
                           f"(the gradient's norm) has no equivalent in {kind.solver}; give "
                           f"--tol, the certified relative duality gap")
        if args.ll_eps <= 0:
            raise CLIError(f"-e {args.ll_eps:g}: the tolerance must be positive")
        params["eps"] = args.ll_eps
        params["stop_rule"] = "projected_gradient"
    if args.ll_bias is not None:
        if args.ll_bias == 0:
            raise CLIError("-B 0: a bias feature of value 0 is no bias; give -B -1 for none "
                           "or a positive value for a regularized bias feature")
        if args.ll_bias < 0:
            params["bias"] = "none"
        else:
            params["bias"], params["bias_scale"] = "regularized", args.ll_bias
    return params


def _cross_validation_accuracy(ds, spec, params, folds: int, C: list[float]):
    """(best C, pooled accuracy: correct over all examples, as LIBLINEAR's -v and -C print)
    of a cross-validation at ``C`` with the solver's own stopping rule."""
    import numpy as np

    from solvers.model_selection import cross_validate

    params = {key: value for key, value in params.items() if key not in ("C", "solver")}
    if folds < 2:
        raise CLIError(f"-v {folds}: cross-validation needs at least 2 folds")
    # the kernel's gamma is cross_validate's grid argument, not one of its solver parameters:
    # a number set for a kernel (its own, or a low-rank factor's) is a grid of one; "scale"
    # and "auto" are resolved on each fold as the solver would
    gamma = params.pop("gamma", None)
    kernel = spec.params_model.own_kernel or params.get("approximation", "none") != "none"
    if isinstance(gamma, str) and gamma != spec.params_model.model_fields["gamma"].default:
        raise CLIError(f"-v with gamma={gamma!r}: give the kernel's gamma as a number")
    grid = [gamma] if kernel and isinstance(gamma, int | float) else None
    seed = 0  # stratified, seeded folds (LIBLINEAR draws its own): their sizes weigh below
    result = cross_validate(ds, spec.name, C=C, folds=folds, seed=seed, fit_gap=None,
                            gamma=grid, **params)
    sizes = np.bincount(ds.stratified_folds(folds, seed), minlength=folds)
    best = max(result.scores, key=lambda row: (float(np.dot(row.fold_scores, sizes)), -row.C))
    return best.C, float(np.dot(best.fold_scores, sizes) / ds.n_samples)


def cmd_train(args, spec) -> int:
    import solvers
    from solvers.train import validate_params

    params = {**_params_from_args(spec, args), **liblinear_params(args, spec)}
    params = validate_params(spec.name, params)[1]  # before a long read: a typo fails at once
    ds = _read(args.file, args.n_features, args.zero_based)
    if args.ll_search or args.ll_folds is not None:
        folds = 5 if args.ll_folds is None else args.ll_folds
        given = params.model_dump()
        if args.ll_search:
            grid = parse_grid(args.ll_grid or "2^-5:2^5")
            best_C, accuracy = _cross_validation_accuracy(ds, spec, given, folds, grid)
            print(f"Best C = {best_C:g}  CV accuracy = {100.0 * accuracy:g}%")
        else:
            _, accuracy = _cross_validation_accuracy(ds, spec, given, folds, [params.C])
            print(f"Cross Validation Accuracy = {100.0 * accuracy:g}%")
        return 0
    monitor = None if args.quiet else _ProgressPrinter()
    result = solvers.train(ds, solver=spec.name, params=params, monitor=monitor)
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
    model_out = args.model_out or args.model
    if model_out is None:  # as LIBLINEAR does: the data file's base name plus .model, here
        model_out = Path(args.file).name + ".model"
        print(f"no --model-out: writing the model to {model_out}", file=sys.stderr)
    args.model_out = model_out
    if args.model_out:
        if args.format == "liblinear":
            if not hasattr(result.model, "to_liblinear"):
                raise CLIError(f"a {result.model.kind} model has no LIBLINEAR form")
            Path(args.model_out).write_text(result.model.to_liblinear())
        else:
            result.model.save(args.model_out)
        print(f"model written to {args.model_out}", file=sys.stderr)
    return 0 if result.status in ("converged", "max_iter") else EXIT_SOLVER_FAILED


def parse_grid(text: str) -> list[float]:
    """A grid of positive values: a comma-separated list whose items are numbers or powers of
    two written ``2^k``, or a range of powers of two ``2^a:2^b`` (every integer k from a to b).
    """
    def value(item: str) -> float:
        item = item.strip()
        if item.startswith("2^"):
            return 2.0 ** float(item[2:])
        return float(item)

    try:
        if ":" in text:
            low, high = text.split(":")
            if not (low.strip().startswith("2^") and high.strip().startswith("2^")):
                raise ValueError
            a, b = int(low.strip()[2:]), int(high.strip()[2:])
            if b < a:
                raise ValueError
            grid = [2.0 ** k for k in range(a, b + 1)]
        else:
            grid = [value(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise CLIError(f"cannot read the grid {text!r}: write numbers or 2^k separated by "
                       "commas, or a range 2^a:2^b") from None
    if not grid or min(grid) <= 0:
        raise CLIError(f"the grid {text!r} must hold positive values")
    return grid


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


def cmd_cv(args, spec) -> int:
    from solvers.model_selection import cross_validate

    params = _params_from_args(spec, args) if spec is not None else {}
    C = parse_grid(args.C)
    gamma = parse_grid(args.gamma) if args.gamma else None
    ds = _read(args.file, args.n_features, args.zero_based)
    total = args.folds * len(C) * (len(gamma) if gamma else 1)
    result = cross_validate(ds, spec.name, C=C, gamma=gamma, folds=args.folds, seed=args.seed,
                            refit=bool(args.model_out), progress=_ProgressBar(total, args.quiet),
                            n_jobs=args.jobs, warm_start=not args.cold,
                            scoring=args.scoring,
                            **({} if args.fit_gap is None else {"fit_gap": args.fit_gap or None}),
                            **params)
    if result.choice is not None:
        print(f"auto: {result.choice['reason']}", file=sys.stderr)
    metric = "mean abs. rank error" if result.metric == "mean_absolute_rank_error" \
        else result.metric
    header = f"{'C':>12} " + (f"{'gamma':>12} " if gamma else "") + \
        f"{metric:>20} {'std':>8} {'objective':>14} {'seconds':>9}"
    print(header)
    for row in result.scores:
        print(f"{row.C:12.6g} " + (f"{row.gamma:12.6g} " if gamma else "") +
              f"{row.mean:20.6f} {row.std:8.4f} {row.objective:14.8g} {row.seconds:9.3f}")
    best = f"best C = {result.best_C:g}" + \
        ("" if result.best_gamma is None else f", gamma = {result.best_gamma:g}")
    stop = (f"each fit to a certified relative gap of {result.fit_gap:g} "
            f"({result.fit_gap_parameter})" if result.fit_gap_parameter is not None
            else "each fit to the solver's own rule")
    at_once = f", {result.parallel_folds} folds at once" if result.parallel_folds > 1 else ""
    print(f"{best} ({result.folds}-fold, {'warm-started' if result.warm_start else 'cold'} "
          f"C path, {stop}{at_once})")
    if args.model_out:
        result.model.save(args.model_out)
        print(f"model refitted at the best point written to {args.model_out}",
              file=sys.stderr)
    if args.plot:
        _plot_cv(result, args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


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


def _is_model_file(path: str) -> bool:
    with open(path, "rb") as f:
        head = f.read(12)
    return head.startswith(b"PK") or head.startswith(b"solver_type ")


def cmd_predict(args) -> int:
    import numpy as np

    import solvers
    from solvers.data.dataset import label_key

    first, second = _existing(args.first), _existing(args.second)
    if len(args.rest) > 1:
        raise CLIError("predict takes TEST MODEL [OUTPUT] (or MODEL TEST)")
    if args.rest:
        if args.output:
            raise CLIError("give the output file once (OUTPUT or --output)")
        args.output = args.rest[0]
    # LIBLINEAR's order is TEST MODEL OUTPUT; this command's own was MODEL TEST
    if _is_model_file(second):
        model_path, test_path = second, first
    elif _is_model_file(first):
        model_path, test_path = first, second
    else:
        raise CLIError(f"{second}: not a model file (neither an svmsvc model nor a LIBLINEAR "
                       f"model file); usage: svmsvc predict TEST MODEL [OUTPUT]")
    model = solvers.load_model(model_path)
    ds = _read(test_path, zero_based=args.zero_based)
    from solvers.evaluate import evaluate

    decision, proba = model.scores_and_probabilities(ds.X, parallel=True)
    predictions = model.labels_from_scores(decision)
    if args.b == 1:  # LIBSVM's -b 1 output: a header of labels, then label and probabilities
        if proba is None:
            raise CLIError("-b 1 needs a model trained with --probability true")
        lines = ["labels " + " ".join(label_key(c) for c in model.classes_) + "\n"]
        lines += [f"{label_key(p)} " + " ".join(f"{v:g}" for v in row) + "\n"
                  for p, row in zip(predictions, proba, strict=True)]
        if args.output:
            Path(args.output).write_text("".join(lines))
    elif args.output:
        Path(args.output).write_text("".join(f"{label_key(p)}\n" for p in predictions))
    correct = int(np.sum(predictions == ds.labels))
    print(f"accuracy: {100.0 * correct / max(ds.n_samples, 1):.4f}% ({correct}/{ds.n_samples})")
    report = evaluate(model, ds, parallel=True)
    print(f"balanced accuracy: {100.0 * report['balanced_accuracy']:.4f}%")
    print(f"macro F1: {report['f1_macro']:.6f}")
    if report["roc_auc"] is not None:
        print(f"ROC AUC: {report['roc_auc']:.6f}")
    if report["average_precision"] is not None:
        print(f"average precision: {report['average_precision']:.6f}")
    return 0


def cmd_export(args) -> int:
    import solvers

    model = solvers.load_model(_existing(args.model))
    if hasattr(model, "to_libsvm"):  # a kernel model: LIBSVM's format (C-SVC, from smo)
        try:
            text = model.to_libsvm()
        except ValueError as exc:
            raise CLIError(str(exc)) from None
    elif hasattr(model, "to_liblinear"):
        text = model.to_liblinear()
    else:
        raise CLIError(f"a {model.kind} model has no LIBLINEAR form")
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def _existing(path: str) -> str:
    if not Path(path).exists():
        raise CLIError(f"{path}: no such file")
    return path


# -- parser -------------------------------------------------------------------------------------


def _data_options(parser: argparse.ArgumentParser, widen: bool = True) -> None:
    if widen:
        parser.add_argument("--n-features", type=int, default=None,
                            help="widen the feature matrix to this many columns")
    parser.add_argument("--zero-based", action="store_true",
                        help="feature indices in the file start at 0")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("svmsvc")
    except PackageNotFoundError:
        return "0.1.0 (source tree)"


def build_parser(solver_spec=None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="svmsvc", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"svmsvc {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    info = commands.add_parser("info", help="statistics of an SVMlight file")
    info.add_argument("file")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    _data_options(info)

    train = commands.add_parser("train", help="train a model on an SVMlight file")
    train.add_argument("file")
    train.add_argument("model", nargs="?", default=None,
                       help="write the model here (as LIBLINEAR's train FILE MODEL)")
    train.add_argument("--solver", default="auto",
                       help="solver name (see 'svmsvc solvers'; default auto)")
    train.add_argument("--model-out",
                       help="write the model here (default: MODEL, else FILE's base name "
                            "plus .model in the current directory, as LIBLINEAR does)")
    train.add_argument("--format", choices=("npz", "liblinear"), default="npz",
                       help="model file format (default npz)")
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
    liblinear.add_argument("-c", dest="ll_C", type=_number_option, default=None,
                           metavar="COST", help="C (LIBLINEAR's -c, default 1)")
    liblinear.add_argument("-e", dest="ll_eps", type=_number_option, default=None,
                           metavar="EPS", help="-s 1, 3, 4 (dual_cd): LIBLINEAR's stopping "
                                               "rule, the projected gradient's spread at "
                                               "most EPS (default 0.1)")
    liblinear.add_argument("-B", dest="ll_bias", type=_number_option, default=None,
                           metavar="BIAS", help="BIAS > 0: a constant feature of value BIAS "
                                                "appended to every example, its weight "
                                                "regularized as the others (bias="
                                                "regularized, bias_scale=BIAS); BIAS < 0: "
                                                "no bias (LIBLINEAR's default, -1)")
    liblinear.add_argument("-v", dest="ll_folds", type=int, default=None, metavar="K",
                           help="K-fold cross-validation at this C instead of training: "
                                "prints 'Cross Validation Accuracy = x%%' (no model written)")
    liblinear.add_argument("-C", dest="ll_search", action="store_true",
                           help="search C by cross-validation (K folds of -v, default 5, over "
                                "C = 2^-5 .. 2^5, or --C-grid): prints 'Best C = c  CV "
                                "accuracy = x%%' (no model written)")
    liblinear.add_argument("--C-grid", dest="ll_grid", default=None,
                           help="-C's grid, as cv's --C (default 2^-5:2^5)")
    _data_options(train)
    if solver_spec is not None:
        _add_solver_options(train, solver_spec)

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
    _data_options(cv)
    if solver_spec is not None:
        _add_solver_options(cv, solver_spec, exclude=("C", "gamma"))

    predict = commands.add_parser(
        "predict", help="predict an SVMlight file with a model: TEST MODEL [OUTPUT], as "
                        "LIBLINEAR's predict (MODEL TEST also works)")
    predict.add_argument("first", metavar="TEST")
    predict.add_argument("second", metavar="MODEL")
    predict.add_argument("rest", nargs="*", metavar="OUTPUT")
    predict.add_argument("-b", type=int, choices=(0, 1), default=0,
                         help="1: write probabilities (LIBSVM's format: a 'labels ...' "
                              "header, then the label and one probability per class); the "
                              "model must have been trained with --probability true")
    predict.add_argument("--output", help="write one predicted label per line here")
    _data_options(predict, widen=False)

    export = commands.add_parser("export", help="write a model in LIBLINEAR's format (a C-SVC "
                                                  "kernel model from smo: LIBSVM's)")
    export.add_argument("model")
    export.add_argument("--output", help="file to write (default: stdout)")

    commands.add_parser("solvers", help="list the solvers and their parameters")

    for add_service_command in SERVICE_COMMANDS:
        add_service_command(commands)
    return parser


def cmd_solvers(args) -> int:
    import solvers

    for spec in solvers.list_solvers():
        print(f"{spec.name}: {spec.description}")
        print(f"    losses: {', '.join(spec.losses)}; bias: {', '.join(spec.bias_modes)}; "
              f"tasks: {', '.join(spec.tasks)}; warm-started C paths: "
              f"{', '.join(spec.warm_start_tasks()) or 'none'}")
    return 0


# Service subcommands (serve, migrate) register here: each is a function taking the
# subparsers object and adding a parser whose defaults include ``handler=callable(args)``.
SERVICE_COMMANDS: list = []


def _add_serve_command(commands) -> None:
    from app.commands import add_serve_command

    add_serve_command(commands)


def _add_migrate_command(commands) -> None:
    from app.commands import add_migrate_command

    add_migrate_command(commands)


SERVICE_COMMANDS += [_add_serve_command, _add_migrate_command]


def _solver_spec_from_argv(argv: list[str]):
    """The solver named by ``--solver`` (or, for train, LIBLINEAR's ``-s``) in a train or cv
    command line, if any and known."""
    if not argv or argv[0] not in ("train", "cv"):
        return None
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--solver")
    if argv[0] == "train":
        pre.add_argument("-s", dest="ll_type")
    known, _ = pre.parse_known_args(argv[1:])
    import solvers

    ll_type = getattr(known, "ll_type", None)
    if ll_type is not None:
        try:
            number = int(ll_type)
        except ValueError:
            raise CLIError(f"-s {ll_type!r}: LIBLINEAR's solver type is a number") from None
        if known.solver is not None:
            raise CLIError("give LIBLINEAR's -s or --solver, not both")
        return solvers.get_solver(liblinear_type(number).solver)
    if known.solver is None:
        return solvers.get_solver("auto")

    return solvers.get_solver(known.solver)


def liblinear_argv(argv: list[str]) -> list[str]:
    """LIBLINEAR's ``-wi WEIGHT`` (``-w1 2``, ``-w-1 0.5``: the label attached, the weight
    the next word) as ``-wi=WEIGHT``; ``-w i=WEIGHT`` and ``-wi=WEIGHT`` stay as they are."""
    out: list[str] = []
    words = iter(argv)
    for word in words:
        if word.startswith("-w") and len(word) > 2 and "=" not in word:
            weight = next(words, None)
            if weight is None:
                raise CLIError(f"{word}: give the weight after it, e.g. {word} 2")
            out.append(f"-w{word[2:]}={weight}")  # attached: a label -1 is no option
        else:
            out.append(word)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in ("train", "cv"):
            argv = liblinear_argv(argv)
        spec = _solver_spec_from_argv(argv)
        args = build_parser(spec).parse_args(argv)
        if args.command == "info":
            return cmd_info(args)
        if args.command == "train":
            return cmd_train(args, spec)
        if args.command == "cv":
            return cmd_cv(args, spec)
        if args.command == "predict":
            return cmd_predict(args)
        if args.command == "export":
            return cmd_export(args)
        if args.command == "solvers":
            return cmd_solvers(args)
        return args.handler(args)
    except (CLIError, ValueError, OSError) as exc:
        # SVMLightFormatError, InvalidParametersError, UnknownSolverError, ModelFormatError
        # are ValueErrors with messages written for the user.
        print(f"svmsvc: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("svmsvc: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
