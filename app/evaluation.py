"""A model's predictions on a labelled dataset: accuracy, per-class counts, confusion matrix.

Shared by ``POST /models/{id}/evaluate`` (:func:`evaluate_on_dataset`: serial kernels, in the
web process) and the workers (validation datasets, parallel kernels).
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np

from app.crud import datasets as crud_datasets
from app.errors import InvalidRequest
from app.prediction import ModelCache, load_model
from solvers.data.dataset import label_value


def evaluate(model, dataset, *, parallel: bool = False) -> dict[str, Any]:
    """The evaluation as a JSON-able dict (the fields of ``EvaluationPublic`` but the id).

    Labels are ordered like ``model.classes_``, followed by any label only the dataset has
    (its examples are always misclassified).
    """
    predicted = np.asarray(model.predict(dataset.X, parallel=parallel))
    truth = dataset.labels
    model_labels = np.asarray(model.classes_)
    if model_labels.dtype.kind != truth.dtype.kind and "U" not in (model_labels.dtype.kind,
                                                                   truth.dtype.kind):
        # ints against floats (a model written before labels kept their type): as numbers
        truth, model_labels, predicted = (np.asarray(a, dtype=np.float64)
                                          for a in (truth, model_labels, predicted))
    unseen = np.setdiff1d(np.unique(truth), model_labels)
    labels = np.concatenate([model_labels, unseen])
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    true_index = order[np.searchsorted(sorted_labels, truth)]
    predicted_index = order[np.searchsorted(sorted_labels, predicted)]
    confusion = np.zeros((labels.size, labels.size), dtype=np.int64)
    np.add.at(confusion, (true_index, predicted_index), 1)
    n_samples = int(truth.size)
    correct = int(np.trace(confusion))
    per_class = [
        {
            "label": label_value(label),
            "true_count": int(confusion[k].sum()),
            "predicted_count": int(confusion[:, k].sum()),
            "correct": int(confusion[k, k]),
        }
        for k, label in enumerate(labels)
    ]
    return {
        "n_samples": n_samples,
        "accuracy": correct / n_samples if n_samples else 0.0,
        "labels": [label_value(label) for label in labels],
        "confusion_matrix": confusion.tolist(),
        "per_class": per_class,
    }


def evaluate_on_dataset(cache: ModelCache, sessions, store, model_id: uuid.UUID,
                        dataset_id: uuid.UUID) -> dict[str, Any]:
    """The evaluation of a stored model on a stored dataset (the fields of
    ``EvaluationPublic``): :class:`~app.errors.NotFound` for the model,
    :class:`~app.errors.InvalidRequest` for a dataset that does not exist or belongs to
    another feature space (more features than the model)."""
    model = load_model(cache, sessions, model_id)
    missing = InvalidRequest(f"dataset_id: dataset {dataset_id} not found")
    with sessions.read() as session:
        dataset = crud_datasets.get(session, dataset_id)
        if dataset is None:
            raise missing
        digest, n_features = dataset.sha256, dataset.n_features
    if n_features > model.n_features_in_:
        raise InvalidRequest(f"dataset_id: the dataset has {n_features} features, the model "
                             f"{model.n_features_in_}: it belongs to another feature space")
    try:
        data = store.load(digest)
    except FileNotFoundError:  # deleted meanwhile
        raise missing from None
    return {"dataset_id": dataset_id, **evaluate(model, data, parallel=False)}
