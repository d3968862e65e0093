// The sessions page (GET /sessions): the filters, sorts and full-text search of GET /v2/sessions,
// one page of rows, and cursor pagination. Everything lives in the address, under the API's own
// names, and the address's parameters are passed to the API as they are: a reload, a shared link
// and the back button all show the same page, a link may carry filters the form has no field for
// (extra.<key>, conversation_id, min_duration_ms ...; shown as removable chips), and the API's 400
// names a bad value. history.state.page counts how deep the cursor chain is.
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

const form = document.getElementById("filters");
const rows = document.querySelector("#sessions tbody");
const message = document.getElementById("message");
const newer = document.getElementById("newer");
const older = document.getElementById("older");
const pageLabel = document.getElementById("page-label");
const otherFilters = document.getElementById("other-filters");

/** The form's fields (tag is a comma-separated list in the form, repeated in the address). */
const FIELDS = [
  "q",
  "tag",
  "end_state",
  "has_errors",
  "model",
  "min_cost",
  "max_cost",
  "from",
  "to",
  "agent_id",
  "sort",
  "order",
  "limit",
];
/**
 * The score filter's fields: the address's first `score.<name>=<value>` (the API's own form);
 * more of them are kept as chips.
 */
const isScore = (name) => name.startsWith("score.") && name.length > "score.".length;
/** The index, among the address's parameters, of the score filter the form shows, or -1. */
const formScoreIndex = (entries) => entries.findIndex(([name]) => isScore(name));
/** The form's values that are the API's defaults, left out of the address. */
const DEFAULTS = { sort: "start_time", order: "desc", limit: "50" };
const COLUMNS = 9;
let nextCursor = null;
// Each load gets a number; an answer to an older load (a slow page overtaken) is dropped.
let loads = 0;

const address = (params) => {
  const search = params.toString();
  return search === "" ? "/sessions" : `/sessions?${search}`;
};

/** The query of GET /v2/sessions: every parameter of the address, repeated ones as arrays. */
function queryFromAddress() {
  const params = new URLSearchParams(location.search);
  const query = {};
  for (const name of new Set(params.keys())) {
    const values = params.getAll(name).filter((v) => v !== "");
    if (values.length > 0) query[name] = values.length > 1 || name === "tag" ? values : values[0];
  }
  return query;
}

/** Shows the address's filters in the form, and the ones it has no field for as chips. */
function formFromAddress() {
  const params = new URLSearchParams(location.search);
  form.elements.tag.value = params.getAll("tag").join(", ");
  for (const name of FIELDS) {
    if (name === "tag" || name === "from" || name === "to") continue;
    form.elements[name].value = params.get(name) ?? DEFAULTS[name] ?? "";
  }
  // datetime-local has no zone: the form shows and takes UTC, as its label says.
  for (const name of ["from", "to"])
    form.elements[name].value = (params.get(name) ?? "").replace(/Z$/, "").slice(0, 19);
  const entries = [...params];
  const scoreAt = formScoreIndex(entries);
  form.elements.score_name.value = scoreAt < 0 ? "" : entries[scoreAt][0].slice("score.".length);
  form.elements.score_value.value = scoreAt < 0 ? "" : entries[scoreAt][1];
  const others = entries
    .map(([name, value], index) => ({ name, value, index }))
    .filter(({ name, index }) => !FIELDS.includes(name) && name !== "cursor" && index !== scoreAt);
  const without = (index) => new URLSearchParams(entries.filter((_, i) => i !== index));
  fill(
    otherFilters,
    others.length > 0 ? "Also filtered by: " : null,
    others.map(({ name, value, index }) =>
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
            onclick: () => navigate(without(index)),
          },
          "×",
        ),
      ),
    ),
  );
  otherFilters.hidden = others.length === 0;
  showSort(params.get("sort") ?? DEFAULTS.sort, params.get("order") ?? DEFAULTS.order);
}

/** The address for the form's filters (first page); parameters the form has no field for are kept. */
function addressFromForm() {
  const params = new URLSearchParams();
  const value = (name) => form.elements[name].value.trim();
  if (value("q") !== "") params.set("q", value("q"));
  for (const tag of value("tag").split(",")) if (tag.trim() !== "") params.append("tag", tag.trim());
  for (const name of ["end_state", "has_errors", "model", "min_cost", "max_cost", "agent_id"]) {
    if (value(name) !== "") params.set(name, value(name));
  }
  for (const name of ["from", "to"]) {
    const time = value(name);
    if (time !== "") params.set(name, `${time.length === 16 ? `${time}:00` : time}Z`);
  }
  for (const name of ["sort", "order", "limit"]) {
    if (value(name) !== DEFAULTS[name]) params.set(name, value(name));
  }
  // The score filter: a value alone means any value of that name ("*").
  if (value("score_name") !== "") params.append(`score.${value("score_name")}`, value("score_value") || "*");
  const entries = [...new URLSearchParams(location.search)];
  const scoreAt = formScoreIndex(entries);
  entries.forEach(([name, other], index) => {
    if (!FIELDS.includes(name) && name !== "cursor" && index !== scoreAt) params.append(name, other);
  });
  return params;
}

/** Goes to the first page of these parameters. */
function navigate(params) {
  params.delete("cursor");
  history.pushState({ page: 1 }, "", address(params));
  load();
}

