// The overview page (GET /): a range of days in the browser's timezone, and for it the totals,
// cost and sessions per day (uPlot charts, numbers on hover), the top models by cost, the
// slowest tools, the latest failed sessions, and a chosen score per day and by model, agent, tag
// or tool. Everything comes from the read API with the page's key: GET /v2/analytics/timeseries,
// GET /v2/analytics/breakdown, GET /v2/sessions, and for the score panel GET /v2/analytics/scores
// and GET /v2/analytics/scores/breakdown (its name chooser: GET /v2/score-configs, GET /v2/scores).
// The range lives in the address (?range=7d|30d|90d|<first day>..<last day>), so it can be shared,
// with any filter of GET /v2/sessions under its own name (tag, model, q, extra.<key>...), passed
// as it is to every call; the overview always writes `range`, which tells its addresses from the
// sessions list's old ones (GET / redirects those to /sessions).
import { barChart, dayLabel } from "./charts.js";
import {
  ApiError,
  api,
  describeError,
  fill,
  formatCost,
  formatDuration,
  formatInt,
  formatTime,
  h,
  startPage,
  stateBadge,
} from "./common.js";

const PRESETS = { "7d": 7, "30d": 30, "90d": 90 };
const DEFAULT_RANGE = "30d";
/** The days are the browser's: the API buckets by this IANA name (tz=). */
const TIMEZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

const message = document.getElementById("message");
const rangeLabel = document.getElementById("range-label");
const customForm = document.getElementById("custom-range");
const modelRows = document.querySelector("#top-models tbody");
const toolRows = document.querySelector("#slow-tools tbody");
const failureRows = document.querySelector("#latest-failures tbody");
const allFailures = document.getElementById("all-failures");
const filterForm = document.getElementById("overview-filters");
const otherFilters = document.getElementById("other-filters");
/** The filters the form has fields for; tags are comma-separated in it, repeated in the address. */
const FIELDS = ["q", "tag", "model"];

let charts = [];
let loads = 0;

// ------------------------------------------------------------------ the range

/** Local midnight `days` days after `date` (a Date at local midnight); DST-safe. */
const addDays = (date, days) => new Date(date.getFullYear(), date.getMonth(), date.getDate() + days);

/** A "YYYY-MM-DD" as the local midnight of that day, or null. */
function parseDay(text) {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text ?? "");
  if (!match) return null;
  const date = new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  return dayLabel(date.getTime() / 1000) === text ? date : null;
}

/**
 * The address's range: { key, first, last } with first and last the local midnights of the first
 * and last day shown (both included). A preset ends today; an unreadable range is the default.
 */
function rangeFromAddress() {
  const value = new URLSearchParams(location.search).get("range") ?? DEFAULT_RANGE;
  const now = new Date();
  const today = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  const custom = /^(\d{4}-\d{2}-\d{2})\.\.(\d{4}-\d{2}-\d{2})$/.exec(value);
  if (custom) {
    const first = parseDay(custom[1]);
    const last = parseDay(custom[2]);
    if (first && last && first <= last) return { key: "custom", first, last };
  }
  const days = PRESETS[value] ?? PRESETS[DEFAULT_RANGE];
  return { key: PRESETS[value] ? value : DEFAULT_RANGE, first: addDays(today, 1 - days), last: today };
}

/** The range's bounds for the API: from its first day's midnight up to (excluded) the day after its last. */
const bounds = (range) => ({ from: range.first.toISOString(), to: addDays(range.last, 1).toISOString() });

