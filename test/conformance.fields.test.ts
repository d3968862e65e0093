/**
 * The conformance layer (decision 030, test/conformance.ts), both ways:
 * - it refuses what openapi.yaml does not document (a property, a status, a media type);
 * - every optional property that a JSON answer's schema documents is answered somewhere: a table
 *   of scenarios (OTLP traces naming a conversation, ended sessions, errors, searches that match,
 *   analytics with a rest, OTLP partial successes, ...) runs through build()'s checked inject, which
 *   records the property paths of every answer, and each optional path of each schema must have
 *   been seen, but for the allow-list below, each with its reason.
 */
import t from "tap";
import { conformanceProblem, jsonResponseSchemas, optionalPaths, recordPaths, seen } from "./conformance.ts";
import { API_KEY, build, OTHER_PROJECT_KEY } from "./helper.ts";
import { sendTraces, span, TRACE_SESSION, request as traceRequest } from "./otlp.helpers.ts";
import { at, createEvents, read, T0 } from "./read.helpers.ts";

/**
 * Optional paths no scenario can produce, by schema, each with why. Empty today: every documented
 * optional field can be made to appear.
 */
const CANNOT_APPEAR: Record<string, Record<string, string>> = {};

recordPaths();

const STATS = {
  events: 0,
  event_counts: { llm: 0, tool: 0, action: 0, error: 0 },
  prompt_tokens: 0,
  completion_tokens: 0,
  cache_read_tokens: 0,
  cache_creation_tokens: 0,
  reasoning_tokens: 0,
  cost: "0.00",
  duration_ms: 0,
  error_count: 0,
  first_event_at: null,
  last_event_at: null,
};

t.test("the layer refuses an undocumented property, status or media type, and accepts free-form objects", async (t) => {
  const answer = (body: unknown, status = 200, contentType = "application/json", url = "/v2/sessions/s/stats") =>
    conformanceProblem({ method: "GET", url, status, contentType, body: JSON.stringify(body) });
  t.equal(answer({ status: "success", stats: STATS }), undefined, "a documented answer passes");
  t.match(
    answer({ status: "success", stats: STATS, extra: 1 }),
    /getSessionStats [\s\S]*must NOT have additional properties "extra"/,
  );
  t.match(
    answer({ status: "success", stats: { ...STATS, event_counts: { ...STATS.event_counts, span: 1 } } }),
    /\/stats\/event_counts must NOT have additional properties "span"/,
    "at any depth, with the path",
  );
  t.match(
    answer({ status: "success", stats: STATS }, 418),
    /answered status 418, which openapi.yaml does not document/,
  );
  t.match(answer({ status: "success", stats: STATS }, 200, "text/plain"), /media type "text\/plain"/);
  t.match(answer({ status: "success" }), /must have required property 'stats'/, "a missing required property");
  const measures = {
    sessions: 1,
    failures: 0,
    events: 0,
    error_events: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    cost: "0.00",
    duration_ms: { p50: null, p95: null, p99: null },
  };
  const breakdown = (item: object, other: object | null) =>
    answer(
      { status: "success", by: "model", from: "a", to: "b", percentiles: "exact", items: [item], other },
      200,
      "application/json",
      "/v2/analytics/breakdown?by=model",
    );
  t.equal(breakdown({ key: "m", ...measures }, measures), undefined, "allOf and oneOf branches see the whole object");
  t.match(breakdown({ key: "m", ...measures, x: 1 }, null), /\/items\/0 must NOT have unevaluated properties "x"/);
  const session = {
    id: "s",
    init_timestamp: "2026-11-22T05:00:00Z",
    end_timestamp: null,
    end_state: null,
    end_state_reason: null,
    tags: null,
    host_env: { any: { thing: 1 } },
    sent_by_the_client: [1],
  };
  t.equal(
    answer(
      { status: "success", session, stats: STATS, agents: [], scores: [], session_url: "u" },
      200,
      "application/json",
      "/v2/sessions/s",
    ),
    undefined,
    "free-form objects stay free (Session's unknown fields, host_env)",
  );
  t.match(
    answer(
      { status: "success", session, stats: STATS, agents: [], session_url: "u", x: 1 },
      200,
      "application/json",
      "/v2/sessions/s",
    ),
    /must NOT have additional properties "x"/,
  );
  t.equal(
    conformanceProblem({ method: "GET", url: "/no/such/path", status: 404, contentType: "text/plain", body: "" }),
    undefined,
    "a path openapi.yaml has not is the router's 404, not an operation's answer",
  );
  t.match(
    conformanceProblem({ method: "POST", url: "/v1/traces", status: 200, contentType: "text/csv", body: "" }),
    /media type "text\/csv"/,
    "non-JSON answers: their media type is checked",
  );
});