/** The sortable columns say which one sorts the list, and which way (aria-sort). */
function showSort(sort, order) {
  for (const th of document.querySelectorAll("#sessions th[data-sort]")) {
    if (th.dataset.sort === sort) th.setAttribute("aria-sort", order === "asc" ? "ascending" : "descending");
    else th.removeAttribute("aria-sort");
  }
}

for (const th of document.querySelectorAll("#sessions th[data-sort]")) {
  th.querySelector("button").addEventListener("click", () => {
    const params = new URLSearchParams(location.search);
    const sort = params.get("sort") ?? DEFAULTS.sort;
    const order = params.get("order") ?? DEFAULTS.order;
    // The sorted column again turns the order round; another column sorts by it, highest first.
    const next = th.dataset.sort === sort ? (order === "desc" ? "asc" : "desc") : "desc";
    params.set("sort", th.dataset.sort);
    params.set("order", next);
    for (const [name, value] of Object.entries(DEFAULTS)) if (params.get(name) === value) params.delete(name);
    navigate(params);
  });
}

/** Where a search matched, as the API's snippet with its highlights marked: text nodes and <mark>s only. */
export function marked(snippet, highlights) {
  const text = typeof snippet === "string" ? snippet : "";
  const parts = [];
  let at = 0;
  for (const pair of Array.isArray(highlights) ? highlights : []) {
    const [start, end] = Array.isArray(pair) ? pair : [];
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < at || end <= start || end > text.length) continue;
    if (start > at) parts.push(text.slice(at, start));
    parts.push(h("mark", {}, text.slice(start, end)));
    at = end;
  }
  if (at < text.length) parts.push(text.slice(at));
  return parts;
}

const FIELD_NAMES = {
  prompt: "Prompt",
  completion: "Completion",
  input: "Tool input",
  output: "Tool output",
  error_type: "Error type",
  code: "Error code",
  details: "Error details",
  end_state_reason: "End reason",
  tags: "Tags",
};

function matchRow(session, match) {
  const href = `/sessions/${encodeURIComponent(session.id)}#event=${encodeURIComponent(match.event_id ?? "")}`;
  return h(
    "tr",
    { class: "match-row", "data-match-for": session.id, "data-field": match.field },
    h(
      "td",
      { colspan: COLUMNS, class: "match" },
      h("span", { class: "match-field" }, FIELD_NAMES[match.field] ?? String(match.field)),
      h("span", { class: "snippet" }, marked(match.snippet, match.highlights)),
      match.event_id ? [" ", h("a", { href, class: "match-link" }, "open the event")] : null,
    ),
  );
}

function row({ session, stats, match }) {
  const href = `/sessions/${encodeURIComponent(session.id)}`;
  const tokens = (stats.prompt_tokens ?? 0) + (stats.completion_tokens ?? 0);
  const tr = h(
    "tr",
    { "data-session-id": session.id, class: match ? "has-match" : null },
    h("td", { class: "id" }, h("a", { href, title: session.id }, session.id)),
    h("td", { class: "time", title: session.init_timestamp }, formatTime(session.init_timestamp)),
    h("td", {}, stateBadge(session)),
    h("td", { class: "num" }, formatDuration(stats.duration_ms)),
    h(
      "td",
      { class: "num", title: `${stats.error_count ?? 0} error events` },
      formatInt(stats.events),
      stats.error_count > 0 ? h("span", { class: "error-count" }, ` (${stats.error_count} err)`) : null,
    ),
    h(
      "td",
      {
        class: "num",
        title: `${formatInt(stats.prompt_tokens)} prompt + ${formatInt(stats.completion_tokens)} completion`,
      },
      formatInt(tokens),
    ),
    h("td", { class: "num" }, formatCost(stats.cost)),
    h(
      "td",
      { class: "tags" },
      (session.tags ?? []).map((tag) => h("span", { class: "tag" }, tag)),
    ),
    h("td", { class: "reason" }, session.end_state_reason ?? ""),
  );
  return match ? [tr, matchRow(session, match)] : tr;
}

async function load() {
  const load = ++loads;
  formFromAddress();
  const depth = history.state?.page ?? 1;
  pageLabel.textContent = `Page ${depth}`;
  message.textContent = "Loading…";
  try {
    const body = await api("/v2/sessions", queryFromAddress());
    if (load !== loads) return;
    fill(rows, body.sessions.map(row));
    nextCursor = body.next_cursor;
    message.textContent = body.sessions.length === 0 ? "No sessions match these filters." : "";
    rows.dataset.count = String(body.sessions.length);
  } catch (error) {
    if (load !== loads || (error instanceof ApiError && error.status === 401)) return;
    fill(rows);
    nextCursor = null;
    message.textContent = describeError(error);
  }
  older.disabled = !nextCursor;
  newer.disabled = depth <= 1;
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  navigate(addressFromForm());
});
// A new sort or order applies at once.
for (const name of ["sort", "order"]) form.elements[name].addEventListener("change", () => form.requestSubmit());
form.addEventListener("reset", (event) => {
  event.preventDefault(); // load() empties the form from the new address
  navigate(new URLSearchParams());
});
older.addEventListener("click", () => {
  if (!nextCursor) return;
  const params = new URLSearchParams(location.search);
  params.set("cursor", nextCursor);
  history.pushState({ page: (history.state?.page ?? 1) + 1 }, "", address(params));
  load();
});
newer.addEventListener("click", () => history.back());
window.addEventListener("popstate", () => {
  if (!document.getElementById("app").hidden) load();
});

startPage({
  start() {
    document.getElementById("app").hidden = false;
    load();
  },
  stop() {
    loads++;
    fill(rows);
  },
});
