"""A deliberately simple, line-by-line SVMlight reader: the reference the fast reader is
checked against.  It follows the rules in the docstring of ``solvers.data.svmlight`` with
regular expressions and ``float()``, one token at a time, and reports the first error as
``NaiveError(line, token)``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

NUMBER = re.compile(rb"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
INTEGER = re.compile(rb"[+-]?\d+")
FEATURE = re.compile(rb"(\d+):(.*)", re.DOTALL)
SIDE = re.compile(rb"(qid|sid|cost):(.*)", re.DOTALL)
SEPARATORS = re.compile(rb"[ \t]+")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class NaiveError(Exception):
    def __init__(self, line: int, token: bytes | None):
        super().__init__(line, token)
        self.line = line
        self.token = token


@dataclass
class NaiveResult:
    labels: list[float]
    rows: list[tuple[list[int], list[float]]]
    qid: list[int] | None
    sid: list[int] | None
    cost: list[float] | None
    n_features: int


def _finite(text: bytes) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _nonzero_negative(text: bytes) -> bool:
    mantissa = re.split(rb"[eE]", text)[0]
    return text.startswith(b"-") and re.search(rb"[1-9]", mantissa) is not None


def _parse_line(number, text, zero_based, n_features):
    """(label, indices, values, side) of one line's data part, or NaiveError."""
    tokens = [token for token in SEPARATORS.split(text) if token]
    label_token, *rest = tokens
    if not NUMBER.fullmatch(label_token) or _finite(label_token) is None:
        raise NaiveError(number, label_token)
    side: dict[bytes, float | int] = {}
    indices: list[int] = []
    values: list[float] = []
    largest = INT64_MAX - 1 if zero_based else INT64_MAX
    for token in rest:
        side_match = SIDE.fullmatch(token)
        if side_match:
            keyword, value = side_match.groups()
            if indices or keyword in side:
                raise NaiveError(number, token)
            if keyword == b"cost":
                if not NUMBER.fullmatch(value) or _nonzero_negative(value):
                    raise NaiveError(number, token)
                side[keyword] = _finite(value)
                if side[keyword] is None:
                    raise NaiveError(number, token)
            else:
                if not INTEGER.fullmatch(value) or not INT64_MIN <= int(value) <= INT64_MAX:
                    raise NaiveError(number, token)
                side[keyword] = int(value)
            continue
        feature = FEATURE.fullmatch(token)
        if not feature or not NUMBER.fullmatch(feature.group(2)):
            raise NaiveError(number, token)
        index = int(feature.group(1))
        column = index if zero_based else index - 1
        if index > largest or column < 0 or (n_features is not None and column >= n_features):
            raise NaiveError(number, token)
        if indices and column <= indices[-1]:
            raise NaiveError(number, token)
        value = _finite(feature.group(2))
        if value is None:
            raise NaiveError(number, token)
        indices.append(column)
        values.append(value)
    return float(label_token), indices, values, side


def naive_read(content: bytes, n_features=None, zero_based=False) -> NaiveResult:
    lines = content.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    labels, rows, sides, line_numbers = [], [], [], []
    for number, line in enumerate(lines, start=1):
        if line.endswith(b"\r"):
            line = line[:-1]
        stop = re.search(rb"[#\r]", line)
        data = line if stop is None else line[: stop.start()]
        if data.strip(b" \t"):
            label, indices, values, side = _parse_line(number, data, zero_based, n_features)
            labels.append(label)
            rows.append((indices, values))
            sides.append(side)
            line_numbers.append(number)
        if stop is not None and line[stop.start()] == ord("\r"):
            raise NaiveError(number, b"\r")
        if stop is not None and b"\x00" in line[stop.start() :]:
            raise NaiveError(number, b"\x00")
    if not rows:
        raise NaiveError(0, None)
    with_qid = [b"qid" in side for side in sides]
    if any(with_qid) and not all(with_qid):
        raise NaiveError(line_numbers[with_qid.index(False)], None)
    columns = max((indices[-1] + 1 for indices, _ in rows if indices), default=0)
    has = {key: any(key in side for side in sides) for key in (b"qid", b"sid", b"cost")}
    return NaiveResult(
        labels=labels,
        rows=rows,
        qid=[side[b"qid"] for side in sides] if has[b"qid"] else None,
        sid=[side.get(b"sid", 0) for side in sides] if has[b"sid"] else None,
        cost=[side.get(b"cost", 1.0) for side in sides] if has[b"cost"] else None,
        n_features=columns if n_features is None else n_features,
    )
