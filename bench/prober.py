"""A prober in a process of its own, as a kubelet is: GET requests to a service, each target
every ``interval`` seconds on a thread of its own, the latency of each recorded, until its
standard input closes.

    python -m bench.prober SPEC_JSON

``SPEC_JSON``: ``{"url": ..., "headers": {...}, "interval": 0.02, "targets": [[kind, path,
params], ...]}``.  It prints ``ready`` once every target has answered once, then, when its
standard input ends, one line of JSON: ``{kind: [seconds, ...]}``.

``bench.bench_service`` uses it for ``/healthz`` and GET predict under uploads (issue 49):
probed from threads of the bench's own process, a probe waited for that process's GIL
behind the threads sending the uploads (httpx building multipart bodies), and the bench
measured its own process as much as the service.
"""

from __future__ import annotations

import json
import sys
import threading
import time

import httpx


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    done = threading.Event()
    latencies: dict[str, list[float]] = {kind: [] for kind, _, _ in spec["targets"]}
    clients = {kind: httpx.Client(base_url=spec["url"], headers=spec.get("headers", {}),
                                  timeout=120.0) for kind in latencies}
    for kind, path, params in spec["targets"]:  # the connections open, each target answers
        clients[kind].get(path, params=params).raise_for_status()
    print("ready", flush=True)

    def probe(kind: str, path: str, params: dict) -> None:
        while not done.is_set():
            started = time.perf_counter()
            clients[kind].get(path, params=params).raise_for_status()
            latencies[kind].append(time.perf_counter() - started)
            time.sleep(spec.get("interval", 0.02))

    threads = [threading.Thread(target=probe, args=tuple(target), daemon=True)
               for target in spec["targets"]]
    for thread in threads:
        thread.start()
    sys.stdin.read()  # until the bench closes it (or dies)
    done.set()
    for thread in threads:
        thread.join(120)
    for client in clients.values():
        client.close()
    print(json.dumps(latencies), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
