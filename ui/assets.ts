/**
 * The web UI's files, read once from this folder when the app is built and served from memory.
 * Only the names in ASSETS are ever served: a request names a key of this table, never a path,
 * so `..`, encoded slashes and absolute paths cannot reach any other file.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { FastifyReply, FastifyRequest } from "fastify";
import { fromRoot } from "../lib/paths.ts";

const TYPES = {
  html: "text/html; charset=utf-8",
  css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  svg: "image/svg+xml",
} as const;

/**
 * The pages, and the assets they load from /ui/<name>. signup.html, the page of the one-time
 * account links (decision 035), is served from /ui/signup.html by getUiAsset (PAGE_ASSETS), and so
 * are a signed-in person's project settings and audit trail (issue 26): pages of their own
 * addresses would be routes of openapi.yaml, and these need no server-side choice.
 */
export const PAGES = [
  "overview.html",
  "sessions.html",
  "session.html",
  "signup.html",
  "settings.html",
  "audit.html",
] as const;
export const PAGE_ASSETS = ["signup.html", "settings.html", "audit.html"] as const;
export const ASSETS = [
  "app.css",
  "common.js",
  "overview.js",
  "charts.js",
  "uplot.js",
  "uplot.css",
  "sessions.js",
  "session.js",
  "timeline.js",
  "tree.js",
  "detail.js",
  "otel.js",
  "scores.js",
  "favicon.svg",
  "signup.js",
  "settings.js",
  "audit.js",
] as const;

/**
 * The same policy on every UI response: scripts and styles only from this origin (no inline
 * script or style, no eval), data only from this origin's API, no plugins, no framing. Stored
 * strings are attacker-controlled, so even a rendering mistake could not run injected script.
 */
const policy = (extra: string[] = []) =>
  [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    ...extra,
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");

export const CONTENT_SECURITY_POLICY = policy(["img-src 'self'"]);

/**
 * The API reference (GET /docs, http/docs.ts): the same policy, but for images also `data:` URLs,
 * which Swagger UI's style sheet uses for its icons. Swagger UI needs no inline script or style
 * (it sets styles through the DOM, which a CSP allows), no eval and nothing from another origin;
 * its "Try it out" calls this origin only (`connect-src 'self'`). test/browser.docs.test.ts proves the
 * page works under it with no CSP violation and no request leaving the machine.
 */
export const DOCS_CONTENT_SECURITY_POLICY = policy(["img-src 'self' data:", "font-src 'self'"]);

/** What every UI and API reference response carries besides its CSP and caching. */
export const UI_HEADERS = {
  "x-content-type-options": "nosniff",
  // The address holds a session id; it is not the business of any other site.
  "referrer-policy": "no-referrer",
} as const;

/** The API reference's own files: its top bar (a script and a style sheet) and the UI's icon. */
export function docsTheme() {
  const text = (name: string) => readFileSync(fromRoot(`ui/${name}`), "utf8");
  return {
    title: "API reference · agentmon",
    css: [{ filename: "agentmon.css", content: text("docs.css") }],
    js: [{ filename: "agentmon.js", content: text("docs.js") }],
    favicon: [
      {
        filename: "favicon.svg",
        rel: "icon",
        type: "image/svg+xml",
        sizes: "any",
        content: readFileSync(fromRoot("ui/favicon.svg")),
      },
    ],
  };
}

/**
 * The charting library (uPlot, an npm dependency) is served from the installed package, not from a
 * copy in ui/: npm pins its version and checks its integrity (package-lock.json), and an upgrade is
 * `npm install`, not a file to copy by hand. The minified build that defines the global `uPlot` is
 * 51 kB, a third of the ES module build. Resolved from the repository root, as every other path here.
 */
const PACKAGED: Record<string, string> = {
  "uplot.js": "uplot/dist/uPlot.iife.min.js",
  "uplot.css": "uplot/dist/uPlot.min.css",
};

/** Where a served file is read from: ui/<name>, or the npm package's file for the names above. */
export function uiFilePath(name: string): string {
  const packaged = PACKAGED[name];
  if (packaged) return createRequire(fromRoot("package.json")).resolve(packaged);
  return fileURLToPath(fromRoot(`ui/${name}`));
}

export interface UiFile {
  body: Buffer;
  type: string;
  etag: string;
}

function load(name: string): UiFile {
  const body = readFileSync(uiFilePath(name));
  const extension = name.slice(name.lastIndexOf(".") + 1) as keyof typeof TYPES;
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
  return { body, type: TYPES[extension], etag };
}

let files: Map<string, UiFile> | undefined;

/**
 * Every served file by name, read at the first request for one of them and then kept: not at
 * start, where reading and hashing them all cost a server that is never browsed (B4).
 */
export function uiFiles(): Map<string, UiFile> {
  files ??= new Map([...PAGES, ...ASSETS].map((name) => [name, load(name)]));
  return files;
}

/**
 * Sends one UI file. `Cache-Control: no-cache` with a strong ETag: the browser keeps its copy
 * and revalidates it, a 304 answers an unchanged file, and a new release is seen at once
 * (the files keep their names, so they cannot be cached as immutable).
 */
export function sendUiFile(req: FastifyRequest, reply: FastifyReply, file: UiFile): FastifyReply {
  reply.headers({
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "cache-control": "no-cache",
    etag: file.etag,
    ...UI_HEADERS,
  });
  const match = req.headers["if-none-match"];
  if (typeof match === "string" && match.split(/\s*,\s*/).some((tag) => tag.replace(/^W\//, "") === file.etag)) {
    return reply.code(304).send();
  }
  return reply.type(file.type).send(file.body);
}
