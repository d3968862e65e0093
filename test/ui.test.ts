/**
 * The web UI as the server delivers it (getUiHome, getUiSessions, getUiSession, getUiAsset), over inject: the
 * pages and every asset they load are served from the fixed list with their content types and
 * security headers; nothing else under /ui/ is reachable, however the name is encoded; the page
 * behind session_url is served for any id without revealing anything; the browser code never
 * parses data as HTML. What the pages do in a browser is test/browser.test.ts.
 */
import { readFileSync } from "node:fs";
import t, { type Test } from "tap";
import { parse } from "yaml";
import { ASSETS, CONTENT_SECURITY_POLICY, PAGE_ASSETS, PAGES, uiFilePath } from "../ui/assets.ts";
import { API_KEY, build, isError, OTHER_PROJECT_KEY } from "./helper.ts";

/** A served file as it is on disk: in ui/, or uPlot's in its npm package. */
const onDisk = (name: string) => readFileSync(uiFilePath(name));

const TYPES: Record<string, string> = {
  css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  svg: "image/svg+xml",
};

/** The headers every UI response carries. */
function hasUiHeaders(t: Test, headers: Record<string, unknown>) {
  t.equal(headers["content-security-policy"], CONTENT_SECURITY_POLICY, "the strict CSP");
  t.equal(headers["cache-control"], "no-cache", "revalidated before each use");
  t.match(headers.etag, /^"[A-Za-z0-9_-]{27}"$/, "a strong ETag");
  t.equal(headers["x-content-type-options"], "nosniff");
  t.equal(headers["referrer-policy"], "no-referrer");
}

t.test("GET / is the overview page, with the UI headers, needing no credential", async (t) => {
  const api = await build(t);
  for (const url of [
    "/",
    "/?range=7d",
    "/?range=2026-11-01..2026-11-22",
    "/?range=nonsense",
    "/?range=30d&tag=checkout&q=timeout", // the overview's own filters
  ]) {
    const res = await api.inject({ method: "GET", url });
    t.equal(res.statusCode, 200, url);
    t.equal(res.headers["content-type"], "text/html; charset=utf-8");
    hasUiHeaders(t, res.headers);
    t.equal(res.body, onDisk("overview.html").toString("utf8"), `${url}: ui/overview.html, byte for byte`);
  }
  const res = await api.inject({ method: "GET", url: "/" });
  t.match(res.body, '<script src="/ui/uplot.js" defer></script>', "uPlot, from this server");
  t.match(res.body, '<script type="module" src="/ui/overview.js"></script>');
  t.match(res.body, '<div id="chart-cost"', "the cost chart");
});

t.test("GET /sessions is the sessions list; the list's old addresses under / are sent there", async (t) => {
  const api = await build(t);
  for (const url of ["/sessions", "/sessions?tag=a&sort=cost&q=timeout"]) {
    const res = await api.inject({ method: "GET", url });
    t.equal(res.statusCode, 200, url);
    hasUiHeaders(t, res.headers);
    t.equal(res.body, onDisk("sessions.html").toString("utf8"), `${url}: ui/sessions.html, byte for byte`);
    t.match(res.body, '<script type="module" src="/ui/sessions.js"></script>');
    t.match(res.body, '<form id="filters"', "the filters form");
  }
  // Before issue 15 the list was at / and kept its filters and cursor in the query string.
  for (const query of [
    "tag=checkout",
    "tag=a&tag=b&end_state=Fail&limit=2&cursor=abc",
    "from=2026-11-22T08%3A00%3A00Z",
    "q=%3Cscript%3E",
    "agent_id=",
  ]) {
    const res = await api.inject({ method: "GET", url: `/?${query}` });
    t.equal(res.statusCode, 302, `/?${query}: 302`);
    t.equal(res.headers.location, `/sessions?${query}`, "to the list, the same query string");
    t.equal(res.body, "", "no page");
  }
  const trace = await api.inject({ method: "GET", url: "/sessions?trace_id=0123456789abcdef0123456789ABCDEF" });
  t.equal(trace.statusCode, 302, "a trace id is still T12's redirect");
  t.equal(trace.headers.location, "/sessions/01234567-89ab-cdef-0123-456789abcdef");
});

