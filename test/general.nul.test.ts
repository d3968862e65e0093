/**
 * Decision 017: U+0000 (NUL) is refused in any text a request brings, on every engine, before
 * anything is stored: JSON bodies (a 400 G2 body naming each place, values and keys alike),
 * the OTLP endpoints (a 400 google.rpc.Status naming the place, in the request's media type),
 * the logs upload, and path and query parameters. The six characters `\u0000` (an escaped
 * backslash, then text) are no NUL and are stored as sent. Through real HTTP; every refusal is
 * followed by a read through the read API showing that nothing was stored.
 */
import { gzipSync } from "node:zlib";
import t, { type Test } from "tap";
import { encodeCursor } from "../domain/cursor.ts";
import type { KeyValue, LogsRequest, Span, TraceRequest } from "../ingest/otlp/types.ts";
import {
  API_KEY,
  build,
  INVALID_API_KEY,
  INVALID_JWT,
  isAnswer,
  isError,
  isInvalid,
  isSuccess,
  rawPost,
  type TestApp,
} from "./helper.ts";
import { decodeStatus, encodeLogs } from "./otlp.encode.ts";
import { type Media, request, sendTraces, span, TRACE, TRACE_SESSION } from "./otlp.helpers.ts";
import { read } from "./read.helpers.ts";

const VALUE = "must not contain the character U+0000 (NUL)";
const KEY = "is a key with the character U+0000 (NUL); keys must not contain it either";

/** A session, as the read API gives it; undefined when there is none. */
async function readSession(api: TestApp, id: string) {
  const res = await read(api, `/v2/sessions/${encodeURIComponent(id)}`);
  return res.statusCode === 404 ? undefined : res.json().session;
}

/** A session's events, as the read API gives them. */
async function readEvents(api: TestApp, id: string): Promise<Record<string, any>[]> {
  const res = await read(api, `/v2/sessions/${encodeURIComponent(id)}/events`);
  if (res.statusCode !== 200) throw new Error(`events of ${id}: ${res.statusCode} ${res.body}`);
  return res.json().events;
}

// ----------------------------------------------------------------------------------- JSON bodies

t.test(
  "create_session: a NUL in a value, a key, an array, deep in unknown fields: 400 naming each place",
  async (t) => {
    const api = await build(t);
    const res = await api.withKey("/v2/create_session", {
      session: {
        id: "nul-s",
        end_state_reason: "a\0b",
        tags: ["ok", "t\0"],
        host_env: { "O\0S": "Linux", OS: { Release: "6.1\0" } },
        custom: { list: [1, { deep: [null, "x", "\0"] }] },
      },
    });
    const body = isInvalid(t, res, [
      "session.end_state_reason",
      "session.tags[1]",
      'session.host_env["O\\u0000S"]',
      "session.host_env.OS.Release",
      "session.custom.list[1].deep[2]",
    ]);
    t.strictSame(
      body.details?.find((d) => d.path === 'session.host_env["O\\u0000S"]'),
      { path: 'session.host_env["O\\u0000S"]', message: KEY },
      "a key is named by its own path",
    );
    t.strictSame(body.details?.find((d) => d.path === "session.tags[1]")?.message, VALUE);
    t.equal(
      body.message,
      `The request body is not valid: session.end_state_reason ${VALUE} (and 4 more problems)`,
      "the message names the first place and counts the others",
    );
    t.equal(await readSession(api, "nul-s"), undefined, "nothing was stored");

    const flat = await api.withKey("/create_session", { session_id: "nul-flat", tags: ["\0"] });
    isInvalid(t, flat, ["tags[0]"]);
    t.equal(await readSession(api, "nul-flat"), undefined, "the unversioned twin refuses it too");

    const id = await api.withKey("/v2/create_session", { session: { id: "s\0" } });
    isInvalid(t, id, ["session.id"]);
    t.strictSame((await read(api, "/v2/sessions")).json().sessions, [], "no session at all was stored");
  },
);

