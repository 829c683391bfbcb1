"""The web dashboard under ``/ui/``: plain HTML pages whose ES modules read the public API.

The pages hold no data: each is one shell (``static/page.html``) naming its script, and the
script fetches what it shows from ``/api/v1`` with the API key the user entered once (kept in
the browser's session storage, sent as ``X-API-Key``).  So the pages and their static files
need no key, and the dashboard can do nothing a client of the API cannot.  The plots use
uPlot, vendored as a pinned, minified file with its license (``static/vendor/``), so the
pages work offline; there is no build step.

The API documentation (``/docs``, Swagger UI; ``/redoc``, ReDoc) is served the same way: both
bundles are vendored under ``static/vendor/`` with their licences (Apache-2.0 and MIT), and the
pages carry a Content-Security-Policy that lets them load nothing from another origin (ReDoc's
sidebar would fetch its maker's logo from a CDN), so the docs work on a machine without
internet and no request leaves the host.
"""

from __future__ import annotations

import html
import uuid
from functools import cache
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).resolve().parent / "static"
UI_PREFIX = "/ui"

UPLOT_VERSION = "1.6.32"
"""The vendored uPlot (``static/vendor/uPlot.iife.min.js``, MIT, ``uPlot.LICENSE``)."""
SWAGGER_UI_VERSION = "5.32.0"
"""The vendored swagger-ui-dist (``static/vendor/swagger-ui/``, Apache-2.0: LICENSE, NOTICE)."""
REDOC_VERSION = "2.5.0"
"""The vendored ReDoc standalone bundle (``static/vendor/redoc/``, MIT, its LICENSE)."""
DOCS_POLICY = ("default-src 'self'; script-src 'self' 'unsafe-inline'; "
               "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
               "worker-src 'self' blob:; connect-src 'self'")
"""The docs pages' Content-Security-Policy: scripts, styles, images and fetches from this
service only (the inline script is FastAPI's page, which points the bundle at /openapi.json)."""

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


@router.get("/registry")
def registry_page() -> HTMLResponse:
    return _page("registry", "Registry")


@router.get("/registry/{name}")
def registered_model_page(name: str) -> HTMLResponse:
    return _page("registry", "Registered model")


@router.get("/train")
def train_page() -> HTMLResponse:
    return _page("train", "Train")


def install(app: FastAPI) -> None:
    """Mount the dashboard's pages and static files on ``app``, the API docs from the vendored
    bundles (``FastAPI(docs_url=None, redoc_url=None)``: the defaults load from a CDN), and
    ``/`` as a redirect to the dashboard."""
    app.include_router(router)
    app.mount(f"{UI_PREFIX}/static", StaticFiles(directory=STATIC_DIR), name="ui-static")
    vendor = f"{UI_PREFIX}/static/vendor"

    @app.get("/", tags=["ui"], include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse(f"{UI_PREFIX}/")

    @app.get("/docs", tags=["ui"], include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url=app.openapi_url, title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{vendor}/swagger-ui/swagger-ui-bundle.js?v={SWAGGER_UI_VERSION}",
            swagger_css_url=f"{vendor}/swagger-ui/swagger-ui.css?v={SWAGGER_UI_VERSION}",
            swagger_favicon_url=f"{vendor}/swagger-ui/favicon-32x32.png")
        page.headers["Content-Security-Policy"] = DOCS_POLICY
        return page

    @app.get("/redoc", tags=["ui"], include_in_schema=False)
    def redoc() -> HTMLResponse:
        page = get_redoc_html(
            openapi_url=app.openapi_url, title=f"{app.title} - ReDoc",
            redoc_js_url=f"{vendor}/redoc/redoc.standalone.js?v={REDOC_VERSION}",
            redoc_favicon_url=f"{vendor}/swagger-ui/favicon-32x32.png", with_google_fonts=False)
        page.headers["Content-Security-Policy"] = DOCS_POLICY
        return page
