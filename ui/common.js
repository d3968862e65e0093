// What both pages share: who reads (a signed-in person's browser session, else an API key asked
// once and kept in sessionStorage), calls to the read API, DOM building and number formats. Every string from the server is attacker-controlled
// (clients store whatever they like), so it only ever reaches the page as text: h() turns
// children into text nodes, and no string is ever parsed as HTML.

const KEY_NAME = "agentmon.apiKey";
const PROJECT_NAME = "agentmon.project";

/**
 * The signed-in person (decision 035), or null: their session cookie is sent by the browser
 * itself (HttpOnly: this script never sees it); each call names the project it reads.
 */
let person = null;
const currentProject = () => person?.project ?? "";

/**
 * h("a", { href, class: "x", "aria-label": "y", onclick: fn }, "text", child, [more]):
 * an element whose string children become text nodes.
 */
export function h(tag, props, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "class") element.className = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces an element's children. */
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

// ------------------------------------------------------------------ the API key and the API

export const apiKey = () => sessionStorage.getItem(KEY_NAME);

/** A failed API call: the HTTP status and the contract's {error, message} body (G2). */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `The server answered HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

/** GET on the read API with the key; query values may be arrays (sent repeated). */
export async function api(path, query = {}) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query)) {
    for (const one of [value].flat()) {
      if (one !== undefined && one !== null && one !== "") url.searchParams.append(name, String(one));
    }
  }
  let res;
  try {
    const headers = person ? { "X-Agentmon-Project": currentProject() } : { "X-Agentmon-Api-Key": apiKey() ?? "" };
    res = await fetch(url, { headers, cache: "no-store", credentials: "same-origin" });
  } catch {
    throw new ApiError(0, { error: "Network error", message: "The server could not be reached; is it running?" });
  }
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const error = new ApiError(res.status, body);
    if (person && res.status === 401) {
      person = null;
      askForKey("Your session has ended (signed out, or your access was removed). Sign in again.");
      throw error;
    }
    if (person) throw error; // a role that may not, or a project no longer yours: the page says so
    if (res.status === 401) keyRefused("That API key was refused (401). Check it and enter it again.");
    // 4.7: a valid key without the scope read (an ingest or admin key) cannot show anything.
    if (res.status === 403)
      keyRefused(`That API key cannot read (403): ${body?.message ?? "it lacks the scope read"}. Enter a read key.`);
    throw error;
  }
  return body;
}

/**
 * The signed-in person ({email, owner, project, projects, role}: role null for the owner who is
 * no member), or null when the page reads with an API key.
 */
export const signedIn = () => person;

/**
 * A write of a signed-in person (decision 035): JSON body, the CSRF token and the project. The
 * answer's body, or an ApiError; a 401 (the session ended) asks to sign in again, as api() does.
 */
export async function send(method, path, body) {
  const headers = { "X-CSRF-Token": person?.csrf ?? "", "X-Agentmon-Project": currentProject() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(new URL(path, location.origin), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "same-origin",
    });
  } catch {
    throw new ApiError(0, { error: "Network error", message: "The server could not be reached; is it running?" });
  }
  const answer = await res.json().catch(() => null);
  if (res.ok) return answer;
  const error = new ApiError(res.status, answer);
  if (res.status === 401) {
    person = null;
    askForKey("Your session has ended (signed out, or your access was removed). Sign in again.");
  }
  throw error;
}

// The page's hooks, set by startPage().
let page = { start: () => {}, stop: () => {} };

/**
 * Runs a page: asks for the key when there is none, then calls start(). stop() is called when
 * the key is forgotten or refused, to end polling and clear what the page shows.
 */
export function startPage(hooks) {
  page = hooks;
  const forget = document.getElementById("forget-key");
  forget.addEventListener("click", () => {
    if (person) return signOut();
    sessionStorage.removeItem(KEY_NAME);
    askForKey("The key is forgotten. Enter a read key to continue.");
  });
  whoAmI().then((me) => {
    if (me) {
      person = me;
      forget.textContent = `Sign out (${me.email})`;
      // The settings and audit pages are a signed-in person's (decision 035): shown to them only.
      for (const link of document.querySelectorAll(".person-link")) link.hidden = false;
      showProjects(me);
      showApp();
    } else if (apiKey()) showApp();
    else askForKey();
  });
}

/** The signed-in person, their projects and the project chosen (kept in this tab), or null. */
async function whoAmI() {
  try {
    const res = await fetch("/v2/auth/me", { cache: "no-store", credentials: "same-origin" });
    if (!res.ok) return null;
    const me = await res.json();
    let projects = me.memberships.map((m) => m.project);
    if (me.user.owner) {
      const all = await fetch("/v2/projects", { cache: "no-store", credentials: "same-origin" });
      if (all.ok) projects = (await all.json()).projects.map((p) => p.name);
    }
    const kept = sessionStorage.getItem(PROJECT_NAME);
    const project = projects.includes(kept) ? kept : projects[0];
    const role = me.memberships.find((m) => m.project === project)?.role ?? null;
    return { email: me.user.email, owner: me.user.owner === true, csrf: me.csrf_token, projects, project, role };
  } catch {
    return null;
  }
}

/** A project chooser in the top bar: choosing one reloads the page in it. */
function showProjects(me) {
  const select = h(
    "select",
    { id: "project", "aria-label": "Project", class: "project-select" },
    me.projects.map((name) => h("option", { value: name, selected: name === me.project }, name)),
  );
  select.addEventListener("change", () => {
    sessionStorage.setItem(PROJECT_NAME, select.value);
    location.reload();
  });
  document.getElementById("forget-key").before(select);
}

async function signOut() {
  await fetch("/v2/auth/logout", {
    method: "POST",
    headers: { "X-CSRF-Token": person?.csrf ?? "" },
    credentials: "same-origin",
  }).catch(() => {});
  person = null;
  location.reload();
}

function showApp() {
  document.getElementById("key-panel").hidden = true;
  document.getElementById("forget-key").hidden = false;
  page.start();
}

function keyRefused(why) {
  sessionStorage.removeItem(KEY_NAME);
  askForKey(why);
}

/** Shows the key form (and nothing else); a message says why when it is asked again. */
export function askForKey(why) {
  page.stop();
  document.getElementById("app").hidden = true;
  document.getElementById("message").textContent = "";
  document.getElementById("forget-key").hidden = true;
  const input = h("input", {
    id: "api-key",
    name: "api-key",
    type: "password",
    required: true,
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
  });
  const form = h(
    "form",
    { class: "key-form", id: "key-form" },
    h("h1", {}, "Read key"),
    h(
      "p",
      {},
      "The pages read your sessions with a project's read key: an API key with the scope read (agentmon keys create --scope read). It is kept in this tab only (sessionStorage) and sent to this server alone.",
    ),
    why ? h("p", { class: "warning", role: "alert" }, why) : null,
    h("label", { for: "api-key" }, "Read key"),
    h("div", { class: "key-row" }, input, h("button", { type: "submit" }, "Continue")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (key === "") return;
    sessionStorage.setItem(KEY_NAME, key);
    showApp();
  });
  const panel = document.getElementById("key-panel");
  fill(panel, signInForm(), form);
  panel.hidden = false;
  input.focus();
}

/** The sign-in form of people (decision 035): email and password; the page reloads signed in. */
function signInForm() {
  const email = h("input", {
    id: "sign-in-email",
    name: "email",
    type: "email",
    required: true,
    autocomplete: "username",
  });
  const password = h("input", {
    id: "sign-in-password",
    name: "password",
    type: "password",
    required: true,
    autocomplete: "current-password",
  });
  const problem = h("p", { class: "warning", role: "alert", hidden: true });
  const form = h(
    "form",
    { class: "key-form", id: "sign-in-form" },
    h("h1", {}, "Sign in"),
    h("label", { for: "sign-in-email" }, "Email"),
    email,
    h("label", { for: "sign-in-password" }, "Password"),
    h("div", { class: "key-row" }, password, h("button", { type: "submit" }, "Sign in")),
    problem,
    h("p", {}, "Or read with an API key:"),
  );
  // The identity providers of AGENTMON_OIDC, each a link; the password fields go when SSO only.
  fetch("/v2/auth/providers", { cache: "no-store" })
    .then((res) => (res.ok ? res.json() : null))
    .then((methods) => {
      if (!methods) return;
      // In the order of AGENTMON_OIDC (one after() with them all: one at a time would reverse it).
      const links = methods.providers.map((id) =>
        h(
          "p",
          {},
          h("a", { href: `/v2/auth/oidc/${encodeURIComponent(id)}/start`, class: "sso-link" }, `Sign in with ${id}`),
        ),
      );
      form.querySelector("h1").after(...links);
      if (!methods.passwords) {
        for (const element of form.querySelectorAll("label, input, .key-row")) element.hidden = true;
      }
    })
    .catch(() => {});
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const res = await fetch("/v2/auth/login", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ email: email.value, password: password.value }),
      credentials: "same-origin",
    }).catch(() => null);
    if (res?.ok) return location.reload();
    const body = await res?.json().catch(() => null);
    problem.textContent = body?.message ?? "The server could not be reached.";
    problem.hidden = false;
  });
  return form;
}

/** A user-facing sentence for a failed call (the 401 case is handled by asking for the key). */
export function describeError(error) {
  if (!(error instanceof ApiError)) return `Something went wrong in this page: ${error?.message ?? error}`;
  const name = error.body?.error ?? `HTTP ${error.status}`;
  return `${name}: ${error.message}`;
}

// ------------------------------------------------------------------ formats

/** Microseconds since the epoch of a stored timestamp (UTC ISO, up to 6 fraction digits). */
export function micros(iso) {
  if (typeof iso !== "string") return Number.NaN;
  const match = /^(.*T\d\d:\d\d(?::\d\d)?)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?$/.exec(iso);
  if (!match) return Date.parse(iso) * 1000;
  const whole = Date.parse(`${match[1]}${match[3] ?? "Z"}`);
  const fraction = Number((match[2] ?? "").padEnd(6, "0").slice(0, 6));
  return whole * 1000 + fraction;
}

/** "2026-11-22 05:09:41" (UTC), the form every page uses; `precise` keeps the fraction. */
export function formatTime(iso, precise = false) {
  if (typeof iso !== "string") return "—";
  const time = iso.replace("T", " ").replace(/Z$/, "");
  return precise ? time : time.replace(/\.\d+/, "");
}

/** A duration in milliseconds, short: "850 µs", "12 ms", "3.4 s", "2 min 5 s", "1 h 3 min". */
export function formatDuration(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) return "—";
  if (ms === 0) return "0";
  if (ms < 1) return `${Math.round(ms * 1000)} µs`;
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(1).replace(/\.0$/, "") : Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(2).replace(/\.?0+$/, "") : s.toFixed(1).replace(/\.0$/, "")} s`;
  const min = Math.floor(Math.round(s) / 60);
  const seconds = Math.round(s) % 60;
  if (min < 60) return seconds === 0 ? `${min} min` : `${min} min ${seconds} s`;
  return min % 60 === 0 ? `${min / 60} h` : `${Math.floor(min / 60)} h ${min % 60} min`;
}

