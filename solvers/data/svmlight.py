"""Reading and writing the SVMlight / LIBSVM text format.

The format
----------
One example per line::

    <label> [qid:<int>] [sid:<int>] [cost:<float>] <index>:<value> <index>:<value> ... [# info]

* **label**: any finite decimal number (``+1``/``-1``, ``0``/``1``, ``2``/``4``, ``1.5e3`` ...).
* **qid** (query id, a signed 64-bit integer), **sid** (slack id, a signed 64-bit integer) and
  **cost** (cost factor, a finite non-negative number) are optional, each at most once per line,
  in any order, after the label and before the first feature.
* **features**: ``index:value`` pairs with strictly increasing indices.  Indices are 1-based
  (``zero_based=True`` accepts 0-based files); values are finite decimal numbers.  Explicit
  zeros (``7:0``) are kept as stored entries, as scikit-learn's reader keeps them.
* Tokens are separated by spaces and/or tabs; lines end with LF or CRLF.  ``#`` starts a comment
  that runs to the end of the line, wherever it appears.  Blank lines and comment-only lines
  are skipped (but counted in line numbers).
* Numbers follow ``[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?``: ``1e-3``,
  ``1.5E+2``, ``+1``, ``.5`` and ``5.`` are accepted; ``inf``, ``nan``, hexadecimal and ``1_000``
  are rejected.  Every number is parsed exactly as Python's ``float()`` parses the same text
  (correctly rounded); a decimal too large for a double is rejected as infinite, one too small
  becomes zero, as with ``float()``.

Anything else is rejected with :class:`SVMLightFormatError` naming the 1-based physical line
number (comment and blank lines included) and the offending token: an unparseable label or
token, a feature without ``:`` or with an empty value, index 0 in a 1-based file, a negative
index, an index beyond 64 bits or beyond ``n_features``, a duplicate or decreasing index, a
repeated or misplaced qid/sid/cost, a negative cost, NaN or infinite numbers, a carriage return
that does not end a line, NUL bytes (the input is not text) and non-ASCII bytes outside comments.
Comments may hold any bytes but NUL.

Choices
-------
* Input without any data line raises ``SVMLightFormatError("no data lines")``.
* ``qid`` must be on every data line or on none: a file where only some lines carry one raises
  an error naming the first line without it (SVMlight silently uses 0 there, which would merge
  those lines into one query).
* A line without ``cost`` has cost 1.0 (SVMlight's default); the costs become
  ``Dataset.sample_weight`` when at least one line has one, otherwise it is ``None``.
* ``sid`` is validated and, since :class:`Dataset` has no place for it, exposed as
  :attr:`SVMLightStreamParser.sid` after :meth:`~SVMLightStreamParser.finish` (0 on lines
  without one, SVMlight's default; ``None`` when no line has one).  :func:`read_svmlight` drops it.
* Compressed input (gzip, bzip2, xz, also multi-stream) is recognised by its magic bytes, never
  by a file name, and decompressed as a stream.

Implementation
--------------
The bytes are parsed in chunks by a Numba kernel that writes straight into growable NumPy
arrays (labels, row pointers, int32 column indices -- int64 only when needed --, values, and
qid/sid/cost once a line has one).  When an array is full the kernel returns to Python, which
enlarges it (to the size the bytes per entry so far project for the rest of the chunk, and by
at least a quarter) and resumes at the start of the line; the arrays are cut to size in place
at the end.  A line split across two chunks is carried over to the next one.  Numbers take
Clinger's exact fast path (a mantissa of at most 2**53 scaled by an exactly representable
power of ten: one correctly rounded multiplication or division); the rare numbers outside it
are recorded by position and converted afterwards with ``float()`` on their bytes, so every
value is identical to what ``float()`` gives.  The kernel reports errors as a code and byte
offsets; the Python side turns them into :class:`SVMLightFormatError`.  The kernels touch no
Python object and release the GIL (``nogil=True``): a thread parsing a large body leaves the
process's other threads running.  :func:`solvers.data.warmup.warm_up_parser` compiles them.

The writer formats numbers with ``repr`` (the shortest text that reads back exactly) and
assembles the lines in a Numba kernel.
"""

from __future__ import annotations

import bz2
import lzma
import math
import os
import zlib
from collections.abc import Iterator
from itertools import repeat

import numpy as np
import scipy.sparse as sp
from numba import njit

from solvers.data.dataset import Dataset, integral_labels

__all__ = ["SVMLightFormatError", "SVMLightStreamParser", "read_svmlight", "write_svmlight"]

DEFAULT_CHUNK_SIZE = 8 << 20
"""Bytes read (and, for compressed input, decompressed) at a time."""

_TOKEN_SHOWN = 80
"""Longest token quoted in an error message; longer ones are cut and end with '...'."""

_INT32_MAX = np.iinfo(np.int32).max
_INT64_MAX = np.iinfo(np.int64).max

# -- byte values ---------------------------------------------------------------------------
_TAB, _LF, _CR, _SPACE, _HASH = 9, 10, 13, 32, 35
_PLUS, _MINUS, _DOT, _COLON = 43, 45, 46, 58

_TOKEN_END = np.zeros(256, dtype=np.bool_)
"""The bytes that end a token: blanks, line ends and the comment sign."""
_TOKEN_END[[_SPACE, _TAB, _LF, _CR, _HASH]] = True

_TOKEN_ALPHABET = np.zeros(256, dtype=np.bool_)
"""The bytes a valid token can hold."""
_TOKEN_ALPHABET[np.frombuffer(b"0123456789+-.eE:qidscot", dtype=np.uint8)] = True

# -- what the number parser found ----------------------------------------------------------
_NUMBER_INVALID = 0
_NUMBER_EXACT = 1  # value computed exactly in the kernel
_NUMBER_DEFERRED = 2  # valid syntax, outside the fast path: converted later with float()
_NUMBER_OUT_OF_RANGE = 3  # an integer beyond int64

_MAX_EXACT_MANTISSA = np.uint64(1 << 53)
_POWERS_OF_TEN = np.array([10.0**k for k in range(23)])
_INTEGER_POWERS_OF_TEN = np.array([10**k for k in range(16)], dtype=np.uint64)
_U64_TEN = np.uint64(10)
_U64_NINE = np.uint64(9)
_U64_ASCII_ZERO = np.uint64(48)
_U64_10_POW_18 = np.uint64(10**18)
_U64_ZERO = np.uint64(0)
_U64_INT64_MAX = np.uint64(_INT64_MAX)
_U64_INT64_MIN_MAGNITUDE = np.uint64(1 << 63)

