// One session's page (GET /sessions/<id>, the target of session_url): totals, agents, the
// waterfall timeline and the detail of the selected event. While the session has no end_state
// the page polls GET /v2/sessions/<id> every 3 s, and fetches the events again only when the
// stats say they changed; it stops once the session has ended.

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
import { showEvent, showNothing } from "./detail.js";
import { spanOf } from "./otel.js";
import { annotateForm, mayAnnotate, scoresTable } from "./scores.js";
import { Timeline } from "./timeline.js";

const POLL_MS = 3000;
const PAGE = 1000; // events per request, the read API's maximum

/** The id in the address, as session_url percent-encodes it (a malformed escape is kept as typed). */
function idFromAddress() {
  const raw = location.pathname.replace(/^\/sessions\//, "");
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

const sessionId = idFromAddress();
const base = `/v2/sessions/${encodeURIComponent(sessionId)}`;
const app = document.getElementById("app");
const message = document.getElementById("message");
const detail = document.getElementById("detail");
const live = document.getElementById("live");

let agents = [];
let eventsVersion = ""; // stats.events and last_event_at of the events shown
let timer = null;
let generation = 0; // bumped by stop(): answers to an abandoned run are dropped

let scores = []; // the session's and its events' (GET /v2/sessions/<id> answers them)
let configs = []; // the project's score configs, for the annotation forms
let sessionAnnotate = null; // the session's annotation form, made once (it keeps what is typed)

const timeline = new Timeline(document.getElementById("timeline"), {
  onSelect: (event) => showDetail(event),
});

/** The selected event in the panel, then its scores and (for an annotator) its annotation form. */
function showDetail(event) {
  showEvent(detail, event, agents, (id) => timeline.selectId(id));
  const form = mayAnnotate()
    ? annotateForm({ session_id: sessionId, event_id: event.id }, configs, reloadScores)
    : null;
  detail.append(
    h(
      "section",
      { class: "event-scores", id: "event-scores" },
      h("h3", {}, "Scores"),
      form,
      h("div", { id: "event-score-list" }),
    ),
  );
  showEventScores();
}

/** Whether a score judges this event: by its id, or by its span's id for an event made from OTLP. */
function scoresOf(event) {
  const span = spanOf(event);
  const ids = new Set([event.id, span?.spanId, span?.span_id].filter((id) => typeof id === "string" && id !== ""));
  return scores.filter((score) => score.event_id !== null && ids.has(score.event_id));
}

function showEventScores() {
  const list = document.getElementById("event-score-list");
  const event = timeline.selectedEvent;
  if (!list || !event || detail.dataset.eventId !== event.id) return;
  fill(list, scoresTable(scoresOf(event), { empty: "No scores of this event." }));
}

function showScores(list) {
  scores = list;
  const box = document.getElementById("scores");
  box.dataset.count = String(list.length);
  fill(box, scoresTable(list, { withTarget: true, empty: "No scores of this session or its events." }));
  showEventScores();
}

/** After an annotation: the session's scores again. */
async function reloadScores() {
  const body = await api(base);
  showScores(body.scores ?? []);
}

document.title = `${sessionId} · agentmon`;
document.getElementById("crumb-session").textContent = sessionId;

function showTotals({ session, stats }) {
  fill(document.getElementById("session-title"), session.id);
  fill(document.getElementById("session-state"), stateBadge(session));
  const counts = stats.event_counts ?? {};
  const item = (name, value, key) =>
    h("div", { class: "total", "data-total": key }, h("dt", {}, name), h("dd", {}, value));
  fill(
    document.getElementById("totals"),
    item("Events", formatInt(stats.events), "events"),
    item("LLM", formatInt(counts.llm), "llm"),
    item("Tool", formatInt(counts.tool), "tool"),
    item("Action", formatInt(counts.action), "action"),
    item("Errors", formatInt(stats.error_count), "errors"),
    item("Prompt tokens", formatInt(stats.prompt_tokens), "prompt_tokens"),
    item("Completion tokens", formatInt(stats.completion_tokens), "completion_tokens"),
    item("Cost", formatCost(stats.cost), "cost"),
    item("Duration", formatDuration(stats.duration_ms), "duration"),
  );
  fill(
    document.getElementById("session-meta"),
    h("span", {}, `Started ${formatTime(session.init_timestamp)} UTC`),
    session.end_timestamp ? h("span", {}, `Ended ${formatTime(session.end_timestamp)} UTC`) : null,
    session.end_state_reason ? h("span", { class: "reason" }, `Reason: ${session.end_state_reason}`) : null,
    (session.tags ?? []).map((tag) => h("span", { class: "tag" }, tag)),
  );
}

function showAgents(list) {
  agents = list;
  const items = list.map((agent) => {
    const { id, name, ...extra } = agent;
    return h(
      "li",
      { "data-agent-id": id },
      h("strong", {}, name ?? "(no name)"),
      " ",
      h("code", {}, id),
      Object.keys(extra).length > 0 ? h("span", { class: "muted" }, ` ${JSON.stringify(extra)}`) : null,
    );
  });
  fill(
    document.getElementById("agents"),
    items.length > 0 ? items : h("li", { class: "muted" }, "No agents registered."),
  );
}

function showLegend(counts) {
  const legend = document.getElementById("legend");
  fill(
    legend,
    ["llm", "tool", "action", "error"].map((kind) => {
      const box = h("input", { type: "checkbox", checked: !timeline.hidden.has(kind), "data-kind": kind });
      box.addEventListener("change", () => timeline.setKindHidden(kind, !box.checked));
      return h(
        "label",
        { class: `legend-item kind-${kind}` },
        box,
        h("span", { class: "swatch" }),
        `${kind} (${formatInt(counts[kind] ?? 0)})`,
      );
    }),
  );
}

/** Every event of the session, a page of PAGE at a time; the timeline shows them as they come. */
async function loadEvents(run) {
  const events = [];
  let cursor;
  do {
    const body = await api(`${base}/events`, { limit: PAGE, cursor });
    if (run !== generation) return;
    events.push(...body.events);
    cursor = body.next_cursor;
    // The first page is drawn at once; the rest replace it when complete, to keep the selection stable.
    if (events.length === body.events.length || !cursor) timeline.setEvents(events);
  } while (cursor);
  // The selected event may have changed (update_events): show its new version.
  const selected = timeline.selectedEvent;
  if (selected && detail.dataset.eventId === selected.id) showDetail(selected);
}

async function refresh(run) {
  const body = await api(base);
  if (run !== generation) return;
  message.textContent = "";
  showTotals(body);
  showAgents(body.agents ?? []);
  showScores(body.scores ?? []);
  if (mayAnnotate() && !sessionAnnotate) {
    sessionAnnotate = annotateForm({ session_id: sessionId }, configs, reloadScores);
    fill(document.getElementById("session-annotate"), sessionAnnotate);
  }
  showLegend(body.stats.event_counts ?? {});
  app.hidden = false;
  const version = `${body.stats.events}|${body.stats.last_event_at}`;
  if (version !== eventsVersion) {
    const first = eventsVersion === "";
    if (first) message.textContent = `Loading ${formatInt(body.stats.events)} events…`;
    await loadEvents(run);
    if (run !== generation) return;
    eventsVersion = version;
    message.textContent = "";
    // A link to one event (the sessions list's search match): #event=<id> selects it once loaded.
    const wanted = new URLSearchParams(location.hash.slice(1)).get("event");
    if (first && wanted) timeline.selectId(wanted);
  }
  const running = body.session.end_state === null || body.session.end_state === undefined;
  live.hidden = !running;
  if (running) timer = setTimeout(() => poll(run), POLL_MS);
}

async function poll(run) {
  try {
    await refresh(run);
  } catch (error) {
    if (run !== generation || (error instanceof ApiError && error.status === 401)) return;
    if (error instanceof ApiError && error.status === 404) {
      app.hidden = true;
      live.hidden = true;
      message.textContent = `Session "${sessionId}" was not found in this project. It may have been deleted, or it belongs to a project your API key cannot see.`;
      message.dataset.state = "not-found";
      return;
    }
    message.textContent = describeError(error);
    // A passing failure (the server restarting, a 503, a 429) is tried again at the next tick.
    const passing = !(error instanceof ApiError) || error.status === 0 || error.status === 429 || error.status >= 500;
    if (passing) timer = setTimeout(() => poll(run), POLL_MS);
  }
}

startPage({
  start() {
    const run = ++generation;
    message.textContent = "Loading…";
    delete message.dataset.state;
    eventsVersion = "";
    showNothing(detail);
    sessionAnnotate = null;
    // The configs name the scores an annotator may give; a reader with a key needs none.
    const ready = mayAnnotate()
      ? api("/v2/score-configs").then((body) => {
          configs = body.configs ?? [];
        })
      : Promise.resolve();
    ready
      .catch(() => {})
      .then(() => {
        if (run === generation) poll(run);
      });
  },
  stop() {
    generation++;
    clearTimeout(timer);
    app.hidden = true;
    live.hidden = true;
  },
});
