"""The normalized problem key of a training job: the dataset and the optimization problem the
solver's parameters pose (``SolverParams.problem_fields``), without the algorithm's settings.

Jobs with equal keys solve the same problem on the same data, whatever the solver, so their
objectives and convergence logs compare (the dashboard's comparison, ``GET /jobs?problem_key=``).
The key is plain text, ``dataset=<id>;task=...;multiclass=...;loss=...;C=...;bias=...`` and
the other fields in that order, numbers as Python writes floats (``C=1.0``), so it is readable
and stable.  A tuning job solves a grid of problems and has no key.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import ValidationError

import solvers

MAX_KEY_LENGTH = 512


def problem_fields(params: solvers.SolverParams) -> dict[str, Any]:
    """The problem's fields (see ``SolverParams.problem_fields``)."""
    return params.problem_fields()


def problem_key(dataset_id: uuid.UUID, params: solvers.SolverParams) -> str:
    """The key of the problem ``params`` pose on the dataset ``dataset_id``."""
    parts = [f"dataset={dataset_id}"]
    parts += [f"{name}={_text(value)}" for name, value in params.problem_fields().items()]
    return ";".join(parts)


def stored_problem_key(dataset_id: uuid.UUID, solver: str, params: dict[str, Any],
                       tuning: dict[str, Any] | None) -> str | None:
    """The key of a stored job (its validated parameters as JSON); None for a tuning job, or
    for parameters the solver no longer accepts."""
    if tuning is not None:
        return None
    try:
        model = solvers.get_solver(solver).params_model.model_validate(params)
    except (ValidationError, ValueError, KeyError):
        return None
    return problem_key(dataset_id, model)


def _text(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def key_fields(key: str) -> dict[str, Any]:
    """The fields of a key back (numbers as numbers, the dataset id as text)."""
    fields: dict[str, Any] = {}
    for part in key.split(";"):
        name, _, text = part.partition("=")
        fields[name] = text if name == "dataset" else _value(text)
    return fields


def _value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
