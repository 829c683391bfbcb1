"""The Dask executor against the local process pool, with the same cores (a measurement, not a
test).

    python -m bench dask [--jobs 200] [--repeats 3] [--slots 2] [--postgres DSN]

Two ``svmsvc serve`` processes on one PostgreSQL database (a schema each): one with the local
pool (``--slots`` worker processes, one Numba thread each), one with ``SVMSVC_EXECUTOR=dask`` on
a ``distributed.LocalCluster`` started here (``--slots`` worker processes under nannies, one
thread and one ``threads`` resource each, one thread per job).  Interleaved (the order
alternates between repeats), each repeat runs on each service:

* ``--jobs`` small jobs (``mfn``, C = 1, on mushrooms: 8,124 x 112, about 10 ms of solver),
  created at once by 8 client threads.  Reported: the per-job overhead inside an attempt (the
  median over jobs of claim-to-final-write minus the solver's own time: dataset load, the
  monitor's writes, the model's row; on Dask also the task's submission and scheduling), and
  the throughput overhead, ``(makespan x slots - sum of solver times) / jobs`` with the
  makespan from the first claim to the last final write (it adds the dispatcher's latency
  between a slot freeing up and its next job).  The Dask overhead per job is the difference.
* one large job (``mfn`` on a9a, 80 Newton iterations of 300 CG iterations each,
  ``c_path_start`` off: about 3 s on an idle core): its claim-to-final-write time.

Medians over the repeats.  Prints Markdown (what ``bench/history/notebook.md`` quotes) and the
machine.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from bench.bench_service import Server
from bench.commands import Command, option, repeats
from bench.paths import dataset_path

SMALL = {"solver": "mfn", "C": 1.0}
LARGE = {"solver": "mfn", "C": 100.0, "epsilon": 1e-15, "max_cgls_iter": 300,
         "max_iter": 80, "c_path_start": None, "tol": None}
WORKER_ENV = {"NUMBA_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _stamp(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def upload(client, name: str) -> str:
    path = dataset_path(name)
    response = client.post("/api/v1/datasets", files={"file": (name, path.read_bytes())})
    response.raise_for_status()
    return response.json()["id"]


def run_jobs(server: Server, dataset: str, params: dict, count: int) -> list[dict]:
    """Create ``count`` jobs at once; the finished jobs with their models' solver times."""
    with server.client() as client:
        def create(_):
            response = client.post("/api/v1/jobs",
                                   json={"dataset_id": dataset, "params": params})
            response.raise_for_status()
            return response.json()["id"]

        with ThreadPoolExecutor(8) as pool:
            ids = list(pool.map(create, range(count)))
        pending, done = set(ids), {}
        while pending:
            for job_id in list(pending):
                job = client.get(f"/api/v1/jobs/{job_id}").json()
                if job["status"] in ("succeeded", "failed", "cancelled"):
                    if job["status"] != "succeeded":
                        raise SystemExit(f"job {job_id} {job['status']}: {job}")
                    model = client.get(f"/api/v1/models/{job['model_id']}").json()
                    job["training_seconds"] = model["training_seconds"]
                    done[job_id] = job
                    pending.discard(job_id)
            if pending:
                time.sleep(0.2)
    return [done[job_id] for job_id in ids]


def overheads(jobs: list[dict], slots: int) -> tuple[float, float]:
    """(median in-attempt overhead, throughput overhead) per job, in seconds."""
    inside = [_stamp(j["finished_at"]) - _stamp(j["started_at"]) - j["training_seconds"]
              for j in jobs]
    makespan = (max(_stamp(j["finished_at"]) for j in jobs)
                - min(_stamp(j["started_at"]) for j in jobs))
    solver = sum(j["training_seconds"] for j in jobs)
    return statistics.median(inside), (makespan * slots - solver) / len(jobs)


