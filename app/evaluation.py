"""A model's predictions on a labelled dataset: :func:`solvers.evaluate.evaluate`'s metrics.

Shared by ``POST /models/{id}/evaluate`` (:func:`evaluate_on_dataset`: serial kernels, in the
web process) and the workers (validation datasets, parallel kernels).
"""

from __future__ import annotations

import uuid
from typing import Any

from app.core.principals import Principal
from app.crud import datasets as crud_datasets
from app.db.models import DatasetKind
from app.errors import InvalidRequest
from app.prediction import ModelCache, load_model

#: the most (true, predicted) pairs a regression's evaluation keeps for its plots
PLOT_POINTS = 500

#: the bins of a one-class evaluation's histogram of decision values
HISTOGRAM_BINS = 40


def evaluate(model, dataset, *, parallel: bool = False) -> dict[str, Any]:
    """The evaluation as a JSON-able dict (the fields of ``EvaluationPublic`` but the id):
    :func:`solvers.evaluate.evaluate`'s metrics, the rows scored once, with the model's
    ``task`` and what the dashboard plots:

    * a classifier's labels are ordered like ``model.classes_``, followed by any label only
      the dataset has (its examples are always misclassified);
    * a regression's ``predicted_vs_true``: at most :data:`PLOT_POINTS` (true, predicted)
      pairs, rows evenly spaced over the dataset (all of them when it has fewer), for the
      residual and predicted-vs-true plots;
    * a one-class model's ``decision_histogram``: the decision values' counts in
      :data:`HISTOGRAM_BINS` equal bins (``edges`` has one more entry than ``counts``;
      ``by_label`` the counts of each label's rows when the labels have two values).
    """
    import numpy as np

    from solvers.evaluate import evaluate as solvers_evaluate  # not at import: see worker
    from solvers.evaluate import one_class_scores, regression_scores

    task = model.task
    if task == "regression":
        predicted = model.predict(dataset.X, parallel=parallel)
        result = regression_scores(dataset.y, predicted)
        rows = np.unique(np.linspace(0, dataset.n_samples - 1,
                                     min(PLOT_POINTS, dataset.n_samples)).astype(np.int64))
        result["predicted_vs_true"] = {
            "true": np.asarray(dataset.y, dtype=np.float64)[rows].tolist(),
            "predicted": np.asarray(predicted, dtype=np.float64)[rows].tolist()}
    elif task == "one_class":
        decision = model.decision_function(dataset.X, parallel=parallel)
        result = one_class_scores(dataset.labels, decision)
        result["decision_histogram"] = decision_histogram(decision, dataset.labels)
    else:
        result = solvers_evaluate(model, dataset, parallel=parallel)
    return {"task": task, **result}


def decision_histogram(decision, labels) -> dict[str, Any] | None:
    """The histogram of one-class decision values described in :func:`evaluate` (None
    without rows)."""
    import numpy as np

    from solvers.data.dataset import label_key

    decision = np.asarray(decision, dtype=np.float64)
    if decision.shape[0] == 0:
        return None
    counts, edges = np.histogram(decision, bins=HISTOGRAM_BINS)
    labels = np.asarray(labels)
    values = np.unique(labels)
    by_label = None
    if values.shape[0] == 2:
        by_label = {label_key(v): np.histogram(decision[labels == v], bins=edges)[0].tolist()
                    for v in values}
    return {"edges": edges.tolist(), "counts": counts.tolist(), "by_label": by_label}


def evaluate_on_dataset(cache: ModelCache, sessions, store, model_id: uuid.UUID,
                        dataset_id: uuid.UUID, principal: Principal) -> dict[str, Any]:
    """The evaluation of a stored model on a stored dataset (the fields of
    ``EvaluationPublic``): :class:`~app.errors.NotFound` for the model,
    :class:`~app.errors.InvalidRequest` for a dataset that does not exist or belongs to
    another feature space (more features than the model); both must be ``principal``'s to
    see."""
    model = load_model(cache, sessions, model_id, principal)
    missing = InvalidRequest(f"dataset_id: dataset {dataset_id} not found")
    with sessions.read() as session:
        dataset = crud_datasets.get(session, dataset_id, principal, field="dataset_id")
        if dataset.kind == DatasetKind.sharded:
            raise InvalidRequest(f"dataset_id: dataset {dataset_id} is sharded: its rows stay "
                                 f"on the Dask cluster; evaluate on an uploaded dataset")
        digest, n_features = dataset.sha256, dataset.n_features
    if n_features > model.n_features_in_:
        raise InvalidRequest(f"dataset_id: the dataset has {n_features} features, the model "
                             f"{model.n_features_in_}: it belongs to another feature space")
    try:
        data = store.load(digest)
    except FileNotFoundError:  # deleted meanwhile
        raise missing from None
    return {"dataset_id": dataset_id, **evaluate(model, data, parallel=False)}
