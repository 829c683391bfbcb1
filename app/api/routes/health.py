"""Probes: ``/healthz`` (the process answers), ``/readyz`` (database reachable, worker pool
running with at least one warmed-up worker).  Both answer without a key; what belongs to a
tenant (the job a worker runs) only to an admin key, or on a service without keys."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request, Response, status
from sqlalchemy import text

from app.api.deps import DispatcherDep, SessionsDep
from app.core.security import presented_key, sees_every_tenant
from app.schemas import HealthPublic, ReadinessPublic, WorkerPublic

router = APIRouter(tags=["health"])
logger = logging.getLogger("svmsvc.api")


@router.get("/healthz", name="live", response_model=HealthPublic)
async def healthz() -> HealthPublic:
    """Liveness: the web process is up.  A ``GET`` is answered before it gets here, by
    :class:`app.api.middleware.LivenessProbe`, on the same event loop and with the same body
    (issue 49: a liveness probe must not flap while the process is merely busy); this route
    gives the operation its place in the spec and answers whatever reaches the router."""
    return HealthPublic(status="ok")


@router.get("/readyz", name="ready", response_model=ReadinessPublic,
            responses={503: {"model": ReadinessPublic, "description": "Not ready"}})
def readyz(request: Request, sessions: SessionsDep, dispatcher: DispatcherDep,
           response: Response) -> ReadinessPublic:
    """Readiness: the database answers and the pool can run jobs (per-worker details; the
    job a worker runs is shown to an admin key only, or on a service without keys)."""
    admin = sees_every_tenant(request.app.state.api_keys, presented_key(request.headers))
    try:
        with sessions.read() as session:
            session.execute(text("SELECT 1"))
        database = True
    except Exception as exc:  # any failure to reach the database means "not ready"
        logger.warning("readiness: database unreachable: %s", exc)
        database = False
    workers = [WorkerPublic(index=w.index, pid=w.pid, alive=w.alive, ready=w.ready,
                            job_id=w.job_id if admin else None, state=w.state,
                            solvers_compiled=list(w.solvers))
               for w in dispatcher.snapshot()]
    solvers_ready = sorted({name for w in workers if w.alive and w.ready
                            for name in w.solvers_compiled})
    dispatching = dispatcher.dispatching
    ready = database and dispatching and any(w.alive and w.ready for w in workers)
    message = None
    if not ready:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
        reasons = ([] if database else ["the database does not answer"]) + \
                  ([] if dispatching else ["the dispatcher is not running"]) + \
                  [f"worker {w.index}: {w.state}" for w in workers if w.state]
        message = "; ".join(reasons) or "no worker is ready"
    return ReadinessPublic(status="ready" if ready else "unavailable", database=database,
                           dispatcher=dispatching, workers=workers,
                           solvers_ready=solvers_ready, message=message)
