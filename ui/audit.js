// The project's audit trail (issue 26, decision 035): GET /v2/audit, newest first, a page at a
// time; "Older" passes the page's next_cursor back. Every field is shown as text.
import { api, describeError, fill, formatTime, h, signedIn, startPage } from "./common.js";

const $ = (id) => document.getElementById(id);
let cursor = null;

/** Who did it: the person's name (and id), an API key (`key:<prefix>`), or the command line. */
const who = (record) => (record.actor_name && record.actor_name !== record.actor ? record.actor_name : record.actor);

const details = (value) => {
  const entries = Object.entries(value ?? {});
  return entries.map(([name, one]) => `${name}: ${typeof one === "string" ? one : JSON.stringify(one)}`).join("; ");
};

async function more() {
  const button = $("older");
  button.disabled = true;
  try {
    const page = await api("/v2/audit", { limit: 50, cursor });
    $("audit-list").tBodies[0].append(
      ...page.records.map((record) =>
        h(
          "tr",
          { "data-action": record.action },
          h("td", {}, formatTime(record.at)),
          h("td", { title: record.actor }, who(record)),
          h("td", {}, record.address),
          h("td", {}, h("code", {}, record.action)),
          h("td", {}, record.target ?? "—"),
          h("td", { class: "audit-details" }, details(record.details)),
        ),
      ),
    );
    cursor = page.next_cursor;
    button.hidden = cursor === null;
    if ($("audit-list").tBodies[0].rows.length === 0) $("message").textContent = "Nothing recorded yet.";
  } catch (error) {
    $("message").textContent = describeError(error);
  } finally {
    button.disabled = false;
  }
}

function start() {
  $("app").hidden = false;
  const me = signedIn();
  if (me) $("audit-title").textContent = `Audit trail: ${me.project}`;
  cursor = null;
  fill($("audit-list").tBodies[0]);
  $("older").onclick = more;
  more();
}

startPage({ start, stop: () => {} });