function showRange(range) {
  for (const link of document.querySelectorAll(".ranges a")) {
    if (link.dataset.range === range.key) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  customForm.classList.toggle("active", range.key === "custom");
  customForm.elements.first.value = dayLabel(range.first.getTime() / 1000);
  customForm.elements.last.value = dayLabel(range.last.getTime() / 1000);
  const days = Math.round((addDays(range.last, 1) - range.first) / 86_400_000);
  rangeLabel.textContent = `${dayLabel(range.first.getTime() / 1000)} to ${dayLabel(range.last.getTime() / 1000)}: ${days} day${days === 1 ? "" : "s"} of ${TIMEZONE}`;
}

/**
 * The address's filters: every parameter but range (and from and to, which the range sets),
 * score and score_by (the score panel's choices), in order.
 */
const filtersFromAddress = () =>
  [...new URLSearchParams(location.search)].filter(
    ([name]) => !["range", "from", "to", "score", "score_by"].includes(name),
  );

/** The filters as a query for api(): repeated names as arrays. */
function filterQuery(filters) {
  const query = {};
  for (const [name, value] of filters) {
    if (value === "") continue;
    query[name] = name in query ? [query[name], value].flat() : name === "tag" ? [value] : value;
  }
  return query;
}

/**
 * Goes to an address of the overview: the range (always written, see above), these filters and
 * the score panel's choices.
 */
function go(range, filters = filtersFromAddress(), score = scoreParams()) {
  const params = new URLSearchParams([["range", range], ...filters, ...score]);
  history.pushState(null, "", params.toString() === `range=${DEFAULT_RANGE}` ? "/" : `/?${params}`);
  load();
}

const rangeKey = () => {
  const range = rangeFromAddress();
  return range.key === "custom"
    ? `${dayLabel(range.first.getTime() / 1000)}..${dayLabel(range.last.getTime() / 1000)}`
    : range.key;
};

function showFilters(filters) {
  filterForm.elements.tag.value = filters
    .filter(([name]) => name === "tag")
    .map(([, value]) => value)
    .join(", ");
  for (const name of ["q", "model"]) filterForm.elements[name].value = filters.find(([n]) => n === name)?.[1] ?? "";
  const others = filters.map((entry, index) => ({ entry, index })).filter(({ entry }) => !FIELDS.includes(entry[0]));
  fill(
    otherFilters,
    others.length > 0 ? "Also filtered by: " : null,
    others.map(({ entry: [name, value], index }) =>
      h(
        "span",
        { class: "tag other-filter", "data-name": name },
        `${name} = ${value} `,
        h(
          "button",
          {
            type: "button",
            class: "link-button",
            "aria-label": `Remove the filter ${name}`,
            onclick: () =>
              go(
                rangeKey(),
                filters.filter((_, i) => i !== index),
              ),
          },
          "×",
        ),
      ),
    ),
  );
  otherFilters.hidden = others.length === 0;
}

filterForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const filters = [];
  const value = (name) => filterForm.elements[name].value.trim();
  if (value("q") !== "") filters.push(["q", value("q")]);
  for (const tag of value("tag").split(",")) if (tag.trim() !== "") filters.push(["tag", tag.trim()]);
  if (value("model") !== "") filters.push(["model", value("model")]);
  for (const entry of filtersFromAddress()) if (!FIELDS.includes(entry[0])) filters.push(entry);
  go(rangeKey(), filters);
});
filterForm.addEventListener("reset", (event) => {
  event.preventDefault();
  go(rangeKey(), []);
});

for (const link of document.querySelectorAll(".ranges a")) {
  link.addEventListener("click", (event) => {
    event.preventDefault();
    go(link.dataset.range);
  });
}
customForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const first = customForm.elements.first.value;
  const last = customForm.elements.last.value;
  if (!parseDay(first) || !parseDay(last)) return;
  go(first <= last ? `${first}..${last}` : `${last}..${first}`);
});
window.addEventListener("popstate", () => {
  if (!document.getElementById("app").hidden) load();
});

// ------------------------------------------------------------------ numbers

