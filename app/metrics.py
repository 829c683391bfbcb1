"""Prometheus metrics (``GET /metrics``), in a registry of the application's own.

* ``svmsvc_http_requests_total{method, route, status}`` and
  ``svmsvc_http_request_duration_seconds{method, route}`` (route = the path template;
  counted by :class:`app.api.middleware.MetricsMiddleware`);
* ``svmsvc_jobs{status}``: jobs in each state, counted in the database at scrape time;
* ``svmsvc_workers{state}``: worker processes ``busy``, ``idle`` or ``starting``;
* ``svmsvc_log_streams_open``: live log streams open now, and
  ``svmsvc_log_streams_open_by_owner{owner}`` per owner (its name, or for a key that is
  its own owner ``key:`` and 16 hex digits of a salted digest: :mod:`app.core.principals`)
  or per client address (``client:<address>``) when the service has no keys -- it names
  tenants, so ``/metrics`` serves it to an admin key only (or on a service without keys):
  :data:`TENANT_METRICS`, :attr:`ServiceMetrics.without_tenants`;
* ``svmsvc_jobs_finished_total{status}`` and ``svmsvc_worker_restarts_total{reason}``
  (``crashed`` or ``killed``) since the process started.

With several web processes (:mod:`app.web_processes`) the counters and histograms are those of
every process added up (since ``svmsvc serve`` started), the job and worker states are the
service's, and the live log streams are those of the process that answers the scrape (each
process holds its own).
"""

from __future__ import annotations

import logging
import os

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy import func, select

from app.db.models import Job, JobStatus

logger = logging.getLogger("svmsvc.metrics")

#: the metric families whose labels name tenants (owners, their keys' digests, clients):
#: served to an admin key only
TENANT_METRICS = frozenset({"svmsvc_log_streams_open_by_owner"})


class ServiceMetrics:
    """The metrics of one application instance."""

    def __init__(self):
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "svmsvc_http_requests", "HTTP requests answered.",
            ["method", "route", "status"], registry=self.registry)
        self.latency = Histogram(
            "svmsvc_http_request_duration_seconds", "Time to answer an HTTP request.",
            ["method", "route"], registry=self.registry)
        self.jobs_finished = Counter(
            "svmsvc_jobs_finished", "Jobs that reached a final state.", ["status"],
            registry=self.registry)
        self.worker_restarts = Counter(
            "svmsvc_worker_restarts", "Worker processes replaced.", ["reason"],
            registry=self.registry)

        self._children: dict[tuple[str, str, int], tuple] = {}
        directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        if directory:  # several web processes: /metrics adds up what every one counted
            self.exposed = CollectorRegistry()
            MultiProcessCollector(self.exposed, path=directory)
        else:
            self.exposed = self.registry
        """What ``/metrics`` serves: :attr:`registry` itself, or with several web processes
        every process's counters and histograms added up (prometheus_client's multi-process
        mode, from the files of ``PROMETHEUS_MULTIPROC_DIR``), and the collectors of
        :meth:`watch` and :meth:`watch_log_streams`."""
        self.without_tenants = _WithoutTenants(self.exposed)
        """What ``/metrics`` serves a caller who is not an admin: :attr:`exposed` less the
        families that name tenants (:data:`TENANT_METRICS`)."""

    def record_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count and time one answered request (the labelled series are looked up once)."""
        key = (method, route, status)
        children = self._children.get(key)
        if children is None:
            children = (self.requests.labels(method=method, route=route, status=str(status)),
                        self.latency.labels(method=method, route=route))
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def watch(self, sessions, dispatcher) -> None:
        """Report job states (from the database) and worker states (from ``dispatcher``)."""
        self.exposed.register(_StateCollector(sessions, dispatcher))

    def watch_log_streams(self, streams) -> None:
        """Report the live log streams open now (``streams``: the app's ``LogStreams``)."""
        self.exposed.register(_LogStreamCollector(streams))


class _WithoutTenants:
    """A registry as ``generate_latest`` reads it (``collect()``), less
    :data:`TENANT_METRICS`."""

    def __init__(self, registry):
        self._registry = registry

    def collect(self):
        return (family for family in self._registry.collect()
                if family.name not in TENANT_METRICS)


class _LogStreamCollector:
    def __init__(self, streams):
        self._streams = streams

    def collect(self):
        by_owner = self._streams.open_by_owner()  # a copy: read once
        total = GaugeMetricFamily("svmsvc_log_streams_open",
                                  "Live log streams open now.")
        total.add_metric([], sum(by_owner.values()))
        yield total
        per_owner = GaugeMetricFamily(
            "svmsvc_log_streams_open_by_owner",
            "Live log streams open now per owner (its name, or key: and a salted digest's "
            "prefix), or per client address when the service has no keys.",
            labels=["owner"])
        for owner, count in sorted(by_owner.items()):
            per_owner.add_metric([owner], count)  # a name, key:<salted digest>, client:<address>
        yield per_owner


class _StateCollector:
    def __init__(self, sessions, dispatcher):
        self._sessions = sessions
        self._dispatcher = dispatcher

    def collect(self):
        jobs = GaugeMetricFamily("svmsvc_jobs", "Jobs in each state.", labels=["status"])
        try:
            with self._sessions.read() as session:
                counts = dict(session.execute(
                    select(Job.status, func.count()).group_by(Job.status)).all())
            for state in JobStatus:
                jobs.add_metric([state.value], counts.get(state.value, 0))
            yield jobs
        except Exception as exc:  # a scrape must not fail because the database is away
            logger.warning("metrics: cannot count jobs: %s", exc)
        workers = GaugeMetricFamily("svmsvc_workers", "Worker processes by state.",
                                    labels=["state"])
        snapshot = self._dispatcher.snapshot()
        states = {"busy": 0, "idle": 0, "starting": 0}
        for worker in snapshot:
            if worker.job_id is not None:
                states["busy"] += 1
            elif worker.ready and worker.alive:
                states["idle"] += 1
            else:
                states["starting"] += 1
        for state, count in states.items():
            workers.add_metric([state], count)
        yield workers
