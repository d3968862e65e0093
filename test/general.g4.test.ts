/**
 * Contract section 1, "Every call": rule G4 (JSON bodies, gzip and deflate, the limit after
 * decompression), through real HTTP (app.inject) on a real `:memory:` SQLite store. Every subtest
 * name starts with its id.
 */
import { deflateSync, gzipSync } from "node:zlib";
import t from "tap";
import { API_KEY, build, eventViews, inspect, isError, isSuccess, json, MIB, rawPost } from "./helper.ts";

t.test("G4: JSON with any parameters, gzip and deflate bodies; the limit applies after decompression", async (t) => {
  t.test("G4: Content-Type application/json with parameters is accepted", async (t) => {
    const api = await build(t);
    for (const [i, type] of [
      "application/json; charset=UTF-8",
      "application/json;charset=utf-8",
      "application/json; charset=utf-8; profile=x",
    ].entries()) {
      const res = await rawPost(api, "/v2/create_session", JSON.stringify({ session: { id: `g4-ct-${i}` } }), {
        "content-type": type,
        "x-agentops-api-key": API_KEY,
      });
      isSuccess(t, res, ["jwt", "session_id", "session_url"]);
      t.ok(await inspect(api.store).getSession(`g4-ct-${i}`), `${type}: stored`);
    }
  });

  t.test("G4: gzip and deflate (zlib) bodies are accepted and stored", async (t) => {
    const api = await build(t);
    const key = { "content-type": json, "x-agentmon-api-key": API_KEY };
    const session = { session: { id: "g4-zip", tags: ["gz"], host_env: { OS: { OS: "Linux" } } } };
    const created = await rawPost(api, "/v2/create_session", gzipSync(JSON.stringify(session)), {
      ...key,
      "content-encoding": "gzip",
    });
    const { jwt } = isSuccess(t, created, ["jwt", "session_id", "session_url"]);
    const stored = await inspect(api.store).getSession("g4-zip");
    t.same(stored?.tags, ["gz"]);
    t.same(stored?.host_env, { OS: { OS: "Linux" } });

    const bearer = { "content-type": "application/json; charset=UTF-8", authorization: `Bearer ${jwt}` };
    const gz = { events: [{ id: "gz-1", type: "llm", model: "gpt-4o", prompt: "2+2?" }] };
    const df = { events: [{ id: "df-1", type: "tool", name: "calc", input: { a: 2 } }] };
    const id = { events: [{ id: "id-1", type: "action" }] };
    const upper = { events: [{ id: "up-1", type: "error" }] };
    isSuccess(
      t,
      await rawPost(api, "/v2/create_events", gzipSync(JSON.stringify(upper)), {
        ...bearer,
        "content-encoding": "GZIP",
      }),
      ["event_ids"],
    );
    isSuccess(
      t,
      await rawPost(api, "/v2/create_events", gzipSync(JSON.stringify(gz)), { ...bearer, "content-encoding": "gzip" }),
      ["event_ids"],
    );
    isSuccess(
      t,
      await rawPost(api, "/v2/create_events", deflateSync(JSON.stringify(df)), {
        ...bearer,
        "content-encoding": "deflate",
      }),
      ["event_ids"],
    );
    isSuccess(
      t,
      await rawPost(api, "/v2/create_events", JSON.stringify(id), { ...bearer, "content-encoding": "identity" }),
      ["event_ids"],
    );
    const byId = new Map((await eventViews(api.store, "g4-zip")).map((e) => [e.id, e]));
    t.equal(byId.get("gz-1")?.model, "gpt-4o");
    t.equal(byId.get("gz-1")?.prompt, "2+2?");
    t.equal(byId.get("df-1")?.name, "calc");
    t.same(byId.get("df-1")?.input, { a: 2 });
    t.ok(byId.has("id-1"));
    t.ok(byId.has("up-1"));

    const update = { session: { end_state: "Success" } };
    const res = await rawPost(api, "/v2/update_session", deflateSync(JSON.stringify(update)), {
      ...bearer,
      "content-encoding": "deflate",
    });
    t.equal(isSuccess(t, res, ["session", "token_cost", "session_url"]).session.end_state, "Success");
  });

  t.test("G4: a body that does not decompress as its Content-Encoding says is a 400", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g4-bad");
    const bearer = { "content-type": json, authorization: `Bearer ${jwt}` };
    const good = gzipSync(JSON.stringify({ events: [{ type: "llm" }] }));
    const cases: [string, Buffer | string, string][] = [
      ["random bytes as gzip", Buffer.from("this is not gzip at all"), "gzip"],
      ["plain JSON as gzip", JSON.stringify({ events: [{ type: "llm" }] }), "gzip"],
      ["truncated gzip", good.subarray(0, good.length - 12), "gzip"],
      ["gzip bytes as deflate", good, "deflate"],
      ["corrupted gzip body", Buffer.concat([good.subarray(0, 12), Buffer.alloc(good.length - 12, 0xff)]), "gzip"],
    ];
    for (const [name, payload, encoding] of cases) {
      const res = await rawPost(api, "/v2/create_events", payload, { ...bearer, "content-encoding": encoding });
      t.test(`G4: ${name}`, async (t) => {
        isError(t, res, 400);
      });
    }
    t.same(await inspect(api.store).listEvents("g4-bad"), [], "nothing stored");
  });

  t.test("G4: a Content-Encoding other than gzip or deflate is a 415", async (t) => {
    const api = await build(t);
    for (const encoding of ["br", "compress", "zstd"]) {
      const res = await rawPost(api, "/v2/create_session", JSON.stringify({ session: { id: `g4-${encoding}` } }), {
        "content-type": json,
        "content-encoding": encoding,
        "x-agentmon-api-key": API_KEY,
      });
      isError(t, res, 415, "Unsupported media type");
      t.equal(await inspect(api.store).getSession(`g4-${encoding}`), undefined);
    }
  });

  t.test("G4: a request without a body is served whatever its Content-Encoding (nothing to decode)", async (t) => {
    const api = await build(t);
    for (const url of ["/healthz", "/ui/uplot.js", "/v2/openapi.yaml"]) {
      const res = await api.inject({ method: "GET", url, headers: { "content-encoding": "application/json" } });
      t.equal(res.statusCode, 200, `GET ${url}`);
    }
  });

  t.test("G4: identity in a list of codings is no coding; two real codings are a 415", async (t) => {
    const api = await build(t);
    const headers = (encoding: string) => ({
      "content-type": json,
      "content-encoding": encoding,
      "x-agentmon-api-key": API_KEY,
    });
    const body = (id: string) => gzipSync(JSON.stringify({ session: { id } }));
    isSuccess(t, await rawPost(api, "/v2/create_session", body("g4-list"), headers("identity, GZIP")), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    t.ok(await inspect(api.store).getSession("g4-list"), "stored");
    const plain = JSON.stringify({ session: { id: "g4-identity" } });
    isSuccess(t, await rawPost(api, "/v2/create_session", plain, headers("identity")), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    isError(t, await rawPost(api, "/v2/create_session", body("g4-twice"), headers("gzip, gzip")), 415);
    t.equal(await inspect(api.store).getSession("g4-twice"), undefined);
  });

  t.test("G4: a gzip bomb gets 413", async (t) => {
    const api = await build(t, { bodyLimit: MIB });
    const bomb = `{"session": {"id": "g4-bomb", "pad": "${" ".repeat(20 * MIB)}"}}`;
    const gz = gzipSync(bomb);
    t.ok(gz.length < MIB / 10, "the compressed body is small");
    const headers = { "content-type": json, "content-encoding": "gzip", "x-agentmon-api-key": API_KEY };
    isError(t, await rawPost(api, "/v2/create_session", gz, headers), 413, "Payload too large");
    const deflated = deflateSync(bomb);
    isError(t, await rawPost(api, "/v2/create_session", deflated, { ...headers, "content-encoding": "deflate" }), 413);
    t.equal(await inspect(api.store).getSession("g4-bomb"), undefined, "nothing stored");
    const after = await api.withKey("/v2/create_session", { session: { id: "g4-after" } });
    isSuccess(t, after, ["jwt", "session_id", "session_url"]);
  });
});
