"""The web dashboard under ``/ui/``: plain HTML pages whose ES modules read the public API.

The pages hold no data: each is one shell (``static/page.html``) naming its script, and the
script fetches what it shows from ``/api/v1`` with the API key the user entered once (kept in
the browser's session storage, sent as ``X-API-Key``).  So the pages and their static files
need no key, and the dashboard can do nothing a client of the API cannot.  The plots use
uPlot, vendored as a pinned, minified file with its license (``static/vendor/``), so the
pages work offline; there is no build step.
"""

from __future__ import annotations

import html
import uuid
from functools import cache
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).resolve().parent / "static"
UI_PREFIX = "/ui"

UPLOT_VERSION = "1.6.32"
"""The vendored uPlot (``static/vendor/uPlot.iife.min.js``, MIT, ``uPlot.LICENSE``)."""

router = APIRouter(prefix=UI_PREFIX, tags=["ui"], include_in_schema=False)


@cache
def _shell() -> str:
    return (STATIC_DIR / "page.html").read_text(encoding="utf-8")


def _page(script: str, title: str) -> HTMLResponse:
    body = (_shell().replace("{{title}}", html.escape(title))
            .replace("{{script}}", script).replace("{{uplot}}", UPLOT_VERSION))
    return HTMLResponse(body, headers={"Cache-Control": "no-cache"})


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse(f"{UI_PREFIX}/jobs")


@router.get("/datasets")
def datasets_page() -> HTMLResponse:
    return _page("datasets", "Datasets")


@router.get("/jobs")
def jobs_page() -> HTMLResponse:
    return _page("jobs", "Jobs")


@router.get("/jobs/{job_id}")
def job_page(job_id: uuid.UUID) -> HTMLResponse:
    return _page("job", "Job")


@router.get("/compare")
def compare_page() -> HTMLResponse:
    return _page("compare", "Compare")


@router.get("/models")
def models_page() -> HTMLResponse:
    return _page("models", "Models")


@router.get("/models/{model_id}")
def model_page(model_id: uuid.UUID) -> HTMLResponse:
    return _page("model", "Model")


@router.get("/train")
def train_page() -> HTMLResponse:
    return _page("train", "Train")


def install(app: FastAPI) -> None:
    """Mount the dashboard's pages and static files on ``app``."""
    app.include_router(router)
    app.mount(f"{UI_PREFIX}/static", StaticFiles(directory=STATIC_DIR), name="ui-static")
