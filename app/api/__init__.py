"""The HTTP API: dependencies, error handling, one router per resource."""

#: Where the versioned API lives; the probes (``/healthz``, ``/readyz``), ``/metrics`` and the
#: documentation (``/docs``, ``/openapi.json``) stay at the root.
API_PREFIX = "/api/v1"
