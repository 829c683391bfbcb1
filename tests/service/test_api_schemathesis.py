"""Schemathesis over the whole OpenAPI spec, with a key: no 5xx, every response conforming to
the spec (status code, content type, body schema, headers).

The schema is the application's own spec (it does not depend on the running service); the
cases are sent to the shared in-process service of each backend and validated against it.
"""

from __future__ import annotations

import pytest
import schemathesis
from conftest import API_KEYS
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import ignored_auth, positive_data_acceptance

from app.core.config import Settings
from app.main import create_app

# every operation against the spec, on both backends: minutes, so out of the quick tier
pytestmark = pytest.mark.slow

EXAMPLES_PER_OPERATION = 8
"""Kept small: the suite runs on 2 cores; every operation still gets its coverage cases."""

schema = schemathesis.openapi.from_dict(create_app(Settings(data_dir="unused")).openapi())


SEMANTIC_422 = {("POST", "/api/v1/datasets"), ("POST", "/api/v1/datasets/sharded"),
                ("POST", "/api/v1/jobs"), ("POST", "/api/v1/jobs/predict"),
                ("POST", "/api/v1/models/{model_id}/evaluate"),
                ("GET", "/api/v1/models/{model_id}/predict"),
                ("POST", "/api/v1/models/{model_id}/predict"), ("GET", "/api/v1/logs"),
                ("POST", "/api/v1/solvers/pose"), ("POST", "/api/v1/api-keys"),
                ("PATCH", "/api/v1/jobs/{job_id}"), ("PATCH", "/api/v1/models/{model_id}")}
"""Operations whose 422s the schema cannot express: the content of an uploaded file, shards
that must be files in an allowed directory (or URLs of an allowed scheme), a dataset,
model or job id that must exist, a callback URL of an allowed host, a feature index within
the model's features, the fields a problem needs (its loss), an expiry in the future, the tags a
merge would leave."""


def _as_file(value):
    return value if isinstance(value, bytes | str) or hasattr(value, "read") \
        else str(value).encode()


@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_every_operation_conforms_to_the_spec(case, api):
    # A case keeps the key header (schemathesis fills it with junk: send the admin key), or
    # leaves it out on purpose (send none, not the test client's default).
    has_key = any(name.lower() == "x-api-key" for name in case.headers or {})
    kwargs = case.as_transport_kwargs(base_url=str(api.base_url))
    headers = {k: v for k, v in (kwargs.get("headers") or {}).items()
               if k.lower() != "x-api-key"}
    headers["X-API-Key"] = API_KEYS["admin"] if has_key else ""
    kwargs["headers"] = headers
    sent = {k: v for k, v in kwargs.items() if k != "cookies" or v}
    if sent.get("files"):  # httpx wants file contents as bytes where requests takes any value
        sent["files"] = [(name, (spec[0], _as_file(spec[1]), *spec[2:]))
                         if isinstance(spec, tuple) else (name, _as_file(spec))
                         for name, spec in sent["files"]]
    response = api.request(**sent)
    response.request.read()  # a multipart body is a stream: the checks read it back
    # ignored_auth probes the service over the network; keys are tested in test_api_security
    excluded = [ignored_auth]
    if (case.method.upper(), case.path) in SEMANTIC_422:
        excluded.append(positive_data_acceptance)
    case.validate_response(response, transport_kwargs=kwargs, excluded_checks=excluded)
    if response.status_code >= 400:  # every error is an RFC 9457 problem
        assert response.headers["content-type"] == "application/problem+json", response.text
        problem = response.json()
        assert problem["status"] == response.status_code and problem["detail"], problem
