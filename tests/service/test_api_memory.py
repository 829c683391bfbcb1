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


def test_an_upload_leaves_nothing_for_the_garbage_collector(api):
    """An upload's objects are freed by reference counting: no collection runs after large
    requests any more (a full one holds the GIL for the whole heap walk and stalled the
    event loop), so a cycle holding the parsed arrays would keep them until Python's next
    full collection.  The multipart parser's callbacks formed one."""
    import gc

    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds unreachable stays in gc.garbage
    try:
        for seed in (17003, 17004):  # a new dataset and, the second time, a bad file
            content = random_svmlight(n_rows=3000, n_features=5, seed=seed)
            response = upload(api, content if seed == 17003 else content + b"1 x:y\n")
            assert response.status_code in (201, 422), response.text
        gc.collect()
        kinds = {type(thing).__name__ for thing in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not kinds & {"_MultipartFile", "MultipartParser", "SVMLightStreamParser"}, kinds