t.test("create_events, update_events, update_session, create_agent: 400, and nothing changes", async (t) => {
  const api = await build(t);
  const jwt = await api.session("nul-e", { tags: ["before"] });
  const events = [
    { id: "e0", type: "llm", prompt: "fine" },
    { id: "e1", type: "tool", name: "x" },
    { id: "e2", type: "action" },
    { id: "e3", type: "llm", prompt: [{ role: "user", content: "hi\0" }], "odd\0": { nested: ["\0"] } },
  ];
  isInvalid(t, await api.withJwt("/v2/create_events", { events }, jwt), [
    "events[3].prompt[0].content",
    'events[3]["odd\\u0000"]',
    'events[3]["odd\\u0000"].nested[0]',
  ]);
  isInvalid(t, await api.withJwt("/create_events", { events }, jwt), [
    "events[3].prompt[0].content",
    'events[3]["odd\\u0000"]',
    'events[3]["odd\\u0000"].nested[0]',
  ]);
  t.strictSame(await readEvents(api, "nul-e"), [], "no event of the call was stored (G7)");

  isSuccess(t, await api.withJwt("/v2/create_events", { events: events.slice(0, 3) }, jwt), ["event_ids"]);
  const stored = await readEvents(api, "nul-e");
  isInvalid(t, await api.withJwt("/v2/update_events", { events: [{ id: "e0", completion: "done\0" }] }, jwt), [
    "events[0].completion",
  ]);
  t.strictSame(await readEvents(api, "nul-e"), stored, "update_events changed nothing");

  const session = await readSession(api, "nul-e");
  isInvalid(t, await api.withJwt("/v2/update_session", { session: { tags: ["a", "\0"], end_state: "ok" } }, jwt), [
    "session.tags[1]",
  ]);
  t.strictSame(await readSession(api, "nul-e"), session, "update_session changed nothing");

  isInvalid(t, await api.withJwt("/v2/create_agent", { id: "agent", name: "n\0" }, jwt), ["name"]);
  isInvalid(t, await api.withJwt("/v2/create_thread", { id: "th\0", agent_id: "a" }, jwt), ["id"]);
  const res = await read(api, "/v2/sessions/nul-e/export");
  t.strictSame(res.json().agents, [], "no agent was registered");
  t.strictSame(await readEvents(api, "nul-e"), stored, "no thread event was stored");

  isInvalid(t, await api.withKey("/v2/developer_errors", { session_id: "nul-e", message: "m\0" }), ["message"]);
  t.strictSame(await readEvents(api, "nul-e"), stored, "no developer error was stored");
});

t.test("reauthorize_jwt and the token call: a NUL is the 400, not a lookup", async (t) => {
  const api = await build(t);
  await api.session("nul-r");
  isInvalid(t, await api.withKey("/v2/reauthorize_jwt", { session_id: "nul-r\0" }), ["session_id"]);
  isInvalid(t, await api.post("/v3/auth/token", { api_key: `${API_KEY}\0` }), ["api_key"]);
  isInvalid(t, await api.post("/v3/auth/token", { api_key: API_KEY, "\0": 1 }), ['["\\u0000"]']);
});

t.test("at most 20 places are listed; the message counts them all", async (t) => {
  const api = await build(t);
  const tags = Array.from({ length: 25 }, (_, i) => `tag ${i}\0`);
  const body = isError(t, await api.withKey("/v2/create_session", { session: { id: "many", tags } }), 400);
  t.strictSame(
    body.details?.map((d) => d.path),
    tags.slice(0, 20).map((_, i) => `session.tags[${i}]`),
    "the first 20, in body order",
  );
  t.equal(body.message, `The request body is not valid: session.tags[0] ${VALUE} (and 24 more problems)`);
});