# -- the kernel's status codes -------------------------------------------------------------
# _END: stopped at `pos`, which is the end of the buffer or the start of an incomplete last
# line.  _NEED_*: stopped at the start of the current line to let Python grow an array.
# _E_*: a format error at the token [token_start, token_end) of the line after the last one
# the state vector counts.
_END = 0
_NEED_ROWS = 1
_NEED_ENTRIES = 2
_NEED_WIDE_INDICES = 3
_NEED_SIDE_ARRAYS = 4
_NEED_DEFERRED_SLOTS = 5
_NO_ERROR = 0
_E_LABEL = 10
_E_INDEX = 11
_E_NO_COLON = 12
_E_EMPTY_VALUE = 13
_E_VALUE = 14
_E_INDEX_ZERO = 15
_E_NEGATIVE_INDEX = 16
_E_INDEX_RANGE = 17
_E_INDEX_BEYOND_N_FEATURES = 18
_E_DUPLICATE_INDEX = 19
_E_DECREASING_INDEX = 20
_E_SIDE_VALUE = 21
_E_SIDE_RANGE = 22
_E_SIDE_TWICE = 23
_E_SIDE_AFTER_FEATURES = 24
_E_NEGATIVE_COST = 25
_E_BARE_CR = 26
_E_NUL = 27

# -- what a deferred number is for (column 0 of the deferred-number table) -----------------
_FOR_LABEL = 0
_FOR_VALUE = 1
_FOR_COST = 2
# columns of the deferred-number table
_D_TARGET, _D_INDEX, _D_START, _D_END, _D_TOKEN_START, _D_LINE = range(6)

# -- slots of the kernel's state vector (progress up to the last complete line) ------------
_S_LINES = 0  # physical lines consumed
_S_ROWS = 1
_S_ENTRIES = 2
_S_DEFERRED = 3  # rows of the deferred-number table in use
_S_COLUMNS = 4  # largest column index seen + 1
_S_QID_ROWS = 5
_S_FIRST_QID_LINE = 6
_S_FIRST_LINE_WITHOUT_QID = 7
_S_SID_ROWS = 8
_S_COST_ROWS = 9
_N_STATE = 10

# -- side tokens -----------------------------------------------------------------------------
_NOT_SIDE, _QID, _SID, _COST = 0, 1, 2, 3

# -- how a line ends -------------------------------------------------------------------------
_LINE_DONE, _LINE_INCOMPLETE, _LINE_BARE_CR, _LINE_NUL = 0, 1, 2, 3


class SVMLightLimitError(ValueError):
    """Well-formed input beyond a cap the parser was given (:class:`SVMLightStreamParser`'s
    ``max_text_bytes``, ``max_rows``, ``max_entries``, ``max_features``).  ``limit`` names the
    cap (``"text_bytes"``, ``"rows"``, ``"entries"`` or ``"features"``), ``cap`` is its value
    and ``actual`` what the input reached (at least: parsing stops at the first excess)."""

    def __init__(self, limit: str, cap: int, actual: int):
        super().__init__(f"the input exceeds the cap on {limit.replace('_', ' ')}: "
                         f"{actual} > {cap}")
        self.limit = limit
        self.cap = cap
        self.actual = actual


class SVMLightFormatError(ValueError):
    """Malformed SVMlight input.

    ``line`` is the 1-based physical line number (``None`` for errors about the input as a
    whole: no data lines, corrupt compressed data) and ``token`` the offending token, its first
    80 bytes followed by '...' when longer (``None`` when no single token is at fault, as for a
    line without the qid the other lines have).  ``description`` is the message without them.
    """

    def __init__(self, description: str, line: int | None = None, token: str | None = None):
        message = description
        if token is not None:
            message = f"{message} in token {token!r}"
        if line is not None:
            message = f"line {line}: {message}"
        super().__init__(message)
        self.description = description
        self.line = line
        self.token = token

    def __reduce__(self):
        return type(self), (self.description, self.line, self.token)


# =============================================================================================
# The Numba kernel
# =============================================================================================


@njit(cache=True, inline="always")
def _is_digit(byte):
    return 48 <= byte <= 57


@njit(cache=True, inline="always")
def _ends_token(byte):
    return _TOKEN_END[byte]


@njit(cache=True, inline="always")
def _skip_blanks(buf, pos, n):
    while pos < n and (buf[pos] == _SPACE or buf[pos] == _TAB):
        pos += 1
    return pos


@njit(cache=True, inline="always")
def _parse_decimal(buf, pos, n):
    """Parse a decimal number starting at ``pos``: ``(kind, value, end)``.

    ``kind`` is _NUMBER_EXACT (``value`` is correctly rounded), _NUMBER_DEFERRED (valid, to be
    converted with ``float()``) or _NUMBER_INVALID.  Parsing stops at the first byte that
    cannot continue the number; the caller checks that a separator follows.
    """
    negative = False
    if pos < n and (buf[pos] == _PLUS or buf[pos] == _MINUS):
        negative = buf[pos] == _MINUS
        pos += 1
    mantissa = _U64_ZERO  # the first 19 significant digits (leading zeros add nothing)
    exponent = 0
    dropped_nonzero = False  # a nonzero digit beyond the 19th significant one
    start = pos
    while pos < n:
        digit = np.uint64(buf[pos]) - _U64_ASCII_ZERO  # wraps around below '0'
        if digit > _U64_NINE:
            break
        if mantissa < _U64_10_POW_18:
            mantissa = mantissa * _U64_TEN + digit
        else:
            exponent += 1
            dropped_nonzero |= digit != _U64_ZERO
        pos += 1
    digits = pos - start
    if pos < n and buf[pos] == _DOT:
        pos += 1
        start = pos
        while pos < n:
            digit = np.uint64(buf[pos]) - _U64_ASCII_ZERO
            if digit > _U64_NINE:
                break
            if mantissa < _U64_10_POW_18:
                mantissa = mantissa * _U64_TEN + digit
                exponent -= 1
            else:
                dropped_nonzero |= digit != _U64_ZERO
            pos += 1
        digits += pos - start
    if digits == 0:
        return _NUMBER_INVALID, 0.0, pos
    if pos < n and (buf[pos] == 101 or buf[pos] == 69):  # 'e' or 'E'
        pos += 1
        exponent_negative = False
        if pos < n and (buf[pos] == _PLUS or buf[pos] == _MINUS):
            exponent_negative = buf[pos] == _MINUS
            pos += 1
        exponent_digits = 0
        written_exponent = 0
        while pos < n and _is_digit(buf[pos]):
            if written_exponent < 100_000_000:  # far beyond any double; avoids overflow
                written_exponent = written_exponent * 10 + np.int64(buf[pos] - 48)
            exponent_digits += 1
            pos += 1
        if exponent_digits == 0:
            return _NUMBER_INVALID, 0.0, pos
        exponent += -written_exponent if exponent_negative else written_exponent
    if mantissa == _U64_ZERO:
        return _NUMBER_EXACT, -0.0 if negative else 0.0, pos
    if dropped_nonzero:
        return _NUMBER_DEFERRED, 0.0, pos
    if mantissa > _MAX_EXACT_MANTISSA:  # maybe only trailing zeros make it long
        while mantissa % _U64_TEN == _U64_ZERO:
            mantissa //= _U64_TEN
            exponent += 1
        if mantissa > _MAX_EXACT_MANTISSA:
            return _NUMBER_DEFERRED, 0.0, pos
    value = np.float64(mantissa)
    if 0 <= exponent <= 22:
        value *= _POWERS_OF_TEN[exponent]
    elif -22 <= exponent < 0:
        value /= _POWERS_OF_TEN[-exponent]
    elif 22 < exponent <= 37:
        # Clinger's extension: move the excess power of ten into the mantissa while it stays exact.
        scale = _INTEGER_POWERS_OF_TEN[exponent - 22]
        if mantissa > _MAX_EXACT_MANTISSA // scale:
            return _NUMBER_DEFERRED, 0.0, pos
        value = np.float64(mantissa * scale) * _POWERS_OF_TEN[22]
    else:
        return _NUMBER_DEFERRED, 0.0, pos
    return _NUMBER_EXACT, -value if negative else value, pos


