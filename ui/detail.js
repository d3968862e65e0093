// The detail panel of the selected event: its times and links, then by kind the prompt and
// completion as chat messages, the tool's input and output, the action's params and result, the
// error's details and logs, the OpenTelemetry span it was made from (ui/otel.js), and last every
// other field it was sent with (G5). All as text.
import { asText, fill, formatCost, formatDuration, formatInt, formatTime, h, micros } from "./common.js";
import { spanOf, spanSection } from "./otel.js";
import { eventLabel } from "./timeline.js";

/** The fields shown in their own place; everything else goes under "Other fields". */
const SHOWN = new Set([
  "id",
  "type",
  "event_type",
  "session_id",
  "init_timestamp",
  "timestamp",
  "end_timestamp",
  "agent_id",
  "model",
  "prompt",
  "completion",
  "prompt_tokens",
  "completion_tokens",
  "cost",
  "cost_source",
  "name",
  "tool_name",
  "input",
  "output",
  "params",
  "returns",
  "logs",
  "action_type",
  "screenshot",
  "error_type",
  "code",
  "details",
  "trigger_event_id",
  "trigger_event_type",
  "parent_id",
]);

const given = (value) => value !== undefined && value !== null;

/** A prompt (a string, or a list of {role, content}) as a list of messages. */
function promptMessages(prompt) {
  if (typeof prompt === "string") return [{ role: "user", content: prompt }];
  if (Array.isArray(prompt)) return prompt.map((m) => (isMessage(m) ? m : { role: "message", content: m }));
  if (isMessage(prompt)) return [prompt];
  if (prompt && Array.isArray(prompt.messages)) return promptMessages(prompt.messages);
  return [{ role: "prompt", content: prompt }];
}

const isMessage = (value) =>
  typeof value === "object" && value !== null && !Array.isArray(value) && ("role" in value || "content" in value);

/** A message's content: a string, or the text parts of a list of parts, or JSON for the rest. */
function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content) && content.every((part) => typeof part?.text === "string")) {
    return content.map((part) => part.text).join("\n");
  }
  return asText(content ?? "");
}

function message(m, extraClass = "") {
  const role = typeof m.role === "string" && m.role !== "" ? m.role : "message";
  const rest = Object.fromEntries(Object.entries(m).filter(([key]) => key !== "role" && key !== "content"));
  return h(
    "div",
    { class: `msg msg-${/^[a-z]+$/.test(role) ? role : "other"} ${extraClass}`.trim(), "data-role": role },
    h("div", { class: "msg-role" }, role),
    h("div", { class: "msg-content" }, contentText(m.content)),
    Object.keys(rest).length > 0 ? h("pre", { class: "msg-extra" }, asText(rest)) : null,
  );
}

function chat(event) {
  const parts = [];
  if (given(event.prompt)) {
    parts.push(
      h("h3", {}, "Prompt"),
      h(
        "div",
        { class: "chat", id: "prompt" },
        promptMessages(event.prompt).map((m) => message(m)),
      ),
    );
  }
  if (given(event.completion)) {
    const completion = isMessage(event.completion)
      ? event.completion
      : { role: "assistant", content: event.completion };
    parts.push(
      h("h3", {}, "Completion"),
      h("div", { class: "chat", id: "completion" }, message(completion, "msg-completion")),
    );
  }
  if (parts.length === 0) parts.push(h("p", { class: "muted" }, "No prompt or completion was sent with this event."));
  return parts;
}

/** A labelled block of text or JSON, when the value was given. */
const block = (title, value, cls = "") =>
  given(value) ? [h("h3", {}, title), h("pre", { class: `value ${cls}`.trim() }, asText(value))] : [];

function facts(pairs) {
  const shown = pairs.filter(([, value]) => given(value) && value !== "");
  return h(
    "dl",
    { class: "facts" },
    shown.map(([name, value]) => [h("dt", {}, name), h("dd", {}, value instanceof Node ? value : String(value))]),
  );
}

/**
 * Fills the panel for one event; `select(id)` selects another event of the timeline (the error's
 * trigger) and answers false when it is not there.
 */
export function showEvent(panel, event, agents, select) {
  const start = micros(event.init_timestamp);
  const end = micros(event.end_timestamp);
  const agent = agents.find((a) => a.id === event.agent_id);
  /** A button that selects another event of the timeline, by its id. */
  const link = (id, cls) =>
    given(id)
      ? h(
          "button",
          {
            type: "button",
            class: `link-button ${cls}`,
            onclick: (e) => {
              const button = e.currentTarget;
              if (select(id) || button.disabled) return;
              button.disabled = true;
              button.after(" (not shown in the timeline)");
            },
          },
          String(id),
        )
      : null;
  const trigger = link(event.trigger_event_id, "trigger-link");
  const span = spanOf(event);

  const body = [];
  if (event.type === "llm") {
    body.push(
      facts([
        ["Model", event.model],
        ["Prompt tokens", formatInt(event.prompt_tokens)],
        ["Completion tokens", formatInt(event.completion_tokens)],
        ["Cost", given(event.cost) ? formatCost(event.cost) : "unknown"],
        ["Cost source", event.cost_source],
        ["Thread", event.thread_id],
      ]),
      chat(event),
      block("Params", event.params),
      block("Returns", event.returns),
    );
  } else if (event.type === "tool") {
    body.push(facts([["Tool", event.name]]), block("Input", event.input), block("Output", event.output));
  } else if (event.type === "action") {
    body.push(
      facts([
        ["Action type", event.action_type],
        ["Name", event.name],
      ]),
      block("Params", event.params),
      block("Returns", event.returns),
      block("Screenshot", event.screenshot),
    );
  } else if (event.type === "error") {
    body.push(
      facts([
        ["Error type", event.error_type],
        ["Code", given(event.code) ? asText(event.code) : undefined],
        ["Triggered by", trigger],
        ["Trigger kind", event.trigger_event_type],
      ]),
      block("Details", event.details, "error-details"),
    );
  }
  if (span) body.push(spanSection(span, facts, start));
  body.push(block("Logs", event.logs, "logs"));
  const others = Object.fromEntries(
    Object.entries(event).filter(([key]) => !SHOWN.has(key) && !(key === "otel" && span)),
  );
  if (Object.keys(others).length > 0) body.push(block("Other fields", others));

  fill(
    panel,
    h(
      "header",
      { class: "detail-head" },
      h("span", { class: `kind-chip kind-${event.type}` }, event.type),
      h("h2", {}, eventLabel(event)),
    ),
    facts([
      ["Event id", event.id],
      ["Parent", link(event.parent_id, "parent-link")],
      ["Started", formatTime(event.init_timestamp, true)],
      ["Ended", given(event.end_timestamp) ? formatTime(event.end_timestamp, true) : "—"],
      ["Duration", Number.isFinite(end) ? formatDuration((end - start) / 1000) : undefined],
      [
        "Agent",
        given(event.agent_id) ? (agent?.name ? `${agent.name} (${event.agent_id})` : event.agent_id) : undefined,
      ],
    ]),
    body,
  );
  panel.dataset.eventId = event.id;
}

export function showNothing(panel) {
  fill(panel, h("p", { class: "muted" }, "Select an event in the timeline to see its details."));
  delete panel.dataset.eventId;
}