t.test("the six characters \\u0000 (an escaped backslash, then text) are no NUL: stored as sent", async (t) => {
  const api = await build(t);
  const texts = ["\\u0000", "a\\\\u0000", "\\\\\\u0000x"];
  const jwt = await api.session("nul-text", { end_state_reason: texts[0], tags: texts, host_env: { "\\u0000": "k" } });
  const session = await readSession(api, "nul-text");
  t.equal(session.end_state_reason, "\\u0000", "a backslash and u0000, 6 characters");
  t.equal(session.end_state_reason.length, 6);
  t.strictSame(session.tags, texts, "two and three backslashes before u0000: text too");
  t.strictSame(session.host_env, { "\\u0000": "k" }, "as a key too");
  isSuccess(t, await api.withJwt("/v2/create_events", { events: [{ id: "x", type: "tool", name: "\\u0000" }] }, jwt), [
    "event_ids",
  ]);
  t.equal((await readEvents(api, "nul-text"))[0]?.name, "\\u0000");

  // The raw text, written by hand: an odd number of backslashes before u0000 is a NUL.
  const raw = (text: string) =>
    rawPost(api, "/v2/create_session", `{"session":{"id":"raw","end_state_reason":"${text}"}}`, {
      "content-type": "application/json",
      "x-agentmon-api-key": API_KEY,
    });
  isInvalid(t, await raw("\\\\\\u0000"), ["session.end_state_reason"]);
  t.equal(await readSession(api, "raw"), undefined, "an escaped backslash, then a NUL: refused");
  isSuccess(t, await raw("\\\\\\\\u0000"), ["jwt", "session_id", "session_url"]);
  t.equal((await readSession(api, "raw")).end_state_reason, "\\\\u0000", "four backslashes: two, then text");
});

t.test("gzip and deflate bodies are looked at after decompression", async (t) => {
  const api = await build(t);
  const headers = { "content-type": "application/json", "content-encoding": "gzip", "x-agentmon-api-key": API_KEY };
  const refused = await rawPost(
    api,
    "/v2/create_session",
    gzipSync(JSON.stringify({ session: { id: "gz\0" } })),
    headers,
  );
  isInvalid(t, refused, ["session.id"]);
  t.strictSame((await read(api, "/v2/sessions")).json().sessions, [], "nothing stored");
  const text = gzipSync(JSON.stringify({ session: { id: "gz", tags: ["\\u0000"] } }));
  isSuccess(t, await rawPost(api, "/v2/create_session", text, headers), ["jwt", "session_id", "session_url"]);
  t.strictSame((await readSession(api, "gz")).tags, ["\\u0000"]);
});

t.test("G3: 401, 413 and 415 come before the NUL's 400", async (t) => {
  const api = await build(t, { bodyLimit: 1024 });
  const body = JSON.stringify({ session: { id: "g3\0" } });
  isAnswer(
    t,
    await rawPost(api, "/v2/create_session", body, { "content-type": "application/json" }),
    401,
    INVALID_API_KEY,
  );
  const jwt = { "content-type": "application/json", authorization: "Bearer not.a.jwt" };
  isAnswer(
    t,
    await rawPost(api, "/v2/create_events", '{"events":[{"type":"llm","x":"\\u0000"}]}', jwt),
    401,
    INVALID_JWT,
  );
  const key = { "x-agentmon-api-key": API_KEY };
  const big = JSON.stringify({ session: { id: "g3", x: `${"x".repeat(2000)}\0` } });
  isError(t, await rawPost(api, "/v2/create_session", big, { ...key, "content-type": "application/json" }), 413);
  isError(t, await rawPost(api, "/v2/create_session", body, { ...key, "content-type": "text/plain" }), 415);
  isInvalid(t, await rawPost(api, "/v2/create_session", body, { ...key, "content-type": "application/json" }), [
    "session.id",
  ]);
});

// ----------------------------------------------------------------------------------- parameters

