"""Schemathesis over the whole OpenAPI spec, with a key: no 5xx, every response conforming to
the spec (status code, content type, body schema, headers); and statefully (the links
schemathesis infers: an upload's id to the dataset's routes, a job's to its log ...) with two
owners' keys taking turns, so that what one creates the other asks for: no 5xx, and no answer
to one owner names the other's objects (issue 49).

The schema is the application's own spec (it does not depend on the running service); the
cases are sent to the shared in-process service of each backend and validated against it.
"""

from __future__ import annotations

import re

import pytest
import schemathesis
from conftest import API_KEYS, TENANT_KEYS
from hypothesis import HealthCheck, settings
from schemathesis.core.transport import Response
from schemathesis.specs.openapi.checks import ignored_auth, positive_data_acceptance
from servicetools import QUICK_PARAMS, random_svmlight, wait_job

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


def send(api, case, key: str):
    """The case sent with ``key`` (schemathesis fills the key header with junk when a case
    keeps it; a case that leaves it out on purpose is sent with none, not the test client's
    default): (the response, the transport arguments the checks take)."""
    has_key = any(name.lower() == "x-api-key" for name in case.headers or {})
    kwargs = case.as_transport_kwargs(base_url=str(api.base_url))
    headers = {k: v for k, v in (kwargs.get("headers") or {}).items()
               if k.lower() != "x-api-key"}
    headers["X-API-Key"] = key if has_key else ""
    kwargs["headers"] = headers
    sent = {k: v for k, v in kwargs.items() if k != "cookies" or v}
    if sent.get("files"):  # httpx wants file contents as bytes where requests takes any value
        sent["files"] = [(name, (spec[0], _as_file(spec[1]), *spec[2:]))
                         if isinstance(spec, tuple) else (name, _as_file(spec))
                         for name, spec in sent["files"]]
    response = api.request(**sent)
    response.request.read()  # a multipart body is a stream: the checks read it back
    return response, kwargs


def validate(case, response, kwargs) -> None:
    """The spec's checks, and every error an RFC 9457 problem."""
    # ignored_auth probes the service over the network; keys are tested in test_api_security
    excluded = [ignored_auth]
    if (case.method.upper(), case.path) in SEMANTIC_422:
        excluded.append(positive_data_acceptance)
    case.validate_response(response, transport_kwargs=kwargs, excluded_checks=excluded)
    if response.status_code >= 400:  # every error is an RFC 9457 problem
        assert response.headers["content-type"] == "application/problem+json", response.text
        problem = response.json()
        assert problem["status"] == response.status_code and problem["detail"], problem


@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_every_operation_conforms_to_the_spec(case, api):
    response, kwargs = send(api, case, API_KEYS["admin"])
    validate(case, response, kwargs)


OWNERS = {"alice": TENANT_KEYS["alice"], "bob": TENANT_KEYS["bob"]}
"""Two owners (train keys of ``conftest``'s service) whose turns alternate."""

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class TwoOwners(schema.as_state_machine()):
    """Scenarios of linked calls (an upload, then its dataset's routes; a job, then its log,
    its cancel ...), each call made by the owner whose turn it is: what alice created, bob
    asks for next.  Every id in a 2xx answer to an owner is that owner's; an answer to the
    other owner names none of them, nor the owner, unless the request itself did (a 404
    repeats the id asked for)."""

    client = None  # the in-process service, set by the test
    owned: dict[str, set[str]] = {}  # each owner's dataset, job and model, made by the test
    crossed = 0  # calls, over all scenarios, that named an id of the other owner's

    def setup(self) -> None:
        self.turn = 0
        self.seen = {owner: set(self.owned.get(owner, ())) for owner in OWNERS}
        self.sent: dict = {}
        self.last = None  # the httpx response of the latest call

    def call(self, case, **kwargs):
        owner = list(OWNERS)[self.turn % len(OWNERS)]
        self.turn += 1
        response, self.sent = send(self.client, case, OWNERS[owner])
        self.last = response
        assert response.status_code < 500, (case.method, case.path, response.text)
        request = str(response.request.url) + response.request.content.decode("latin-1")
        for other in OWNERS.keys() - {owner}:
            theirs = self.seen[other] - self.seen[owner]
            TwoOwners.crossed += any(i in request for i in theirs)
            named = {i for i in theirs if i in response.text and i not in request}
            assert not named, (owner, case.method, case.path, response.text)
            if other not in request:
                assert f'"{other}"' not in response.text, (owner, case.path, response.text)
        if response.is_success:
            self.seen[owner].update(UUID.findall(response.text))
        return Response.from_any(response)

    def validate_response(self, response, case, additional_checks=None, **kwargs) -> None:
        validate(case, self.last, self.sent)


STATEFUL_SCENARIOS = 30
"""Kept small (the suite runs on 2 cores): 30 scenarios of up to six calls a batch."""

STATEFUL_BATCHES = 4
"""Batches run at most, until the owners' calls have crossed."""


def test_two_owners_statefully_see_nothing_of_each_other(api):
    """Each owner has a dataset, a job and its model to begin with (random uploads are seldom
    SVMlight): a list answered to one is followed by the other asking for what it names."""
    owned = {}
    for owner, key in OWNERS.items():
        uploaded = api.post("/api/v1/datasets", headers={"X-API-Key": key}, files={
            "file": ("data.svm", random_svmlight(n_rows=30, seed=4900 + len(owned)))})
        assert uploaded.status_code in (200, 201), uploaded.text
        job = api.post("/api/v1/jobs", headers={"X-API-Key": key}, json={
            "dataset_id": uploaded.json()["id"], "params": QUICK_PARAMS}).json()
        done = wait_job(api, job["id"])  # read with the admin key
        assert done["status"] == "succeeded", done
        owned[owner] = {uploaded.json()["id"], job["id"], done["model_id"]}
    TwoOwners.client, TwoOwners.crossed, TwoOwners.owned = api, 0, owned
    # The first batch is derandomized (a failure reproduces); the owners' calls cross only
    # where a scenario follows a link from one's answer into the other's turn, which 30
    # scenarios did not always do (2026-12-07: 0 once, 7 in the last runs): further batches,
    # random and not stored, until some call has named the other owner's things
    for batch in range(STATEFUL_BATCHES):
        TwoOwners.run(settings=settings(
            max_examples=STATEFUL_SCENARIOS, stateful_step_count=6, deadline=None,
            derandomize=batch == 0, database=None, suppress_health_check=list(HealthCheck)))
        print(f"batch {batch + 1}: calls naming the other owner's ids: {TwoOwners.crossed}")
        if TwoOwners.crossed > 0:
            break
    assert TwoOwners.crossed > 0  # the scenarios did ask for the other owner's things
