// Scores in the pages (issue 25, decision 037): a list of scores as a table, and the annotation
// form of a signed-in person whose role may score (annotator and above): thumbs up/down (the
// boolean score "thumbs"), a score config's labels, true/false or a number in its range, and a
// comment, sent as POST /v2/scores with source "annotation". Scores' names, labels, comments and
// authors are whatever clients sent: they only ever reach the page as text (h() and textContent).
import { asText, describeError, formatTime, h, send, signedIn } from "./common.js";

/** The boolean score the thumbs buttons give. */
export const THUMBS = "thumbs";
const SCORING_ROLES = new Set(["annotator", "editor", "admin"]);

/** Whether the page's reader may add scores: a signed-in person with the role annotator or above, or the owner. */
export function mayAnnotate() {
  const me = signedIn();
  return Boolean(me && (me.owner || SCORING_ROLES.has(me.role)));
}

/** A score's value as text: a number as it is, a label, true/false (up/down for "thumbs"). */
export function valueText(score) {
  if (score.data_type === "boolean" || typeof score.value === "boolean") {
    const yes = score.value === true || score.value === 1;
    return score.name === THUMBS ? (yes ? "up" : "down") : yes ? "true" : "false";
  }
  return asText(score.value);
}

const authorText = (author) =>
  author ? `${author.type === "person" ? "person" : "API key"} ${author.id ?? ""}`.trim() : "—";

/**
 * A table of scores, newest first as the API answers them; `withTarget` adds the column that
 * tells the session's own scores from its events'.
 */
export function scoresTable(scores, { withTarget = false, empty = "No scores yet." } = {}) {
  if (scores.length === 0) return h("p", { class: "muted scores-empty" }, empty);
  return h(
    "table",
    { class: "sessions compact scores-table" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ["Name", "Value", withTarget ? "Of" : null, "Source", "Author", "Comment", "Time (UTC)"]
          .filter(Boolean)
          .map((label) => h("th", { scope: "col" }, label)),
      ),
    ),
    h(
      "tbody",
      {},
      scores.map((score) =>
        h(
          "tr",
          { "data-score-id": score.id, "data-name": score.name, "data-source": score.source },
          h("td", { class: "score-name" }, score.name),
          h("td", { class: "score-value", "data-type": score.data_type }, valueText(score)),
          withTarget
            ? h(
                "td",
                { class: "score-target" },
                score.event_id
                  ? ["event ", h("code", {}, score.event_id)]
                  : score.conversation_id
                    ? "conversation"
                    : "session",
              )
            : null,
          h("td", { class: "score-source" }, score.source),
          h("td", { class: "score-author" }, authorText(score.author)),
          h("td", { class: "score-comment" }, score.comment ?? ""),
          h("td", { class: "time", title: score.timestamp }, formatTime(score.timestamp)),
        ),
      ),
    ),
  );
}

/**
 * The annotation form for one target: { session_id, event_id? }. `configs` are the project's
 * score configs (GET /v2/score-configs); `onSaved()` is called after a score is stored. Every
 * button posts one score with the comment typed so far.
 */
export function annotateForm(target, configs, onSaved) {
  const where = target.event_id ? "event" : "session";
  const id = (name) => `${where}-${name}`;
  const comment = h("input", {
    id: id("score-comment"),
    class: "score-comment-input",
    type: "text",
    maxlength: 10000,
    autocomplete: "off",
    placeholder: "Why (optional)",
  });
  const status = h("p", { class: "message annotate-status", role: "status" });
  const buttons = [];

  async function save(name, value, dataType) {
    for (const button of buttons) button.disabled = true;
    status.textContent = "Saving…";
    delete status.dataset.state;
    try {
      const score = { name, value, session_id: target.session_id, source: "annotation" };
      if (dataType) score.data_type = dataType;
      if (target.event_id) score.event_id = target.event_id;
      if (comment.value.trim() !== "") score.comment = comment.value.trim();
      await send("POST", "/v2/scores", { scores: [score] });
      status.textContent = `Saved: ${name} = ${valueText({ name, value, data_type: dataType })}.`;
      status.dataset.state = "saved";
      comment.value = "";
      await onSaved?.();
    } catch (error) {
      status.textContent = describeError(error);
      status.dataset.state = "error";
    } finally {
      for (const button of buttons) button.disabled = false;
    }
  }

  const button = (label, cls, onclick, extra = {}) => {
    const b = h("button", { type: "button", class: `secondary ${cls}`, onclick, ...extra }, label);
    buttons.push(b);
    return b;
  };

  const thumbsConfig = configs.find((c) => c.name === THUMBS);
  const thumbs =
    !thumbsConfig || thumbsConfig.data_type === "boolean"
      ? h(
          "div",
          { class: "annotate-row" },
          h("span", { class: "annotate-label" }, "Thumbs"),
          button("▲ Up", "thumbs-up", () => save(THUMBS, true, "boolean"), { "aria-label": "Thumbs up" }),
          button("▼ Down", "thumbs-down", () => save(THUMBS, false, "boolean"), { "aria-label": "Thumbs down" }),
        )
      : null;

  // A config's controls: its labels, true/false, or a number within its range.
  const others = configs.filter((c) => c.name !== THUMBS);
  const valueArea = h("span", { class: "annotate-values" });
  const choose = h(
    "select",
    { id: id("score-config"), class: "score-config", "aria-label": "Score config" },
    others.map((c) => h("option", { value: c.name }, c.name)),
  );
  const showValues = () => {
    const config = others.find((c) => c.name === choose.value);
    valueArea.replaceChildren();
    if (!config) return;
    if (config.data_type === "categorical") {
      for (const label of config.categories ?? []) {
        valueArea.append(
          button(label, "score-label", () => save(config.name, label, "categorical"), { "data-label": label }),
        );
      }
    } else if (config.data_type === "boolean") {
      valueArea.append(
        button("true", "score-true", () => save(config.name, true, "boolean")),
        button("false", "score-false", () => save(config.name, false, "boolean")),
      );
    } else {
      const number = h("input", {
        type: "number",
        class: "score-number",
        step: "any",
        min: config.min ?? undefined,
        max: config.max ?? undefined,
        required: true,
        "aria-label": `Value of ${config.name}`,
        placeholder: config.min !== null && config.max !== null ? `${config.min} to ${config.max}` : "a number",
      });
      valueArea.append(
        number,
        button("Save", "score-save", () => {
          if (number.value === "" || !number.checkValidity()) {
            status.textContent = `Give a number${number.min !== "" ? ` from ${number.min}` : ""}${number.max !== "" ? ` to ${number.max}` : ""}.`;
            status.dataset.state = "error";
            return;
          }
          save(config.name, Number(number.value), "numeric");
        }),
      );
    }
  };
  choose.addEventListener("change", showValues);
  showValues();

  return h(
    "div",
    { class: "annotate", "data-target": where, "aria-label": `Score this ${where}` },
    h(
      "label",
      { class: "annotate-row", for: id("score-comment") },
      h("span", { class: "annotate-label" }, "Comment"),
      comment,
    ),
    thumbs,
    others.length > 0
      ? h("div", { class: "annotate-row" }, h("span", { class: "annotate-label" }, "Score"), choose, valueArea)
      : null,
    status,
  );
}