t.test("path and query parameters with a NUL are a 400 naming them", async (t) => {
  const api = await build(t);
  await api.session("abc", { end_state_reason: "why" });
  const cases: [string, string[]][] = [
    ["/v2/sessions?q=a%00b", ["query.q"]],
    ["/v2/sessions?tag=a&tag=b%00", ["query.tag[1]"]],
    ["/v2/sessions?agent_id=%00&end_state=ok%00", ["query.agent_id", "query.end_state"]],
    ["/v2/sessions?x%00=1", ['query["x\\u0000"]']],
    ["/v2/sessions/abc%00", ["path.session_id"]],
    ["/v2/sessions/abc%00/events", ["path.session_id"]],
    ["/v2/sessions/abc/events?type=llm&type=%00", ["query.type[1]"]],
    ["/drilldown?session_id=abc%00", ["query.session_id"]],
  ];
  for (const [url, paths] of cases) {
    const res = await read(api, url);
    isInvalid(t, res, paths);
    t.match(res.json().message, /^The request is not valid: /, url);
  }
  isInvalid(t, await read(api, "/v2/sessions/abc%00", API_KEY, "DELETE"), ["path.session_id"]);
  t.ok(await readSession(api, "abc"), "the DELETE deleted nothing");

  const text = await read(api, "/v2/sessions?q=%2500");
  t.equal(text.statusCode, 200, "%2500 is the text %00, no NUL");
  const cursor = encodeCursor("sessions", { init_us: Date.now() * 1000, id: "abc\0" });
  isInvalid(t, await read(api, `/v2/sessions?cursor=${cursor}`), ["query.cursor"]);
});

// ----------------------------------------------------------------------------------- OTLP

const bearer = { authorization: `Bearer ${API_KEY}` };

/** The OTLP 400 for a NUL at `place`: a google.rpc.Status in the request's media type. */
function isNulStatus(t: Test, res: Awaited<ReturnType<typeof sendTraces>>, media: Media, place: string) {
  t.equal(res.statusCode, 400, `400 (${res.body.slice(0, 300)})`);
  const status =
    media === "protobuf" ? decodeStatus(res.rawPayload) : (res.json() as { code: number; message: string });
  t.match(res.headers["content-type"], media === "protobuf" ? /^application\/x-protobuf/ : /^application\/json/);
  t.strictSame(status, {
    code: 3,
    message: `The request has the character U+0000 (NUL) at ${place}; agentmon accepts no text that holds it, and stored nothing of this request`,
  });
}

const S1 = "00f067aa0ba902b7";
const S2 = "00f067aa0ba902b8";
const S3 = "00f067aa0ba902b9";
const str = (key: string, stringValue: string) => ({ key, value: { stringValue } });

/** One resource with these attributes, one scope of this name, these spans. */
const traces = (attributes: KeyValue[], scope: string, ...spans: Span[]): TraceRequest => ({
  resourceSpans: [{ resource: { attributes }, scopeSpans: [{ scope: { name: scope }, spans }] }],
});