@njit(cache=True, inline="always")
def _parse_digits(buf, pos, n):
    """Unsigned decimal digits at ``pos``: ``(count, magnitude, too_long, end)``.

    ``too_long`` is set when there are more than 19 significant digits (beyond 64 bits);
    otherwise ``magnitude`` holds the exact value.
    """
    magnitude = _U64_ZERO
    too_long = False
    start = pos
    while pos < n:
        digit = np.uint64(buf[pos]) - _U64_ASCII_ZERO  # wraps around below '0'
        if digit > _U64_NINE:
            break
        if magnitude < _U64_10_POW_18:
            magnitude = magnitude * _U64_TEN + digit
        else:  # a 20th significant digit
            too_long = True
        pos += 1
    return pos - start, magnitude, too_long, pos


@njit(cache=True, nogil=True)
def _parse_int64(buf, pos, n):
    """A signed 64-bit integer at ``pos``: ``(kind, value, end)``.

    ``kind`` is _NUMBER_EXACT, _NUMBER_INVALID (no digits) or _NUMBER_OUT_OF_RANGE.
    """
    negative = False
    if pos < n and (buf[pos] == _PLUS or buf[pos] == _MINUS):
        negative = buf[pos] == _MINUS
        pos += 1
    count, magnitude, too_long, pos = _parse_digits(buf, pos, n)
    if count == 0:
        return _NUMBER_INVALID, 0, pos
    limit = _U64_INT64_MIN_MAGNITUDE if negative else _U64_INT64_MAX
    if too_long or magnitude > limit:
        return _NUMBER_OUT_OF_RANGE, 0, pos
    if negative:
        if magnitude == _U64_INT64_MIN_MAGNITUDE:
            return _NUMBER_EXACT, -_INT64_MAX - 1, pos
        return _NUMBER_EXACT, -np.int64(magnitude), pos
    return _NUMBER_EXACT, np.int64(magnitude), pos


@njit(cache=True, nogil=True)
def _side_keyword(buf, pos, n):
    """Which of ``qid:``, ``sid:``, ``cost:`` starts at ``pos``: ``(keyword, length)``."""
    if pos + 4 <= n and buf[pos + 3] == _COLON:
        if buf[pos] == 113 and buf[pos + 1] == 105 and buf[pos + 2] == 100:  # qid
            return _QID, 4
        if buf[pos] == 115 and buf[pos + 1] == 105 and buf[pos + 2] == 100:  # sid
            return _SID, 4
    if (
        pos + 5 <= n
        and buf[pos] == 99  # cost
        and buf[pos + 1] == 111
        and buf[pos + 2] == 115
        and buf[pos + 3] == 116
        and buf[pos + 4] == _COLON
    ):
        return _COST, 5
    return _NOT_SIDE, 0


@njit(cache=True, nogil=True)
def _end_line(buf, pos, n, final):
    """At a line end, a CR or a '#': ``(how, position after the line)``."""
    if pos == n:
        return (_LINE_DONE if final else _LINE_INCOMPLETE), n
    byte = buf[pos]
    if byte == _LF:
        return _LINE_DONE, pos + 1
    if byte == _CR:
        if pos + 1 == n:
            return (_LINE_DONE if final else _LINE_INCOMPLETE), n
        if buf[pos + 1] == _LF:
            return _LINE_DONE, pos + 2
        return _LINE_BARE_CR, pos
    while pos < n:  # a comment: anything but NUL up to the line feed
        byte = buf[pos]
        if byte == _LF:
            return _LINE_DONE, pos + 1
        if byte == 0:
            return _LINE_NUL, pos
        pos += 1
    return (_LINE_DONE if final else _LINE_INCOMPLETE), n


@njit(cache=True, nogil=True)
def _defer(deferred, slot, target, index, start, end, token_start, line_number):
    """Record a number for conversion with ``float()`` once the kernel returns."""
    deferred[slot, _D_TARGET] = target
    deferred[slot, _D_INDEX] = index
    deferred[slot, _D_START] = start
    deferred[slot, _D_END] = end
    deferred[slot, _D_TOKEN_START] = token_start
    deferred[slot, _D_LINE] = line_number


@njit(cache=True, nogil=True)
def _reject(code, buf, token_start, final, line_start, state, n_deferred):
    """Report a format error in the token at ``token_start``, unless the token runs to the end
    of a non-final buffer and might read differently once complete (then the line is left for
    the next chunk, which reports the same error in full).  A token that can never become
    valid and is already longer than an error message shows is reported at once, so binary
    junk without line feeds does not pile up.

    The numbers deferred earlier on the line are handed over too, so that a non-finite one
    before the bad token is reported first.
    """
    n = buf.shape[0]
    token_end = token_start
    may_continue = True  # whether more bytes could still make the token valid
    while token_end < n and not _ends_token(buf[token_end]):
        may_continue &= _TOKEN_ALPHABET[buf[token_end]]
        token_end += 1
    if token_end == n and not final and (may_continue or token_end - token_start <= _TOKEN_SHOWN):
        return _END, line_start, 0, 0
    state[_S_DEFERRED] = n_deferred
    return code, line_start, token_start, token_end


