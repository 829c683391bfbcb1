"""LIBLINEAR's habits on ``svmsvc train``: its ``-s`` solver types mapped onto the solvers
here (or refused, saying why), ``-c -e -p -B``, ``-wi WEIGHT``, LIBSVM's ``-b`` (train with
probability estimates), and ``-v`` / ``-C`` cross-validation with LIBLINEAR's output lines."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from app.cli.common import CLIError, parse_number


@dataclass(frozen=True)
class LiblinearType:
    """What one of LIBLINEAR's ``-s`` solver types is here: the solver and the parameters
    that pose the same problem (and, for dual_cd, LIBLINEAR's stopping rule)."""

    solver: str
    params: dict[str, Any]
    describe: str
    eps: bool  # whether -e maps (the solver's stop_rule in params is LIBLINEAR's rule)
    default_eps: float = 0.1  # LIBLINEAR's -e for the type (0.1 dual, 0.01 primal)


#: LIBLINEAR's solver types that map cleanly onto a solver here (same problem; for dual_cd
#: and newton the same algorithm and stopping rule: Hsieh et al. 2008, Keerthi et al. 2008,
#: Yu, Huang & Lin 2011, LIBLINEAR's newton.cpp).
LIBLINEAR_TYPES: dict[int, LiblinearType] = {
    0: LiblinearType("newton", {"loss": "logistic", "stop_rule": "gradient"},
                     "L2-regularized logistic regression, primal (newton, logistic)", True,
                     0.01),
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
    7: LiblinearType("dual_cd", {"loss": "logistic", "stop_rule": "projected_gradient"},
                     "L2-regularized logistic regression, dual (dual_cd, logistic)", True),
    11: LiblinearType("mfn", {"task": "regression", "loss": "squared_epsilon_insensitive"},
                      "L2-regularized L2-loss support vector regression, primal (mfn, "
                      "squared_epsilon_insensitive: the same problem by another primal "
                      "Newton method; -e does not map)", False),
    12: LiblinearType("dual_cd", {"task": "regression", "loss": "squared_epsilon_insensitive",
                                  "stop_rule": "projected_gradient"},
                      "L2-regularized L2-loss support vector regression, dual (dual_cd, "
                      "Ho & Lin)", True),
    13: LiblinearType("dual_cd", {"task": "regression", "loss": "epsilon_insensitive",
                                  "stop_rule": "projected_gradient"},
                      "L2-regularized L1-loss support vector regression, dual (dual_cd, "
                      "Ho & Lin)", True),
}

#: the stop_rule that is LIBLINEAR's -e, for the solvers that have one
EPS_RULES = {"dual_cd": "projected_gradient", "newton": "gradient"}

#: LIBLINEAR's other types and why they are refused.
LIBLINEAR_REFUSED: dict[int, str] = {
    5: "L1-regularized L2-loss SVC: no solver here has an L1 regularizer",
    6: "L1-regularized logistic regression: no solver here has an L1 regularizer",
    21: "one-class SVM: no one-class problem here",
}


def number_option(text: str) -> float:
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
            params["eps"] = kind.default_eps  # LIBLINEAR's default -e for the type
    if args.ll_C is not None:
        if args.ll_C <= 0:
            raise CLIError(f"-c {args.ll_C:g}: C must be positive")
        params["C"] = args.ll_C
    if args.ll_eps is not None:
        if kind is None and spec.name not in EPS_RULES:
            raise CLIError("-e is LIBLINEAR's stopping rule: give it with -s 0, 1, 3, 4, 7, 12 "
                           "or 13 (or --solver dual_cd or newton); other solvers stop on "
                           "--tol")
        if kind is not None and not kind.eps:
            raise CLIError(f"-e with -s {args.ll_type}: LIBLINEAR's primal stopping rule "
                           f"(the gradient's norm) has no equivalent in {kind.solver}; give "
                           f"--tol, the certified relative duality gap")
        if args.ll_eps <= 0:
            raise CLIError(f"-e {args.ll_eps:g}: the tolerance must be positive")
        params["eps"] = args.ll_eps
        params["stop_rule"] = EPS_RULES[kind.solver if kind is not None else spec.name]
    if args.ll_p is not None:
        if not (kind is not None and kind.params.get("task") == "regression"):
            raise CLIError("-p is the epsilon of LIBLINEAR's support vector regression: "
                           "give it with -s 11, 12 or 13")
        if args.ll_p < 0:
            raise CLIError(f"-p {args.ll_p:g}: epsilon must be >= 0")
        # mfn's own epsilon is its CGLS tolerance: the tube is its insensitivity field
        key = "insensitivity" if "insensitivity" in spec.params_model.model_fields \
            else "epsilon"
        params[key] = args.ll_p
    if args.ll_bias is not None:
        if args.ll_bias == 0:
            raise CLIError("-B 0: a bias feature of value 0 is no bias; give -B -1 for none "
                           "or a positive value for a regularized bias feature")
        if args.ll_bias < 0:
            params["bias"] = "none"
        else:
            params["bias"], params["bias_scale"] = "regularized", args.ll_bias
    if args.ll_probability is not None:  # LIBSVM's train -b: probability estimates
        params["probability"] = bool(args.ll_probability)
    return params


def cross_validation_accuracy(ds, spec, params, folds: int, C: list[float]):
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
