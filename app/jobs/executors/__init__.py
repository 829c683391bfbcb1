"""Executors: where the dispatcher's job attempts run, behind one interface
(:mod:`~app.jobs.executors.interface`).

* :class:`~app.jobs.executors.local.ProcessExecutor` (``SVMSVC_EXECUTOR=local``, the default):
  N long-lived spawned worker processes on this machine;
* :class:`~app.jobs.executors.dask.DaskExecutor` (``SVMSVC_EXECUTOR=dask``): tasks on a Dask
  cluster.

:func:`create_executor` picks one from the settings; Dask (an optional dependency) is imported
only when it is asked for.
"""

from __future__ import annotations

from app.core.config import Settings
from app.jobs.executors.interface import Assignment, Ended, Executor, WorkerInfo
from app.jobs.executors.local import ProcessExecutor
from app.metrics import ServiceMetrics

__all__ = ["Assignment", "Ended", "Executor", "ProcessExecutor", "WorkerInfo",
           "create_executor"]


def create_executor(settings: Settings, metrics: ServiceMetrics) -> Executor:
    """The executor ``settings.executor`` names."""
    if settings.executor == "dask":
        from app.jobs.executors.dask import DaskExecutor

        return DaskExecutor(settings, metrics)
    return ProcessExecutor(settings, metrics)
