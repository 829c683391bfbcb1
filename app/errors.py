"""The service's domain errors: what went wrong, in the service's own terms.

The query layer (``app.crud``), job admission, uploads, predictions, evaluations and security
raise these; none of them knows HTTP.  One place, :mod:`app.api.errors`, maps each class to a
status code and answers it as an RFC 9457 problem (``application/problem+json``: ``type``,
``title``, ``status``, ``detail``, ``instance``, with the extension members ``line``, ``token``
and ``setting`` carried here).  This module imports nothing of a web framework (the
architecture test checks it).

Every class has a stable ``slug`` (its problem ``type`` is ``urn:svmsvc:problem:<slug>``) and a
stable ``title``; the message of one occurrence is its ``detail``.
"""

from __future__ import annotations

from typing import ClassVar

PROBLEM_TYPE_PREFIX = "urn:svmsvc:problem:"
"""Problem types are URNs (identifiers, not addresses to fetch): ``urn:svmsvc:problem:<slug>``;
``docs/service.md`` lists them."""


class ServiceError(Exception):
    """A request the service refuses, with a message written for people (``detail``) and,
    where they apply, the SVMlight ``line`` and ``token`` at fault, the ``setting`` (its
    environment variable) that bounds what was asked, and how many seconds to wait before
    retrying (``retry_after_s``)."""

    slug: ClassVar[str] = "invalid-request"
    title: ClassVar[str] = "Invalid request"

    def __init__(self, detail: str, *, line: int | None = None, token: str | None = None,
                 setting: str | None = None, retry_after_s: int | None = None):
        super().__init__(detail)
        self.detail = detail
        self.line = line
        self.token = token
        self.setting = setting
        self.retry_after_s = retry_after_s

    @property
    def type(self) -> str:
        """The problem type URI."""
        return PROBLEM_TYPE_PREFIX + self.slug


class InvalidRequest(ServiceError):
    """The request is invalid: a field, a query parameter, a body that is not what the
    operation takes, an id in the body that names nothing the caller may use."""


class MalformedInput(InvalidRequest):
    """Input in a data format (SVMlight lines, a multipart body, an example) is malformed;
    ``line`` and ``token`` say where when they are known."""

    slug = "malformed-input"
    title = "Malformed input"


class InvalidJob(InvalidRequest):
    """A training job that cannot succeed on its data (one label, a task the solver does not
    have, another feature space) and is refused before it is queued."""

    slug = "invalid-job"
    title = "Job cannot succeed"


class InvalidShard(InvalidRequest):
    """A shard a sharded dataset names is not allowed (a path outside the directories the
    operator allows, a URL scheme not allowed) or not there."""

    slug = "invalid-shard"
    title = "Shard not allowed"


class InvalidCallback(InvalidRequest):
    """A job's ``callback_url`` that the service will not call: not http(s), a host not in
    ``SVMSVC_WEBHOOK_ALLOWED_HOSTS``, or a host that resolves to a loopback or private
    address the setting does not list."""

    slug = "invalid-callback"
    title = "Callback URL not allowed"


class UnreadableBody(ServiceError):
    """The body cannot be read at all: cut off before its end, or not decodable."""

    slug = "unreadable-body"
    title = "Body not readable"


class BodyTimeout(UnreadableBody):
    """The body stopped arriving: no byte of it for longer than a setting allows."""

    slug = "body-timeout"
    title = "Body stalled"


class NotFound(ServiceError):
    """The resource does not exist, or belongs to another owner (the same answer: another
    tenant's resources are not even confirmed to exist)."""

    slug = "not-found"
    title = "Not found"


class Conflict(ServiceError):
    """The request conflicts with the resource's state (deleting what is in use, cancelling a
    finished job, a format the model has no form in)."""

    slug = "conflict"
    title = "Conflict with the resource's state"


class Unauthenticated(ServiceError):
    """No API key, or an unknown one."""

    slug = "unauthenticated"
    title = "Missing or unknown API key"


class Forbidden(ServiceError):
    """The API key's scope does not allow the request."""

    slug = "forbidden"
    title = "Scope too low"


class LimitExceeded(ServiceError):
    """The request asks for more than a setting allows (a parameter, a size the request would
    make the service allocate or send); ``setting`` names it."""

    slug = "limit-exceeded"
    title = "Limit exceeded"


class ContentTooLarge(LimitExceeded):
    """The content sent is past a setting (bytes, rows, entries, features, labels)."""

    slug = "content-too-large"
    title = "Content too large"


class QuotaExceeded(LimitExceeded):
    """The caller has as much as its quota allows (queued jobs, open log streams)."""

    slug = "quota-exceeded"
    title = "Quota exceeded"


class StorageQuotaExceeded(ContentTooLarge):
    """What the request would store takes its owner past a storage quota (bytes of datasets
    or of models, :mod:`app.quotas`)."""

    slug = "storage-quota-exceeded"
    title = "Storage quota exceeded"


class CapacityExceeded(LimitExceeded):
    """The whole service has as much as a setting allows (open log streams); retry later."""

    slug = "capacity-exceeded"
    title = "Service at capacity"


def setting_variable(setting: str) -> str:
    """The environment variable of a setting (``max_upload_bytes`` -> SVMSVC_MAX_UPLOAD_BYTES)."""
    return f"SVMSVC_{setting.upper()}"


def limit_exceeded(what: str, setting: str, limit: int | float, unit: str, *,
                   actual: int | float | None = None,
                   error: type[LimitExceeded] = LimitExceeded,
                   retry_after_s: int | None = None) -> LimitExceeded:
    """The error for a request past a configured cap: names the cap, the setting that raises
    it (also as the ``setting`` member) and, when known, how much was asked."""
    found = f" ({actual} {unit})" if actual is not None else ""
    variable = setting_variable(setting)
    return error(f"{what}{found} exceeds the limit of {limit} {unit} set by {variable}; "
                 f"the operator can raise that setting{ROUTE_INSTEAD.get(setting, '')}",
                 setting=variable, retry_after_s=retry_after_s)


ROUTE_INSTEAD = dict.fromkeys(
    ("max_predict_bytes", "max_predict_rows"),
    "; to predict more rows, upload them as a dataset and queue a batch prediction job: "
    "POST /api/v1/jobs/predict (no size limit but the dataset's)")
ROUTE_INSTEAD["max_classes"] = ("; labels that many are real values, not classes: for support "
                                "vector regression set params.task to 'regression'")
"""What a refusal past a synchronous route's cap suggests instead."""