t.test("GET /sessions/{id} answers the same page for any id: known, unknown, another project's", async (t) => {
  const api = await build(t);
  await api.session("ui-mine");
  await api.session("ui-theirs", {}, OTHER_PROJECT_KEY);
  const page = onDisk("session.html").toString("utf8");
  const ids = ["ui-mine", "ui-theirs", "never-created", "a%2Fb%3Fc", "%3Cscript%3E"];
  for (const id of ids) {
    const res = await api.inject({ method: "GET", url: `/sessions/${id}` });
    t.equal(res.statusCode, 200, `200 for ${id.slice(0, 20)}`);
    t.equal(res.headers["content-type"], "text/html; charset=utf-8");
    t.equal(res.body, page, `the same bytes for ${id.slice(0, 20)}: the page reveals nothing about the id`);
    hasUiHeaders(t, res.headers);
  }
});

t.test("the page of a session whose id has the most characters L1 allows (256) opens, encoded too", async (t) => {
  const api = await build(t);
  for (const id of ["x".repeat(256), "😀".repeat(128)]) {
    await api.session(id);
    const res = await api.inject({ method: "GET", url: `/sessions/${encodeURIComponent(id)}` });
    t.equal(res.statusCode, 200, `${encodeURIComponent(id).length} characters in the path`);
    t.equal(res.body, onDisk("session.html").toString("utf8"));
  }
  const tooLong = await api.inject({ method: "GET", url: `/sessions/${"x".repeat(3073)}` });
  t.equal(tooLong.statusCode, 414, "past 3072 characters: 414");
  t.same(tooLong.json(), {
    error: "URI too long",
    message: "A path parameter is longer than 3072 characters; ids are at most 256",
  });
  const badUrl = await api.inject({ method: "GET", url: "/sessions/%E0%A4%A" });
  t.equal(badUrl.statusCode, 400, "bad percent-encoding: 400");
  t.same(badUrl.json(), { error: "Bad request", message: "The URL is not valid percent-encoded UTF-8" });
});

t.test("G3: a wrong method on a path with a parameter is a 405 with Allow", async (t) => {
  const api = await build(t);
  for (const [method, url, allow] of [
    ["POST", "/sessions/abc", "GET"],
    ["PUT", "/ui/app.css", "GET"],
    ["POST", "/v2/sessions/abc", "GET, DELETE"],
    ["PATCH", "/v2/sessions/abc/events", "GET"],
  ] as const) {
    const res = await api.inject({ method, url });
    t.equal(res.statusCode, 405, `${method} ${url}: 405`);
    t.equal(res.headers.allow, allow, `${method} ${url}: Allow ${allow}`);
    t.equal(res.json().error, "Method not allowed");
  }
});

t.test("session_url (S2) is the address of the session page", async (t) => {
  const api = await build(t);
  const res = await api.withKey("/v2/create_session", { session: { id: "ui/url test" } });
  const url = new URL(res.json().session_url);
  t.equal(url.pathname, "/sessions/ui%2Furl%20test", "the id is percent-encoded");
  const page = await api.inject({ method: "GET", url: url.pathname });
  t.equal(page.statusCode, 200);
  t.equal(page.body, onDisk("session.html").toString("utf8"));
});

t.test("uPlot is served from its npm package: the installed version's minified build and style sheet", async (t) => {
  const api = await build(t);
  const pkg = JSON.parse(readFileSync(new URL("../node_modules/uplot/package.json", import.meta.url), "utf8"));
  const deps = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).dependencies;
  t.ok(deps.uplot, "uplot is a dependency (installed with --omit=dev too, as the container does)");
  t.match(pkg.version, /^1\./, `uPlot 1.x (${pkg.version})`);
  const js = await api.inject({ method: "GET", url: "/ui/uplot.js" });
  t.same(js.rawPayload, readFileSync(new URL("../node_modules/uplot/dist/uPlot.iife.min.js", import.meta.url)));
  t.match(js.body, /var uPlot=/, "the build that defines the global uPlot");
  const css = await api.inject({ method: "GET", url: "/ui/uplot.css" });
  t.same(css.rawPayload, readFileSync(new URL("../node_modules/uplot/dist/uPlot.min.css", import.meta.url)));
  t.equal(css.headers["content-type"], "text/css; charset=utf-8");
});

