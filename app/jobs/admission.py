"""What ``POST /jobs`` checks before it queues a job: everything that would only fail later
in a worker (or kill it) and can be known from the dataset rows and the parameters.

* the task must be possible on the data: at least two labels; more than two only for a solver
  with the ``multiclass`` task; ``task="ordinal"`` only for a solver with that task and on
  labels that are ranks (integers);
* a validation dataset must be in the training data's feature space (no more features);
* parameters that allocate are bounded by settings: the kernel-row cache
  (``SVMSVC_MAX_KERNEL_CACHE_MB``) and dense direct solves, whose matrix is n x n
  (``SVMSVC_MAX_DIRECT_ROWS``).

Each refusal is a :class:`~app.api.errors.Unprocessable` (422) naming the field.
"""

from __future__ import annotations

import math

from app.api.errors import Unprocessable, over_limit
from app.core.config import Settings
from app.db.models import Dataset


def _labels(dataset: Dataset) -> list[float]:
    return sorted(float(label) for label in dataset.class_counts)


def check_job(params, dataset: Dataset, validation: Dataset | None, settings: Settings) -> None:
    """Raise a 422 for a job that cannot succeed, or that asks for more memory than allowed."""
    import solvers

    spec = solvers.get_solver(params.solver)
    labels = _labels(dataset)
    task = getattr(params, "task", "classification")
    if len(labels) < 2:
        raise Unprocessable(f"dataset_id: training needs at least two distinct labels in the "
                            f"dataset; it has only {labels[0] if labels else 'no'} label")
    if task == "ordinal":
        if "ordinal" not in spec.tasks:
            raise Unprocessable(f"params: solver {spec.name!r} does not support ordinal "
                                f"regression")
        if not all(math.isfinite(label) and label == int(label) for label in labels):
            raise Unprocessable("dataset_id: ordinal regression needs ranks as labels "
                                "(integers, e.g. 1..p)")
    elif len(labels) > 2 and "multiclass" not in spec.tasks:
        raise Unprocessable(f"params: solver {spec.name!r} does not support multi-class "
                            f"problems; the dataset has {len(labels)} labels")
    if validation is not None and validation.n_features > dataset.n_features:
        raise Unprocessable(f"validation_dataset_id: the validation dataset has "
                            f"{validation.n_features} features, the training dataset "
                            f"{dataset.n_features}: another feature space")
    cache_mb = getattr(params, "cache_mb", None)
    if cache_mb is not None and cache_mb > settings.max_kernel_cache_mb:
        raise over_limit("params.cache_mb", "max_kernel_cache_mb", settings.max_kernel_cache_mb,
                         "MiB", actual=cache_mb, error=Unprocessable)
    if getattr(params, "method", None) == "direct":
        linear = getattr(params, "kernel", None) == "linear"
        size = dataset.n_features + 1 if linear else dataset.n_samples
        if size > settings.max_direct_rows:
            what = ("a direct solve on the linear kernel (a dense matrix of n_features + 1 "
                    "rows)" if linear else "a direct kernel solve (a dense n_samples x "
                    "n_samples matrix)")
            raise over_limit(f"params.method: {what}", "max_direct_rows",
                             settings.max_direct_rows, "rows", actual=size,
                             error=Unprocessable)