def run_command(args) -> None:

    import psycopg
    from distributed import LocalCluster

    from bench.harness import machine_description

    for name, value in WORKER_ENV.items():
        os.environ.setdefault(name, value)
    machine = machine_description()
    database = f"svmsvc_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(args.postgres, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{database}"')
    dsn = args.postgres.replace("dbname=postgres", f"dbname={database}")
    for schema in ("local", "dask"):
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute(f'CREATE SCHEMA "{schema}"')

    def url(schema: str) -> str:
        return (f"postgresql+psycopg://postgres@127.0.0.1:5432/{database}"
                f"?options=-csearch_path%3D{schema}")

    cluster = LocalCluster(n_workers=args.slots, threads_per_worker=1, processes=True,
                           resources={"threads": 1}, dashboard_address=":0", env=WORKER_ENV)
    servers: dict[str, Server] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-dask-") as directory:
            root = Path(directory)
            (root / "local").mkdir()
            (root / "dask").mkdir()
            quota = {"max_queued_jobs_per_key": 2 * args.jobs}
            servers["local"] = Server(root / "local", workers=args.slots,
                                      database_url=url("local"), **quota)
            servers["dask"] = Server(root / "dask", workers=args.slots,
                                     database_url=url("dask"), executor="dask", **quota,
                                     dask_scheduler=cluster.scheduler_address,
                                     dask_threads_per_job=1)
            datasets = {}
            for name, server in servers.items():
                server.wait_ready()
                with server.client() as client:
                    datasets[name] = (upload(client, "mushrooms"), upload(client, "a9a"))
                run_jobs(server, datasets[name][0], SMALL, 2 * args.slots)  # warm-up
            small = {name: [] for name in servers}
            large = {name: [] for name in servers}
            for repeat in range(args.repeats):
                order = list(servers) if repeat % 2 == 0 else list(servers)[::-1]
                for name in order:
                    jobs = run_jobs(servers[name], datasets[name][0], SMALL, args.jobs)
                    small[name].append(overheads(jobs, args.slots))
                    (job,) = run_jobs(servers[name], datasets[name][1], LARGE, 1)
                    large[name].append(_stamp(job["finished_at"]) - _stamp(job["started_at"]))
                    print(f"repeat {repeat + 1} {name}: overhead in attempt "
                          f"{small[name][-1][0] * 1e3:.1f} ms, throughput "
                          f"{small[name][-1][1] * 1e3:.1f} ms; large job {large[name][-1]:.2f} s",
                          flush=True)
    finally:
        for server in servers.values():
            server.stop()
        cluster.close()
        with psycopg.connect(args.postgres, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')

    def median(values, index=None):
        return statistics.median(v if index is None else v[index] for v in values)

    print(f"\n{args.jobs} small jobs (mfn, mushrooms) and one large job (mfn, a9a, 80 Newton "
          f"iterations); {args.slots} slots of one thread each; medians of {args.repeats} "
          f"interleaved repeats; load average {os.getloadavg()[0]:.2f} at the end, "
          f"{machine['load_average_at_start']:.2f} at the start\n")
    print("| executor | overhead per job in the attempt, ms | throughput overhead per job, ms "
          "| large job, s |")
    print("|---|---|---|---|")
    for name in servers:
        print(f"| {name} | {median(small[name], 0) * 1e3:.1f} | "
              f"{median(small[name], 1) * 1e3:.1f} | {median(large[name]):.2f} |")
    extra = median(small["dask"], 1) - median(small["local"], 1)
    ratio = median(large["dask"]) / median(large["local"])
    print(f"\nDask overhead per job (throughput, dask - local): {extra * 1e3:.1f} ms; "
          f"large job dask / local: {ratio:.3f}")
    print(f"machine: {machine}")


COMMAND = Command(
    "dask", "jobs through a Dask cluster against the local pool", run_command, description=__doc__,
    options=(
        option("--jobs", type=int, default=200),
        repeats(3),
        option("--slots", type=int, default=2),
        option("--postgres", default="host=127.0.0.1 port=5432 user=postgres "
                                     "dbname=postgres connect_timeout=3")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["dask", *sys.argv[1:]]))
