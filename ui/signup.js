// The page a one-time link opens (decision 035): /ui/signup.html#<token>. The token is in the
// fragment, which the browser never sends to a server nor in a Referer. An owner or invitation
// link makes the account (and signs it in); a reset link sets the password.

const token = decodeURIComponent(location.hash.slice(1));
const kind = token.slice(0, token.indexOf("_"));
const $ = (id) => document.getElementById(id);
// The token leaves the address bar at once: it is not kept in the history.
history.replaceState(null, "", location.pathname);

if (kind === "reset") {
  $("signup-title").textContent = "Set your password";
  for (const element of document.querySelectorAll(".account-only")) element.hidden = true;
} else {
  $("signup-why").textContent =
    kind === "owner" ? "This link makes the instance owner's account." : "You were invited into a project.";
}

$("signup").addEventListener("submit", async (event) => {
  event.preventDefault();
  const body =
    kind === "reset"
      ? { token, password: $("signup-password").value }
      : { token, email: $("signup-email").value, name: $("signup-name").value, password: $("signup-password").value };
  const res = await fetch(kind === "reset" ? "/v2/auth/reset_password" : "/v2/auth/signup", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    credentials: "same-origin",
  }).catch(() => null);
  if (res?.ok) {
    location.assign("/");
    return;
  }
  const answer = await res?.json().catch(() => null);
  $("signup-problem").textContent = answer?.message ?? "The server could not be reached.";
  $("signup-problem").hidden = false;
});