@njit(cache=True, nogil=True)
def _parse_lines(
    buf,
    pos,
    final,
    zero_based,
    column_limit,
    index_limit,
    labels,
    indptr,
    indices,
    values,
    qids,
    sids,
    costs,
    deferred,
    state,
):
    """Parse the lines of ``buf`` from ``pos`` into the arrays: ``(status, pos, token_start,
    token_end)``.

    ``state`` holds the progress up to the last complete line and is updated line by line, so
    the caller can grow an array and resume at the returned position.  When ``final`` is false
    the buffer may end inside a line, which is then left unparsed (``pos`` is its start).
    ``column_limit`` is the number of columns allowed (``n_features``), ``index_limit`` the
    largest column the ``indices`` array can hold.
    """
    n = buf.shape[0]
    largest_index = np.uint64(_INT64_MAX - 1 if zero_based else _INT64_MAX)  # n_features fits
    while pos < n:
        line_start = pos
        line_number = state[_S_LINES] + 1
        pos = _skip_blanks(buf, pos, n)
        if pos == n or buf[pos] == _LF or buf[pos] == _CR or buf[pos] == _HASH:
            how, pos = _end_line(buf, pos, n, final)
            if how == _LINE_INCOMPLETE:
                return _END, line_start, 0, 0
            if how != _LINE_DONE:
                return (_E_BARE_CR if how == _LINE_BARE_CR else _E_NUL), line_start, pos, pos + 1
            state[_S_LINES] = line_number
            continue

        row = state[_S_ROWS]
        if row == labels.shape[0]:
            return _NEED_ROWS, line_start, 0, 0
        entry = state[_S_ENTRIES]
        n_deferred = state[_S_DEFERRED]
        error = _NO_ERROR

        token = pos
        kind, label, pos = _parse_decimal(buf, pos, n)
        if kind == _NUMBER_INVALID or (pos < n and not _ends_token(buf[pos])):
            error = _E_LABEL
        elif pos == n and not final:
            return _END, line_start, 0, 0
        elif kind == _NUMBER_DEFERRED:
            if n_deferred == deferred.shape[0]:
                return _NEED_DEFERRED_SLOTS, line_start, 0, 0
            _defer(deferred, n_deferred, _FOR_LABEL, row, token, pos, token, line_number)
            n_deferred += 1

        has_qid = has_sid = has_cost = False
        qid = sid = integer = 0
        cost = 1.0
        last_column = -1
        while error == _NO_ERROR:
            pos = _skip_blanks(buf, pos, n)
            if pos == n or buf[pos] == _LF or buf[pos] == _CR or buf[pos] == _HASH:
                break
            token = pos
            if _is_digit(buf[pos]):  # a feature
                count, magnitude, too_long, pos = _parse_digits(buf, pos, n)
                if too_long or magnitude > largest_index:
                    error = _E_INDEX_RANGE
                    break
                if pos == n and not final:
                    return _END, line_start, 0, 0
                if pos == n or buf[pos] != _COLON:
                    error = _E_NO_COLON if pos == n or _ends_token(buf[pos]) else _E_INDEX
                    break
                column = np.int64(magnitude)
                if not zero_based:
                    if column == 0:
                        error = _E_INDEX_ZERO
                        break
                    column -= 1
                if column >= column_limit:
                    error = _E_INDEX_BEYOND_N_FEATURES
                    break
                if column <= last_column:
                    error = _E_DUPLICATE_INDEX if column == last_column else _E_DECREASING_INDEX
                    break
                pos += 1
                value_start = pos
                if pos == n and not final:
                    return _END, line_start, 0, 0
                if pos == n or _ends_token(buf[pos]):
                    error = _E_EMPTY_VALUE
                    break
                kind, value, pos = _parse_decimal(buf, pos, n)
                if kind == _NUMBER_INVALID or (pos < n and not _ends_token(buf[pos])):
                    error = _E_VALUE
                    break
                if pos == n and not final:
                    return _END, line_start, 0, 0
                if column > index_limit:
                    return _NEED_WIDE_INDICES, line_start, 0, 0
                if entry == values.shape[0]:
                    return _NEED_ENTRIES, line_start, 0, 0
                if kind == _NUMBER_DEFERRED:
                    if n_deferred == deferred.shape[0]:
                        return _NEED_DEFERRED_SLOTS, line_start, 0, 0
                    _defer(
                        deferred,
                        n_deferred,
                        _FOR_VALUE,
                        entry,
                        value_start,
                        pos,
                        token,
                        line_number,
                    )
                    n_deferred += 1
                indices[entry] = column
                values[entry] = value
                entry += 1
                last_column = column
                continue

            keyword, length = _side_keyword(buf, pos, n)
            if keyword == _NOT_SIDE:
                negative_index = buf[pos] == _MINUS and pos + 1 < n and _is_digit(buf[pos + 1])
                error = _E_NEGATIVE_INDEX if negative_index else _E_INDEX
                break
            if last_column >= 0:
                error = _E_SIDE_AFTER_FEATURES
                break
            if (
                (keyword == _QID and has_qid)
                or (keyword == _SID and has_sid)
                or (keyword == _COST and has_cost)
            ):
                error = _E_SIDE_TWICE
                break
            pos += length
            value_start = pos
            if keyword == _COST:
                kind, cost, pos = _parse_decimal(buf, pos, n)
            else:
                kind, integer, pos = _parse_int64(buf, pos, n)
            if kind == _NUMBER_INVALID or (pos < n and not _ends_token(buf[pos])):
                error = _E_SIDE_VALUE
                break
            if pos == n and not final:
                return _END, line_start, 0, 0
            if kind == _NUMBER_OUT_OF_RANGE:
                error = _E_SIDE_RANGE
                break
            # a minus sign before nonzero digits (deferred numbers always have some)
            if (
                keyword == _COST
                and buf[value_start] == _MINUS
                and (cost < 0.0 or kind == _NUMBER_DEFERRED)
            ):
                error = _E_NEGATIVE_COST
                break
            if qids.shape[0] == 0:
                return _NEED_SIDE_ARRAYS, line_start, 0, 0
            if keyword == _QID:
                has_qid = True
                qid = integer
            elif keyword == _SID:
                has_sid = True
                sid = integer
            else:
                has_cost = True
                if kind == _NUMBER_DEFERRED:
                    if n_deferred == deferred.shape[0]:
                        return _NEED_DEFERRED_SLOTS, line_start, 0, 0
                    _defer(
                        deferred, n_deferred, _FOR_COST, row, value_start, pos, token, line_number
                    )
                    n_deferred += 1
        if error != _NO_ERROR:
            return _reject(error, buf, token, final, line_start, state, n_deferred)

        how, pos = _end_line(buf, pos, n, final)
        if how == _LINE_INCOMPLETE:
            return _END, line_start, 0, 0
        if how != _LINE_DONE:
            state[_S_DEFERRED] = n_deferred  # see _reject
            return (_E_BARE_CR if how == _LINE_BARE_CR else _E_NUL), line_start, pos, pos + 1

        labels[row] = label
        indptr[row + 1] = entry
        if qids.shape[0] > 0:
            qids[row] = qid
            sids[row] = sid
            costs[row] = cost
        if has_qid:
            state[_S_QID_ROWS] += 1
            if state[_S_FIRST_QID_LINE] == 0:
                state[_S_FIRST_QID_LINE] = line_number
        elif state[_S_FIRST_LINE_WITHOUT_QID] == 0:
            state[_S_FIRST_LINE_WITHOUT_QID] = line_number
        if has_sid:
            state[_S_SID_ROWS] += 1
        if has_cost:
            state[_S_COST_ROWS] += 1
        if last_column + 1 > state[_S_COLUMNS]:
            state[_S_COLUMNS] = last_column + 1
        state[_S_ROWS] = row + 1
        state[_S_ENTRIES] = entry
        state[_S_DEFERRED] = n_deferred
        state[_S_LINES] = line_number
    return _END, pos, 0, 0


