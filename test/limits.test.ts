/**
 * Contract section 5, "Limits and versions": rules L1-L3, through real HTTP (app.inject) on a
 * real `:memory:` SQLite store. Each top-level test is one rule; every subtest name starts with its id.
 */
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import type { LightMyRequestResponse } from "fastify";
import t, { type Test } from "tap";
import { sessionView } from "../domain/views.ts";
import {
  API_KEY,
  build,
  eventViews,
  INVALID_API_KEY,
  inspect,
  isError,
  isInvalid,
  isSuccess,
  json,
  MIB,
  OTHER_PROJECT_KEY,
  rawPost,
  type TestApp,
  UNKNOWN_KEY,
} from "./helper.ts";

const tooLarge = (t: Test, res: LightMyRequestResponse) => isError(t, res, 413, "Payload too large");

/** A create_session body of exactly `size` bytes (ASCII), padded through an unknown field. */
function sessionOfSize(id: string, size: number): string {
  const empty = JSON.stringify({ session: { id, pad: "" } });
  const body = JSON.stringify({ session: { id, pad: "x".repeat(size - empty.length) } });
  if (body.length !== size) throw new Error(`sessionOfSize: ${body.length} !== ${size}`);
  return body;
}

const keyHeaders = { "content-type": json, "x-agentmon-api-key": API_KEY };

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

