// A project's settings (issue 26, decision 035): its API keys, its members and their roles, its
// retention; and, for the instance owner, a new project. Every write goes through send() (the
// CSRF token and the project); the controls a role may not use are not shown, and the API
// refuses them anyway, so hiding them is a courtesy, not the protection.
import { api, describeError, fill, formatTime, h, send, signedIn, startPage } from "./common.js";

const $ = (id) => document.getElementById(id);
const ROLES = ["viewer", "annotator", "editor", "admin"];

let members = [];

function say(text) {
  $("message").textContent = text;
}

const failed = (error) => say(describeError(error));

/** Shows a secret once (a key, an invitation link) with a button that copies it. */
function showOnce(box, code, button, secret) {
  code.textContent = secret;
  box.hidden = false;
  button.textContent = "Copy";
  button.onclick = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      button.textContent = "Copied";
    } catch {
      // No clipboard (an insecure origin, a denied permission): select it for a manual copy.
      getSelection()?.selectAllChildren(code);
      button.textContent = "Selected: copy it";
    }
  };
}

async function loadKeys(admin) {
  const body = $("key-list").tBodies[0];
  const { keys } = await api("/v2/keys");
  fill(
    body,
    keys.map((key) =>
      h(
        "tr",
        { "data-key": key.prefix },
        h("td", {}, h("code", {}, key.prefix)),
        h("td", {}, key.scopes.join(", ")),
        h("td", {}, formatTime(key.created_at)),
        h("td", {}, key.revoked_at ? formatTime(key.revoked_at) : "—"),
        h(
          "td",
          {},
          admin && !key.revoked_at
            ? h(
                "button",
                {
                  type: "button",
                  class: "secondary revoke",
                  onclick: async () => {
                    if (!confirm(`Revoke the key ${key.prefix}…? Everything using it is refused from now on.`)) return;
                    try {
                      await send("POST", `/v2/keys/${encodeURIComponent(key.id)}/revoke`);
                      say(`The key ${key.prefix}… is revoked.`);
                      await loadKeys(admin);
                    } catch (error) {
                      failed(error);
                    }
                  },
                },
                "Revoke",
              )
            : null,
        ),
      ),
    ),
  );
  if (keys.length === 0) fill(body, h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No key yet.")));
}

async function loadMembers(me) {
  const body = $("member-list").tBodies[0];
  ({ members } = await api("/v2/members"));
  fill(
    body,
    members.map((member) => {
      const role = h(
        "select",
        { "aria-label": `Role of ${member.email}`, class: "member-role" },
        ROLES.map((name) => h("option", { value: name, selected: name === member.role }, name)),
      );
      role.addEventListener("change", async () => {
        try {
          await send("PUT", `/v2/members/${encodeURIComponent(member.user_id)}`, { role: role.value });
          say(`${member.email} is now ${role.value}.`);
        } catch (error) {
          failed(error);
        }
        await loadMembers(me).catch(failed);
      });
      const remove = h(
        "button",
        {
          type: "button",
          class: "secondary remove",
          onclick: async () => {
            if (!confirm(`Remove ${member.email} from ${me.project}? Their account stays.`)) return;
            try {
              await send("DELETE", `/v2/members/${encodeURIComponent(member.user_id)}`);
              say(`${member.email} is no longer a member.`);
              await loadMembers(me);
            } catch (error) {
              failed(error);
            }
          },
        },
        "Remove",
      );
      return h(
        "tr",
        { "data-member": member.email },
        h("td", {}, member.email),
        h("td", {}, member.name),
        h("td", {}, role),
        h("td", {}, formatTime(member.created_at)),
        h("td", {}, remove),
      );
    }),
  );
  if (members.length === 0) fill(body, h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No member yet.")));
}

const retentionText = (days) =>
  days === null
    ? "Sessions are kept as long as the server's default says (AGENTMON_RETENTION_DAYS)."
    : days === 0
      ? "Sessions are kept for ever."
      : `Sessions are kept ${days} day${days === 1 ? "" : "s"} after their last activity.`;

function showRetention(days) {
  $("retention-now").textContent = retentionText(days);
  const form = $("retention-form");
  const kind = days === null ? "default" : days === 0 ? "forever" : "days";
  for (const radio of form.elements.retention) radio.checked = radio.value === kind;
  $("retention-days").value = kind === "days" ? String(days) : "";
}

async function start() {
  $("app").hidden = false;
  const me = signedIn();
  if (!me) {
    say("The settings are a signed-in person's page: sign out of the API key and sign in.");
    for (const id of ["keys", "members", "retention"]) $(id).hidden = true;
    return;
  }
  $("settings-title").textContent = `Project settings: ${me.project}`;
  const admin = me.owner || me.role === "admin";
  const editor = admin || me.role === "editor";

  if (me.owner) {
    $("new-project").hidden = false;
    $("project-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      const name = $("project-name").value.trim();
      try {
        await send("POST", "/v2/projects", { name });
        sessionStorage.setItem("agentmon.project", name);
        location.reload();
      } catch (error) {
        failed(error);
      }
    });
  }

  const roleName = me.role ?? "none";
  if (admin) {
    $("new-key-form").hidden = false;
    $("member-form").hidden = false;
  } else {
    const note = `Your role here (${roleName}) does not show them: a project admin's.`;
    for (const id of ["keys-note", "members-note"]) {
      $(id).textContent = note;
      $(id).hidden = false;
    }
    $("key-list").hidden = true;
    $("member-list").hidden = true;
  }
  $("retention-form").hidden = !editor;

  $("new-key-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const scopes = [...$("new-key-form").elements.scope].filter((box) => box.checked).map((box) => box.value);
    if (scopes.length === 0) return say("Choose at least one scope.");
    try {
      const made = await send("POST", "/v2/keys", { scopes });
      showOnce($("new-key"), $("new-key-value"), $("copy-key"), made.key);
      say(`A key with the scopes ${scopes.join(", ")} is made.`);
      await loadKeys(admin);
    } catch (error) {
      failed(error);
    }
  });
  $("hide-key").addEventListener("click", () => {
    $("new-key-value").textContent = "";
    $("new-key").hidden = true;
  });

  // An email with an account is given the role (setMember takes the email); one without is
  // invited: the link makes the account with the role.
  $("member-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const email = $("member-email").value.trim().toLowerCase();
    const role = $("member-role").value;
    try {
      let added = true;
      try {
        await send("PUT", `/v2/members/${encodeURIComponent(email)}`, { role });
      } catch (error) {
        if (error?.status !== 404) throw error;
        added = false;
      }
      if (added) {
        say(`${email} is now ${role}.`);
        await loadMembers(me);
      } else {
        const invited = await send("POST", "/v2/people/invitations", { email, role });
        showOnce($("invitation"), $("invitation-link"), $("copy-invitation"), invited.link);
        say(
          `${email} is invited as ${role}.` +
            (invited.mailed ? " The link was also mailed to them." : " Pass the link on to them."),
        );
      }
      $("member-email").value = "";
    } catch (error) {
      failed(error);
    }
  });

  $("retention-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const kind = $("retention-form").elements.retention.value;
    const days = kind === "default" ? null : kind === "forever" ? 0 : Number($("retention-days").value);
    if (kind === "days" && !(Number.isInteger(days) && days >= 1 && days <= 36500)) {
      return say("Retention: a whole number of days from 1 to 36500.");
    }
    try {
      const { project } = await send("PUT", "/v2/retention", { days });
      showRetention(project.retention_days);
      say("The retention is saved.");
    } catch (error) {
      failed(error);
    }
  });

  try {
    const { projects } = await api("/v2/projects");
    showRetention(projects.find((p) => p.name === me.project)?.retention_days ?? null);
    if (admin) await Promise.all([loadKeys(admin), loadMembers(me)]);
  } catch (error) {
    failed(error);
  }
}

startPage({ start, stop: () => {} });