const str = (key: string, value: string) => ({ key, value: { stringValue: value } });
const int = (key: string, value: number) => ({ key, value: { intValue: String(value) } });

t.test("every optional field of every JSON answer appears in some answer", async (t) => {
  const api = await build(t);
  const key = { "x-agentmon-api-key": API_KEY };
  const ok = async (what: string, res: { statusCode: number; body: string }, status = 200) => {
    t.equal(res.statusCode, status, `${what}: ${res.body.slice(0, 200)}`);
  };

  // An OTLP trace whose llm span names a conversation, and a span refused alone (T9: an all-zero
  // span id): a partial success (ExportTraceServiceResponse.partialSuccess).
  const traces = await sendTraces(
    api,
    traceRequest(
      span("00f067aa0ba902b7", undefined, 0, { name: "agent run" }),
      span("00f067aa0ba902b8", "00f067aa0ba902b7", 1, {
        attributes: [
          str("gen_ai.operation.name", "chat"),
          str("gen_ai.request.model", "gpt-4o-mini"),
          str("gen_ai.conversation.id", "conv-42"),
          int("gen_ai.usage.input_tokens", 57),
          int("gen_ai.usage.output_tokens", 17),
        ],
      }),
      span("00f067aa0ba902b9", "00f067aa0ba902b7", 2, {
        attributes: [str("gen_ai.operation.name", "execute_tool"), str("gen_ai.tool.name", "lookup")],
      }),
      span("0000000000000000", "00f067aa0ba902b7", 3),
    ),
  );
  await ok("traces with a refused span", traces);
  t.ok(traces.json().partialSuccess, "a partial success");

  // Logs of a trace that is another project's session: refused alone (ExportLogsServiceResponse.partialSuccess).
  const otherTrace = "6c9f0000000000000000000000000001";
  await ok(
    "the other project's trace",
    await sendTraces(
      api,
      {
        resourceSpans: [
          {
            resource: { attributes: [] },
            scopeSpans: [
              { scope: { name: "test" }, spans: [{ ...span("10f067aa0ba902b7", undefined, 0), traceId: otherTrace }] },
            ],
          },
        ],
      },
      {
        headers: { authorization: `Bearer ${OTHER_PROJECT_KEY}` },
      },
    ),
  );
  const logs = await api.inject({
    method: "POST",
    url: "/v1/logs",
    headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
    payload: JSON.stringify({
      resourceLogs: [
        {
          resource: { attributes: [] },
          scopeLogs: [
            {
              scope: { name: "test" },
              logRecords: [
                {
                  attributes: [],
                  traceId: otherTrace,
                  spanId: "10f067aa0ba902b7",
                  eventName: "gen_ai.user.message",
                  body: { stringValue: "hello" },
                },
              ],
            },
          ],
        },
      ],
    }),
  });
  await ok("logs of another project's trace", logs);
  t.ok(logs.json().partialSuccess, "a partial success");

  // A v2 session, ended, with tags, an agent, an llm event with the client's cost, a tool event
  // and an error: searched, listed, broken down by model with a rest.
  const jwt = await api.session("v2-session", { init_timestamp: at(T0), tags: ["fields"] });
  await ok("create_agent", await api.withJwt("/v2/create_agent", { id: "agent-1", name: "planner" }, jwt));
  await createEvents(api, jwt, [
    { type: "llm", id: "e-llm", model: "m-1", prompt: "find the kumquat", completion: "found", cost: 0.01 },
    { type: "llm", id: "e-llm-2", model: "m-2", prompt: "again", prompt_tokens: 3, completion_tokens: 4 },
    { type: "tool", id: "e-tool", name: "search", input: "kumquat", output: "a fruit" },
    { type: "error", id: "e-error", error_type: "Timeout", details: "slow" },
  ]);
  await ok(
    "update_session",
    await api.withJwt(
      "/v2/update_session",
      { session: { id: "v2-session", end_state: "Success", end_timestamp: at(T0 + 5000) } },
      jwt,
    ),
  );

  // The trace's session, updated with a JWT of its own (UpdateSessionResponse.session.conversation_id).
  const reauthorized = await api.withKey("/v2/reauthorize_jwt", { session_id: TRACE_SESSION });
  await ok("reauthorize_jwt", reauthorized);
  const traceJwt = reauthorized.json().jwt as string;
  await ok(
    "update_session of the trace",
    await api.withJwt("/v2/update_session", { session: { id: TRACE_SESSION, end_state: "Success" } }, traceJwt),
  );

  // Scores (issue 25): every field of a Score answered (a comment, an event, a conversation's).
  await ok(
    "scores",
    await api.withKey("/v2/scores", {
      scores: [
        { id: "fields-1", name: "quality", value: 0.5, session_id: "v2-session", event_id: "e", comment: "c" },
        { id: "fields-2", name: "tone", value: "kind", conversation_id: "conv-42", metadata: { a: 1 } },
        // A second session's: score analytics then have two groups, and `other` with limit=1.
        { id: "fields-3", name: "quality", value: 0.9, session_id: TRACE_SESSION },
      ],
    }),
  );
  await ok(
    "update a score",
    await api.inject({
      method: "PATCH",
      url: "/v2/scores/fields-1",
      headers: { ...key, "content-type": "application/json" },
      payload: JSON.stringify({ value: 0.7 }),
    }),
  );

  const reads = [
    "/v2/scores",
    "/v2/scores/fields-1",
    `/v2/sessions/${TRACE_SESSION}`,
    `/v2/sessions?conversation_id=conv-42`,
    "/v2/sessions?q=kumquat",
    `/v2/sessions/${TRACE_SESSION}/events`,
    "/v2/sessions/v2-session/events",
    `/v2/sessions/${TRACE_SESSION}/export`,
    "/v2/sessions/v2-session/export",
    "/v2/sessions/v2-session/stats",
    `/v2/analytics/breakdown?by=model&limit=1&from=${encodeURIComponent(at(T0 - 3_600_000))}`,
    `/v2/analytics/timeseries?from=${encodeURIComponent(at(T0 - 3_600_000))}`,
    "/v2/analytics/scores?name=quality",
    "/v2/analytics/scores/breakdown?name=quality&by=model&limit=1",
    "/v2/analytics/scores/breakdown?name=quality&by=agent&limit=1",
    "/v2/analytics/scores/breakdown?name=quality&by=tag&limit=1",
  ];
  for (const url of reads) await ok(url, await read(api, url));
  // The ndjson export is checked for its media type only: its lines are ExportSessionResponse's documents.
  const ndjson = await read(api, "/v2/export?format=ndjson&conversation_id=conv-42");
  await ok("ndjson export", ndjson);
  t.equal(
    JSON.parse(ndjson.body.split("\n")[0] ?? "{}").session?.conversation_id,
    "conv-42",
    "ndjson: conversation_id",
  );
  // A 400 whose details name the field (Error.details).
  await ok("an invalid body", await api.withKey("/v2/create_session", { session: { id: 7 } }), 400);
  await ok(
    "an unknown key",
    await api.inject({ method: "GET", url: "/v2/sessions", headers: { ...key, "x-agentmon-api-key": "nope" } }),
    401,
  );

  for (const [name, { schema, operations }] of jsonResponseSchemas()) {
    const answered = seen.get(name) ?? new Set<string>();
    const allowed = CANNOT_APPEAR[name] ?? {};
    const missing = [...optionalPaths(schema)].filter((path) => !answered.has(path) && allowed[path] === undefined);
    t.strictSame(missing, [], `${name} (${[...operations].slice(0, 3).join(", ")}): every optional field answered`);
  }
});
