"""Down-sampling of convergence logs for plotting: largest-triangle-three-buckets (LTTB).

Steinarsson (2013), "Downsampling time series for visual representation", section 4.2: the
first and last points are kept; the points between are split into ``points - 2`` buckets of
equal count, and each bucket keeps the point that makes the largest triangle with the point
kept in the bucket before and the average of the bucket after.  Peaks and plateaus survive,
which keep-every-k loses.

A log is taken in iteration order (x = position: ``elapsed`` restarts with every one-vs-rest
subproblem), with y the log of the objective's distance to its lowest value, the curve the
dashboard draws (records without an objective fall back on the solver's optimality measure).
The record of the lowest objective is always kept, so a relative gap computed from the
down-sampled log reaches 0 where the full one does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def lttb(y: np.ndarray, points: int) -> np.ndarray:
    """Indices (sorted) of at most ``points`` >= 3 samples of ``y`` by LTTB, x = 0, 1, ...;
    all indices when ``y`` has no more than ``points``."""
    n = len(y)
    if n <= points:
        return np.arange(n)
    x = np.arange(n, dtype=float)
    edges = np.linspace(1, n - 1, points - 1).astype(np.int64)  # points - 2 buckets
    chosen = np.empty(points, dtype=np.int64)
    chosen[0], chosen[-1] = 0, n - 1
    previous = 0
    for bucket in range(points - 2):
        start, stop = edges[bucket], edges[bucket + 1]
        if bucket + 2 < len(edges):
            next_start, next_stop = edges[bucket + 1], edges[bucket + 2]
        else:
            next_start, next_stop = n - 1, n
        ax, ay = x[previous], y[previous]
        cx = x[next_start:next_stop].mean()
        cy = y[next_start:next_stop].mean()
        area = np.abs((ax - cx) * (y[start:stop] - ay) - (ax - x[start:stop]) * (cy - ay))
        previous = start + int(np.argmax(area))
        chosen[bucket + 1] = previous
    return chosen


def log_shape(objective: Sequence[float | None],
              optimality: Sequence[float | None]) -> np.ndarray:
    """The y the down-sampling preserves: log10 of (objective - lowest objective), floored at
    1e-16 of the objective's scale; where a record has no objective, log10 of its optimality;
    gaps filled with the value before (0 before any)."""
    f = np.array([np.nan if v is None else v for v in objective], dtype=float)
    g = np.array([np.nan if v is None else v for v in optimality], dtype=float)
    y = np.full(len(f), np.nan)
    finite = np.isfinite(f)
    if finite.any():
        best = f[finite].min()
        floor = 1e-16 * max(1.0, abs(best))
        y[finite] = np.log10(np.maximum(f[finite] - best, floor))
    fallback = ~finite & np.isfinite(g) & (g > 0)
    y[fallback] = np.log10(g[fallback])
    missing = ~np.isfinite(y)
    if missing.any():  # forward fill, 0 before the first value
        index = np.where(missing, 0, np.arange(len(y)))
        np.maximum.accumulate(index, out=index)
        y = np.where(np.isfinite(y[index]), y[index], 0.0)
    return y


def downsample_indices(objective: Sequence[float | None], optimality: Sequence[float | None],
                       points: int, parts: Sequence[Any] | None = None) -> np.ndarray:
    """Sorted indices of at most ``points`` records of a log: LTTB on :func:`log_shape`, with
    the first, the last and the lowest-objective record always among them.  ``parts``: each
    record's part of the log (a one-vs-rest class, a one-vs-one pair; None for none): each
    part's lowest-objective and last records are kept too, so that a gap plotted per part
    (the dashboard's per-class views) reaches 0 where the full log's does; when they are more
    than half of ``points``, only the whole log's lowest.  A kept record replaces the nearest
    pick that is not itself kept, so there are exactly ``points`` of them."""
    chosen = lttb(log_shape(objective, optimality), points)
    if len(chosen) == len(objective):
        return chosen
    f = np.array([np.inf if v is None else v for v in objective], dtype=float)
    f[~np.isfinite(f)] = np.inf
    keep = [int(np.argmin(f))] if np.isfinite(f).any() else []
    if parts is not None:
        lowest: dict[Any, int] = {}
        last: dict[Any, int] = {}
        for index, part in enumerate(parts):
            if part is None:
                continue
            last[part] = index
            if np.isfinite(f[index]) and (part not in lowest or f[index] < f[lowest[part]]):
                lowest[part] = index
        per_part = list(lowest.values()) + list(last.values())
        if len(per_part) <= points // 2:
            keep += per_part
    protected = np.zeros(len(chosen), dtype=bool)
    protected[[0, -1]] = True  # the first and the last record stay
    for index in keep:
        at = np.flatnonzero(chosen == index)
        if at.size:
            protected[at] = True
            continue
        free = np.flatnonzero(~protected)
        if not free.size:
            break
        nearest = free[np.argmin(np.abs(chosen[free] - index))]
        chosen[nearest] = index
        protected[nearest] = True
    order = np.argsort(chosen)
    return chosen[order]


def part_of(extras: dict[str, Any] | None) -> tuple | None:
    """The part of a job's log a record belongs to, from the tags the library puts in its
    extras: a one-vs-rest class or one-vs-one pair (of the run or of a tuning job's refit);
    None for a single binary problem's record or a cross-validation fold fit's."""
    extras = extras or {}
    if "subproblem" not in extras:
        return None
    return (extras.get("stage") == "refit", extras["subproblem"])


def sample_rows(rows: list[Any], points: int | None) -> list[Any]:
    """Log rows (with ``objective``, ``optimality`` and ``extras``) down-sampled to at most
    ``points``, each part's lowest and last records kept (:func:`downsample_indices`); all of
    them without ``points``."""
    if points is None or len(rows) <= points:
        return rows
    chosen = downsample_indices([r.objective for r in rows], [r.optimality for r in rows],
                                points, [part_of(r.extras) for r in rows])
    return [rows[i] for i in chosen]