t.test("the pages served under /ui/ (sign-up, settings, audit trail) come with the UI's policy", async (t) => {
  const api = await build(t);
  for (const name of PAGE_ASSETS) {
    const res = await api.inject({ method: "GET", url: `/ui/${name}` });
    t.equal(res.statusCode, 200, `${name} is served`);
    t.equal(res.headers["content-type"], "text/html; charset=utf-8", `${name} content type`);
    t.equal(res.headers["content-security-policy"], CONTENT_SECURITY_POLICY, `${name}: the CSP`);
    t.same(res.rawPayload, onDisk(name), `${name}: the file's bytes`);
  }
});

t.test("every asset of the list is served as on disk, with its content type", async (t) => {
  const api = await build(t);
  for (const name of ASSETS) {
    const res = await api.inject({ method: "GET", url: `/ui/${name}` });
    t.equal(res.statusCode, 200, `${name} is served`);
    t.equal(res.headers["content-type"], TYPES[name.slice(name.lastIndexOf(".") + 1)], `${name} content type`);
    t.same(res.rawPayload, onDisk(name), `${name}: the file's bytes`);
    hasUiHeaders(t, res.headers);
  }
});

t.test("everything the pages load is on the list, and nothing comes from another origin", async (t) => {
  const served = new Set<string>(ASSETS);
  const files = [...PAGES, ...ASSETS.filter((name) => name.endsWith(".js") || name.endsWith(".css"))];
  const loaded = new Set<string>();
  for (const name of files) {
    const text = onDisk(name).toString("utf8");
    for (const [, path] of text.matchAll(/(?:src|href)="(\/ui\/[^"]+)"/g)) loaded.add((path as string).slice(4));
    for (const [, path] of text.matchAll(/from "\.\/([^"]+)"/g)) loaded.add(path as string);
    t.notMatch(text, /(?:src|href|url\()\s*=?\s*["']?(?:https?:)?\/\//i, `${name} loads nothing from another origin`);
  }
  // A link to a page served under /ui/ (the settings, the audit trail) names a page, not an asset.
  const pages = new Set<string>(PAGE_ASSETS);
  for (const name of loaded) t.ok(served.has(name) || pages.has(name), `${name} (loaded by a page) is on the list`);
  t.same(
    [...served].filter((name) => !loaded.has(name)),
    [],
    "every listed asset is used",
  );
});

t.test("the pages have no inline script, style or event handler (the CSP would block them)", async (t) => {
  for (const name of PAGES) {
    const html = onDisk(name).toString("utf8");
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    t.ok(scripts.length > 0, `${name} has its module`);
    for (const [, attributes, body] of scripts) {
      t.match(attributes, /\bsrc="\/ui\/[a-z]+\.js"/, `${name}: every script is a file of /ui/`);
      t.equal(body?.trim(), "", `${name}: no inline script`);
    }
    t.notMatch(html, /<style\b|\sstyle=/i, `${name}: no inline style`);
    t.notMatch(html, /\son[a-z]+=/i, `${name}: no inline event handler`);
  }
});

t.test("the browser code never turns data into HTML", async (t) => {
  // uPlot's build included: it writes its legend with textContent too.
  for (const name of ASSETS.filter((asset) => asset.endsWith(".js"))) {
    const code = onDisk(name).toString("utf8");
    t.notMatch(
      code,
      /\b(?:innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval|Function)\b|new Function|srcdoc/,
      `${name}: no HTML parsing or code evaluation`,
    );
  }
});

t.test("nothing but the listed assets is reachable under /ui/, however it is named", async (t) => {
  const api = await build(t);
  const attempts = [
    "/ui/nope.js",
    "/ui/assets.ts", // the server module beside the assets
    "/ui/index.html", // pages have their own addresses
    "/ui/overview.html",
    "/ui/sessions.html",
    "/ui/uPlot.iife.min.js", // uPlot's own name in its package
    "/ui/uplot.min.css",
    "/ui/..%2fnode_modules%2fuplot%2fpackage.json",
    "/ui/session.html",
    "/ui/APP.CSS",
    "/ui/app.css.map",
    "/ui/..%2fapp.ts",
    "/ui/..%2F..%2Fpackage.json",
    "/ui/%2e%2e%2fserver.ts",
    "/ui/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/ui/%2Fetc%2Fpasswd",
    "/ui/%2Fwork%2Fmain%2Fapp.ts",
    "/ui/C:%5Cwindows%5Cwin.ini",
    "/ui/..%5Capp.ts",
    "/ui/app.css/",
    "/ui/",
    "/ui/../package.json",
    "/ui/../../etc/passwd",
  ];
  for (const url of attempts) {
    const res = await api.inject({ method: "GET", url });
    isError(t, res, 404, "Not found");
    t.notOk(res.headers["content-security-policy"], `${url}: no file was sent`);
  }
  // A NUL in a path parameter is refused as every parameter's is (G9: a 400 naming it).
  const nul = await api.inject({ method: "GET", url: "/ui/app.css%00.js" });
  isError(t, nul, 400, "Invalid request");
  t.notOk(nul.headers["content-security-policy"], "/ui/app.css%00.js: no file was sent");
});

t.test("ETag revalidation: a matching If-None-Match is a 304 without body", async (t) => {
  const api = await build(t);
  for (const url of ["/", "/sessions", "/sessions/abc", "/ui/app.css", "/ui/common.js", "/ui/uplot.js"]) {
    const first = await api.inject({ method: "GET", url });
    const etag = first.headers.etag as string;
    const same = await api.inject({ method: "GET", url, headers: { "if-none-match": etag } });
    t.equal(same.statusCode, 304, `${url}: 304 for its own ETag`);
    t.equal(same.body, "", "no body");
    t.equal(same.headers.etag, etag, "the ETag again");
    const listed = await api.inject({ method: "GET", url, headers: { "if-none-match": `"other", W/${etag}` } });
    t.equal(listed.statusCode, 304, `${url}: 304 when a list names it, weakly too`);
    const stale = await api.inject({ method: "GET", url, headers: { "if-none-match": '"stale"' } });
    t.equal(stale.statusCode, 200, `${url}: 200 for another ETag`);
    t.equal(stale.body, first.body);
  }
  const index = await api.inject({ method: "GET", url: "/" });
  const css = await api.inject({ method: "GET", url: "/ui/app.css" });
  t.not(index.headers.etag, css.headers.etag, "each file has its own ETag");
});

t.test("HEAD gives the headers without the body; other methods are 405 or 404", async (t) => {
  const api = await build(t);
  const head = await api.inject({ method: "HEAD", url: "/ui/app.css" });
  t.equal(head.statusCode, 200);
  t.equal(head.headers["content-type"], TYPES.css);
  t.equal(head.body, "");
  const post = await api.inject({ method: "POST", url: "/", headers: { "x-agentmon-api-key": API_KEY } });
  isError(t, post, 405, "Method not allowed");
  t.match(post.headers.allow, /GET/);
});

t.test("the published contract lists the same assets the server serves", async (t) => {
  const spec = parse(readFileSync(new URL("../openapi.yaml", import.meta.url), "utf8"));
  const description: string = spec.paths["/ui/{asset}"].get.description;
  const listed = [...description.matchAll(/`([a-z]+\.(?:js|css|svg))`/g)].map((m) => m[1]);
  t.same(listed.sort(), [...ASSETS].sort(), "getUiAsset's description names exactly ASSETS");
  for (const path of ["/", "/sessions/{session_id}", "/ui/{asset}"]) {
    t.same(spec.paths[path].get.tags, ["ui"], `${path} is tagged ui`);
  }
});
