// The API reference's top bar (GET /docs), as the web UI's: back to the sessions, and the
// document itself. Loaded by Swagger UI's page after its own scripts; builds DOM nodes only.
const bar = document.createElement("header");
bar.className = "agentmon-topbar";
const link = (href, text, className) => {
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  if (className) a.className = className;
  return a;
};
const crumb = document.createElement("span");
crumb.className = "crumb";
crumb.textContent = "API reference";
bar.append(
  link("/", "agentmon", "brand"),
  link("/sessions", "Sessions", "crumb"),
  crumb,
  link("/v2/openapi.yaml", "openapi.yaml", "raw"),
);
document.body.prepend(bar);