/** Requests that hold a NUL, what it is in, and the place the answer must name. */
const CASES: [what: string, body: () => TraceRequest, place: string][] = [
  [
    "a span attribute's value",
    () =>
      request(span(S1, undefined, 0), span(S2, S1, 1, { attributes: [str("a", "ok"), str("gen_ai.prompt", "p\0")] })),
    'resourceSpans[0].scopeSpans[0].spans[1].attributes["gen_ai.prompt"]',
  ],
  [
    "a span attribute's key",
    () => request(span(S1, undefined, 0, { attributes: [str("a", "ok"), str("k\0", "v")] })),
    "resourceSpans[0].scopeSpans[0].spans[0].attributes[1].key",
  ],
  [
    "a value deep in an array and a key-value list",
    () =>
      request(
        span(S1, undefined, 0, {
          attributes: [
            {
              key: "nested",
              value: {
                kvlistValue: {
                  values: [
                    { key: "list", value: { arrayValue: { values: [{ intValue: "1" }, { stringValue: "\0" }] } } },
                  ],
                },
              },
            },
          ],
        }),
      ),
    'resourceSpans[0].scopeSpans[0].spans[0].attributes["nested"].kvlistValue["list"].arrayValue[1]',
  ],
  [
    "the span's name",
    () => request(span(S1, undefined, 0, { name: "chat\0" })),
    "resourceSpans[0].scopeSpans[0].spans[0].name",
  ],
  [
    "the status message",
    () => request(span(S1, undefined, 0, { status: { code: 2, message: "boom\0" } })),
    "resourceSpans[0].scopeSpans[0].spans[0].status.message",
  ],
  [
    "a span event's attribute",
    () =>
      request(
        span(S1, undefined, 0, {
          events: [
            { timeUnixNano: "1795323600500000000", name: "exception", attributes: [str("exception.message", "\0")] },
          ],
        }),
      ),
    'resourceSpans[0].scopeSpans[0].spans[0].events[0].attributes["exception.message"]',
  ],
  [
    "a link's trace state",
    () =>
      request(span(S1, undefined, 0, { links: [{ traceId: TRACE, spanId: S2, traceState: "a=\0", attributes: [] }] })),
    "resourceSpans[0].scopeSpans[0].spans[0].links[0].traceState",
  ],
  [
    "a resource attribute",
    () => traces([str("service.name", "svc"), str("host.name", "h\0")], "lib", span(S1, undefined, 0)),
    'resourceSpans[0].resource.attributes["host.name"]',
  ],
  ["the scope's name", () => traces([], "lib\0", span(S1, undefined, 0)), "resourceSpans[0].scopeSpans[0].scope.name"],
];

t.test("OTLP traces: a NUL in any decoded string is a 400 Status naming it, in both media types", async (t) => {
  const api = await build(t);
  for (const [what, body, place] of CASES) {
    for (const media of ["protobuf", "json"] as const) {
      for (const gzip of [false, true]) {
        const res = await sendTraces(api, body(), { media, gzip });
        isNulStatus(t, res, media, place);
        t.equal(
          await readSession(api, TRACE_SESSION),
          undefined,
          `${what}, ${media}${gzip ? ", gzip" : ""}: nothing stored`,
        );
      }
    }
  }
});

t.test(
  "OTLP traces: \\u0000 as text is stored as sent, and JSON holding a NUL escape is kept as its text",
  async (t) => {
    const api = await build(t);
    const messages = JSON.stringify([{ role: "user", content: "hi\0" }]); // `\u0000`, escaped, inside the text
    t.notOk(messages.includes("\0"), "the attribute's text holds no NUL");
    const body = request(
      span(S1, undefined, 0, { attributes: [str("agentops.tags", JSON.stringify(["a\0"]))] }),
      span(S2, S1, 1, {
        attributes: [
          str("gen_ai.request.model", "gpt-4o-mini"),
          str("gen_ai.input.messages", messages),
          str("note", "\\u0000"),
        ],
      }),
      span(S3, S1, 2, {
        attributes: [
          str("gen_ai.request.model", "gpt-4o-mini"),
          str("gen_ai.input.messages", JSON.stringify([{ role: "user", content: "hi\\u0000" }])),
        ],
      }),
    );
    for (const media of ["protobuf", "json"] as const) {
      const res = await sendTraces(api, body, { media });
      t.equal(res.statusCode, 200, `${media}: ${res.body}`);
    }
    const event = (await readEvents(api, TRACE_SESSION)).find((e) => e.id === S2) ?? {};
    const kept = (event.otel?.attributes ?? []) as KeyValue[];
    const attributes = Object.fromEntries(
      kept.map((kv) => [kv.key, (kv.value as { stringValue: string }).stringValue]),
    );
    t.equal(attributes.note, "\\u0000", "six characters");
    t.equal(attributes["gen_ai.input.messages"], messages, "the attribute is kept as sent");
    t.equal(event.type, "llm");
    t.equal(event.prompt ?? null, null, "no prompt is made of JSON that would hold a NUL");
    const other = (await readEvents(api, TRACE_SESSION)).find((e) => e.id === S3);
    t.strictSame(other?.prompt, [{ role: "user", content: "hi\\u0000" }], "JSON holding the text \\u0000 is read");
    t.strictSame((await readSession(api, TRACE_SESSION)).tags, ['["a\\u0000"]'], "the tags text is one tag, as sent");
  },
);

