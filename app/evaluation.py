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


def evaluate(model, dataset, *, parallel: bool = False) -> dict[str, Any]:
    """The evaluation as a JSON-able dict (the fields of ``EvaluationPublic`` but the id):
    :func:`solvers.evaluate.evaluate`'s metrics.

    Labels are ordered like ``model.classes_``, followed by any label only the dataset has
    (its examples are always misclassified).
    """
    from solvers.evaluate import evaluate as solvers_evaluate  # not at import: see worker

    return solvers_evaluate(model, dataset, parallel=parallel)


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
