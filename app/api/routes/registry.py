"""``/registry``: named models, their versions and aliases (:mod:`app.crud.registry`), and
predict / evaluate by ``{name}@{alias}`` or ``{name}/{version}``.

A registry path is resolved to a model id (one primary-key lookup per request here), then
answered by the very handler of ``/models/{model_id}/...``: the same query and body shapes,
the same answers.  The common GET predict by alias or version is answered before the
router, as by id (:mod:`app.api.fast_path`), from a per-process cache of what names resolve
to that every change empties before its request is answered
(:class:`app.crud.registry.DirectLookup`, :func:`app.crud.registry.commit_announced`): a
moved alias is what every web process's next request sees.  Reads need the ``read``
scope; moving or deleting an alias ``train``; deleting a version (and its model) ``admin``.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Path, Request, status
from starlette.concurrency import run_in_threadpool

from app.api.deps import (
    MAX_POSITION,
    LimitQuery,
    ModelCacheDep,
    OffsetQuery,
    SessionDep,
    SessionsDep,
    SettingsDep,
    StoreDep,
    WriteSessionDep,
)
from app.api.errors import responses
from app.api.pages import bounded_page
from app.api.routes import models as model_routes
from app.api.routes import resource_router
from app.api.security import ADMIN, TRAIN, PrincipalDep
from app.crud import registry as crud_registry
from app.crud.registry import SLUG_PATTERN
from app.schemas import (
    AliasMove,
    AliasPublic,
    EvaluateRequest,
    ModelVersionPublic,
    PredictionPublic,
    PredictionsPublic,
    RegisteredModelPublic,
    RegisteredModelsPublic,
    RegisteredModelSummary,
    StoredEvaluationPublic,
)

router = resource_router("registry")

NamePath = Annotated[str, Path(pattern=SLUG_PATTERN, description="The registered model's name.")]
AliasPath = Annotated[str, Path(pattern=SLUG_PATTERN,
                                description="An alias of the model (production, staging ...).")]
VersionPath = Annotated[int, Path(ge=1, le=MAX_POSITION, description="A version number.")]


def _resolve(request: Request, principal, name: str, alias: str | None = None,
             version: int | None = None) -> uuid.UUID:
    return crud_registry.resolve_or_404(request.app.state.sessions.engine, principal, name,
                                        alias, version)


@router.get("", name="list", response_model=RegisteredModelsPublic, responses=responses(422))
def list_registered(request: Request, session: SessionDep, principal: PrincipalDep,
                    offset: OffsetQuery = 0, limit: LimitQuery = 100) -> RegisteredModelsPublic:
    """The caller's registered models by name: latest version, how many versions, aliases.
    Names are per owner (an admin key lists its own owner's)."""
    rows, count = crud_registry.list_names(session, principal, offset, limit)
    return RegisteredModelsPublic(**bounded_page(request, [
        RegisteredModelSummary(name=row.name, latest_version=row.latest_version,
                               versions=versions, aliases=aliases, created_at=row.created_at,
                               updated_at=row.updated_at)
        for row, versions, aliases in rows], count, offset))


# The version is matched as digits ({version:int}): "x@prod/predict" is no version route's
# (whose DELETE would otherwise be offered in the Allow header of a 405 there)


@router.get("/{name}@{alias}/predict", name="predict-alias", response_model=PredictionPublic,
            responses=responses(404, 422))
async def predict_one_by_alias(name: NamePath, alias: AliasPath, request: Request,
                               principal: PrincipalDep, x: model_routes.ExampleQuery,
                               zero_based: model_routes.ZeroBased = False) -> PredictionPublic:
    """``GET /models/{model_id}/predict`` of the version ``alias`` points at now."""
    model_id = await run_in_threadpool(_resolve, request, principal, name, alias)
    return await model_routes.predict_one(model_id, request, principal, x, zero_based)


@router.get("/{name}/{version:int}/predict", name="predict-version",
            response_model=PredictionPublic, responses=responses(404, 422))
async def predict_one_by_version(name: NamePath, version: VersionPath, request: Request,
                                 principal: PrincipalDep, x: model_routes.ExampleQuery,
                                 zero_based: model_routes.ZeroBased = False
                                 ) -> PredictionPublic:
    """``GET /models/{model_id}/predict`` of the version."""
    model_id = await run_in_threadpool(_resolve, request, principal, name, None, version)
    return await model_routes.predict_one(model_id, request, principal, x, zero_based)


@router.post("/{name}@{alias}/predict", name="predict-batch-alias",
             response_model=PredictionsPublic, responses=responses(400, 404, 413, 422),
             openapi_extra=model_routes.PREDICT_BATCH_BODY)
async def predict_many_by_alias(name: NamePath, alias: AliasPath, request: Request,
                                cache: ModelCacheDep, sessions: SessionsDep,
                                settings: SettingsDep, principal: PrincipalDep,
                                zero_based: model_routes.ZeroBased = False
                                ) -> PredictionsPublic:
    """``POST /models/{model_id}/predict`` with the version ``alias`` points at now."""
    model_id = await run_in_threadpool(_resolve, request, principal, name, alias)
    return await model_routes.predict_many(model_id, request, cache, sessions, settings,
                                           principal, zero_based)


@router.post("/{name}/{version:int}/predict", name="predict-batch-version",
             response_model=PredictionsPublic, responses=responses(400, 404, 413, 422),
             openapi_extra=model_routes.PREDICT_BATCH_BODY)
async def predict_many_by_version(name: NamePath, version: VersionPath, request: Request,
                                  cache: ModelCacheDep, sessions: SessionsDep,
                                  settings: SettingsDep, principal: PrincipalDep,
                                  zero_based: model_routes.ZeroBased = False
                                  ) -> PredictionsPublic:
    """``POST /models/{model_id}/predict`` with the version."""
    model_id = await run_in_threadpool(_resolve, request, principal, name, None, version)
    return await model_routes.predict_many(model_id, request, cache, sessions, settings,
                                           principal, zero_based)


@router.post("/{name}@{alias}/evaluate", name="evaluate-alias",
             response_model=StoredEvaluationPublic, responses=responses(400, 404, 422))
def evaluate_by_alias(name: NamePath, alias: AliasPath, body: EvaluateRequest,
                      request: Request, cache: ModelCacheDep, sessions: SessionsDep,
                      store: StoreDep, principal: PrincipalDep) -> StoredEvaluationPublic:
    """``POST /models/{model_id}/evaluate`` of the version ``alias`` points at now (stored
    with that model's evaluations)."""
    return model_routes.evaluate_model(_resolve(request, principal, name, alias), body, cache,
                                       sessions, store, principal)


@router.post("/{name}/{version:int}/evaluate", name="evaluate-version",
             response_model=StoredEvaluationPublic, responses=responses(400, 404, 422))
def evaluate_by_version(name: NamePath, version: VersionPath, body: EvaluateRequest,
                        request: Request, cache: ModelCacheDep, sessions: SessionsDep,
                        store: StoreDep, principal: PrincipalDep) -> StoredEvaluationPublic:
    """``POST /models/{model_id}/evaluate`` of the version (stored with that model's
    evaluations)."""
    return model_routes.evaluate_model(_resolve(request, principal, name, None, version), body,
                                       cache, sessions, store, principal)


@router.get("/{name}", name="get", response_model=RegisteredModelPublic,
            responses=responses(404, 422))
def get_registered(name: NamePath, session: SessionDep,
                   principal: PrincipalDep) -> RegisteredModelPublic:
    """A registered model: its versions, newest first, with what made each and its metrics;
    its aliases with their history (who moved each, when, from which version to which),
    those deleted included."""
    row = crud_registry.get_name(session, principal, name)
    return RegisteredModelPublic.from_rows(row, crud_registry.versions_of(session, row),
                                           crud_registry.aliases_of(session, row),
                                           crud_registry.deleted_aliases(session, row))


@router.get("/{name}/{version:int}", name="get-version", response_model=ModelVersionPublic,
            responses=responses(404, 422))
def get_version(name: NamePath, version: VersionPath, session: SessionDep,
                principal: PrincipalDep) -> ModelVersionPublic:
    """One version of a registered model."""
    row = crud_registry.get_version(session, principal, name, version)
    return ModelVersionPublic.from_row(
        row, crud_registry.aliases_pointing_at(session, row.owner, name, version))


@router.delete("/{name}/{version:int}", name="delete-version",
               status_code=status.HTTP_204_NO_CONTENT, dependencies=[ADMIN],
               responses=responses(404, 409, 422))
def delete_version(name: NamePath, version: VersionPath, session: WriteSessionDep,
                   cache: ModelCacheDep, principal: PrincipalDep) -> None:
    """Delete a version and its model; refused (409) while an alias points at it.  Its
    number is not given again."""
    cache.discard(crud_registry.delete_version(session, principal, name, version))


@router.put("/{name}/aliases/{alias}", name="move-alias", response_model=AliasPublic,
            dependencies=[TRAIN], responses=responses(404, 422))
def move_alias(name: NamePath, alias: AliasPath, body: AliasMove, session: WriteSessionDep,
               principal: PrincipalDep) -> AliasPublic:
    """Point the alias at a version (creating it): one atomic change, recorded in the alias's
    history; every web process's next request by ``{name}@{alias}`` uses that version.
    Moving back is another PUT."""
    crud_registry.move_alias(session, principal, name, alias, body.version)
    row = crud_registry.get_name(session, principal, name)
    return next(AliasPublic.from_row(found, events)
                for found, events in crud_registry.aliases_of(session, row)
                if found.alias == alias)


@router.delete("/{name}/aliases/{alias}", name="delete-alias",
               status_code=status.HTTP_204_NO_CONTENT, dependencies=[TRAIN],
               responses=responses(404, 422))
def delete_alias(name: NamePath, alias: AliasPath, session: WriteSessionDep,
                 principal: PrincipalDep) -> None:
    """Delete the alias (recorded in its history: a move to no version)."""
    crud_registry.delete_alias(session, principal, name, alias)
