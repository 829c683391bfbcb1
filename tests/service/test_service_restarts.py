"""Restarts of real ``svmsvc serve`` processes on one data directory and database: a crashed
service's running job re-queued (or failed without attempts left) and its queued jobs
dispatched; two services on one database, each renewing the leases of its own jobs.

Split from ``test_service_pool.py`` (they were one file): ``--dist loadfile`` puts a file on
one xdist worker, and these restarts are the heavier half of the pool's process tests."""

from __future__ import annotations

import signal

import pytest
from servicetools import (
    LONG_PARAMS,
    MEDIUM_PARAMS,
    QUICK_PARAMS,
    assert_contiguous_log,
    create_job,
    data_path,
    job,
    running_with_progress,
    uploaded_id,
    wait_job,
    wait_process_gone,
)

pytestmark = pytest.mark.slow


def test_restart_requeues_the_running_job_and_dispatches_the_queued_ones(server_factory):
    first = server_factory(workers=1)
    first.wait_ready()
    a9a = uploaded_id(first.client, data_path("a9a"))
    heart = uploaded_id(first.client, data_path("heart_scale"))
    interrupted = create_job(first.client, a9a, MEDIUM_PARAMS)["id"]
    queued = [create_job(first.client, heart, {"solver": "mfn", "C": c})["id"]
              for c in (0.5, 2.0)]
    wait_job(first.client, interrupted, until=running_with_progress)
    orphan = first.worker_of(interrupted)["pid"]
    first.stop(signal.SIGKILL)  # a crash: the worker is orphaned mid-job
    wait_process_gone(orphan)  # it notices and stops on its own
    second = server_factory(workers=1)
    second.wait_ready()
    done = wait_job(second.client, interrupted)
    assert done["status"] == "succeeded" and done["attempts"] == 2
    records = assert_contiguous_log(second.client, interrupted)
    assert done["progress"]["iteration"] == len(records)
    for job_id in queued:
        finished = wait_job(second.client, job_id)
        assert finished["status"] == "succeeded" and finished["attempts"] == 1


def test_restart_fails_a_running_job_without_attempts_left(server_factory):
    first = server_factory(workers=1, max_attempts=1)
    first.wait_ready()
    a9a = uploaded_id(first.client, data_path("a9a"))
    heart = uploaded_id(first.client, data_path("heart_scale"))
    interrupted = create_job(first.client, a9a, LONG_PARAMS)["id"]
    queued = create_job(first.client, heart, QUICK_PARAMS)["id"]
    wait_job(first.client, interrupted, until=running_with_progress)
    worker = first.worker_of(interrupted)["pid"]
    first.stop(signal.SIGTERM)  # a clean shutdown stops the workers too
    assert "worker pool stopped" in first.log()
    assert "Application shutdown complete" in first.log()
    wait_process_gone(worker)
    second = server_factory(workers=1, max_attempts=1)
    second.wait_ready()
    failed = job(second.client, interrupted)
    assert failed["status"] == "failed"
    assert failed["error"] == "interrupted by a service restart during attempt 1 of 1"
    assert wait_job(second.client, queued)["status"] == "succeeded"
    assert "jobs left running by the previous process: 0 re-queued, 0 cancelled, 1 failed" \
        in second.log()


def test_two_services_on_one_database_never_take_each_others_live_jobs(server_factory):
    """Each service renews the leases of the jobs its workers run; a second service started
    beside the first leaves them alone, and takes a job back only once its service died."""
    first = server_factory(workers=1)
    first.wait_ready()
    a9a = uploaded_id(first.client, data_path("a9a"))
    shared = create_job(first.client, a9a, MEDIUM_PARAMS)["id"]
    wait_job(first.client, shared, until=running_with_progress)
    second = server_factory(workers=1)
    second.wait_ready()
    done = wait_job(second.client, shared)  # runs to its end on the first service's worker
    assert done["status"] == "succeeded" and done["attempts"] == 1, done
    assert "jobs left running by the previous process" not in second.log()
    assert "lease expired" not in second.log()

    orphaned = create_job(first.client, a9a, MEDIUM_PARAMS)["id"]
    running = wait_job(first.client, orphaned, until=running_with_progress)
    owner, survivor = (first, second) if any(
        w["job_id"] == orphaned for w in first.readiness()["workers"]) else (second, first)
    worker = owner.worker_of(orphaned)["pid"]
    owner.stop(signal.SIGKILL)  # its worker notices and stops: the lease is no longer renewed
    wait_process_gone(worker)
    done = wait_job(survivor.client, orphaned)
    assert running["attempts"] == 1
    assert done["status"] == "succeeded" and done["attempts"] == 2, done
    assert "jobs whose lease expired (their service or worker is gone): 1 re-queued" \
        in survivor.log()