def _read_only_bytes(data) -> np.ndarray:
    """``data`` as a read-only uint8 array without copying (one array type for the kernel, so
    Numba compiles it once per index type whether the bytes came from bytes or a bytearray)."""
    view = np.frombuffer(data, dtype=np.uint8)
    view.flags.writeable = False
    return view


@njit(cache=True, nogil=True)
def _find_byte(buf, byte):
    """Index of the first ``byte`` in ``buf``, or -1."""
    for i in range(buf.shape[0]):
        if buf[i] == byte:
            return i
    return -1


# =============================================================================================
# Error messages
# =============================================================================================

_DESCRIPTIONS = {
    _E_LABEL: "invalid label",
    _E_INDEX: "invalid feature index",
    _E_NO_COLON: "feature without ':'",
    _E_EMPTY_VALUE: "empty feature value",
    _E_VALUE: "invalid feature value",
    _E_INDEX_ZERO: "feature index 0 in 1-based data (pass zero_based=True for 0-based indices)",
    _E_NEGATIVE_INDEX: "negative feature index",
    _E_INDEX_RANGE: "feature index out of the 64-bit range",
    _E_DUPLICATE_INDEX: "duplicate feature index",
    _E_DECREASING_INDEX: "feature indices not in increasing order",
    _E_NEGATIVE_COST: "negative cost",
    _E_BARE_CR: "carriage return not followed by a line feed",
    _E_NUL: "NUL byte (the input is not text)",
}

_NON_FINITE_DESCRIPTIONS = {
    _FOR_LABEL: "label is not a finite number",
    _FOR_VALUE: "feature value is not a finite number",
    _FOR_COST: "cost is not a finite number",
}


def _token_text(raw: bytes) -> str:
    text = raw[:_TOKEN_SHOWN].decode("utf-8", "backslashreplace")
    return text + "..." if len(raw) > _TOKEN_SHOWN else text


def _spells_non_finite(text: str) -> bool:
    """Whether ``text`` is something like ``nan``, ``-inf`` or ``Infinity``."""
    return text.lstrip("+-").lower() in ("nan", "inf", "infinity")


def _describe(code: int, raw: bytes, n_features: int | None) -> str:
    if b"\x00" in raw[:_TOKEN_SHOWN]:
        return _DESCRIPTIONS[_E_NUL]
    text = raw.decode("utf-8", "replace")
    keyword = text.partition(":")[0]
    if code == _E_LABEL and _spells_non_finite(text):
        return _NON_FINITE_DESCRIPTIONS[_FOR_LABEL]
    if code == _E_VALUE and _spells_non_finite(text.partition(":")[2]):
        return _NON_FINITE_DESCRIPTIONS[_FOR_VALUE]
    if code == _E_SIDE_VALUE:
        if keyword == "cost" and _spells_non_finite(text.partition(":")[2]):
            return _NON_FINITE_DESCRIPTIONS[_FOR_COST]
        return f"invalid {keyword} value"
    if code == _E_SIDE_RANGE:
        return f"{keyword} out of the 64-bit integer range"
    if code == _E_SIDE_TWICE:
        return f"{keyword} given twice"
    if code == _E_SIDE_AFTER_FEATURES:
        return f"{keyword} after the features (qid, sid and cost must precede them)"
    if code == _E_INDEX_BEYOND_N_FEATURES:
        return f"feature index beyond n_features={n_features}"
    return _DESCRIPTIONS[code]


# =============================================================================================
# Streaming decompression
# =============================================================================================

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
)
_MAGIC_LENGTH = max(len(magic) for magic, _ in _MAGIC)
_DECOMPRESS_CHOICES = ("auto", None, "gzip", "bz2", "xz")


def _sniff_compression(head: bytes) -> str | None:
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    return None


class _StreamDecompressor:
    """Decompress gzip, bzip2 or xz data fed piece by piece, with bounded output pieces and
    support for several concatenated streams (as ``cat a.gz b.gz`` or pbzip2 produce)."""

    def __init__(self, kind: str, piece_size: int):
        self.kind = kind
        self._piece_size = piece_size
        self._engine = self._new_engine()
        self._inside_stream = False

    def _new_engine(self):
        if self.kind == "gzip":
            return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        if self.kind == "bz2":
            return bz2.BZ2Decompressor()
        return lzma.LZMADecompressor(format=lzma.FORMAT_XZ)

    def decompress(self, data) -> Iterator[bytes]:
        while data:
            if self._engine.eof:
                self._engine = self._new_engine()
            self._inside_stream = True
            data = yield from self._drain(data)

    def _drain(self, data) -> Iterator[bytes]:
        """Decompress ``data`` within one stream; return the bytes after the stream's end."""
        engine = self._engine
        while True:
            try:
                piece = engine.decompress(data, self._piece_size)
            except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
                raise SVMLightFormatError(f"corrupt {self.kind} data: {exc}") from exc
            if piece:
                yield piece
            if engine.eof:
                self._inside_stream = False
                return engine.unused_data
            if self.kind == "gzip":
                data = engine.unconsumed_tail
                if not data and len(piece) < self._piece_size:
                    return b""
            else:
                if engine.needs_input:
                    return b""
                data = b""

    def check_complete(self) -> None:
        if self._inside_stream:
            raise SVMLightFormatError(f"truncated {self.kind} data (the stream ends early)")


