"""Class weights: C multiplied per class, exactly as LIBLINEAR's ``-wi`` does, composed with the
per-example ``cost:`` weights (``Dataset.sample_weight``), applied once for every family.

``params.class_weight`` is a mapping label -> weight, or ``"balanced"`` (scikit-learn's
n / (k n_c): n examples, k classes, n_c examples of class c, counted on the data trained on).
Keys may be the labels themselves or their text (JSON keys are strings: ``{"1": 10}`` is the
label 1, ``{"-1": 2.5}`` the label -1); a label not listed has weight 1, and a key that is
no label of the data is refused.

How the weights enter each task, as LIBLINEAR does (``train`` in ``linear.cpp``):

- binary: C_i = C * sample_weight_i * weight[y_i], for both classes;
- one-vs-rest: the problem of class k weights its positive examples (class k) by weight[k]
  and leaves the rest at C (LIBLINEAR's ``train_one(..., weighted_C[k], param->C)``, the
  same as scikit-learn's ``LinearSVC``): :func:`subproblem_weight`;
- Crammer-Singer: C_i = C * sample_weight_i * weight[y_i] (LIBLINEAR's ``Solver_MCSVM_CS``);
- ordinal regression: each example's terms weighted by the weight of its rank (every
  threshold term of example i carries C_i, as its ``cost:`` does);
- a native one-vs-one strategy: each pairwise problem weights each example by its class (LIBSVM).

:func:`apply_class_weight` is the one place that does it: ``train`` and cross-validation's
warm C path call it on the data they hand to a fit; binary, Crammer-Singer, ordinal and
one-vs-one fold the weights into ``sample_weight`` (so every family's problem construction sees
them), one-vs-rest leaves them on the dataset for :func:`subproblem_weight`, which the shared
one-vs-rest loop (:mod:`solvers.multiclass`) calls per class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from solvers.base import InvalidParametersError
from solvers.data.dataset import Dataset, label_key


def class_weight_vector(class_weight: Mapping[Any, float] | str | None,
                        dataset: Dataset) -> np.ndarray | None:
    """The weight of each of ``dataset.classes`` (in that order), None for no weights."""
    if class_weight is None:
        return None
    classes = dataset.classes
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise InvalidParametersError(
                f"class_weight: {class_weight!r} is not a mapping label -> weight nor "
                f"'balanced'")
        counts = np.array([np.count_nonzero(dataset.y == c) for c in classes], dtype=float)
        return dataset.n_samples / (classes.shape[0] * counts)
    labels = dataset.class_labels
    keys = {label_key(label): k for k, label in enumerate(labels)}
    weights = np.ones(classes.shape[0])
    unknown = []
    for key, weight in class_weight.items():
        k = keys.get(label_key(key) if not isinstance(key, str) else key)
        if k is None and isinstance(key, str):  # "1.0" for the label 1, " 1" ...
            try:
                k = keys.get(label_key(float(key)))
            except ValueError:
                k = None
        if k is None:
            unknown.append(key)
            continue
        weights[k] = float(weight)
    if unknown:
        raise InvalidParametersError(
            f"class_weight: {', '.join(map(str, unknown))} "
            f"{'is no label' if len(unknown) == 1 else 'are no labels'} of the data (labels: "
            f"{', '.join(label_key(v) for v in labels)})")
    return weights


def apply_class_weight(dataset: Dataset, class_weight, task: str) -> Dataset:
    """``dataset`` as the fit of ``task`` (one of ``solvers.base.TASKS``) must see it with
    ``class_weight`` (see the module docstring): the weights folded into ``sample_weight``,
    or, for one-vs-rest, attached for :func:`subproblem_weight`."""
    weights = class_weight_vector(class_weight, dataset)
    if weights is None:
        return dataset
    if task == "ovr":
        return dataset.with_class_weight(weights)
    per_example = weights[np.searchsorted(dataset.classes, dataset.y)]
    if dataset.sample_weight is not None:
        per_example = per_example * dataset.sample_weight
    return dataset.with_sample_weight(per_example)


def subproblem_weight(dataset: Dataset, positive: float) -> np.ndarray | None:
    """The per-example cost factors of the binary problem ``positive`` against the rest:
    ``sample_weight``, times the positive class's weight on its examples when one-vs-rest
    class weights are attached (LIBLINEAR: the rest stays at C)."""
    weights = dataset.class_weight
    if weights is None:
        return dataset.sample_weight
    k = int(np.searchsorted(dataset.classes, positive))
    factor = np.where(dataset.y == positive, weights[k], 1.0)
    return factor if dataset.sample_weight is None else factor * dataset.sample_weight
