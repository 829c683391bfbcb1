"""``python -m bench onnx``: an exported model served by onnxruntime, beside the library's
predict and the service's, on the same machine.

    python -m bench onnx [--models a9a-linear,dna-rbf-ovo-probabilities,letter-nystrom-ovr]
        [--rounds 5] [--single 300] [--batch 10000] [--out results.json]

Each model is trained by a service (``svmsvc serve``, one worker, SQLite in a temporary
directory, as :mod:`bench.bench_service` starts it), and the library's copy
(``download?format=npz``) and the ONNX graph (``download?format=onnx``) come from it, so the
three predict with one model.  Its held-out rows (the test file's lines, cycled to ``--batch``
lines where the file is shorter) are predicted by:

* ``library``: ``Model.scores_and_probabilities`` then ``labels_from_scores`` on CSR rows (the
  outputs the graph has), with the serial kernels (what the service's web process runs) and,
  for the batch, ``parallel=True`` too (a worker's kernels, on every core);
* ``onnxruntime``: ``InferenceSession.run`` on dense float64 rows, with one intra-op thread and
  with onnxruntime's default (one per core); the rows are densified beforehand
  (``Model.onnx_input``), which is timed apart (``densify``);
* ``service``: ``GET /models/{id}/predict?x=...`` for one row (one keep-alive connection,
  ``http.client``) and ``POST /models/{id}/predict`` of the batch as SVMlight text: a request's
  whole time (the body parsed, the answer written as JSON), the client on the same machine.

One row: ``--single`` calls per round, each on the next row of the test set (p50 and p99 of the
round); the batch: one call per round.  ``--rounds`` rounds, the methods' order rotating from
one round to the next; the figures are medians over the rounds.  Before the timing every
method runs once (warm-up: Numba's and onnxruntime's first calls), and the labels of the batch
are compared across the three (the study stops if they differ).
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import numpy as np
import onnx
import onnxruntime

from bench.bench_service import Server, upload, wait_job
from bench.commands import Command, option, out
from bench.paths import dataset_path
from solvers import load_model, read_svmlight


@dataclass(frozen=True)
class Case:
    train: str
    test: str
    params: dict


CASES = {
    "a9a-linear": Case("a9a", "a9a.t", {"solver": "mfn", "C": 1.0}),
    "dna-rbf-ovo-probabilities": Case(
        "dna.scale", "dna.scale.t", {"solver": "smo", "kernel": "rbf", "gamma": 0.02, "C": 1.0,
                                     "probability": True}),
    "letter-nystrom-ovr": Case(
        "letter.scale", "letter.scale.t", {"solver": "mfn", "C": 1.0, "kernel": "rbf",
                                           "gamma": 1.0, "approximation": "nystrom",
                                           "rank": 200}),
}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def train_in_service(server: Server, case: Case) -> tuple[str, bytes, bytes]:
    """(model id, npz archive, ONNX graph) of the case's model trained by ``server``."""
    with server.client() as client:
        dataset = upload(client, dataset_path(case.train))
        job = client.post("/api/v1/jobs", json={"dataset_id": dataset,
                                                "params": case.params})
        job.raise_for_status()
        job, _ = wait_job(client, job.json()["id"],
                          lambda j: j["status"] in ("succeeded", "failed"), timeout=1800,
                          interval=0.2)
        if job["status"] != "succeeded":
            raise SystemExit(f"training {case} failed: {job['message']}")
        model_id = job["model_id"]
        download = f"/api/v1/models/{model_id}/download"
        archive = client.get(download, params={"format": "npz"})
        graph = client.get(download, params={"format": "onnx"})
        archive.raise_for_status()
        graph.raise_for_status()
    return model_id, archive.content, graph.content


def test_lines(case: Case, rows: int) -> list[str]:
    """The test file's lines, cycled to ``rows`` of them."""
    lines = [line for line in dataset_path(case.test).read_text().splitlines() if line.strip()]
    return [lines[i % len(lines)] for i in range(rows)]


