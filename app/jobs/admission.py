"""What ``POST /jobs`` checks before it queues a job: everything that would only fail later
in a worker (or kill it) and can be known from the dataset rows and the parameters.

* the task must be possible on the data (:func:`check_labels_for_task`): classification on
  at least two classes (labels that look real-valued, the library's rule, are refused with a
  hint to ``task="regression"``), more than two only for a solver with the ``multiclass``
  task; ``task="ordinal"`` only for a solver with that task and on labels that are ranks
  (integers); ``task="regression"`` on numeric labels, kept as they are (never counted as
  classes); ``task="one_class"`` on any rows (its labels are not read);
* a validation dataset must be in the training data's feature space (no more features);
* a job runs under a time limit: the one it asks for, at most ``SVMSVC_MAX_JOB_TIME_LIMIT_S``,
  or ``SVMSVC_JOB_TIME_LIMIT_S`` (:func:`job_time_limit`); a tuning job's fits (folds x grid
  points, and the refit) are at most ``SVMSVC_MAX_TUNING_FITS``;
* parameters that allocate are bounded by settings: the kernel-row cache
  (``SVMSVC_MAX_KERNEL_CACHE_MB``) and the dense square matrix a solver factorizes, as its
  spec's ``dense_system`` reports it for these parameters and this data (the kernel system of
  a direct LS-SVM solve, n_samples^2; the normal equations of mfn's or alm's Cholesky step or
  of the interior-point method, (n_features + 1)^2), at most ``SVMSVC_MAX_DIRECT_ROWS`` rows;
  the labels (``SVMSVC_MAX_CLASSES``) and a linear model's weights, classes x features
  (``SVMSVC_MAX_MODEL_WEIGHTS``), whose bytes the caller checks against the owner's model
  quota (:mod:`app.quotas`).

A job on a sharded dataset (:mod:`app.shards`) needs the Dask executor and a solver that
trains on distributed data (:func:`check_sharded_job`); the checks above that need the data's
statistics wait until a job has read its shards.

Each refusal is an :class:`~app.errors.InvalidJob` naming the field, or a
:class:`~app.errors.LimitExceeded` naming the setting (both answered 422).
"""

from __future__ import annotations

import math

from app.core.config import Settings
from app.db.models import Dataset, DatasetKind
from app.errors import InvalidJob, LimitExceeded, limit_exceeded, setting_variable


def _label_count(dataset: Dataset) -> int:
    """The dataset's distinct labels (its classes' count, or, where they were not counted as
    classes, the number :func:`app.crud.datasets.label_summary` recorded)."""
    if dataset.class_counts is not None:
        return len(dataset.class_counts)
    return int(dataset.label_summary["distinct"])


def _numbers(dataset: Dataset) -> list[float] | None:
    """The dataset's distinct labels as numbers, sorted (None: text labels, or too many to
    have been counted)."""
    if dataset.class_counts is None:
        return None
    try:
        return sorted(float(label) for label in dataset.class_counts)
    except ValueError:
        return None


def check_labels_for_task(task: str, dataset: Dataset, settings: Settings) -> int:
    """Refuse a task the dataset's labels do not pose (:class:`InvalidJob` naming
    ``dataset_id`` or ``params.task``); return their distinct count.

    The task decides what the labels are: classes (classification: at least two, at most
    ``SVMSVC_MAX_CLASSES``, and not more than ``solvers.train.REAL_VALUED_CLASSES`` distinct
    values that are not all integers: the library's rule, by which labels such as housing's
    24.0 and 21.6 are a regression's real values, and the refusal says to set
    ``task="regression"``), ranks (ordinal: integers), real values (regression: numbers,
    kept as they are, never counted as classes) or nothing (one_class: not read).
    """
    count = _label_count(dataset)
    summary = dataset.label_summary or {}
    if task == "regression":
        if summary and summary.get("min") is None:
            raise InvalidJob("dataset_id: regression needs numeric labels; the dataset's "
                             "are text")
        return count
    if task == "one_class":
        return count  # novelty detection reads the rows only
    if count < 2:
        numbers = _numbers(dataset)
        raise InvalidJob(f"dataset_id: training needs at least two distinct labels in the "
                         f"dataset; it has only "
                         f"{numbers[0] if numbers else 'no'} label"
                         + (" (task 'one_class' trains on one class of rows)"
                            if task == "classification" else ""))
    if dataset.class_counts is None or count > settings.max_classes:
        raise limit_exceeded("dataset_id: the dataset's distinct labels", "max_classes",
                             settings.max_classes, "labels", actual=count,
                             error=LimitExceeded)
    numbers = _numbers(dataset)
    integral = numbers is None or all(math.isfinite(v) and v == int(v) for v in numbers)
    if task == "ordinal" and (numbers is None or not integral):
        raise InvalidJob("dataset_id: ordinal regression needs ranks as labels "
                         "(integers, e.g. 1..p)")
    from solvers.train import REAL_VALUED_CLASSES

    if task == "classification" and count > REAL_VALUED_CLASSES and not integral:
        example = next(v for v in numbers if v != int(v))
        raise InvalidJob(f"params.task: the dataset's {count} distinct labels are real values "
                         f"(e.g. {example!r}), not classes (more than "
                         f"{REAL_VALUED_CLASSES}, not all integers): for support vector "
                         f"regression set params.task to 'regression'")
    return count