t.test("L2: /create_session and /create_events behave like their /v2 twins", async (t) => {
  const fields = {
    init_timestamp: "2026-11-22T10:39:43.640361+05:30",
    end_state: "completed",
    tags: ["a", "b"],
    host_env: { OS: { OS: "Linux" }, CPU: { "Total cores": 2 } },
    video: null,
    custom: { n: [1, null] },
    jwt: "never stored",
  };
  const view = async (api: TestApp, id: string) => {
    const stored = await inspect(api.store).getSession(id);
    if (!stored) throw new Error(`no session ${id}`);
    return { ...sessionView(stored), id: "*", project_id: stored.project_id };
  };

  t.test("L2: /create_session with a flat body stores what /v2 stores from the wrapped one", async (t) => {
    const api = await build(t);
    const v2 = isSuccess(t, await api.withKey("/v2/create_session", { session: { id: "l2-v2", ...fields } }), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    const flat = isSuccess(t, await api.withKey("/create_session", { id: "l2-flat", ...fields }), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    const sdk = isSuccess(t, await api.withKey("/create_session", { session_id: "l2-sdk", ...fields }), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    t.equal(v2.session_id, "l2-v2");
    t.equal(flat.session_id, "l2-flat");
    t.equal(sdk.session_id, "l2-sdk");
    t.equal(flat.session_url, "http://agentmon.test/sessions/l2-flat");
    t.same(await view(api, "l2-flat"), await view(api, "l2-v2"));
    t.same(await view(api, "l2-sdk"), await view(api, "l2-v2"));
    const stored = await inspect(api.store).getSession("l2-flat");
    t.equal(stored?.init_timestamp, "2026-11-22T05:09:43.640361Z");
    t.equal(stored?.end_state, "Success");
    t.notOk(stored && "jwt" in stored.extra);
    const use = await api.withJwt("/create_events", { events: [{ type: "llm" }] }, flat.jwt);
    isSuccess(t, use, ["event_ids"]);
  });

  t.test("L2: /create_session also takes the wrapped body", async (t) => {
    const api = await build(t);
    const res = await api.withKey("/create_session", { session: { id: "l2-wrapped", ...fields } });
    t.equal(isSuccess(t, res, ["jwt", "session_id", "session_url"]).session_id, "l2-wrapped");
    await api.withKey("/v2/create_session", { session: { id: "l2-twin", ...fields } });
    t.same(await view(api, "l2-wrapped"), await view(api, "l2-twin"));
    const sdk = await api.withKey("/create_session", { session: { session_id: "l2-wrapped-sdk" } });
    t.equal(isSuccess(t, sdk, ["jwt", "session_id", "session_url"]).session_id, "l2-wrapped-sdk");
  });

  t.test("L2: a top-level id makes the body flat; a session field is then an unknown field", async (t) => {
    const api = await build(t);
    const res = await api.withKey("/create_session", { id: "l2-top", session: { id: "inner", tags: ["x"] } });
    t.equal(isSuccess(t, res, ["jwt", "session_id", "session_url"]).session_id, "l2-top");
    const stored = await inspect(api.store).getSession("l2-top");
    t.same(stored?.extra, { session: { id: "inner", tags: ["x"] } });
    t.equal(stored?.tags, null);
    t.equal(await inspect(api.store).getSession("inner"), undefined);
  });

  t.test("L2: /create_session errors match /v2, with flat paths", async (t) => {
    const api = await build(t);
    isInvalid(t, await api.withKey("/create_session", { session: "l2-s" }), ["id"]);
    isInvalid(t, await api.withKey("/create_session", {}), ["id"]);
    isInvalid(t, await api.withKey("/create_session", { id: "l2-e", init_timestamp: "2026-11-22" }), [
      "init_timestamp",
    ]);
    isInvalid(t, await api.withKey("/create_session", { session: { id: "l2-e", init_timestamp: "2026-11-22" } }), [
      "session.init_timestamp",
    ]);
    isInvalid(t, await api.withKey("/create_session", { id: "l2-e", session_id: "other" }), ["session_id"]);
    isInvalid(t, await api.withKey("/create_session", { id: "l2-e", end_state: "done" }), ["end_state"]);
    const noKey = await rawPost(api, "/create_session", JSON.stringify({ id: "l2-e" }), { "content-type": json });
    t.same(isError(t, noKey, 401), INVALID_API_KEY);
    const plain = await rawPost(api, "/create_session", "{}", { ...keyHeaders, "content-type": "text/plain" });
    isError(t, plain, 415, "Unsupported media type");
    await api.session("l2-theirs", {}, OTHER_PROJECT_KEY);
    isError(t, await api.withKey("/create_session", { id: "l2-theirs" }), 409, "Session already exists");
    t.equal(await inspect(api.store).getSession("l2-e"), undefined);
  });

  t.test("L2: /create_events answers and stores exactly like /v2/create_events", async (t) => {
    const api = await build(t);
    const jwtA = await api.session("l2-ev-a");
    const jwtB = await api.session("l2-ev-b");
    const events = [
      { id: "l2-1", event_type: "llms", init_timestamp: "2026-11-22T05:09:43.653700+00:00", cost: 2.1e-6, extra: 1 },
      { id: "l2-2", event_type: "tools", name: "calc", params: { a: 2 }, returns: "4", timestamp: "2026-11-22" },
      { id: "l2-3", type: "error", timestamp: "2026-11-22T05:09:44Z", code: 500, details: null },
    ];
    const badA = await api.withJwt("/v2/create_events", { events }, jwtA);
    const badB = await api.withJwt("/create_events", { events }, jwtB);
    isInvalid(t, badA, ["events[1].timestamp"]);
    t.same(badB.json(), badA.json(), "the same 400");
    const good = events.map((e) => (e.id === "l2-2" ? { ...e, timestamp: "2026-11-22T05:09:43.7Z" } : e));
    const okA = await api.withJwt("/v2/create_events", { events: good }, jwtA);
    const okB = await api.withJwt("/create_events", { events: good }, jwtB);
    t.same(isSuccess(t, okB, ["event_ids"]), isSuccess(t, okA, ["event_ids"]), "the same answer");
    const stored = async (id: string) => (await eventViews(api.store, id)).map((e) => ({ ...e, session_id: "*" }));
    const a = await stored("l2-ev-a");
    t.equal(a.length, 3);
    t.same(await stored("l2-ev-b"), a, "the same records");
    const costA = await api.withJwt("/v2/update_session", { session: {} }, jwtA);
    const costB = await api.withJwt("/v2/update_session", { session: {} }, jwtB);
    t.equal(costA.json().token_cost, "0.0000021");
    t.equal(costB.json().token_cost, costA.json().token_cost);
  });

  t.test("L2: /create_events refuses exactly like /v2/create_events", async (t) => {
    const api = await build(t, { bodyLimit: 4096 });
    const jwt = await api.session("l2-err");
    await api.session("l2-err-other");
    const same = async (body: string, headers: Record<string, string>, status: number) => {
      const v2 = await rawPost(api, "/v2/create_events", body, headers);
      const flat = await rawPost(api, "/create_events", body, headers);
      isError(t, v2, status);
      isError(t, flat, status);
      t.same(flat.json(), v2.json(), `${status}: the same body`);
      t.equal(flat.statusCode, v2.statusCode);
    };
    const bearer = { "content-type": json, authorization: `Bearer ${jwt}` };
    await same(JSON.stringify({ events: [{ type: "llm" }] }), { "content-type": json }, 401);
    await same(JSON.stringify({ events: [{ type: "llm" }] }), { ...bearer, authorization: "Bearer x.y.z" }, 401);
    await same("{", bearer, 400);
    await same(JSON.stringify({ events: [{ type: "nope" }, { type: "llm", cost: -1 }] }), bearer, 400);
    await same(JSON.stringify({ events: [{ type: "llm", session_id: "l2-err-other" }] }), bearer, 403);
    await same(JSON.stringify({ events: [{ type: "llm", pad: "p".repeat(5000) }] }), bearer, 413);
    await same("{}", { ...bearer, "content-type": "text/plain" }, 415);
    await same("{}", { ...bearer, "content-encoding": "br" }, 415);
    t.same(await inspect(api.store).listEvents("l2-err"), []);
    t.same(await inspect(api.store).listEvents("l2-err-other"), []);
  });

  t.test("L2: retries across the two paths never duplicate", async (t) => {
    const api = await build(t);
    const first = await api.withKey("/create_session", { id: "l2-retry", tags: ["first"] });
    const { jwt } = isSuccess(t, first, ["jwt", "session_id", "session_url"]);
    isSuccess(t, await api.withKey("/v2/create_session", { session: { id: "l2-retry", tags: ["second"] } }), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    t.same((await inspect(api.store).getSession("l2-retry"))?.tags, ["first"]);
    const events = { events: [{ id: "r", type: "llm" }] };
    isSuccess(t, await api.withJwt("/create_events", events, jwt), ["event_ids"]);
    isSuccess(t, await api.withJwt("/v2/create_events", events, jwt), ["event_ids"]);
    t.equal((await inspect(api.store).listEvents("l2-retry")).length, 1);
  });
});

t.test("L3: GET /v2/openapi.yaml serves the document byte for byte", async (t) => {
  const file = readFileSync(new URL("../openapi.yaml", import.meta.url));

  t.test("L3: the body is exactly openapi.yaml, with a YAML content type", async (t) => {
    const api = await build(t);
    const res = await api.inject({ method: "GET", url: "/v2/openapi.yaml" });
    t.equal(res.statusCode, 200);
    t.match(res.headers["content-type"], /^application\/(yaml|x-yaml)\b|^text\/(yaml|x-yaml)\b/);
    t.equal(res.rawPayload.length, file.length, "the same length");
    t.ok(res.rawPayload.equals(file), "the same bytes");
    t.match(res.body, /^openapi: 3\.1\.0\n/);
  });

  t.test("L3: no credential is needed, and a bad one does not matter", async (t) => {
    const api = await build(t);
    const res = await api.inject({
      method: "GET",
      url: "/v2/openapi.yaml",
      headers: { "x-agentmon-api-key": UNKNOWN_KEY, authorization: "Bearer x" },
    });
    t.equal(res.statusCode, 200);
    t.ok(res.rawPayload.equals(file));
  });

  t.test("L3: the served document does not change with maxEvents", async (t) => {
    const api = await build(t, { maxEvents: 5 });
    const res = await api.inject({ method: "GET", url: "/v2/openapi.yaml" });
    t.equal(res.statusCode, 200);
    t.ok(res.rawPayload.equals(file), "still byte for byte the file");
  });

  t.test("L3: other methods on the path are 405", async (t) => {
    const api = await build(t);
    const res = await api.inject({
      method: "POST",
      url: "/v2/openapi.yaml",
      headers: { "content-type": json },
      payload: "{}",
    });
    isError(t, res, 405, "Method not allowed");
    t.match(res.headers.allow, /\bGET\b/);
  });
});