class Methods:
    """Each method's one-row call and batch call on the same rows."""

    def __init__(self, server: Server, model_id: str, archive: bytes, graph: bytes,
                 lines: list[str]):
        self.model = load_model(archive)
        text = ("\n".join(lines) + "\n").encode()
        self.body = text
        self.X = read_svmlight(text, n_features=self.model.n_features_in_).X
        self.rows = [self.X[i] for i in range(min(len(lines), 1000))]  # sliced once, untimed
        self.dense = self.model.onnx_input(self.X)
        self.queries = [f"/api/v1/models/{model_id}/predict?x=" + quote(" ".join(
            line.split()[1:])) for line in lines[:len(self.rows)]]
        self.batch_path = f"/api/v1/models/{model_id}/predict"
        self.server = server
        self.connection = http.client.HTTPConnection("127.0.0.1", server.port)
        single = onnxruntime.SessionOptions()
        single.intra_op_num_threads = 1
        single.inter_op_num_threads = 1
        self.sessions = {
            "onnxruntime, 1 thread": onnxruntime.InferenceSession(
                graph, single, providers=["CPUExecutionProvider"]),
            "onnxruntime, default threads": onnxruntime.InferenceSession(
                graph, providers=["CPUExecutionProvider"]),
        }

    def library(self, X, parallel: bool = False):
        scores, probabilities = self.model.scores_and_probabilities(X, parallel=parallel)
        return self.model.labels_from_scores(scores), scores, probabilities

    def onnx(self, name: str, dense):
        return self.sessions[name].run(None, {"X": dense})

    def service_get(self, i: int) -> dict:
        self.connection.request("GET", self.queries[i], headers=self.server.headers)
        return self._answer()

    def service_batch(self) -> dict:
        self.connection.request("POST", self.batch_path, body=self.body,
                                headers={**self.server.headers, "Content-Type": "text/plain"})
        return self._answer()

    def reconnect(self) -> None:
        """A fresh keep-alive connection to the service, made before a timed block: the server
        closes a connection idle for 5 s (uvicorn's keep-alive timeout), as one is while the
        other methods predict a batch."""
        self.connection.close()
        self.connection = http.client.HTTPConnection("127.0.0.1", self.server.port)
        self.connection.connect()

    def _answer(self) -> dict:
        response = self.connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise SystemExit(f"the service answered {response.status}: {body[:300]!r}")
        return json.loads(body)

    def one_row(self) -> dict:
        """Method -> its call on row i."""
        calls = {"library": lambda i: self.library(self.rows[i])}
        for name in self.sessions:
            calls[name] = lambda i, name=name: self.onnx(name, self.dense[i:i + 1])
        calls["service"] = self.service_get
        return calls

    def batch(self) -> dict:
        calls = {"library": lambda: self.library(self.X),
                 "library, parallel kernels": lambda: self.library(self.X, parallel=True),
                 "densify": lambda: self.model.onnx_input(self.X)}
        for name in self.sessions:
            calls[name] = lambda name=name: self.onnx(name, self.dense)
        calls["service"] = self.service_batch
        return calls

    def check_agreement(self) -> None:
        """The three give the batch's rows the same labels."""
        expected = self.library(self.X)[0].tolist()
        for name in self.sessions:
            if self.onnx(name, self.dense)[0].tolist() != expected:
                raise SystemExit(f"{name}'s labels differ from the library's")
        served = [row["label"] for row in self.service_batch()["data"]]
        if served != expected:
            raise SystemExit("the service's labels differ from the library's")


