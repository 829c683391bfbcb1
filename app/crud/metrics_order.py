"""Jobs sorted and filtered by a stored metric of their model (``GET /jobs?sort=...``,
``?min=name:value``, ``?max=name:value``), as an MLflow user sorts runs by a metric.

A metric is ``validation.<name>`` (the model's evaluation on the job's validation dataset:
:data:`VALIDATION_METRICS`), or a column of the model (:data:`MODEL_METRICS`: ``objective``,
``training_seconds``, ``iterations``); ``created_at`` sorts by the job's creation.  A job
without the metric (no model yet, no validation dataset, a metric that is undefined for it)
comes last whichever the direction, and is left out by a ``min`` / ``max`` filter on it.
"""

from __future__ import annotations

from sqlalchemy import Select

from app.db.models import Job, TrainedModel
from app.errors import InvalidRequest

VALIDATION_METRICS = ("accuracy", "balanced_accuracy", "precision_macro", "recall_macro",
                      "f1_macro", "roc_auc", "average_precision", "log_loss", "n_samples",
                      "mean_squared_error", "mean_absolute_error", "r2", "squared_correlation",
                      "outlier_fraction")
"""The numbers of a model's ``validation`` (``EvaluationPublic``) a job list can sort on: a
classifier's, a regression's (errors, R^2, squared correlation) and a one-class model's
(outlier fraction; its AUC is ``roc_auc``)."""
MODEL_METRICS = {"objective": TrainedModel.objective,
                 "training_seconds": TrainedModel.training_seconds,
                 "iterations": TrainedModel.iterations}
METRIC_NAMES = (*(f"validation.{name}" for name in VALIDATION_METRICS), *MODEL_METRICS)
_NAMES = ("(" + "|".join([r"validation\." + name for name in VALIDATION_METRICS]
                         + list(MODEL_METRICS)) + ")")
SORT_PATTERN = "^-?(created_at|" + _NAMES + ")$"
BOUND_PATTERN = "^" + _NAMES + r":[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$"
"""``?min=`` / ``?max=``: a metric, a colon, a decimal number."""
SORT_DESCRIPTION = ("The order: a metric, or created_at, with a leading '-' for descending "
                    "(default -created_at, newest first). Metrics: " + ", ".join(METRIC_NAMES)
                    + "; jobs without it come last.")


def metric(name: str, field: str):
    """The SQL expression of metric ``name`` (named in query parameter ``field``)."""
    if name in MODEL_METRICS:
        return MODEL_METRICS[name]
    prefix, dot, rest = name.partition(".")
    if prefix == "validation" and dot and rest in VALIDATION_METRICS:
        return TrainedModel.validation[rest].as_float()
    raise InvalidRequest(f"{field}: unknown metric {name[:80]!r}; one of "
                         f"{', '.join(METRIC_NAMES)}")


def needs_model(sort: str, bounds: dict[str, list[tuple[str, float]]]) -> bool:
    """Whether the query must join the jobs' models."""
    return sort.lstrip("-") != "created_at" or any(bounds.values())


def parse_bounds(texts: list[str] | None, field: str) -> list[tuple[str, float]]:
    """``name:value`` filters of query parameter ``field`` as (metric name, bound)."""
    bounds = []
    for text in texts or ():
        name, colon, value = text.rpartition(":")
        try:
            bound = float(value)
        except ValueError:
            bound = float("nan")
        if not colon or bound != bound:
            raise InvalidRequest(f"{field}: expected metric:number (e.g. "
                                 f"validation.accuracy:0.9), got {text[:80]!r}")
        metric(name, field)  # known
        bounds.append((name, bound))
    return bounds


def ordered(query: Select, sort: str, minimum: list[tuple[str, float]],
            maximum: list[tuple[str, float]]) -> tuple[Select, tuple]:
    """``query`` (of jobs) joined to their models if needed and filtered by the bounds, and
    the order to page it by (ties: newest first)."""
    if needs_model(sort, {"min": minimum, "max": maximum}):
        query = query.outerjoin(TrainedModel, TrainedModel.job_id == Job.id)
    for name, bound in minimum:
        query = query.where(metric(name, "min") >= bound)
    for name, bound in maximum:
        query = query.where(metric(name, "max") <= bound)
    newest = (Job.created_at.desc(), Job.id)
    descending = sort.startswith("-")
    name = sort[1:] if descending else sort
    if name == "created_at":
        return query, (Job.created_at.desc() if descending else Job.created_at.asc(), Job.id)
    column = metric(name, "sort")
    return query, ((column.desc() if descending else column.asc()).nulls_last(), *newest)