# =============================================================================================
# The streaming parser
# =============================================================================================


def _grown(array: np.ndarray, capacity: int) -> np.ndarray:
    """``array`` resized to ``capacity`` elements along its first axis: cut in place, or
    enlarged into a new array whose added elements are uninitialized (the kernel writes every
    element before anything reads it).

    Enlarging does not use ``ndarray.resize``: it zeroes the added part while holding the GIL
    (30-60 ms for the arrays of a 400 MB body, every other thread of the process stopped);
    NumPy's copy of the old part releases it.  Only ever called on arrays this module allocated
    and holds the sole reference to.
    """
    if capacity > array.shape[0]:
        enlarged = np.empty((capacity,) + array.shape[1:], dtype=array.dtype)
        enlarged[: array.shape[0]] = array
        return enlarged
    array.resize((capacity,) + array.shape[1:], refcheck=False)
    return array


class SVMLightStreamParser:
    """Incremental SVMlight parser: :meth:`feed` it bytes in pieces of any size, then call
    :meth:`finish` for the :class:`Dataset`.

    Parameters
    ----------
    n_features : int, optional
        Number of columns of the result; the data may not use a larger index.  By default the
        largest index found.
    zero_based : bool
        Whether feature indices start at 0 (default: 1, as in SVMlight and LIBSVM).
    decompress : {"auto", None, "gzip", "bz2", "xz"}
        ``"auto"`` looks at the first bytes fed and decompresses gzip, bzip2 or xz data;
        ``None`` takes the bytes as text.
    piece_size : int
        Compressed input is parsed in decompressed pieces of at most this many bytes, which
        bounds the memory a highly compressed chunk can take.
    max_text_bytes, max_rows, max_entries, max_features : int, optional
        Caps on what the input may make the parser hold, each checked as it streams: the
        *decompressed* text (before a piece is parsed: a bzip2 file of repeated lines expands
        17,000:1, so a cap on the bytes fed does not bound the arrays), the rows and the stored
        entries (after each piece), and the number of columns (the largest index, once the
        input ends: nothing sized by it is allocated before).  Past one,
        :class:`SVMLightLimitError` names it.

    After :meth:`finish`, :attr:`sid` holds the ``sid:`` values (see the module docstring).
    A parser that raised :class:`SVMLightFormatError` or :class:`SVMLightLimitError` cannot be
    used further.
    """

    _INITIAL_ROWS = 1 << 10
    _INITIAL_ENTRIES = 1 << 14
    _DEFERRED_SLOTS = 1 << 12

    def __init__(
        self,
        n_features: int | None = None,
        zero_based: bool = False,
        *,
        decompress: str | None = "auto",
        piece_size: int = DEFAULT_CHUNK_SIZE,
        max_text_bytes: int | None = None,
        max_rows: int | None = None,
        max_entries: int | None = None,
        max_features: int | None = None,
    ):
        if n_features is not None and (int(n_features) != n_features or n_features < 0):
            raise ValueError(f"n_features must be a non-negative integer, got {n_features!r}")
        if decompress not in _DECOMPRESS_CHOICES:
            raise ValueError(f"decompress must be one of {_DECOMPRESS_CHOICES}, got {decompress!r}")
        self.n_features = None if n_features is None else int(n_features)
        self.zero_based = bool(zero_based)
        self.sid: np.ndarray | None = None
        self._piece_size = piece_size
        self._decompress_mode = decompress
        self._head = b""  # first bytes, kept until the compression can be recognised
        self._decompressor: _StreamDecompressor | None = None
        if decompress not in ("auto", None):
            self._decompressor = _StreamDecompressor(decompress, piece_size)
        self._pending = bytearray()  # an incomplete last line
        self._parsed_bytes = 0  # text bytes consumed by complete lines
        self.text_bytes = 0  # (decompressed) text bytes received
        self._caps = {"text_bytes": max_text_bytes, "rows": max_rows, "entries": max_entries,
                      "features": max_features}
        self._finished = False

        wide = self.n_features is not None and self.n_features > _INT32_MAX
        self._labels = np.zeros(self._INITIAL_ROWS)
        self._indptr = np.zeros(self._INITIAL_ROWS + 1, dtype=np.int64)
        self._indices = np.zeros(self._INITIAL_ENTRIES, dtype=np.int64 if wide else np.int32)
        self._index_limit = _INT64_MAX if wide else _INT32_MAX - 1
        self._values = np.zeros(self._INITIAL_ENTRIES)
        self._qids = np.zeros(0, dtype=np.int64)  # the side arrays are allocated on first use
        self._sids = np.zeros(0, dtype=np.int64)
        self._costs = np.zeros(0)
        self._deferred = np.zeros((self._DEFERRED_SLOTS, 6), dtype=np.int64)
        self._state = np.zeros(_N_STATE, dtype=np.int64)

    # -- progress ------------------------------------------------------------------------------
    @property
    def lines_read(self) -> int:
        """Physical lines parsed so far."""
        return int(self._state[_S_LINES])

    @property
    def rows_read(self) -> int:
        """Data lines (examples) parsed so far."""
        return int(self._state[_S_ROWS])

    # -- input ---------------------------------------------------------------------------------
    def feed(self, chunk) -> None:
        """Parse the next piece of input (bytes, bytearray or memoryview)."""
        self._check_open()
        if not chunk:
            return
        if self._decompress_mode == "auto":
            if self._head or len(chunk) < _MAGIC_LENGTH:
                self._head += bytes(chunk)
                if len(self._head) < _MAGIC_LENGTH:
                    return
                chunk, self._head = self._head, b""
            self._settle_compression(chunk)
        self._guarded(self._feed_decoded, chunk)

    def finish(self) -> Dataset:
        """Parse what is left and return the dataset."""
        self._check_open()
        if self._decompress_mode == "auto":  # fewer bytes than the longest magic number
            head, self._head = self._head, b""
            self._settle_compression(head)
            self._guarded(self._feed_decoded, head)
        self._guarded(self._complete)
        self._finished = True
        return self._guarded(self._build)

    def _check_open(self) -> None:
        if self._finished:
            raise RuntimeError("this SVMLightStreamParser has finished or failed; make a new one")

    def _guarded(self, step, *args, **kwargs):
        try:
            return step(*args, **kwargs)
        except (SVMLightFormatError, SVMLightLimitError):
            self._finished = True
            raise

    def _check_cap(self, limit: str, actual: int) -> None:
        cap = self._caps[limit]
        if cap is not None and actual > cap:
            raise SVMLightLimitError(limit, cap, actual)

    def _settle_compression(self, head) -> None:
        """Choose the decompressor (or none) from the first bytes of the input."""
        kind = _sniff_compression(bytes(head[:_MAGIC_LENGTH]))
        self._decompress_mode = kind
        if kind is not None:
            self._decompressor = _StreamDecompressor(kind, self._piece_size)

    def _feed_decoded(self, data) -> None:
        if self._decompressor is None:
            self._feed_text(data)
        else:
            for piece in self._decompressor.decompress(data):
                self._feed_text(piece)

    def _complete(self) -> None:
        if self._decompressor is not None:
            self._decompressor.check_complete()
        pending, self._pending = self._pending, bytearray()
        if pending:
            self._parse(_read_only_bytes(pending), final=True)
        self._check_sizes()

    def _feed_text(self, data) -> None:
        self.text_bytes += len(data)
        self._check_cap("text_bytes", self.text_bytes)
        text = _read_only_bytes(data)
        if self._pending:
            newline = _find_byte(text, _LF)
            if newline < 0:
                self._pending += memoryview(text)
                return
            self._pending += memoryview(text[: newline + 1])
            pending, self._pending = self._pending, bytearray()
            self._parse(_read_only_bytes(pending), final=False)
            text = text[newline + 1 :]
        stop = self._parse(text, final=False)
        self._pending = bytearray(text[stop:])
        self._check_sizes()

    def _check_sizes(self) -> None:
        self._check_cap("rows", int(self._state[_S_ROWS]))
        self._check_cap("entries", int(self._state[_S_ENTRIES]))

    # -- the kernel loop -----------------------------------------------------------------------
    def _parse(self, text: np.ndarray, final: bool) -> int:
        """Run the kernel over ``text`` (growing arrays as asked); return where it stopped."""
        column_limit = _INT64_MAX if self.n_features is None else self.n_features
        pos = 0
        while True:
            status, pos, token_start, token_end = _parse_lines(
                text,
                pos,
                final,
                self.zero_based,
                column_limit,
                self._index_limit,
                self._labels,
                self._indptr,
                self._indices,
                self._values,
                self._qids,
                self._sids,
                self._costs,
                self._deferred,
                self._state,
            )
            if status == _END:
                break
            if status == _NEED_ROWS:
                self._grow_rows(self._projected(_S_ROWS, pos, text.shape[0]))
            elif status == _NEED_ENTRIES:
                self._grow_entries(self._projected(_S_ENTRIES, pos, text.shape[0]))
            elif status == _NEED_WIDE_INDICES:
                self._indices = self._indices.astype(np.int64)
                self._index_limit = _INT64_MAX
            elif status == _NEED_SIDE_ARRAYS:
                self._allocate_side_arrays()
            elif status == _NEED_DEFERRED_SLOTS:
                if self._state[_S_DEFERRED]:
                    self._convert_deferred(text)
                else:  # a single line holds more deferred numbers than there are slots
                    self._deferred = _grown(self._deferred, 2 * self._deferred.shape[0])
            else:
                self._convert_deferred(text)  # errors on earlier lines come first
                raw = bytes(text[token_start:token_end])
                raise SVMLightFormatError(
                    _describe(status, raw, self.n_features),
                    line=self.lines_read + 1,
                    token=_token_text(raw),
                )
        self._convert_deferred(text)
        self._parsed_bytes += pos
        return pos

    def _convert_deferred(self, text: np.ndarray) -> None:
        """Convert the numbers the kernel left for ``float()``."""
        count = int(self._state[_S_DEFERRED])
        if not count:
            return
        targets = {_FOR_LABEL: self._labels, _FOR_VALUE: self._values, _FOR_COST: self._costs}
        for target, index, start, end, token_start, line in self._deferred[:count].tolist():
            number = float(text[start:end].tobytes())
            if not math.isfinite(number):
                raise SVMLightFormatError(
                    _NON_FINITE_DESCRIPTIONS[target],
                    line=line,
                    token=_token_text(text[token_start:end].tobytes()),
                )
            targets[target][index] = number
        self._state[_S_DEFERRED] = 0

    def _projected(self, slot: int, pos: int, size: int) -> int:
        """The capacity for rows or entries (``slot``) that should last to the end of the
        current text buffer (``size`` bytes, parsed up to ``pos``), judging by the bytes per
        row or entry so far; at least 1.25 times the current one (amortized growth)."""
        count = int(self._state[slot])
        current = self._labels.shape[0] if slot == _S_ROWS else self._values.shape[0]
        parsed = self._parsed_bytes + pos
        if parsed == 0:  # the very first line does not fit
            return 2 * current
        expected = int(count * (1.0 + (size - pos) / parsed) * 1.05) + 64
        return max(expected, current * 5 // 4 + 1)

    def _grow_rows(self, capacity: int) -> None:
        self._labels = _grown(self._labels, capacity)
        self._indptr = _grown(self._indptr, capacity + 1)
        if self._qids.shape[0]:
            self._qids = _grown(self._qids, capacity)
            self._sids = _grown(self._sids, capacity)
            self._costs = _grown(self._costs, capacity)

    def _grow_entries(self, capacity: int) -> None:
        if capacity > _INT32_MAX and self._indices.dtype != np.int64:
            self._indices = self._indices.astype(np.int64)  # as_csr needs int64 beyond 2**31
            self._index_limit = _INT64_MAX
        self._indices = _grown(self._indices, capacity)
        self._values = _grown(self._values, capacity)

    def _allocate_side_arrays(self) -> None:
        capacity = self._labels.shape[0]
        self._qids = np.zeros(capacity, dtype=np.int64)
        self._sids = np.zeros(capacity, dtype=np.int64)
        self._costs = np.ones(capacity)

    # -- the result ----------------------------------------------------------------------------
    def _build(self) -> Dataset:
        state = self._state
        rows, entries = int(state[_S_ROWS]), int(state[_S_ENTRIES])
        if rows == 0:
            raise SVMLightFormatError("no data lines")
        qid_rows = int(state[_S_QID_ROWS])
        if 0 < qid_rows < rows:
            raise SVMLightFormatError(
                f"no qid, but line {int(state[_S_FIRST_QID_LINE])} has one "
                "(qid must be given on every line or on none)",
                line=int(state[_S_FIRST_LINE_WITHOUT_QID]),
            )
        n_features = int(state[_S_COLUMNS])
        if self.n_features is not None:
            n_features = self.n_features
        self._check_cap("features", n_features)
        labels = _grown(self._labels, rows)
        values = _grown(self._values, entries)
        indices = _grown(self._indices, entries)
        indptr = _grown(self._indptr, rows + 1).astype(indices.dtype, copy=False)
        qid = _grown(self._qids, rows) if qid_rows else None
        sample_weight = _grown(self._costs, rows) if state[_S_COST_ROWS] else None
        self.sid = _grown(self._sids, rows) if state[_S_SID_ROWS] else None
        X = sp.csr_matrix((values, indices, indptr), shape=(rows, n_features), copy=False)
        X.has_canonical_format = True  # the kernel enforced strictly increasing indices
        return Dataset(X, integral_labels(labels), qid=qid, sample_weight=sample_weight)


# =============================================================================================
# Reading
# =============================================================================================


def read_svmlight(
    source,
    n_features: int | None = None,
    zero_based: bool = False,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> Dataset:
    """Read an SVMlight / LIBSVM file into a :class:`Dataset`.

    Parameters
    ----------
    source : str, os.PathLike, bytes-like or binary file object
        A path, the file's content, or an object with a ``read(size)`` method returning bytes.
        gzip, bzip2 and xz compression is detected from the content.
    n_features : int, optional
        Number of columns (default: the largest index found); larger indices are an error.
    zero_based : bool
        Whether feature indices start at 0 (default: they start at 1).
    chunk_size : int
        Bytes read and parsed at a time.

    Raises
    ------
    SVMLightFormatError
        On malformed input, naming the line and the token.
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be positive")
    parser = SVMLightStreamParser(n_features, zero_based, piece_size=chunk_size)
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as stream:
            _feed_stream(parser, stream, chunk_size)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        content = memoryview(source).cast("B")
        for start in range(0, len(content), chunk_size):
            parser.feed(content[start : start + chunk_size])
    elif hasattr(source, "read"):
        _feed_stream(parser, source, chunk_size)
    else:
        raise TypeError(
            f"source must be a path, bytes or a binary file object, not {type(source).__name__}"
        )
    return parser.finish()


def _feed_stream(parser: SVMLightStreamParser, stream, chunk_size: int) -> None:
    while chunk := stream.read(chunk_size):
        if isinstance(chunk, str):
            raise TypeError("the file object must be opened in binary mode ('rb')")
        parser.feed(chunk)


# =============================================================================================
# Writing
# =============================================================================================

_ENTRIES_PER_BLOCK = 1 << 20
"""Stored entries formatted at a time (at least one row)."""


def _number_texts(values: np.ndarray) -> list[str]:
    """The shortest texts that read back as exactly ``values``, integers without '.0'."""
    return list(map(str.removesuffix, map(repr, values.tolist()), repeat(".0")))


@njit(cache=True, nogil=True)
def _assemble_lines(heads, value_texts, indices, indptr, index_offset):
    """The lines of a block of rows: each row's head (label, qid, cost), then
    `` index:value`` per entry.  ``heads`` and ``value_texts`` are newline-terminated texts,
    one per row and one per entry."""
    n_rows = indptr.shape[0] - 1
    digits = np.empty(19, dtype=np.uint8)  # an int64 has at most 19 digits
    index_part = 1 + 19 + 1  # the longest " index:"
    out = np.empty(heads.shape[0] + value_texts.shape[0] + indices.shape[0] * index_part, np.uint8)
    written = head = value = 0
    for row in range(n_rows):
        while heads[head] != _LF:
            out[written] = heads[head]
            written += 1
            head += 1
        head += 1
        for entry in range(indptr[row], indptr[row + 1]):
            out[written] = _SPACE
            written += 1
            index = indices[entry] + index_offset
            count = 0
            while True:
                digits[count] = 48 + index % 10
                index //= 10
                count += 1
                if index == 0:
                    break
            for k in range(count - 1, -1, -1):
                out[written] = digits[k]
                written += 1
            out[written] = _COLON
            written += 1
            while value_texts[value] != _LF:
                out[written] = value_texts[value]
                written += 1
                value += 1
            value += 1
        out[written] = _LF
        written += 1
    return out[:written]


def write_svmlight(
    dataset: Dataset,
    target=None,
    *,
    zero_based: bool = False,
    comment: str | None = None,
) -> bytes | None:
    """Write ``dataset`` in SVMlight format: to a path, to a binary file object, or (when
    ``target`` is None) return the bytes.

    Every stored entry is written (explicit zeros included), numbers in their shortest exact
    form, so ``read_svmlight(write_svmlight(ds), n_features=ds.n_features) == ds``.  qid and
    cost (``sample_weight``) are written when present; ``comment`` becomes ``#`` lines at the
    top.  Indices are 1-based unless ``zero_based``.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"expected a Dataset, got {type(dataset).__name__}")
    blocks = _svmlight_blocks(dataset, zero_based, comment)
    if target is None:
        return b"".join(blocks)
    if isinstance(target, (str, os.PathLike)):
        with open(target, "wb") as stream:
            stream.writelines(blocks)
    else:
        for block in blocks:
            target.write(block)
    return None


def _svmlight_blocks(dataset: Dataset, zero_based: bool, comment: str | None) -> Iterator[bytes]:
    if comment is not None:
        if "\x00" in comment:
            raise ValueError("the comment may not contain NUL characters")
        yield "".join(f"# {line}\n" for line in comment.splitlines()).encode()
    indptr = dataset.X.indptr.astype(np.int64)
    first = 0
    while first < dataset.n_samples:
        last = np.searchsorted(indptr, indptr[first] + _ENTRIES_PER_BLOCK, side="right") - 1
        last = min(max(last, first + 1), dataset.n_samples)
        heads = _number_texts(dataset.y[first:last])
        if dataset.qid is not None:
            qids = dataset.qid[first:last].tolist()
            heads = [f"{head} qid:{qid}" for head, qid in zip(heads, qids, strict=True)]
        if dataset.sample_weight is not None:
            costs = _number_texts(dataset.sample_weight[first:last])
            heads = [f"{head} cost:{cost}" for head, cost in zip(heads, costs, strict=True)]
        start, stop = indptr[first], indptr[last]
        lines = _assemble_lines(
            np.frombuffer("\n".join(heads + [""]).encode("ascii"), dtype=np.uint8),
            np.frombuffer(
                "\n".join(_number_texts(dataset.X.data[start:stop]) + [""]).encode("ascii"),
                dtype=np.uint8,
            ),
            dataset.X.indices[start:stop].astype(np.int64),
            indptr[first : last + 1] - start,
            0 if zero_based else 1,
        )
        yield lines.tobytes()
        first = last
