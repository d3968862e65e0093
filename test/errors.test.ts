/**
 * The one place where failures become answers (http/errors.ts): every typed storage error of
 * db/errors.ts, whichever adapter threw it, gets its contract G2 body and status (O4, 4.3).
 */
import t from "tap";
import { Conflict, KeyRevoked, SchemaMismatch, StorageFault } from "../db/errors.ts";
import { toApiError } from "../http/errors.ts";
import { INVALID_JWT, leaksNothing } from "./helper.ts";

const answer = (error: unknown) => {
  const api = toApiError(error, 1024);
  return { status: api.statusCode, body: api.body, headers: api.headers };
};

t.test("a StorageFault of every kind is a 503 naming its reason, with Retry-After", async (t) => {
  for (const kind of ["busy", "full", "unavailable", "behind"] as const) {
    const reason = `the reason for ${kind}`;
    t.strictSame(answer(new StorageFault(kind, reason, { message: "a longer account, for logs only" })), {
      status: 503,
      body: {
        error: "Service unavailable",
        message: `Storage is unavailable (${reason}); nothing was stored. Retry after 5 seconds`,
      },
      headers: { "retry-after": "5" },
    });
  }
});

t.test("SchemaMismatch is a 503 naming both versions", async (t) => {
  const { status, body } = answer(new SchemaMismatch(3, 2));
  t.equal(status, 503);
  t.equal(
    body.message,
    "Storage is unavailable (the database is at schema version 3; this server needs 2); nothing was stored. Retry after 5 seconds",
  );
});

t.test("KeyRevoked is the 401 of 4.1 for a JWT (4.3)", async (t) => {
  t.strictSame(answer(new KeyRevoked()), { status: 401, body: INVALID_JWT, headers: {} });
});

t.test("Conflict is a 409 that says to retry, and nothing of the storage's own words leaks", async (t) => {
  const cause = Object.assign(new Error("UNIQUE constraint failed: api_keys.key_hash"), {
    code: "SQLITE_CONSTRAINT_UNIQUE",
  });
  const { status, body } = answer(new Conflict("a row with this key was written by another call", { cause }));
  t.equal(status, 409);
  t.strictSame(body, { error: "Conflict", message: "Another call wrote the same record; retry the call" });
  t.ok(leaksNothing(JSON.stringify(body)));
});

t.test("an untyped error is a 500 that says nothing of itself", async (t) => {
  const { status, body } = answer(new TypeError("Cannot read properties of undefined (reading 'x')"));
  t.equal(status, 500);
  t.ok(leaksNothing(JSON.stringify(body)) && !JSON.stringify(body).includes("undefined"));
});

t.test("a read's 503 does not say that nothing was stored: it had nothing to store", async (t) => {
  for (const method of ["GET", "HEAD"]) {
    t.equal(
      toApiError(new StorageFault("behind", "writes arrive faster than the disk takes them"), 1024, method).body
        .message,
      "Storage is unavailable (writes arrive faster than the disk takes them). Retry after 5 seconds",
      method,
    );
    t.equal(
      toApiError(new SchemaMismatch(3, 2), 1024, method).body.message,
      "Storage is unavailable (the database is at schema version 3; this server needs 2). Retry after 5 seconds",
    );
  }
  t.match(toApiError(new StorageFault("full", "the disk is full"), 1024, "POST").body.message, /nothing was stored/);
});
