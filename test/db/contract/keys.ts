/** The Store contract: metaValue and API keys. */
import type { Test } from "tap";
import type { Scope } from "../../../domain/types.ts";
import type { Fixtures } from "./fixture.ts";
import { NASTY } from "./values.ts";

export function keyContract(t: Test, { bare }: Fixtures) {
  t.test("metaValue sets the fallback once and keeps the first value", async (t) => {
    const { store } = await bare(t);
    t.equal(await store.metaValue("jwt_secret", "first"), "first");
    t.equal(await store.metaValue("jwt_secret", "second"), "first");
    t.equal(await store.metaValue(NASTY, NASTY), NASTY, "any key and value round-trip");
    t.equal(await store.metaValue(NASTY, "other"), NASTY);
    t.equal(await store.metaValue("jwt_secret", "third"), "first", "each key keeps its own value");
  });

  t.test("api keys: one project per name, lookup by hash and id, oldest first, revocation", async (t) => {
    const { store } = await bare(t);
    t.strictSame(await store.listApiKeys(), [], "a new store has no keys");
    const a = await store.createApiKey("hash-a", "aaaaaaaa", "default", "2026-11-22T00:00:00Z");
    const b = await store.createApiKey("hash-b", "bbbbbbbb", "default", "2026-11-22T00:00:01Z");
    const c = await store.createApiKey("hash-c", "cccccccc", "other", "2026-11-22T00:00:02Z");
    t.strictSame(
      a,
      {
        id: a.id,
        project_id: a.project_id,
        project_name: "default",
        prefix: "aaaaaaaa",
        created_at: "2026-11-22T00:00:00Z",
        revoked_at: null,
        scopes: ["ingest", "read", "admin"],
      },
      "the record, live, with every scope when none is given",
    );
    t.ok(typeof a.id === "string" && a.id !== "" && typeof a.project_id === "string" && a.project_id !== "");
    t.equal(a.project_id, b.project_id, "same project name, same project");
    t.not(a.project_id, c.project_id);
    t.not(a.id, b.id, "each key its own id");
    t.strictSame(await store.apiKeyByHash("hash-b"), b);
    t.strictSame(await store.apiKeyById(c.id), c);
    t.equal(await store.apiKeyByHash("nope"), undefined);
    t.equal(await store.apiKeyByHash("HASH-A"), undefined, "a hash matches exactly");
    t.equal(await store.apiKeyById("nope"), undefined);
    t.same(
      (await store.listApiKeys()).map((k) => k.prefix),
      ["aaaaaaaa", "bbbbbbbb", "cccccccc"],
    );

    const d = await store.createApiKey(`hash-${NASTY}`, "dddddddd", NASTY, "2026-11-21T23:59:59Z");
    t.equal(d.project_name, NASTY, "any project name round-trips");
    t.strictSame(await store.apiKeyByHash(`hash-${NASTY}`), d);
    t.strictSame(await store.listApiKeys(), [d, a, b, c], "listed oldest first (by created_at)");

    await store.revokeApiKey(a.id, "2026-11-22T01:00:00Z");
    const revoked = { ...a, revoked_at: "2026-11-22T01:00:00Z" };
    t.strictSame(await store.apiKeyById(a.id), revoked);
    t.strictSame(await store.apiKeyByHash("hash-a"), revoked, "a revoked key is still found, as revoked");
    t.equal((await store.apiKeyById(b.id))?.revoked_at, null, "only that key is revoked");
    await store.revokeApiKey(a.id, "2026-11-22T02:00:00Z");
    t.equal((await store.apiKeyById(a.id))?.revoked_at, "2026-11-22T01:00:00Z", "a second revoke keeps the first time");
    await t.resolves(store.revokeApiKey("nope", "2026-11-22T03:00:00Z"), "revoking an unknown id is no error");
    t.strictSame(await store.listApiKeys(), [d, revoked, b, c]);
  });

  t.test("api keys: the scopes round-trip, in their order, through every read", async (t) => {
    const { store } = await bare(t);
    const cases: [string, Scope[], Scope[]][] = [
      ["ingest", ["ingest"], ["ingest"]],
      ["read", ["read"], ["read"]],
      ["admin", ["admin"], ["admin"]],
      ["read-admin", ["admin", "read"], ["read", "admin"]],
      ["ingest-read", ["read", "ingest"], ["ingest", "read"]],
      ["all", ["admin", "read", "ingest"], ["ingest", "read", "admin"]],
      ["annotate", ["annotate"], ["annotate"]],
      ["every", ["annotate", "admin", "read", "ingest"], ["ingest", "read", "admin", "annotate"]],
    ];
    const made = [];
    for (const [index, [name, given, stored]] of cases.entries()) {
      const at = `2026-11-22T00:00:0${index}Z`;
      const key = await store.createApiKey(`hash-${name}`, name.slice(0, 8), "scoped", at, given);
      t.strictSame(key.scopes, stored, `${name}: createApiKey answers them`);
      t.strictSame((await store.apiKeyByHash(`hash-${name}`))?.scopes, stored, `${name}: apiKeyByHash`);
      t.strictSame((await store.apiKeyById(key.id))?.scopes, stored, `${name}: apiKeyById`);
      made.push(key);
    }
    t.strictSame(
      (await store.listApiKeys()).map((k) => k.scopes),
      made.map((k) => k.scopes),
      "listApiKeys",
    );
    await store.revokeApiKey(made[1]?.id ?? "", "2026-11-22T01:00:00Z");
    t.strictSame((await store.apiKeyById(made[1]?.id ?? ""))?.scopes, ["read"], "a revoke keeps the scopes");
  });
}