/** The exact sum of decimal strings (the API's costs), as a decimal string: no float rounding. */
export function addDecimals(values) {
  let scale = 0;
  const parts = values.map((value) => {
    const [whole, fraction = ""] = String(value ?? "0").split(".");
    scale = Math.max(scale, fraction.length);
    return [whole, fraction];
  });
  let sum = 0n;
  for (const [whole, fraction] of parts) {
    const negative = whole.startsWith("-");
    const digits = BigInt(`${whole.replace("-", "") || "0"}${fraction.padEnd(scale, "0")}`);
    sum += negative ? -digits : digits;
  }
  const negative = sum < 0n;
  const text = (negative ? -sum : sum).toString().padStart(scale + 1, "0");
  const whole = text.slice(0, text.length - scale);
  const fraction = text.slice(text.length - scale).replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${fraction ? `.${fraction}` : ""}`;
}

const percent = (part, whole) => (whole > 0 ? `${((part / whole) * 100).toFixed(1)}%` : "—");

function showTotals(points) {
  const sum = (name) => points.reduce((total, point) => total + (point[name] ?? 0), 0);
  const sessions = sum("sessions");
  const failures = sum("failures");
  const values = {
    sessions: formatInt(sessions),
    cost: formatCost(addDecimals(points.map((point) => point.cost))),
    failures: formatInt(failures),
    "failure-rate": percent(failures, sessions),
    events: formatInt(sum("events")),
    tokens: formatInt(sum("prompt_tokens") + sum("completion_tokens")),
  };
  for (const [name, value] of Object.entries(values)) {
    document.querySelector(`[data-total="${name}"] dd`).textContent = value;
  }
}

// ------------------------------------------------------------------ charts and tables

/** A chart's numbers as a table, under it: for reading every day at once, and for screen readers. */
function numbersTable(id, points, columns) {
  const table = document.getElementById(id);
  fill(
    table,
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Day"),
        columns.map(([label]) => h("th", { scope: "col", class: "num" }, label)),
      ),
    ),
    h(
      "tbody",
      {},
      points.map((point) =>
        h(
          "tr",
          {},
          h("td", {}, dayLabel(Date.parse(point.start) / 1000)),
          columns.map(([, value]) => h("td", { class: "num" }, value(point))),
        ),
      ),
    ),
  );
}

function drawCharts(points) {
  numbersTable("numbers-cost", points, [["Cost", (point) => formatCost(point.cost)]]);
  numbersTable("numbers-sessions", points, [
    ["Sessions", (point) => formatInt(point.sessions)],
    ["Failed", (point) => formatInt(point.failures)],
    ["Failure rate", (point) => percent(point.failures, point.sessions)],
  ]);
  for (const chart of charts) chart.destroy();
  const x = points.map((point) => Date.parse(point.start) / 1000);
  const rate = (point) => (point.sessions > 0 ? (point.failures / point.sessions) * 100 : null);
  charts = [
    barChart(document.getElementById("chart-cost"), {
      x,
      axisFormat: (v) => formatCost(v),
      series: [
        {
          label: "Cost",
          color: "--chart-cost",
          values: points.map((point) => Number(point.cost)),
          format: (i) => formatCost(points[i].cost),
        },
      ],
    }),
    barChart(document.getElementById("chart-sessions"), {
      x,
      axisFormat: (v) => (Number.isInteger(v) ? formatInt(v) : ""),
      series: [
        {
          label: "Sessions",
          color: "--chart-sessions",
          values: points.map((point) => point.sessions),
          format: (i) => formatInt(points[i].sessions),
        },
        {
          label: "Failed",
          color: "--chart-failures",
          size: 0.4,
          values: points.map((point) => point.failures),
          format: (i) => formatInt(points[i].failures),
        },
        {
          label: "Failure rate",
          color: "--chart-rate",
          scale: "rate",
          line: true,
          minMax: 10,
          values: points.map(rate),
          format: (i) => percent(points[i].failures, points[i].sessions),
        },
      ],
    }),
  ];
}

/** A link to the sessions list with the overview's filters, these more, over the range. */
function sessionsLink(range, more) {
  const params = new URLSearchParams(filtersFromAddress().filter(([name]) => !(name in more)));
  for (const [name, value] of Object.entries(more)) params.set(name, value);
  const { from, to } = bounds(range);
  params.set("from", from.replace(/\.000Z$/, "Z"));
  params.set("to", to.replace(/\.000Z$/, "Z"));
  return `/sessions?${params}`;
}

/**
 * A breakdown answer (GET /v2/analytics/breakdown, GET /v2/analytics/scores/breakdown) as the rows
 * of a board's table: a row per group (`data-key`, "" for the group of "none") with its key
 * (`keyCell(item)`, `noneLabel` muted for null) and a number cell per column (`columns`: functions
 * of a group), then `other` as a row labelled `otherLabel` when the answer has one and the board
 * shows it, or a row saying `empty` when there is no group.
 */
function breakdownRows(tbody, body, { columns, keyCell = (item) => item.key, noneLabel, otherLabel, empty }) {
  const row = (item, label) =>
    h(
      "tr",
      label ? { class: "other" } : { "data-key": item.key ?? "" },
      h(
        "td",
        { class: "key" },
        label
          ? h("span", { class: "muted" }, label)
          : item.key === null
            ? h("span", { class: "muted" }, noneLabel)
            : keyCell(item),
      ),
      columns.map((value) => h("td", { class: "num" }, value(item))),
    );
  fill(
    tbody,
    body.items.map((item) => row(item)),
    otherLabel && body.other ? row(body.other, otherLabel) : null,
  );
  if (body.items.length === 0) fill(tbody, emptyRow(columns.length + 1, empty));
}

function showModels(range, body) {
  const cost = addDecimals([...body.items, ...(body.other ? [body.other] : [])].map((item) => item.cost));
  const total = Number(cost);
  breakdownRows(modelRows, body, {
    keyCell: (item) => h("a", { href: sessionsLink(range, { model: item.key }), title: item.key }, item.key),
    noneLabel: "(no model)",
    otherLabel: "Other models",
    empty: "No LLM calls in this range.",
    columns: [
      (item) => formatInt(item.events),
      (item) => formatInt((item.prompt_tokens ?? 0) + (item.completion_tokens ?? 0)),
      (item) => formatCost(item.cost),
      (item) => (total > 0 ? percent(Number(item.cost), total) : "—"),
    ],
  });
}

function showTools(body) {
  breakdownRows(toolRows, body, {
    noneLabel: "(no name)",
    empty: "No tool calls in this range.",
    columns: [
      (item) => formatInt(item.events),
      (item) => formatDuration(item.duration_ms?.p50),
      (item) => formatDuration(item.duration_ms?.p95),
      (item) => formatDuration(item.duration_ms?.p99),
    ],
  });
}

function showFailures(range, body) {
  allFailures.href = sessionsLink(range, { end_state: "Fail" });
  const row = ({ session, stats }) =>
    h(
      "tr",
      { "data-session-id": session.id },
      h(
        "td",
        { class: "id" },
        h("a", { href: `/sessions/${encodeURIComponent(session.id)}`, title: session.id }, session.id),
        " ",
        stateBadge(session),
      ),
      h("td", { class: "time", title: session.init_timestamp }, formatTime(session.init_timestamp)),
      h("td", { class: "num" }, formatInt(stats.events)),
      h("td", { class: "num" }, formatCost(stats.cost)),
      h("td", { class: "reason" }, session.end_state_reason ?? ""),
    );
  fill(failureRows, body.sessions.map(row));
  if (body.sessions.length === 0) fill(failureRows, emptyRow(5, "No failed session in this range."));
}

const emptyRow = (columns, text) => h("tr", { class: "empty" }, h("td", { colspan: columns, class: "muted" }, text));

// ------------------------------------------------------------------ the score panel

/**
 * The score panel (issue 25): the chosen score's count and mean per day (pass rate for booleans,
 * each label's count, as stacked bars, for categorical ones) from GET /v2/analytics/scores, and
 * the same by model, agent, tag or tool from GET /v2/analytics/scores/breakdown: exact, read from
 * the server's score analytics projection (decision 037). Its choices are `score=<name>` and
 * `score_by=<model|agent|tag|tool>` (model when absent) in the address. Its chart and "The
 * numbers" show once a score is chosen.
 */
const scoreSelect = document.getElementById("score-name");
const scorePanel = document.getElementById("score-panel");
const scoreSummary = document.getElementById("score-summary");
const scoreChart = document.getElementById("chart-score");
const scoreNumbers = document.getElementById("score-numbers");
const scoreByBox = document.getElementById("score-by-box");
const scoreBySelect = document.getElementById("score-by");
const scoreBreakdown = document.getElementById("score-breakdown");
const SCORE_BY = ["model", "agent", "tag", "tool"];
/** The groups the "by" table shows; the rest are its "other" row. */
const SCORE_GROUPS = 5;
let scoreCharts = [];

const scoreFromAddress = () => new URLSearchParams(location.search).get("score") ?? "";
const scoreByFromAddress = () => {
  const by = new URLSearchParams(location.search).get("score_by");
  return SCORE_BY.includes(by) ? by : "model";
};
/** The score panel's parameters of the address, as written: the default grouping is left out. */
const scoreParams = (score = scoreFromAddress(), by = scoreByFromAddress()) => [
  ...(score ? [["score", score]] : []),
  ...(by !== "model" ? [["score_by", by]] : []),
];

scoreSelect.addEventListener("change", () => go(rangeKey(), filtersFromAddress(), scoreParams(scoreSelect.value)));
scoreBySelect.addEventListener("change", () =>
  go(rangeKey(), filtersFromAddress(), scoreParams(undefined, scoreBySelect.value)),
);

/** A number short: up to 3 decimals, trailing zeros dropped. */
const short = (n) => (Number.isFinite(n) ? String(Number(n.toFixed(3))) : "—");
/** A pass rate (0 to 1, or null) as a percentage. */
const passRate = (rate) => (rate === null || rate === undefined ? "—" : `${short(rate * 100)}%`);
/** Labels by count, largest first, ties by label. */
const labelsByCount = (labels) =>
  Object.entries(labels ?? {}).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

/** What the score's measures say it is: numeric, boolean or categorical (numeric when empty). */
function scoreKind(points) {
  let numbers = 0;
  let booleans = 0;
  let labels = 0;
  for (const point of points) {
    numbers += point.numeric_count;
    booleans += point.true_count + point.false_count;
    labels += Object.keys(point.labels).length;
  }
  if (booleans > numbers) return "boolean";
  if (labels > 0 && numbers === 0 && booleans === 0) return "categorical";
  return "numeric";
}

/** The names the select offers: the configs' and those of the range's latest scores, sorted. */
async function scoreNames(from, to, chosen) {
  const [configs, latest] = await Promise.all([
    api("/v2/score-configs").catch(() => ({ configs: [] })),
    api("/v2/scores", { from, to, limit: 1000 }),
  ]);
  const names = new Set([...configs.configs.map((c) => c.name), ...latest.scores.map((s) => s.name)]);
  if (chosen) names.add(chosen);
  return [...names].sort();
}

async function loadScores(load, range) {
  const { from, to } = bounds(range);
  const chosen = scoreFromAddress();
  const by = scoreByFromAddress();
  delete scorePanel.dataset.loaded;
  for (const chart of scoreCharts) chart.destroy();
  scoreCharts = [];
  const [names, series, groups] = await Promise.all([
    scoreNames(from, to, chosen),
    chosen ? api("/v2/analytics/scores", { name: chosen, bucket: "day", tz: TIMEZONE, from, to }) : null,
    chosen ? api("/v2/analytics/scores/breakdown", { name: chosen, by, limit: SCORE_GROUPS, from, to }) : null,
  ]);
  if (load !== loads) return;
  fill(
    scoreSelect,
    h("option", { value: "" }, "Choose a score…"),
    names.map((name) => h("option", { value: name, selected: name === chosen }, name)),
  );
  scoreSelect.value = chosen;
  scoreBySelect.value = by;
  scorePanel.dataset.name = chosen;
  scoreNumbers.hidden = !chosen;
  if (!chosen) {
    scoreChart.hidden = true;
    scoreByBox.hidden = true;
    fill(document.getElementById("numbers-score"));
    scoreSummary.textContent =
      names.length === 0
        ? "No scores in this range."
        : "Choose a score to see its count and mean per day over the range.";
    scorePanel.dataset.loaded = "true";
    return;
  }
  const kind = scoreKind(series.points);
  showScoreSeries(series.points, kind);
  showScoreBreakdown(groups, kind);
  scorePanel.dataset.loaded = "true";
}

function showScoreSeries(points, kind) {
  const total = (name) => points.reduce((sum, point) => sum + point[name], 0);
  const count = total("count");
  const numbers = total("numeric_count");
  const trues = total("true_count");
  const booleans = trues + total("false_count");
  // The range's mean from the days' means: each day's sum is its mean times its count.
  const sum = points.reduce((all, point) => all + (point.mean ?? 0) * point.numeric_count, 0);
  const labels = new Map();
  for (const point of points) {
    for (const [label, n] of Object.entries(point.labels)) labels.set(label, (labels.get(label) ?? 0) + n);
  }
  let summary = `${formatInt(count)} score${count === 1 ? "" : "s"}`;
  if (kind === "numeric" && numbers > 0) summary += `, mean ${short(sum / numbers)}`;
  if (kind === "boolean" && booleans > 0) summary += `, ${short((trues / booleans) * 100)}% true`;
  if (kind === "categorical") {
    summary += `: ${labelsByCount(Object.fromEntries(labels))
      .map(([label, n]) => `${label} ${formatInt(n)}`)
      .join(", ")}`;
  }
  scoreSummary.textContent = `${summary}.`;
  scorePanel.dataset.count = String(count);
  scorePanel.dataset.kind = kind;

  const columns = [["Count", (point) => formatInt(point.count)]];
  if (kind === "numeric") columns.push(["Mean", (point) => short(point.mean ?? Number.NaN)]);
  if (kind === "boolean") columns.push(["True", (point) => passRate(point.pass_rate)]);
  if (kind === "categorical") {
    for (const label of [...labels.keys()].sort()) {
      columns.push([label, (point) => formatInt(point.labels[label] ?? 0)]);
    }
  }
  numbersTable("numbers-score", points, columns);

  scoreChart.hidden = false;
  const measure = { numeric: "count and mean", boolean: "count and share of true", categorical: "each label's count" };
  scoreChart.setAttribute("aria-label", `${scorePanel.dataset.name}: ${measure[kind]} per day`);
  const x = points.map((point) => Date.parse(point.start) / 1000);
  const series =
    kind === "categorical"
      ? labelSeries(points, [...labels.keys()].sort())
      : [
          {
            label: "Count",
            color: "--chart-sessions",
            values: points.map((point) => point.count),
            format: (i) => formatInt(points[i].count),
          },
        ];
  if (kind === "numeric") {
    // The mean on a scale of its own (no axis: the legend and the numbers give it).
    series.push({
      label: "Mean",
      color: "--chart-rate",
      scale: "mean",
      line: true,
      values: points.map((point) => point.mean),
      format: (i) => short(points[i].mean ?? Number.NaN),
    });
  }
  if (kind === "boolean") {
    series.push({
      label: "True",
      color: "--chart-rate",
      scale: "rate",
      line: true,
      minMax: 100,
      values: points.map((point) => (point.pass_rate === null ? null : point.pass_rate * 100)),
      format: (i) => passRate(points[i].pass_rate),
    });
  }
  scoreCharts = [barChart(scoreChart, { x, axisFormat: (v) => (Number.isInteger(v) ? formatInt(v) : ""), series })];
}

/** The colours of a categorical score's labels, in turn (custom properties --chart-label-1...). */
const LABEL_COLORS = 6;

/**
 * A categorical score's chart: a bar per day stacked by label, each label's count on top of the
 * labels before it (in the table's order), its legend giving the label's own count: the height
 * of its part of the bar.
 */
function labelSeries(points, labels) {
  let top = points.map(() => 0);
  return labels.map((label, i) => {
    const base = top;
    const values = points.map((point, j) => base[j] + (point.labels[label] ?? 0));
    top = values;
    return {
      label,
      color: `--chart-label-${(i % LABEL_COLORS) + 1}`,
      base,
      values,
      format: (j) => formatInt(values[j] - base[j]),
    };
  });
}

/** The score by model, agent, tag or tool: a board's table, as the overview's other breakdowns. */
function showScoreBreakdown(body, kind) {
  scoreByBox.hidden = false;
  scoreBreakdown.dataset.by = body.by;
  const [heading, value] = {
    numeric: ["Mean", (item) => short(item.mean ?? Number.NaN)],
    boolean: ["True", (item) => passRate(item.pass_rate)],
    categorical: [
      "Top labels",
      (item) =>
        labelsByCount(item.labels)
          .slice(0, 3)
          .map(([label, n]) => `${label} ${formatInt(n)}`)
          .join(", ") || "—",
    ],
  }[kind];
  fill(
    scoreBreakdown.tHead,
    h(
      "tr",
      {},
      h("th", { scope: "col" }, body.by[0].toUpperCase() + body.by.slice(1)),
      h("th", { scope: "col", class: "num" }, "Scores"),
      h("th", { scope: "col", class: "num" }, heading),
    ),
  );
  breakdownRows(scoreBreakdown.tBodies[0], body, {
    keyCell: (item) => h("span", { title: item.key }, item.key),
    noneLabel: "(none)",
    otherLabel: `Other ${body.by}s`,
    empty: "No scores of this name in the range.",
    columns: [(item) => formatInt(item.count), value],
  });
}

// ------------------------------------------------------------------ loading

async function load() {
  const load = ++loads;
  const range = rangeFromAddress();
  showRange(range);
  const { from, to } = bounds(range);
  const filters = filtersFromAddress();
  showFilters(filters);
  const query = filterQuery(filters);
  message.textContent = "Loading…";
  // What the page asked for, readable by a test that asks the API the same.
  Object.assign(document.getElementById("app").dataset, { loaded: "false", from, to, tz: TIMEZONE });
  try {
    const [series, models, tools, failures] = await Promise.all([
      api("/v2/analytics/timeseries", { ...query, bucket: "day", tz: TIMEZONE, from, to }),
      api("/v2/analytics/breakdown", { ...query, by: "model", sort: "cost", limit: 5, from, to }),
      api("/v2/analytics/breakdown", { ...query, by: "tool", sort: "duration_p95", limit: 5, from, to }),
      api("/v2/sessions", { ...query, end_state: "Fail", from, to, limit: 8 }),
    ]);
    if (load !== loads) return;
    message.textContent = "";
    showTotals(series.points);
    drawCharts(series.points);
    showModels(range, models);
    showTools(tools);
    showFailures(range, failures);
    document.getElementById("app").dataset.loaded = "true";
    await loadScores(load, range);
  } catch (error) {
    if (load !== loads || (error instanceof ApiError && error.status === 401)) return;
    message.textContent = describeError(error);
  }
}

startPage({
  start() {
    document.getElementById("app").hidden = false;
    load();
  },
  stop() {
    loads++;
    for (const chart of [...charts, ...scoreCharts]) chart.destroy();
    charts = [];
    scoreCharts = [];
    fill(modelRows);
    fill(toolRows);
    fill(failureRows);
  },
});