def check_sharded_job(spec, params, dataset: Dataset, settings: Settings, tuning) -> None:
    """What a job on a sharded dataset needs: the Dask executor (its rows are read and kept
    by the cluster's workers), no cross-validation, and a solver and parameters the library
    trains on distributed data (``solvers.train.distributed_refusal``, with the dataset's
    label count once a job read its shards; two before: the binary or one-vs-rest task is the
    library's to check again then)."""
    from solvers.train import distributed_refusal

    if settings.executor != "dask":
        variable = setting_variable("executor")
        raise InvalidJob(f"dataset_id: dataset {dataset.id} is sharded: its jobs train "
                         f"data-parallel on a Dask cluster, and this service runs jobs on local "
                         f"worker processes; the operator must set {variable}=dask (with "
                         f"SVMSVC_DASK_SCHEDULER)", setting=variable)
    if tuning is not None:
        raise InvalidJob("tuning: cross-validation does not run on a sharded dataset (its "
                         "folds would need the rows in one process); train at one C")
    labels = 2 if dataset.class_counts is None else len(dataset.class_counts)
    refusal = distributed_refusal(spec, params, labels)
    if refusal is not None:
        raise InvalidJob(f"params: {refusal}")


def job_time_limit(asked: float | None, settings: Settings) -> float:
    """The time limit (seconds) a job runs under: ``asked`` when given, at most
    ``max_job_time_limit_s`` (:class:`LimitExceeded` past it), else ``job_time_limit_s``."""
    if asked is None:
        return settings.job_time_limit_s
    if not asked <= settings.max_job_time_limit_s:
        raise limit_exceeded("time_limit_s", "max_job_time_limit_s",
                             settings.max_job_time_limit_s, "s", actual=asked,
                             error=LimitExceeded)
    return asked


def tuning_points(tuning) -> int:
    """The points of a tuning job's grid: C values x gamma values x epsilon values x nu
    values (each axis not searched counting one)."""
    points = len(tuning.C)
    for axis in (tuning.gamma, tuning.epsilon, tuning.nu):
        points *= len(axis) if axis else 1
    return points


def tuning_fits(tuning) -> int:
    """The fits a tuning job runs: every fold at every grid point, then the refit."""
    return tuning.folds * tuning_points(tuning) + 1