def measure(methods: Methods, rounds: int, single: int) -> dict:
    one_row, batch = methods.one_row(), methods.batch()
    for call in one_row.values():  # warm-up
        call(0)
    for call in batch.values():
        methods.reconnect()
        call()
    methods.reconnect()
    methods.check_agreement()
    single = min(single, len(methods.rows))
    samples: dict = {"one_row": {name: [] for name in one_row},
                     "batch": {name: [] for name in batch}}
    names = list(one_row)
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            methods.reconnect()
            times = []
            for i in range(single):
                start = time.perf_counter()
                one_row[name](i)
                times.append(time.perf_counter() - start)
            samples["one_row"][name].append({"p50_ms": 1e3 * _percentile(times, 0.5),
                                             "p99_ms": 1e3 * _percentile(times, 0.99)})
        batch_names = list(batch)
        shift = round_ % len(batch_names)
        for name in batch_names[shift:] + batch_names[:shift]:
            methods.reconnect()
            start = time.perf_counter()
            batch[name]()
            samples["batch"][name].append(time.perf_counter() - start)
    rows = methods.X.shape[0]
    return {
        "one_row": {name: {key: statistics.median(r[key] for r in runs)
                           for key in ("p50_ms", "p99_ms")}
                    for name, runs in samples["one_row"].items()},
        "batch": {name: {"seconds": statistics.median(runs),
                         "rows_per_s": rows / statistics.median(runs)}
                  for name, runs in samples["batch"].items()},
        "samples": samples,
    }


def describe(model, graph: bytes) -> dict:
    return {"kind": model.kind, "classes": len(model.classes_),
            "features": model.n_features_in_, "calibrated": model.calibrated,
            "support_vectors": getattr(model, "n_support", None),
            "multiclass": getattr(model, "multiclass", None), "onnx_bytes": len(graph)}


def markdown(results: dict, rows: int) -> str:
    lines = [f"| model | method | one row p50 (ms) | one row p99 (ms) | {rows:,} rows (s) | "
             "rows/s |", "|---|---|---:|---:|---:|---:|"]
    for name, result in results.items():
        figures = result["figures"]
        for method in figures["batch"]:
            single = figures["one_row"].get(method)
            p50 = f"{single['p50_ms']:.3f}" if single else ""
            p99 = f"{single['p99_ms']:.3f}" if single else ""
            batch = figures["batch"][method]
            lines.append(f"| {name} | {method} | {p50} | {p99} | {batch['seconds']:.4f} | "
                         f"{batch['rows_per_s']:,.0f} |")
    return "\n".join(lines)


def run_command(args) -> int:
    names = args.models.split(",")
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        print(f"unknown models {unknown}; known: {', '.join(CASES)}", file=sys.stderr)
        return 2
    load_before = os.getloadavg()[0]
    results = {}
    with tempfile.TemporaryDirectory(prefix="svmsvc-bench-onnx-") as directory:
        server = Server(Path(directory), workers=1)
        try:
            server.wait_ready()
            for name in names:
                case = CASES[name]
                model_id, archive, graph = train_in_service(server, case)
                methods = Methods(server, model_id, archive, graph,
                                  test_lines(case, args.batch))
                print(f"{name}: trained; measuring", file=sys.stderr, flush=True)
                results[name] = {"train": case.train, "test": case.test,
                                 "params": case.params,
                                 "model": describe(methods.model, graph),
                                 "figures": measure(methods, args.rounds, args.single)}
                methods.connection.close()
        finally:
            server.stop()
    load = (load_before, os.getloadavg()[0])
    print(markdown(results, args.batch))
    print(f"\n{args.rounds} rounds, {args.single} one-row calls a round; 1-minute load "
          f"average {load[0]:.1f} before, {load[1]:.1f} after; onnxruntime "
          f"{onnxruntime.__version__}")
    if args.out:
        args.out.write_text(json.dumps({
            "versions": {"onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__,
                         "numpy": np.__version__},
            "cpus": os.cpu_count(), "rounds": args.rounds, "single": args.single,
            "batch_rows": args.batch, "load_average_before_after": load,
            "models": results}, indent=1) + "\n")
    return 0


COMMAND = Command(
    "onnx", "onnxruntime serving exported models beside the library's and the service's "
    "predict: one row and a batch", run_command, description=__doc__,
    options=(
        option("--models", default=",".join(CASES),
               help=f"comma-separated, of: {', '.join(CASES)}"),
        option("--rounds", type=int, default=5, help="timed rounds (medians)"),
        option("--single", type=int, default=300, help="one-row calls a round"),
        option("--batch", type=int, default=10_000, help="rows of the batch"),
        out(None, help="also write the results as JSON here")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["onnx", *sys.argv[1:]]))
