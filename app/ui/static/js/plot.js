// Convergence plots with uPlot (vendored, global `uPlot`).  Curves differ by dash pattern and
// point marks as well as colour (Okabe-Ito palette), so they read without colour.
import { fmt } from "./common.js";

const PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"];
const DASHES = [[], [10, 5], [2, 4], [12, 4, 2, 4], [6, 3], [1, 3], [16, 6], [4, 2, 1, 2]];

export function seriesStyle(i) {
  return { stroke: PALETTE[i % PALETTE.length], dash: DASHES[i % DASHES.length], width: 2,
           points: { size: 5 + (i % 3) * 2, fill: i % 2 ? "#fff" : PALETTE[i % PALETTE.length] } };
}

// Time along the whole run: `elapsed` is the job's clock (seconds since started_at, the clock of
// the page's Elapsed: monotonic, never past finished_at); in logs written before 2026-11-26 it
// restarted with each one-vs-rest subproblem, which this still lays end to end.
export function runTimes(records) {
  const out = [];
  let offset = 0;
  let previous = 0;
  for (const r of records) {
    if (r.elapsed < previous) offset += previous;
    previous = r.elapsed;
    out.push(offset + r.elapsed);
  }
  return out;
}

// A uPlot in `box` that follows its width.  `series`: [{label, ...style}], `data`: [x, y1, ...].
// `xRange` / `yRange` ([min, max]) fix a linear axis's range (a ROC curve's unit square);
// `xWhole`: the x values are counts (folds), ticked at whole numbers only.
export function makePlot(box, { xLabel, yLabel, logX = false, logY = false, series, data, height = 260, xRange, yRange, xWhole = false }) {
  const width = Math.max(260, box.clientWidth || 600);
  // A log axis labels its powers of the base only, and at most about eight of them (every
  // k-th power): uPlot puts a tick at every multiple between powers, and a gap axis spans up
  // to 16 decades, so labelling every tick printed a column of overlapping numbers.
  const logTicks = (base) => (u, ticks) => {
    const exponent = (t) => Math.log(t) / Math.log(base);
    const isPower = (t) => t > 0 && Math.abs(exponent(t) - Math.round(exponent(t))) < 1e-9;
    const powers = ticks.filter(isPower).length;
    const every = Math.max(1, Math.ceil(powers / 8));
    return ticks.map((t) => (isPower(t) && Math.round(exponent(t)) % every === 0 ? tick(t) : ""));
  };
  const opts = {
    width, height,
    scales: { x: logX ? { time: false, distr: 3, log: 2 } : { time: false, ...(xRange ? { range: xRange } : {}) },
      y: logY ? { distr: 3, log: 10 } : (yRange ? { range: yRange } : {}) },
    axes: [logX ? { label: xLabel, size: 40, values: logTicks(2) }
      : xWhole ? { label: xLabel, size: 40, incrs: [1, 2, 5, 10, 20] } : { label: xLabel, size: 40 },
      logY ? { label: yLabel, size: 72, values: logTicks(10) } : { label: yLabel, size: 90 }],
    series: [{ label: xLabel, value: (u, v) => (v == null ? "–" : tick(v)) },
      ...series.map((s, i) => ({ spanGaps: true, value: (u, v) => (v == null ? "–" : tick(v)), ...seriesStyle(i), ...s }))],
    legend: { live: true },
    cursor: { drag: { x: true, y: false } },
  };
  const plot = new uPlot(opts, data, box);
  new ResizeObserver(() => {
    const w = Math.max(260, box.clientWidth);
    if (Math.abs(w - plot.width) > 4) plot.setSize({ width: w, height });
  }).observe(box);
  return plot;
}

function tick(v) {
  if (v == null) return "";
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(0);
  return String(Number(v.toPrecision(4)));
}

// Relative gap (f - best) / |best|; null where it is not positive (a log axis cannot show 0).
export function relativeGap(objective, best) {
  if (objective == null || best == null) return null;
  const gap = (objective - best) / Math.max(Math.abs(best), 1e-300);
  return gap > 0 ? gap : null;
}

// The part of the job a record belongs to: a tuning job's grid point (its fold fits), the
// refit, a one-vs-rest class or one-vs-one pair (of the run or of the refit), or the whole run.
export function partOf(r) {
  const e = r.extras || {};
  const refit = e.stage === "refit";
  if (!refit && e.fold != null && e.C != null) {
    const others = ["gamma", "epsilon", "nu"].filter((a) => e[a] != null);
    const tube = ["epsilon", "nu"].filter((a) => e[a] != null).map((a) => `:${a}=${e[a]}`).join("");
    return { key: `grid:${e.C}:${e.gamma}${tube}`, kind: "grid",
      label: `C = ${fmt(e.C)}${others.map((a) => `, ${a} = ${fmt(e[a])}`).join("")}` +
        (e.n_C != null ? ` (C ${e.C_index + 1} of ${e.n_C}${e.n_gamma > 1 ? `, gamma ${e.gamma_index + 1} of ${e.n_gamma}` : ""})` : "") };
  }
  let key = refit ? "refit" : "run";
  let label = refit ? "refit at the best point" : "the whole run";
  if (e.subproblem != null) {
    const part = e.n_classes != null ? `class ${e.class_index + 1} of ${e.n_classes} (label ${e.class})`
      : e.n_subproblems != null ? `pair ${e.subproblem + 1} of ${e.n_subproblems} (${e.class})`
        : `class ${e.class}`;
    key += `:${e.subproblem}`;
    label = refit ? `refit, ${part}` : part;
  }
  return { key, kind: "run", label };
}