def check_job(params, dataset: Dataset, validation: Dataset | None, settings: Settings,
              tuning=None) -> int | None:
    """Raise :class:`InvalidJob` for a job that cannot succeed, :class:`LimitExceeded` for one
    that asks for more memory than allowed (a tuning job: at every point of its grid).

    Returns the bytes its model will take, estimated from its shape (:func:`model_bytes`;
    the owner's model quota is checked against them and they are reserved while the job is
    in flight, :mod:`app.quotas`), None where the shape is not known yet (a sharded dataset
    not read yet).
    """
    import solvers
    from solvers.approximation import Approximation
    from solvers.auto import DatasetShape
    from solvers.lssvm.fit import check_kernel_size, uses_row_cache
    from solvers.lssvm.params import KernelSolverParams
    from solvers.model_selection import check_search
    from solvers.train import resolve

    spec = solvers.get_solver(params.solver)
    if validation is not None and validation.kind == DatasetKind.sharded:
        raise InvalidJob("validation_dataset_id: a sharded dataset cannot validate a model "
                         "(its rows stay on the cluster); validate on an uploaded dataset")
    if dataset.kind == DatasetKind.sharded:
        check_sharded_job(spec, params, dataset, settings, tuning)
        if dataset.scanned_at is None:
            return None  # the rest needs its statistics: checked again when a job reads them
    if spec.name == "auto":  # check what the worker will run: auto's choice for this data
        shape = DatasetShape(dataset.n_samples, dataset.n_features, dataset.nnz,
                             _label_count(dataset))
        try:
            spec, params, _ = resolve(spec, params, shape)
        except solvers.InvalidParametersError as exc:
            raise InvalidJob(f"params: {exc}") from None
    task = getattr(params, "task", "classification")
    n_labels = _label_count(dataset)
    if tuning is not None and tuning_fits(tuning) > settings.max_tuning_fits:
        raise limit_exceeded(f"tuning: the grid's fits ({tuning.folds} folds x "
                             f"{tuning_points(tuning)} points, and the refit)",
                             "max_tuning_fits", settings.max_tuning_fits, "fits",
                             actual=tuning_fits(tuning), error=LimitExceeded)
    if tuning is not None:  # the library's own refusals of a search, before any worker
        try:
            check_search(spec, params, n_samples=dataset.n_samples, n_labels=n_labels,
                         folds=tuning.folds, gamma=tuning.gamma, scoring=tuning.scoring,
                         epsilon=tuning.epsilon, nu=tuning.nu)
        except solvers.InvalidParametersError as exc:
            raise InvalidJob(f"tuning.{exc}") from None
    n_labels = check_labels_for_task(task, dataset, settings)
    refusal = None if spec.portfolio else spec.solves.refusal(
        params.posed_task(n_labels), params.loss, params.bias, params.loss_exponent,
        f"solver {spec.name!r}")
    if refusal is not None:
        raise InvalidJob(f"params: {refusal}; the dataset has {n_labels} labels")
    if validation is not None and validation.n_features > dataset.n_features:
        raise InvalidJob(f"validation_dataset_id: the validation dataset has "
                            f"{validation.n_features} features, the training dataset "
                            f"{dataset.n_features}: another feature space")
    run = Approximation.solver_params(params)  # on a low-rank factor: the linear kernel
    if isinstance(run, KernelSolverParams) and uses_row_cache(run, dataset.n_samples):
        try:  # the least-squares family's kernel path: refused now, not in the worker
            check_kernel_size(run, dataset.n_samples)
        except solvers.InvalidParametersError as exc:
            raise InvalidJob(f"params: {exc}") from None
    # the features the solver trains on: the data's, or a low-rank factor's columns
    features = params.solver_features(dataset.n_samples, dataset.n_features)
    if params.approximation != "none" and \
            dataset.n_samples * features > settings.max_factor_entries:
        chosen = (" at the largest rank it may choose; give a smaller rank"
                  if params.rank is None else "")
        raise limit_exceeded(f"params.rank: the low-rank factor ({dataset.n_samples} rows x "
                             f"{features}{chosen})", "max_factor_entries",
                             settings.max_factor_entries, "entries",
                             actual=dataset.n_samples * features, error=LimitExceeded)
    if not params.exact_kernel:
        # a linear model holds one weight vector per class (one for two labels or ranks),
        # each n_features + 1 long (a low-rank model as many coefficients over its
        # landmarks): bounded before any worker allocates it
        vectors = weight_vectors(params, n_labels)
        weights = vectors * (features + 1)
        if weights > settings.max_model_weights:
            raise limit_exceeded(
                f"the model ({vectors} weight vectors of {features + 1})",
                "max_model_weights", settings.max_model_weights, "weights", actual=weights,
                error=LimitExceeded)
        # its archive holds them as float64 (compressed, but a dense model does not shrink):
        # one over the prediction cache would be loaded again for every request
        if 8 * weights > settings.model_cache_bytes:
            raise limit_exceeded(
                f"the model ({vectors} weight vectors of {features + 1}, 8 bytes a weight)",
                "model_cache_bytes", settings.model_cache_bytes, "bytes",
                actual=8 * weights, error=LimitExceeded)
    cache_mb = getattr(params, "cache_mb", None)
    if cache_mb is not None and cache_mb > settings.max_kernel_cache_mb:
        raise limit_exceeded("params.cache_mb", "max_kernel_cache_mb",
                             settings.max_kernel_cache_mb, "MiB", actual=cache_mb,
                             error=LimitExceeded)
    # with an approximation the solver runs on the factor with the linear kernel
    system = spec.dense_system(run, dataset.n_samples, features) \
        if spec.dense_system is not None else None
    if system is not None and system[1] > settings.max_direct_rows:
        what, side = system
        raise limit_exceeded(f"params: {what}", "max_direct_rows", settings.max_direct_rows,
                             "rows", actual=side, error=LimitExceeded)
    return model_bytes(params, dataset, n_labels, features)


def weight_vectors(params, labels: int) -> int:
    """A model's rows of weights (or of coefficients): one per class, one for two labels or
    a task with one function (ordinal, regression, one-class: ``STANDALONE_TASKS``)."""
    from solvers.base import STANDALONE_TASKS

    task = getattr(params, "task", "classification")
    return 1 if labels == 2 or task in STANDALONE_TASKS else labels


def model_bytes(params, dataset: Dataset, labels: int, features: int) -> int:
    """The bytes a job's model is reserved at admission (:mod:`app.quotas`).  A linear model
    (or a low-rank one, linear over its landmarks): its weights as float64, one vector of
    ``features`` + 1 per class (one for two labels or a one-function task), exact where the
    archive does not compress them.  A kernel model: a bound, its support vectors being
    rows of the dataset, stored as the dataset's arrays are (``stored_bytes``; a sharded
    dataset's rows as CSR, 16 bytes a nonzero and 8 a row), with a float64 coefficient per
    row and class."""
    vectors = weight_vectors(params, labels)
    if not params.exact_kernel:
        return 8 * vectors * (features + 1)
    rows = dataset.stored_bytes or 16 * (dataset.nnz or 0) + 8 * (dataset.n_samples + 1)
    return rows + 8 * dataset.n_samples * vectors