export const formatInt = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : "—");

/** A number as the shortest decimal that reads back as it (String's digits), never 2.1e-7. */
function decimalText(n) {
  const [mantissa, exponent] = String(n).split("e");
  if (exponent === undefined) return mantissa;
  const sign = mantissa.startsWith("-") ? "-" : "";
  const [int, fraction = ""] = mantissa.replace("-", "").split(".");
  const digits = `${int}${fraction}`;
  const point = int.length + Number(exponent);
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${"0".repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/**
 * A cost as people write money (issue 27): dollars and cents, "$73.44", "$1,234.50", "$0.00";
 * an amount under a cent with two significant digits, so that it does not read as nothing:
 * "$0.0042", "$0.000089", "$0.0000021". Rounded half up, from the decimal string the API gives
 * (the stats' cost, S6) without float arithmetic; an event's cost is a JSON number, read as the
 * decimal it prints as (0.995, not 0.99499…). Everything the UI shows as money goes here.
 */
export function formatCost(cost) {
  const text = typeof cost === "number" && Number.isFinite(cost) ? decimalText(cost) : cost;
  if (typeof text !== "string") return "—";
  const match = /^(-?)(\d+)(?:\.(\d*))?$/.exec(text.trim());
  if (!match) return `$${text}`;
  const [, sign, whole, fraction = ""] = match;
  /** The amount rounded half up to `scale` decimals, as an integer of that many decimals. */
  const scaled = (scale) => {
    const digits = BigInt(`${whole}${fraction.slice(0, scale).padEnd(scale, "0")}`);
    return (fraction[scale] ?? "0") >= "5" ? digits + 1n : digits;
  };
  let scale = 2;
  const firstDigit = fraction.search(/[1-9]/);
  // Under a cent (no digit before the third decimal): two significant digits, unless they round
  // up to a cent or more.
  if (/^0+$/.test(whole) && firstDigit >= 2 && scaled(firstDigit + 2) < 10n ** BigInt(firstDigit)) {
    scale = firstDigit + 2;
  }
  const digits = scaled(scale)
    .toString()
    .padStart(scale + 1, "0");
  const units = digits.slice(0, -scale).replace(/\B(?=(\d{3})+$)/g, ",");
  let cents = digits.slice(-scale);
  if (scale > 2) cents = cents.replace(/0+$/, "");
  const negative = sign === "-" && /[1-9]/.test(digits);
  return `${negative ? "-" : ""}$${units}.${cents}`;
}

/** The end-state badge; a session without one is still running (or never said how it ended). */
export function stateBadge(session) {
  const state = session?.end_state;
  const label = state ?? "Running";
  const kind = { Success: "success", Fail: "fail", Indeterminate: "indeterminate" }[state] ?? "running";
  return h("span", { class: `badge badge-${kind}`, "data-state": label }, label);
}

/** A value for display: strings as they are, everything else as indented JSON. */
export const asText = (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));
