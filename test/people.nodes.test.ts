/**
 * Several nodes on one PostgreSQL database (issue 26, decision 035): a browser session made
 * through one node works on the other; a logout, a logout everywhere or a disabled person made
 * through one is refused by the other at its next request; failed sign-ins are counted together
 * (429 with Retry-After on either node).
 */
import t, { type Test } from "tap";
import { openPostgresStore } from "../db/postgres/store.ts";
import { postgresLimits } from "../http/ratelimit-shared.ts";
import { build, isError } from "./helper.ts";
import { asBrowser, PASSWORD, person, signIn } from "./people.helpers.ts";
import { postgresRequired, postgresUnavailable, testDatabase } from "./postgres.ts";

const unavailable = await postgresUnavailable();
if (unavailable !== undefined && !postgresRequired()) {
  t.comment(`skipped: ${unavailable}`);
} else {
  /** Two nodes on one new database, each with its own pool, store and sign-in counters in PostgreSQL. */
  async function twoNodes(t: Test) {
    const url = await testDatabase(t);
    const node = async () => {
      const store = await openPostgresStore({ url });
      const loginLimits = postgresLimits({
        pool: store.pool,
        prefix: "agentmon-login",
        failureLimit: 3,
        failureWindowMs: 60_000,
        ratePerMinute: 0,
        warn: (line) => t.fail(line),
      });
      return build(t, { store, loginLimits, cookieSecret: "the-same-cookie-secret-on-every-node-0123" });
    };
    const a = await node();
    const b = await node();
    return { a, b };
  }

  t.test("a session made on one node works on the other; its logout ends it on both", async (t) => {
    const { a, b } = await twoNodes(t);
    await person(a.store, "ann@example.com", { roles: [["default", "viewer"]] });
    const ann = await signIn(a, "ann@example.com");
    t.equal((await asBrowser(b, ann, "GET", "/v2/auth/me")).statusCode, 200, "node B knows node A's session");
    const listed = await asBrowser(b, ann, "GET", "/v2/sessions", { project: "default" });
    t.equal(listed.statusCode, 200, listed.body);
    t.equal((await asBrowser(b, ann, "POST", "/v2/auth/logout")).statusCode, 200, "a CSRF token of node A works on B");
    isError(t, await asBrowser(a, ann, "GET", "/v2/auth/me"), 401, "Not signed in");
  });

  t.test("logout everywhere and disabling through one node are seen by the other at once", async (t) => {
    const { a, b } = await twoNodes(t);
    const ann = await person(a.store, "ann@example.com");
    const one = await signIn(a, "ann@example.com");
    const two = await signIn(b, "ann@example.com");
    t.equal((await asBrowser(b, one, "POST", "/v2/auth/logout_everywhere")).statusCode, 200);
    isError(t, await asBrowser(a, two, "GET", "/v2/auth/me"), 401, "Not signed in");
    const three = await signIn(a, "ann@example.com");
    await b.store.setUserDisabled(ann.id, new Date().toISOString());
    isError(t, await asBrowser(a, three, "GET", "/v2/auth/me"), 401, "Not signed in");
  });

  t.test("attack: brute force across two nodes is counted together: 429 with Retry-After on both", async (t) => {
    const { a, b } = await twoNodes(t);
    await person(a.store, "ann@example.com");
    const attempt = (node: typeof a, password: string, address: string) =>
      node.post("/v2/auth/login", { email: "ann@example.com", password }, {}, address);
    isError(t, await attempt(a, "wrong password 1", "10.0.0.1"), 401);
    isError(t, await attempt(b, "wrong password 2", "10.0.0.2"), 401);
    isError(t, await attempt(a, "wrong password 3", "10.0.0.3"), 401);
    for (const node of [a, b]) {
      const res = await attempt(node, PASSWORD, "10.0.0.4");
      isError(t, res, 429, "Too many requests");
      t.ok(Number(res.headers["retry-after"]) >= 1, "Retry-After");
    }
    const trail = await a.store.listAudit({ limit: 10 });
    t.same(
      trail.map((r) => r.action),
      ["login.throttled"],
      "audited once",
    );
  });
}
