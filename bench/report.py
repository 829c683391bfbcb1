"""Benchmark output: JSON, a Markdown table and convergence plots (PNG)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from bench.harness import GAPS, ProblemResult, as_json, relative_gap


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def markdown_table(results: list[ProblemResult]) -> str:
    gap_columns = " | ".join(f"t({g:g}) s" for g in GAPS)
    lines = [
        f"| problem | solver | {gap_columns} | ratio to best anchor at 1e-6 | "
        "final rel. gap | test acc. |",
        "|---|---|" + "---|" * len(GAPS) + "---|---|---|",
    ]
    for result in results:
        for s in result.summaries:
            times = " | ".join(_seconds(s.time_to_gap[f"{g:g}"]) for g in GAPS)
            ratio = "" if s.anchor else result.ratio_to_best_anchor(s.runner, 1e-6)
            ratio_text = "anchor" if s.anchor else ("—" if ratio is None else f"{ratio:.2f}")
            accuracy = "" if s.accuracy is None else f"{100 * s.accuracy:.2f}%"
            lines.append(f"| {result.problem} | {s.runner} | {times} | {ratio_text} | "
                         f"{s.final_gap:.1e} | {accuracy} |")
    return "\n".join(lines) + "\n"


def convergence_plot(result: ProblemResult, path: Path) -> None:
    """Relative gap against time, log-log, one curve per solver (the median run's trace)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    floor = 1e-12
    for s in result.summaries:
        if not s.trace:
            continue
        t = np.array([p[0] for p in s.trace])
        gap = np.maximum([relative_gap(p[1], result.reference_objective) for p in s.trace],
                         floor)
        style = "--o" if s.anchor else "-o"
        ax.loglog(np.maximum(t, 1e-4), gap, style, markersize=3, label=s.runner)
    for g in GAPS:
        ax.axhline(g, color="grey", linewidth=0.5)
    ax.set_xlabel("seconds")
    ax.set_ylabel("relative objective gap")
    ax.set_title(result.problem, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def scaling_plot(points: dict[str, list[tuple[int, float]]], slopes: dict[str, float],
                 title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for runner, series in points.items():
        n = [p[0] for p in series]
        t = [p[1] for p in series]
        slope = f" (slope {slopes[runner]:.2f})" if runner in slopes else ""
        ax.loglog(n, t, "-o", markersize=3, label=f"{runner}{slope}")
    ax.set_xlabel("training examples")
    ax.set_ylabel("seconds to relative gap 1e-6")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.=-]+", "_", text).strip("_")


def write_outputs(results: list[ProblemResult], scaling: list[dict], machine: dict,
                  out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(
        {"machine": machine, "problems": as_json(results), "scaling": scaling}, indent=1))
    table = markdown_table(results)
    for entry in scaling:
        table += (f"\nScaling on {entry['title']}: fitted log-log slopes "
                  + ", ".join(f"{k} {v:.2f}" for k, v in entry["slopes"].items()) + "\n")
    (out / "results.md").write_text(table)
    for result in results:
        convergence_plot(result, out / f"convergence-{slug(result.problem)}.png")
