/**
 * "Limits and versions", rule L4: GET /docs, the API reference, over real HTTP (app.inject): the
 * page and every file it loads come from this server with the UI's security headers and the
 * reference's own CSP; the document it shows is openapi.yaml (only `servers` differs, so that "Try
 * it out" calls the server that answers); nothing else of the disk is reachable under /docs, and
 * every failure is a G2 answer. What the page does in a browser, and that it makes no request
 * elsewhere, is test/browser.docs.test.ts.
 */
import { readFileSync } from "node:fs";
import t, { type Test } from "tap";
import { parse } from "yaml";
import { DOCS_CONTENT_SECURITY_POLICY } from "../ui/assets.ts";
import { build, isError } from "./helper.ts";

const SPEC_TEXT = readFileSync(new URL("../openapi.yaml", import.meta.url), "utf8");
const SPEC = parse(SPEC_TEXT);
const THIS_SERVER = [{ url: "/", description: "This agentmon server" }];

/** The headers every answer under /docs carries. */
function hasDocsHeaders(t: Test, headers: Record<string, unknown>, what: string) {
  t.equal(headers["content-security-policy"], DOCS_CONTENT_SECURITY_POLICY, `${what}: the reference's CSP`);
  t.equal(headers["cache-control"], "no-cache", `${what}: revalidated before each use`);
  t.equal(headers["x-content-type-options"], "nosniff", `${what}: nosniff`);
  t.equal(headers["referrer-policy"], "no-referrer", `${what}: no referrer`);
}

t.test("L4: GET /docs is the API reference, needing no credential, everything from this server", async (t) => {
  const api = await build(t);
  for (const url of ["/docs", "/docs/"]) {
    const res = await api.inject({ method: "GET", url });
    t.equal(res.statusCode, 200, `${url}: 200`);
    t.equal(res.headers["content-type"], "text/html; charset=utf-8");
    hasDocsHeaders(t, res.headers, url);
    const html = res.body;
    t.match(html, "<title>API reference · agentmon</title>");
    t.notMatch(html, /(?:src|href)\s*=\s*["']?(?:https?:)?\/\//i, `${url}: loads nothing from another origin`);
    t.notMatch(html, /<style\b|\sstyle=|\son[a-z]+=/i, `${url}: no inline style or event handler`);
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    t.ok(scripts.length >= 4, "Swagger UI's scripts and the top bar's");
    for (const [, attributes, body] of scripts) t.equal(body?.trim(), "", `no inline script (${attributes})`);

    const loaded = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] as string);
    const files = loaded.map((path) => new URL(path, `http://agentmon.test${url}`).pathname);
    t.ok(files.length >= 7, `${files.length} files`);
    for (const file of files) {
      t.match(file, /^\/docs\/static\//, `${file} is a file of /docs/static/`);
      const asset = await api.inject({ method: "GET", url: file });
      t.equal(asset.statusCode, 200, `${file} is served`);
      hasDocsHeaders(t, asset.headers, file);
    }
  }
});

t.test("L4: the page's settings send nothing elsewhere: no validator, no standalone top bar", async (t) => {
  const api = await build(t);
  const res = await api.inject({ method: "GET", url: "/docs/static/swagger-initializer.js" });
  t.equal(res.statusCode, 200);
  t.match(res.body, /validatorUrl: null,/, "Swagger UI's online validator is off");
  t.match(res.body, /"layout":"BaseLayout"/, "no address box to load other documents from");
  t.match(res.body, /url: resolveUrl\('\.\/json'\)/, "the document comes from /docs/json");
});

t.test("L4: the document shown is openapi.yaml, with `servers` set to this server", async (t) => {
  // A configured batch size changes what the server enforces (E1), not the document it serves (L3).
  const api = await build(t, { maxEvents: 5 });
  const json = await api.inject({ method: "GET", url: "/docs/json" });
  t.equal(json.statusCode, 200);
  hasDocsHeaders(t, json.headers, "/docs/json");
  t.strictSame(json.json(), { ...SPEC, servers: THIS_SERVER }, "/docs/json: the document, servers aside");
  t.equal(
    json.json().components.schemas.CreateEventsRequest.properties.events.maxItems,
    1000,
    "the default batch size, as GET /v2/openapi.yaml says",
  );
  const yaml = await api.inject({ method: "GET", url: "/docs/yaml" });
  t.equal(yaml.statusCode, 200);
  t.strictSame(parse(yaml.body), { ...SPEC, servers: THIS_SERVER }, "/docs/yaml: the same");
  const served = await api.inject({ method: "GET", url: "/v2/openapi.yaml" });
  t.equal(served.body, SPEC_TEXT, "L3 still: GET /v2/openapi.yaml is the file, byte for byte");
});

t.test("L4: nothing else is reachable under /docs; failures are G2 answers", async (t) => {
  const api = await build(t);
  for (const url of [
    "/docs/static/nope.js",
    "/docs/index.html",
    "/docs/swagger-ui.css",
    "/docs/static/",
    "/docs/static/..%2f..%2fpackage.json",
    "/docs/static/%2e%2e/%2e%2e/package.json",
    "/docs/static/theme/nope.css",
  ]) {
    const res = await api.inject({ method: "GET", url });
    isError(t, res, 404, "Not found");
  }
  const redirect = await api.inject({ method: "GET", url: "/docs/static/index.html" });
  t.equal(redirect.statusCode, 302, "the plugin's old address of the page redirects to it");
  t.equal(redirect.headers.location, "/docs/");
});
