/** The Store contract: The JWT write guard (4.3), ping, G7 and close. */
import type { Test } from "tap";
import { KeyRevoked, StorageFault } from "../../../db/errors.ts";
import { patch } from "../records.ts";
import type { Fixtures } from "./fixture.ts";
import { event, failure, newSession, T0, WHOLE } from "./values.ts";

export function lifecycleContract(t: Test, { bare, fresh, schemaVersion }: Fixtures) {
  t.test("4.3: a JWT's write through a revoked, unknown or other project's key stores nothing", async (t) => {
    const { store, p, key, otherKey, snapshot } = await fresh(t);
    const revoked = await store.createApiKey("hash-revoked", "revoked0", "mine", T0);
    await store.revokeApiKey(revoked.id, "2026-11-22T01:00:00Z");
    await store.createSession(p, newSession("s"));
    await store.insertEvents(p, "s", [event("e1")]);
    const writes = (keyId: string, n: number): [string, () => Promise<unknown>][] => [
      ["updateSession", () => store.updateSession(p, "s", { end_state: "Fail", extra: { [`x${n}`]: 1 } }, keyId)],
      ["insertEvents", () => store.insertEvents(p, "s", [event(`e-${n}`)], keyId)],
      ["updateEvents", () => store.updateEvents(p, "s", [patch({ event_id: "e1", model: `m${n}` })], keyId)],
      ["upsertAgent", () => store.upsertAgent(p, "s", { id: `a${n}`, name: "x", extra: {} }, keyId)],
    ];
    const refusals = async (keyId: string, why: string, n: number) => {
      for (const [name, write] of writes(keyId, n)) {
        const error = await failure(write());
        t.ok(error instanceof KeyRevoked, `${name}, with a key ${why}: KeyRevoked (got ${String(error)})`);
      }
    };

    let before = await snapshot(p, "s");
    await refusals(revoked.id, "revoked", 1);
    await refusals("no-such-key", "unknown", 2);
    await refusals(otherKey.id, "of another project", 3);
    t.strictSame(await snapshot(p, "s"), before, "none stored anything");

    const mixed = await Promise.allSettled([
      store.insertEvents(p, "s", [event("ok-1")], key.id),
      store.insertEvents(p, "s", [event("refused")], revoked.id),
      store.upsertAgent(p, "s", { id: "ok-agent", name: null, extra: {} }, key.id),
    ]);
    t.same(
      mixed.map((outcome) => outcome.status),
      ["fulfilled", "rejected", "fulfilled"],
      "issued together, only the refused write fails",
    );
    t.ok(mixed[1]?.status === "rejected" && mixed[1].reason instanceof KeyRevoked);

    t.ok(await store.updateSession(p, "s", { end_state: "Success", extra: { live: 1 } }, key.id), "a live key writes");
    t.equal(await store.insertEvents(p, "s", [event("ok-2")], key.id), 1);
    t.strictSame(await store.updateEvents(p, "s", [patch({ event_id: "e1", model: "live" })], key.id), {
      status: "updated",
      updated: 1,
    });
    t.equal(await store.upsertAgent(p, "s", { id: "live", name: null, extra: {} }, key.id), true);
    const written = await snapshot(p, "s");
    t.same(written?.events.map((e) => e.id).sort(), ["e1", "ok-1", "ok-2"]);
    t.same(written?.agents.map((a) => a.id).sort(), ["live", "ok-agent"]);
    t.match(written?.session, { end_state: "Success", extra: { live: 1 } });

    await store.revokeApiKey(key.id, "2026-11-22T02:00:00Z");
    before = await snapshot(p, "s");
    await refusals(key.id, "revoked after its JWT was issued", 4);
    t.strictSame(await snapshot(p, "s"), before, "nothing stored after the revoke");
    t.equal(await store.insertEvents(p, "s", [event("no-jwt")]), 1, "an API key's write (no keyId) still writes");
  });

  t.test("ping answers the schema version", async (t) => {
    const { store } = await bare(t);
    t.equal(await store.ping("2026-11-22T06:00:00Z"), schemaVersion);
    t.equal(await store.ping("2026-11-22T06:00:01Z"), schemaVersion, "again");
  });

  t.test(
    "stats: each committed write call and its rows are counted once, nothing stays queued, reading writes nothing",
    async (t) => {
      const { store, p } = await fresh(t);
      const before = await store.stats();
      await store.createSession(p, newSession("s"));
      await Promise.all([
        store.insertEvents(p, "s", [event("e1"), event("e2"), event("e3")]),
        store.updateSession(p, "s", { end_state: "Success", extra: {} }),
      ]);
      const after = await store.stats();
      const groups = after.committedGroups - before.committedGroups;
      t.ok(groups >= 2 && groups <= 3, `3 calls in 2 or 3 groups (${groups})`);
      t.equal(after.groupCalls.sum - before.groupCalls.sum, 3, "3 write calls");
      t.equal(after.groupRows.sum - before.groupRows.sum, 5, "5 rows: the session, 3 events, the update");
      t.equal(after.groupCalls.count - before.groupCalls.count, groups, "a size per group");
      t.equal(after.commitSeconds.count - before.commitSeconds.count, groups, "a commit time per group");
      t.equal(after.failedGroups, before.failedGroups, "no group failed");
      t.equal(after.queuedCalls, 0, "nothing waits once every call settled");
      t.equal(after.queuedRows, 0);
      t.ok(after.databaseBytes > 0, `the database has bytes (${after.databaseBytes})`);
      t.ok(after.walBytes >= 0);
      for (const name of ["groupCalls", "groupRows", "commitSeconds"] as const) {
        const h = after[name];
        t.equal(h.counts.length, h.bounds.length + 1, `${name}: a count per bound and +Inf`);
        t.equal(
          h.counts.reduce((a, b) => a + b, 0),
          h.count,
          `${name}: the buckets hold every observation`,
        );
        t.ok(
          h.bounds.every((bound, i) => i === 0 || bound > (h.bounds[i - 1] as number)),
          `${name}: ascending bounds`,
        );
      }
      const again = await store.stats();
      t.equal(again.committedGroups, after.committedGroups, "asking for stats commits nothing");
    },
  );

  t.test("G7: every write resolves only once it is committed", async (t) => {
    const { store, committed, p } = await fresh(t);
    if (committed === undefined) {
      t.pass("skipped: the runner gives no second connection to look through");
      return;
    }
    const seen = (id: string) => committed.readSession(p, id, WHOLE);
    // Each check runs as the write resolves (in its then), before anything else can commit.
    const key = await store.createApiKey("hash-g7", "g7g7g7g7", "mine", T0).then(async (k) => ({
      k,
      seen: await committed.apiKeyById(k.id),
    }));
    t.strictSame(key.seen, key.k, "createApiKey");
    t.equal(
      await store
        .revokeApiKey(key.k.id, "2026-11-22T01:00:00Z")
        .then(async () => (await committed.apiKeyById(key.k.id))?.revoked_at),
      "2026-11-22T01:00:00Z",
      "revokeApiKey",
    );
    t.ok(await store.createSession(p, newSession("s")).then(() => seen("s")), "createSession");
    t.equal(
      await store
        .updateSession(p, "s", { end_state: "Fail", extra: {} })
        .then(async () => (await seen("s"))?.session.end_state),
      "Fail",
      "updateSession",
    );
    t.same(
      await store.insertEvents(p, "s", [event("e1")]).then(async () => (await seen("s"))?.events.map((e) => e.id)),
      ["e1"],
      "insertEvents",
    );
    t.equal(
      await store
        .updateEvents(p, "s", [patch({ event_id: "e1", model: "patched" })])
        .then(async () => (await seen("s"))?.events[0]?.model),
      "patched",
      "updateEvents",
    );
    t.same(
      await store
        .upsertAgent(p, "s", { id: "a", name: null, extra: {} })
        .then(async () => (await seen("s"))?.agents.map((a) => a.id)),
      ["a"],
      "upsertAgent",
    );
    t.equal(await store.deleteSession(p, "s").then(() => seen("s")), undefined, "deleteSession");

    // Many at once: each one, as it resolves, is committed.
    const N = 40;
    for (let i = 0; i < N; i++) await store.createSession(p, newSession(`s${i}`));
    const checks = Array.from({ length: N }, (_, i) =>
      Promise.all([
        store.insertEvents(p, `s${i}`, [event(`e${i}`)]).then(async () => (await seen(`s${i}`))?.events.length === 1),
        store
          .updateSession(p, `s${i}`, { extra: { [`k${i}`]: i } })
          .then(async () => (await seen(`s${i}`))?.session.extra[`k${i}`] === i),
      ]),
    );
    t.ok(
      (await Promise.all(checks)).flat().every(Boolean),
      `${2 * N} concurrent writes, each committed when it resolved`,
    );
  });

  t.test("close commits what was queued; later calls reject", async (t) => {
    const { store, committed, p, close } = await fresh(t);
    await store.createSession(p, newSession("s"));
    const queued = [
      store.insertEvents(
        p,
        "s",
        Array.from({ length: 200 }, (_, i) => event(`e${i}`)),
      ),
      store.updateSession(p, "s", { end_state: "Success", extra: { last: true } }),
      store.upsertAgent(p, "s", { id: "a", name: null, extra: {} }),
      store.createSession(p, newSession("s2")),
    ];
    await close();
    const [inserted, updated, upserted, created] = await Promise.all(queued);
    t.equal(inserted, 200, "insertEvents made before close resolved: its 200 events stored");
    t.match(updated, { session: { end_state: "Success", extra: { last: true } } }, "updateSession too");
    t.equal(upserted, true, "upsertAgent too");
    t.strictSame(created, { created: true, projectId: p }, "createSession too");
    // As a storage fault (O4: 503, the call may succeed later), whichever call it is.
    const later: [string, () => Promise<unknown>][] = [
      ["a read", () => store.getSession(p, "s")],
      ["a write", () => store.insertEvents(p, "s", [event("late")])],
      ["listApiKeys", () => store.listApiKeys()],
      ["apiKeyById", () => store.apiKeyById("x")],
      ["ping", () => store.ping("2026-11-22T06:00:00Z")],
    ];
    for (const [what, call] of later) {
      const error = await failure(call());
      t.ok(
        error instanceof StorageFault && error.kind === "unavailable",
        `${what} after close rejects with an unavailable StorageFault (got ${String(error)})`,
      );
    }
    if (committed !== undefined) {
      const s = await committed.readSession(p, "s", WHOLE);
      t.equal(s?.events.length, 200, "the queued events are committed");
      t.notOk(
        s?.events.some((e) => e.id === "late"),
        "the late one is not",
      );
      t.match(s?.session, { end_state: "Success", extra: { last: true } }, "the update is committed");
      t.same(
        s?.agents.map((a) => a.id),
        ["a"],
      );
      t.ok(await committed.readSession(p, "s2", WHOLE), "the created session is committed");
    }
  });
}
