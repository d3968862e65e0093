/** Shared by the people tests (decision 035): accounts made in the store, sign-in over HTTP, a cookie jar. */
import type { LightMyRequestResponse } from "fastify";
import type { Store } from "../db/store.ts";
import type { Role } from "../domain/people.ts";
import { hashPassword } from "../services/people.ts";
import type { TestApp } from "./helper.ts";

export const PASSWORD = "correct horse battery staple";

/** The Set-Cookie headers of an answer, by cookie name: the value and the attributes. */
export function setCookies(res: LightMyRequestResponse): Map<string, { value: string; attributes: string[] }> {
  const raw = res.headers["set-cookie"];
  const lines = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  const found = new Map<string, { value: string; attributes: string[] }>();
  for (const line of lines) {
    const [pair = "", ...attributes] = line.split(";").map((part) => part.trim());
    const eq = pair.indexOf("=");
    found.set(pair.slice(0, eq), { value: pair.slice(eq + 1), attributes });
  }
  return found;
}

/** A signed-in browser: its Cookie header and CSRF token. */
export interface Browser {
  cookie: string;
  csrf: string;
  /** The session cookie's value alone. */
  session: string;
}

/** The browser an answer that signed someone in leaves. */
export function browserOf(res: LightMyRequestResponse): Browser {
  const cookies = setCookies(res);
  const session = cookies.get("agentmon_session")?.value ?? "";
  const csrf = cookies.get("agentmon_csrf")?.value;
  return {
    cookie: [`agentmon_session=${session}`, ...(csrf ? [`agentmon_csrf=${csrf}`] : [])].join("; "),
    csrf: (res.json() as { csrf_token: string }).csrf_token,
    session,
  };
}

/** A person made in the store, with the test password and these memberships. */
export async function person(
  store: Store,
  email: string,
  options: { owner?: boolean; roles?: [projectName: string, role: Role][] } = {},
) {
  const user = await store.createUser({
    email,
    name: email.split("@")[0] ?? email,
    password_hash: await hashPassword(PASSWORD),
    owner: options.owner ?? false,
    created_at: new Date().toISOString(),
  });
  const projects = await store.listProjects();
  for (const [name, role] of options.roles ?? []) {
    const project = projects.find((p) => p.name === name);
    if (!project) throw new Error(`no project ${name}`);
    await store.setMember(project.id, user.id, role, new Date().toISOString());
  }
  return user;
}

/** Signs in over HTTP; fails the test's expectations loudly when it does not answer 200. */
export async function signIn(api: TestApp, email: string, password = PASSWORD, address?: string): Promise<Browser> {
  const res = await api.post("/v2/auth/login", { email, password }, {}, address);
  if (res.statusCode !== 200) throw new Error(`login answered ${res.statusCode}: ${res.body}`);
  return browserOf(res);
}

/** A request as the browser makes it: its cookies, its CSRF token for a change, the project named. */
export function asBrowser(
  api: TestApp,
  browser: Browser,
  method: "GET" | "POST" | "PUT" | "DELETE",
  url: string,
  options: { project?: string; body?: unknown; csrf?: string | null; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { cookie: browser.cookie, ...options.headers };
  if (options.project !== undefined) headers["x-agentmon-project"] = options.project;
  const csrf = options.csrf === undefined ? browser.csrf : options.csrf;
  if (method !== "GET" && csrf !== null) headers["x-csrf-token"] = csrf;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  return api.inject({
    method,
    url,
    headers,
    ...(options.body === undefined ? {} : { payload: JSON.stringify(options.body) }),
  });
}
