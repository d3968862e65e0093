/**
 * Shared test setup: the real app on a real SQLite database (`:memory:` unless a file is asked
 * for), with one project and API key ready, and small helpers for the calls every test makes.
 */
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from "fastify";
import { type AppOptions, buildApp } from "../app.ts";
import { openDb, sqliteStore } from "../db/sqlite.ts";
import type { Store } from "../db/store.ts";
import { hashApiKey, keyPrefix } from "../lib/auth.ts";

export const API_KEY = "11111111-1111-4111-8111-111111111111";
export const OTHER_PROJECT_KEY = "22222222-2222-4222-8222-222222222222";
export const JWT_SECRET = "test-secret-test-secret-test-secret!";

/** The smallest part of tap's `t` that build() needs, so any test object fits. */
interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface TestApp {
  app: FastifyInstance;
  store: Store;
  /** POST a JSON body with the API key (or the headers given). */
  withKey(url: string, body: unknown, key?: string): Promise<LightMyRequestResponse>;
  /** POST a JSON body with a bearer JWT. */
  withJwt(url: string, body: unknown, jwt: string): Promise<LightMyRequestResponse>;
  /** Creates a session and answers its JWT. */
  session(id: string, fields?: Record<string, unknown>, key?: string): Promise<string>;
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
}

export async function build(t: Teardown, options: Partial<AppOptions> & { dbPath?: string } = {}): Promise<TestApp> {
  const { dbPath = ":memory:", ...appOptions } = options;
  const store = appOptions.store ?? sqliteStore(openDb(dbPath));
  const now = new Date().toISOString();
  if ((await store.listApiKeys()).length === 0) {
    await store.createApiKey(hashApiKey(API_KEY), keyPrefix(API_KEY), "default", now);
    await store.createApiKey(hashApiKey(OTHER_PROJECT_KEY), keyPrefix(OTHER_PROJECT_KEY), "other", now);
  }
  const app = await buildApp({ jwtSecret: JWT_SECRET, publicUrl: "http://agentmon.test", ...appOptions, store });
  await app.ready();
  t.teardown(() => app.close());

  const post = (url: string, body: unknown, headers: Record<string, string>) =>
    app.inject({
      method: "POST",
      url,
      headers: { "content-type": "application/json", ...headers },
      payload: JSON.stringify(body),
    });
  const withKey = (url: string, body: unknown, key = API_KEY) => post(url, body, { "x-agentmon-api-key": key });
  const withJwt = (url: string, body: unknown, jwt: string) => post(url, body, { authorization: `Bearer ${jwt}` });
  const session = async (id: string, fields: Record<string, unknown> = {}, key = API_KEY) => {
    const res = await withKey("/v2/create_session", { session: { id, ...fields } }, key);
    if (res.statusCode !== 200) throw new Error(`create_session answered ${res.statusCode}: ${res.body}`);
    return (res.json() as { jwt: string }).jwt;
  };
  return { app, store, withKey, withJwt, session, inject: (o) => app.inject(o) };
}

/** Asserts nothing internal leaks into an error body (G2). */
export function leaksNothing(body: string): boolean {
  return !/\bat \S+ \(|node_modules|\/work\/|\.ts:\d|SQLITE|sqlite|SELECT |INSERT |stack/i.test(body);
}
