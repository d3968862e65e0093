// The sessions page (GET /): the filters of GET /v2/sessions, one page of rows, and cursor
// pagination. The filters and the cursor live in the address, so a reload, a shared link and the
// back button all show the same page; history.state.page counts how deep the cursor chain is.
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

const FILTERS = ["tag", "end_state", "from", "to", "agent_id", "q", "limit"];
let nextCursor = null;
// Each load gets a number; an answer to an older load (a slow page overtaken) is dropped.
let loads = 0;

/** The query of GET /v2/sessions from the address: tags repeated, times as UTC ISO strings. */
function queryFromAddress() {
  const params = new URLSearchParams(location.search);
  const query = {};
  for (const name of FILTERS) {
    const values = params.getAll(name).filter((v) => v !== "");
    if (values.length > 0) query[name] = name === "tag" ? values : values[0];
  }
  const cursor = params.get("cursor");
  if (cursor) query.cursor = cursor;
  return query;
}

/** Shows the address's filters in the form. */
function formFromAddress() {
  const params = new URLSearchParams(location.search);
  form.elements.tag.value = params.getAll("tag").join(", ");
  for (const name of ["end_state", "agent_id", "q"]) form.elements[name].value = params.get(name) ?? "";
  form.elements.limit.value = params.get("limit") ?? "50";
  // datetime-local has no zone: the form shows and takes UTC, as its label says.
  for (const name of ["from", "to"])
    form.elements[name].value = (params.get(name) ?? "").replace(/Z$/, "").slice(0, 19);
}

/** The address for the form's filters (first page). */
function addressFromForm() {
  const params = new URLSearchParams();
  const tags = form.elements.tag.value.split(",").map((tag) => tag.trim());
  for (const tag of tags) if (tag !== "") params.append("tag", tag);
  for (const name of ["end_state", "agent_id", "q"]) {
    const value = form.elements[name].value.trim();
    if (value !== "") params.set(name, value);
  }
  for (const name of ["from", "to"]) {
    const value = form.elements[name].value;
    if (value !== "") params.set(name, `${value.length === 16 ? `${value}:00` : value}Z`);
  }
  if (form.elements.limit.value !== "50") params.set("limit", form.elements.limit.value);
  const search = params.toString();
  return search === "" ? "/" : `/?${search}`;
}

function row({ session, stats }) {
  const href = `/sessions/${encodeURIComponent(session.id)}`;
  const tokens = (stats.prompt_tokens ?? 0) + (stats.completion_tokens ?? 0);
  return h(
    "tr",
    { "data-session-id": session.id },
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
  history.pushState({ page: 1 }, "", addressFromForm());
  load();
});
form.addEventListener("reset", (event) => {
  event.preventDefault(); // load() empties the form from the new address
  history.pushState({ page: 1 }, "", "/");
  load();
});
older.addEventListener("click", () => {
  if (!nextCursor) return;
  const params = new URLSearchParams(location.search);
  params.set("cursor", nextCursor);
  history.pushState({ page: (history.state?.page ?? 1) + 1 }, "", `/?${params}`);
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