t.test("OTLP logs: a NUL in a record is a 400 Status; nothing is kept", async (t) => {
  const api = await build(t);
  t.equal(
    (await sendTraces(api, request(span(S1, undefined, 0, { attributes: [str("gen_ai.request.model", "m")] }))))
      .statusCode,
    200,
  );
  const before = await readEvents(api, TRACE_SESSION);
  const logs = (
    body: LogsRequest["resourceLogs"][number]["scopeLogs"][number]["logRecords"][number]["body"],
  ): LogsRequest => ({
    resourceLogs: [
      {
        resource: { attributes: [] },
        scopeLogs: [
          {
            scope: { name: "test" },
            logRecords: [
              {
                attributes: [],
                traceId: TRACE,
                spanId: S1,
                eventName: "gen_ai.user.message",
                body: { stringValue: "fine" },
              },
              {
                attributes: [],
                traceId: TRACE,
                spanId: S1,
                eventName: "gen_ai.user.message",
                ...(body === undefined ? {} : { body }),
              },
            ],
          },
        ],
      },
    ],
  });
  const bad = logs({ kvlistValue: { values: [str("content", "hi\0")] } });
  for (const media of ["protobuf", "json"] as const) {
    const res = await api.inject({
      method: "POST",
      url: "/v1/logs",
      headers: { ...bearer, "content-type": media === "protobuf" ? "application/x-protobuf" : "application/json" },
      payload: media === "protobuf" ? Buffer.from(encodeLogs(bad)) : JSON.stringify(bad),
    });
    isNulStatus(t, res, media, 'resourceLogs[0].scopeLogs[0].logRecords[1].body.kvlistValue["content"]');
  }
  t.strictSame(await readEvents(api, TRACE_SESSION), before, "no record was kept, not even the one without a NUL");
});

t.test("OTLP metrics are not read, so a NUL there is accepted (nothing is stored)", async (t) => {
  const api = await build(t);
  const res = await api.inject({
    method: "POST",
    url: "/v1/metrics",
    headers: { ...bearer, "content-type": "application/json" },
    payload: JSON.stringify({ resourceMetrics: [{ resource: { attributes: [str("a", "\0")] } }] }),
  });
  t.equal(res.statusCode, 200, res.body);
  t.strictSame((await read(api, "/v2/sessions")).json().sessions, []);
});

t.test("OTLP/JSON: a field OTLP does not define is ignored (T11), NUL or not", async (t) => {
  const api = await build(t);
  const body = { ...request(span(S1, undefined, 0)), "unknown\0": "\0" };
  const res = await sendTraces(api, body as TraceRequest);
  t.equal(res.statusCode, 200, res.body);
  t.ok(await readSession(api, TRACE_SESSION), "stored");
});

t.test("logs upload: a NUL in the text is a 400 G2 body; nothing is stored", async (t) => {
  const api = await build(t);
  const upload = (text: string) =>
    api.inject({
      method: "POST",
      url: "/v4/logs/upload/",
      headers: { ...bearer, "content-type": "application/json", "trace-id": TRACE },
      payload: JSON.stringify({ body: text }),
    });
  isInvalid(t, await upload("line one\nline\0two\n"), ["body"]);
  t.equal(await readSession(api, TRACE_SESSION), undefined, "the trace's session was not even created");
  t.equal((await read(api, `/v2/sessions/${TRACE_SESSION}/logs`)).statusCode, 404);
  t.equal((await upload("\\u0000\n")).statusCode, 200);
  t.equal(
    (await read(api, `/v2/sessions/${TRACE_SESSION}/logs`)).body,
    "\\u0000\n",
    "the text \\u0000 is stored as sent",
  );
});
