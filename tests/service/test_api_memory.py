"""Memory handed back after large requests (``app.memory``): how much is measured by
``python -m bench.bench_service memory``; here, that the release runs when it should."""

from __future__ import annotations

import sys

import pytest
from servicetools import random_svmlight, upload

import app.memory


@pytest.fixture
def releases(monkeypatch) -> list[bool]:
    calls: list[bool] = []
    original = app.memory.release_memory

    def counted() -> bool:
        calls.append(original())
        return calls[-1]

    monkeypatch.setattr(app.memory, "release_memory", counted)
    return calls


@pytest.mark.skipif(not sys.platform.startswith("linux") or app.memory._MALLOC_TRIM is None,
                    reason="malloc_trim is glibc's")
def test_the_allocator_is_trimmed_after_a_large_request_only(api, releases):
    small = upload(api, random_svmlight(n_rows=50, seed=17001))
    assert small.status_code in (200, 201)
    assert releases == []
    large = random_svmlight(n_rows=30000, n_features=5, seed=17002)
    assert len(large) > app.memory.TRIM_AFTER_BYTES
    assert upload(api, large).status_code in (200, 201)
    assert releases == [True]
    assert app.memory.configure_allocator()
