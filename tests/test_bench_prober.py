"""bench.prober: the probes of ``python -m bench service uploads`` from a process of their own
(issue 49: probed from the bench's threads, a probe waited for the bench's GIL behind the
upload clients)."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

from bench.bench_service import _ProberProcess


def test_the_prober_process_probes_each_target_until_told_to_stop():
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the standard library's name)
            seen.append(self.path)
            body = b'{"status":"ok"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    target = SimpleNamespace(url=f"http://127.0.0.1:{server.server_port}", headers={})
    try:
        with _ProberProcess(target, [("healthz", "/healthz", {}),
                                     ("predict", "/p", {"x": "1:1"})]) as prober:
            deadline = time.monotonic() + 120
            while seen.count("/healthz") < 4 or seen.count("/p?x=1%3A1") < 4:
                assert time.monotonic() < deadline, f"probes seen: {seen}"
                time.sleep(0.05)
    finally:
        server.shutdown()
    # the first answer of each target (the prober's readiness) is not counted
    assert set(prober.latencies) == {"healthz", "predict"}
    for kind in ("healthz", "predict"):
        assert len(prober.latencies[kind]) >= 3
        assert all(0 < seconds < 120 for seconds in prober.latencies[kind])
    assert len(prober.latencies["healthz"]) <= seen.count("/healthz") - 1
