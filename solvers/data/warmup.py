"""Compile (or load from the on-disk cache) the SVMlight parser's Numba kernels.

A process that parses uploads or prediction bodies (a web worker) calls
:func:`warm_up_parser` at start, so its first request does not wait for compilation while it
holds the GIL.  The kernels have ``cache=True``: after the first process on a machine this
mostly loads machine code from ``__pycache__``.
"""

from __future__ import annotations

import time

from solvers.data.svmlight import read_svmlight

# Every kernel specialization parsing can reach: the line kernel with int32 column indices
# (qid, sid, cost, a comment, CRLF, a number left to float(), 1-based and 0-based) and with
# int64 ones (an index beyond 2**31), and the search for the end of a line split between two
# chunks.  gzip, bzip2 and xz are decompressed in Python and reach the same kernels.
_SIDE_FIELDS = (b"# warm-up\n1 qid:1 sid:2 cost:0.5 1:1 3:2.5e-1\r\n"
                b"-1 qid:2 2:0.12345678901234567891\n")
_WIDE_INDEX = b"1 1:1\n-1 3000000000:1\n"
_SPLIT_LINES = b"1 1:1\n-1 2:1\n"


def warm_up_parser() -> float:
    """Compile every parser kernel on tiny in-memory inputs; returns the seconds it took."""
    start = time.perf_counter()
    read_svmlight(_SIDE_FIELDS)
    read_svmlight(_SIDE_FIELDS, zero_based=True)
    read_svmlight(_WIDE_INDEX)
    read_svmlight(_SPLIT_LINES, chunk_size=4)
    return time.perf_counter() - start
