// Bar charts of daily numbers, drawn by uPlot (the global `uPlot` of /ui/uplot.js, loaded by the
// page before its modules). uPlot draws on a canvas, so its colours are taken from the style
// sheet's custom properties when a chart is made, and every chart is made again when the colour
// scheme changes. Hovering a day shows its numbers in the chart's legend, written by uPlot as
// text (never HTML). uPlot sets its element sizes through element.style, which the page's CSP
// (style-src 'self') allows: only inline <style> and style="" attributes are refused.

const DAY = 86_400;
const dark = matchMedia("(prefers-color-scheme: dark)");
const charts = new Set();

/** A custom property of the style sheet, such as "--text". */
const cssColor = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

/** "2026-11-22": the local day of a bucket's start (seconds), as the range label writes days. */
export function dayLabel(seconds) {
  if (typeof seconds !== "number") return "—";
  const date = new Date(seconds * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

/** The steps in days between two labelled days of the x axis. */
const DAY_STEPS = [1, 2, 3, 7, 14, 28, 56, 91, 182, 364];
/** The least room, in CSS pixels, between two labelled days. */
const TICK_SPACE = 48;

/**
 * The x axis's ticks: days the chart has (its points' starts, the local midnights of the browser's
 * days), every step-th counted back from the last one, the step the smallest of DAY_STEPS that
 * leaves TICK_SPACE between two labels. uPlot's own time ticks would fall at 8 or 12 hours
 * when a day is wide (a week on a wide chart), and on UTC-aligned steps across a DST change.
 */
export function dayTicks(x, plotWidth) {
  if (x.length === 0) return [];
  const perDay = plotWidth / (x.length + 1); // the x scale has half a day more at each end
  const step = DAY_STEPS.find((days) => days * perDay >= TICK_SPACE) ?? DAY_STEPS.at(-1);
  return x.filter((_, i) => (x.length - 1 - i) % step === 0);
}

/** A tick's label: month/day, with the year under the first. */
function tickLabel(seconds, first) {
  const date = new Date(seconds * 1000);
  return `${date.getMonth() + 1}/${date.getDate()}${first ? `\n${date.getFullYear()}` : ""}`;
}

/** A stacked bar's ends: from `base` (the top of the bars under it) to its value, both in data units. */
const stacked = (s) => ({ y0: { unit: 1, values: () => s.base }, y1: { unit: 1, values: () => s.values } });

function options(spec, width, element) {
  const muted = cssColor("--muted");
  const grid = cssColor("--line");
  const axis = (scale, side, format) => ({
    scale,
    side,
    stroke: muted,
    grid: { show: side === 3, stroke: grid, width: 1 },
    ticks: { stroke: grid, width: 1 },
    values: format ? (_u, splits) => splits.map((v) => (v == null ? "" : format(v))) : undefined,
    size: 56,
  });
  const bars = globalThis.uPlot.paths.bars;
  return {
    width,
    height: spec.height ?? 220,
    legend: { live: true },
    cursor: { drag: { x: false, y: false, setScale: false }, points: { show: false } },
    scales: {
      x: { time: true, range: (_u, min, max) => [min - DAY / 2, max + DAY / 2] },
      ...Object.fromEntries(
        // From zero, with room above the highest bar; an empty range still has an axis.
        spec.series.map((s) => [
          s.scale ?? "y",
          { range: (_u, _min, max) => [0, max > 0 ? Math.max(max * 1.08, s.minMax ?? 0) : (s.minMax ?? 1)] },
        ]),
      ),
    },
    axes: [
      {
        stroke: muted,
        grid: { show: false },
        ticks: { stroke: grid, width: 1 },
        splits: (u) => {
          const ticks = dayTicks(spec.x, u.bbox.width / globalThis.uPlot.pxRatio);
          // The labelled days, readable by a test (the canvas is not).
          element.dataset.ticks = ticks.map(dayLabel).join(" ");
          return ticks;
        },
        values: (_u, splits) => splits.map((v, i) => tickLabel(v, i === 0)),
      },
      axis("y", 3, spec.axisFormat),
      ...(spec.series.some((s) => s.scale === "rate") ? [axis("rate", 1, (v) => `${Math.round(v)}%`)] : []),
    ],
    series: [
      { label: "Day", value: (_u, v) => dayLabel(v) },
      ...spec.series.map((s) => {
        const color = cssColor(s.color);
        return {
          label: s.label,
          scale: s.scale ?? "y",
          stroke: color,
          width: s.line ? 2 : 0,
          fill: s.line ? undefined : color,
          paths: s.line ? undefined : bars({ size: [s.size ?? 0.7, 48], align: 0, disp: s.base && stacked(s) }),
          points: { show: Boolean(s.line), size: 5, fill: color, stroke: color },
          value: (_u, _v, _si, idx) => (idx == null ? "—" : s.format(idx)),
        };
      }),
    ],
  };
}

/**
 * Draws (or draws again) a chart in `element`: spec = { x: [seconds], series: [{ label, color (a
 * custom property), values: [numbers], format(idx) for the legend, scale?, line?, size?, base? }],
 * axisFormat? }. A series with `base` (numbers) is stacked: its bars go from base to values, so
 * values is the running total and format() gives the series' own number. Answers the chart,
 * whose `destroy()` removes it.
 */
export function barChart(element, spec) {
  const chart = {
    element,
    spec,
    plot: null,
    draw() {
      this.plot?.destroy();
      const data = [spec.x, ...spec.series.map((s) => s.values)];
      this.plot = new globalThis.uPlot(options(spec, Math.max(element.clientWidth, 200), element), data, element);
    },
    destroy() {
      this.plot?.destroy();
      this.plot = null;
      charts.delete(this);
      resize.unobserve(element);
    },
  };
  chart.draw();
  charts.add(chart);
  resize.observe(element);
  return chart;
}

const resize = new ResizeObserver((entries) => {
  for (const entry of entries) {
    for (const chart of charts) {
      if (chart.element === entry.target && chart.plot) {
        const width = Math.max(Math.floor(entry.contentRect.width), 200);
        if (width !== chart.plot.width) chart.plot.setSize({ width, height: chart.plot.height });
      }
    }
  }
});

// The canvas keeps the colours it was drawn with: draw every chart again in the new scheme.
dark.addEventListener("change", () => {
  for (const chart of charts) chart.draw();
});
