/**
 * Contract section 5, "Limits and versions": rule L1 (body limit, id, tag and batch limits), through
 * real HTTP (app.inject) on a real `:memory:` SQLite store. Every subtest name starts with its id.
 */
import { gzipSync } from "node:zlib";
import type { LightMyRequestResponse } from "fastify";
import t, { type Test } from "tap";
import { build, eventViews, inspect, isError, isInvalid, isSuccess, json, MIB, rawPost } from "./helper.ts";
import { keyHeaders } from "./limits.helpers.ts";

const tooLarge = (t: Test, res: LightMyRequestResponse) => isError(t, res, 413, "Payload too large");

/** A create_session body of exactly `size` bytes (ASCII), padded through an unknown field. */
function sessionOfSize(id: string, size: number): string {
  const empty = JSON.stringify({ session: { id, pad: "" } });
  const body = JSON.stringify({ session: { id, pad: "x".repeat(size - empty.length) } });
  if (body.length !== size) throw new Error(`sessionOfSize: ${body.length} !== ${size}`);
  return body;
}

t.test("L1: body limit, id, tag and batch limits", async (t) => {
  t.test("L1: the default body limit is 5 MiB: exactly 5 MiB is 200, one byte more is 413", async (t) => {
    const api = await build(t);
    const atLimit = sessionOfSize("l1-5mib", 5 * MIB);
    isSuccess(t, await rawPost(api, "/v2/create_session", atLimit, keyHeaders), ["jwt", "session_id", "session_url"]);
    t.equal(
      (await inspect(api.store).getSession("l1-5mib"))?.extra.pad,
      JSON.parse(atLimit).session.pad,
      "stored whole",
    );
    const over = sessionOfSize("l1-over", 5 * MIB + 1);
    const body = tooLarge(t, await rawPost(api, "/v2/create_session", over, keyHeaders));
    t.match(body.message, /5242880/, "the message says the limit");
    t.equal(await inspect(api.store).getSession("l1-over"), undefined);
  });

  t.test("L1: the default limit counts the decompressed bytes", async (t) => {
    const api = await build(t);
    const gz = { ...keyHeaders, "content-encoding": "gzip" };
    const atLimit = gzipSync(sessionOfSize("l1-gz-ok", 5 * MIB));
    isSuccess(t, await rawPost(api, "/v2/create_session", atLimit, gz), ["jwt", "session_id", "session_url"]);
    const over = gzipSync(sessionOfSize("l1-gz-over", 5 * MIB + 1));
    t.ok(over.length < MIB, "the compressed body is far under the limit");
    tooLarge(t, await rawPost(api, "/v2/create_session", over, gz));
    t.equal(await inspect(api.store).getSession("l1-gz-over"), undefined);
  });

  t.test("L1: the body limit is configurable, before and after decompression", async (t) => {
    const api = await build(t, { bodyLimit: 2048 });
    isSuccess(t, await rawPost(api, "/v2/create_session", sessionOfSize("l1-2k", 2048), keyHeaders), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    const body = tooLarge(t, await rawPost(api, "/v2/create_session", sessionOfSize("l1-2k1", 2049), keyHeaders));
    t.match(body.message, /2048/);
    const gz = { ...keyHeaders, "content-encoding": "gzip" };
    tooLarge(t, await rawPost(api, "/v2/create_session", gzipSync(sessionOfSize("l1-2k-gz", 2049)), gz));
    isSuccess(t, await rawPost(api, "/v2/create_session", gzipSync(sessionOfSize("l1-2k-gz", 2048)), gz), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    const jwt = await api.session("l1-2k-ev");
    const events = JSON.stringify({ events: [{ type: "llm", prompt: "y".repeat(2100) }] });
    tooLarge(
      t,
      await rawPost(api, "/v2/create_events", events, { "content-type": json, authorization: `Bearer ${jwt}` }),
    );
    t.same(await inspect(api.store).listEvents("l1-2k-ev"), []);
  });

  t.test("L1: session ids of 256 characters are accepted, 257 or empty are 400", async (t) => {
    const api = await build(t);
    const id256 = "s".repeat(256);
    isSuccess(t, await api.withKey("/v2/create_session", { session: { id: id256 } }), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    t.ok(await inspect(api.store).getSession(id256));
    const astral = "😀".repeat(256);
    isSuccess(t, await api.withKey("/v2/create_session", { session: { id: astral } }), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    isSuccess(t, await api.withKey("/create_session", { session_id: "f".repeat(256) }), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    const id257 = "s".repeat(257);
    isInvalid(t, await api.withKey("/v2/create_session", { session: { id: id257 } }), ["session.id"]);
    isInvalid(t, await api.withKey("/v2/create_session", { session: { session_id: id257 } }), ["session.session_id"]);
    isInvalid(t, await api.withKey("/create_session", { id: id257 }), ["id"]);
    isInvalid(t, await api.withKey("/v2/create_session", { session: { id: "" } }), ["session.id"]);
    isInvalid(t, await api.withKey("/v2/reauthorize_jwt", { session_id: id257 }), ["session_id"]);
    t.equal(await inspect(api.store).getSession(id257), undefined);
  });

  t.test("L1: event, agent and agent_id ids of 256 characters are accepted, 257 are 400", async (t) => {
    const api = await build(t);
    const jwt = await api.session("l1-ids");
    const id256 = "e".repeat(256);
    const id257 = "e".repeat(257);
    const ok = { events: [{ id: id256, type: "llm", agent_id: "a".repeat(256), session_id: "l1-ids" }] };
    t.same(isSuccess(t, await api.withJwt("/v2/create_events", ok, jwt), ["event_ids"]).event_ids, [id256]);
    isSuccess(t, await api.withJwt("/v2/create_agent", { id: "a".repeat(256), name: "n" }, jwt), ["agent_id"]);
    isSuccess(t, await api.withJwt("/v2/update_events", { events: [{ event_id: id256, model: "m" }] }, jwt), [
      "updated",
    ]);

    const bad = {
      events: [
        { id: id257, type: "llm" },
        { type: "llm", agent_id: "a".repeat(257) },
        { type: "llm", thread_id: "t".repeat(257) },
        { type: "llm", session_id: "s".repeat(257) },
      ],
    };
    isInvalid(t, await api.withJwt("/v2/create_events", bad, jwt), [
      "events[0].id",
      "events[1].agent_id",
      "events[2].thread_id",
      "events[3].session_id",
    ]);
    isInvalid(t, await api.withJwt("/v2/create_agent", { id: "a".repeat(257) }, jwt), ["id"]);
    isInvalid(t, await api.withJwt("/v2/create_agent", { id: "" }, jwt), ["id"]);
    isInvalid(t, await api.withJwt("/v2/update_events", { events: [{ event_id: id257, model: "x" }] }, jwt), [
      "events[0].event_id",
    ]);
    const events = await inspect(api.store).listEvents("l1-ids");
    t.same(
      events.map((e) => e.id),
      [id256],
    );
    t.equal(events[0]?.model, "m");
    t.same(
      (await inspect(api.store).listAgents("l1-ids")).map((a) => a.id),
      ["a".repeat(256)],
    );
  });

  t.test("L1: 100 tags of 256 characters are accepted; 101 tags or a 257-character tag are 400", async (t) => {
    const api = await build(t);
    const hundred = Array.from({ length: 100 }, (_, i) => `${i}`.padEnd(256, "t"));
    const res = await api.withKey("/v2/create_session", { session: { id: "l1-tags", tags: hundred } });
    const { jwt } = isSuccess(t, res, ["jwt", "session_id", "session_url"]);
    t.same((await inspect(api.store).getSession("l1-tags"))?.tags, hundred);

    const tooMany = [...hundred, "one more"];
    isInvalid(t, await api.withKey("/v2/create_session", { session: { id: "l1-101", tags: tooMany } }), [
      "session.tags",
    ]);
    const tooLong = ["a", "b", "c", "x".repeat(257)];
    isInvalid(t, await api.withKey("/v2/create_session", { session: { id: "l1-long", tags: tooLong } }), [
      "session.tags[3]",
    ]);
    isInvalid(t, await api.withKey("/create_session", { id: "l1-long", tags: tooLong }), ["tags[3]"]);
    t.equal(await inspect(api.store).getSession("l1-101"), undefined);
    t.equal(await inspect(api.store).getSession("l1-long"), undefined);

    isInvalid(t, await api.withJwt("/v2/update_session", { session: { tags: tooMany } }, jwt), ["session.tags"]);
    isInvalid(t, await api.withJwt("/v2/update_session", { session: { tags: tooLong } }, jwt), ["session.tags[3]"]);
    t.same((await inspect(api.store).getSession("l1-tags"))?.tags, hundred, "unchanged");
    const update = await api.withJwt("/v2/update_session", { session: { tags: ["z".repeat(256)] } }, jwt);
    t.same(isSuccess(t, update, ["session", "token_cost", "session_url"]).session.tags, ["z".repeat(256)]);
  });

  t.test("L1: 1 to 1000 events per call: 1000 is 200, 1001 and 0 are 400", async (t) => {
    const api = await build(t);
    const jwt = await api.session("l1-batch");
    const batch = (n: number, prefix: string) =>
      Array.from({ length: n }, (_, i) => ({ id: `${prefix}-${i}`, type: "tool", name: "t" }));
    const res = await api.withJwt("/v2/create_events", { events: batch(1000, "ok") }, jwt);
    t.equal(isSuccess(t, res, ["event_ids"]).event_ids.length, 1000);
    t.equal((await inspect(api.store).listEvents("l1-batch")).length, 1000);
    isInvalid(t, await api.withJwt("/v2/create_events", { events: batch(1001, "big") }, jwt), ["events"]);
    isInvalid(t, await api.withJwt("/create_events", { events: batch(1001, "big") }, jwt), ["events"]);
    isInvalid(t, await api.withJwt("/v2/create_events", { events: [] }, jwt), ["events"]);
    t.equal((await inspect(api.store).listEvents("l1-batch")).length, 1000, "nothing more stored");
    const updates = Array.from({ length: 1001 }, (_, i) => ({ event_id: `ok-${i % 1000}`, model: "m" }));
    isInvalid(t, await api.withJwt("/v2/update_events", { events: updates }, jwt), ["events"]);
    isInvalid(t, await api.withJwt("/v2/update_events", { events: [] }, jwt), ["events"]);
    const thousand = await api.withJwt("/v2/update_events", { events: updates.slice(0, 1000) }, jwt);
    t.equal(isSuccess(t, thousand, ["updated"]).updated, 1000);
  });

  t.test("L1: the most events per call is configurable (maxEvents)", async (t) => {
    const api = await build(t, { maxEvents: 5 });
    const jwt = await api.session("l1-max");
    const batch = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `m-${i}`, type: "llm" }));
    for (const url of ["/v2/create_events", "/create_events"]) {
      const body = isInvalid(t, await api.withJwt(url, { events: batch(6) }, jwt), ["events"]);
      t.match(body.details?.[0]?.message, /5/, `${url}: the detail says the maximum`);
    }
    t.same(await inspect(api.store).listEvents("l1-max"), []);
    t.equal(
      isSuccess(t, await api.withJwt("/v2/create_events", { events: batch(5) }, jwt), ["event_ids"]).event_ids.length,
      5,
    );
    t.equal((await inspect(api.store).listEvents("l1-max")).length, 5);
  });

  t.test("L1: bodies nest at most 100 levels: 100 is 200, 101 and 100 000 are 400, nothing stored", async (t) => {
    const api = await build(t);
    const jwt = await api.session("l1-deep");
    // {"events":[{ ... "deep": [[...]] }]} is 3 levels before the nested arrays begin.
    const body = (arrays: number) =>
      `{"events":[{"type":"tool","id":"d${arrays}","deep":${"[".repeat(arrays)}${"]".repeat(arrays)}}]}`;
    const headers = { "content-type": json, authorization: `Bearer ${jwt}` };
    isSuccess(t, await rawPost(api, "/v2/create_events", body(97), headers), ["event_ids"]);
    const nested = (await eventViews(api.store, "l1-deep"))[0]?.deep;
    t.equal(JSON.stringify(nested), `${"[".repeat(97)}${"]".repeat(97)}`, "stored as sent");
    for (const arrays of [98, 100_000]) {
      const res = await rawPost(api, "/v2/create_events", body(arrays), headers);
      const error = isError(t, res, 400, "Bad request");
      t.equal(error.message, "The request body nests arrays and objects more than 100 levels deep");
    }
    const brackets = `{"events":[{"type":"tool","id":"s","text":"${"[{".repeat(500)}"}]}`;
    isSuccess(t, await rawPost(api, "/v2/create_events", brackets, headers), ["event_ids"]);
    t.same(
      (await eventViews(api.store, "l1-deep")).map((e) => e.id).sort(),
      ["d97", "s"],
      "brackets in strings count for nothing",
    );
  });
});
