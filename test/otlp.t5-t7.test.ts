/**
 * otlp.md T5-T7 and T12's redirect: the token, the logs upload, every credential the OTLP and v4
 * endpoints take, revocation, the failed-key count (4.6), and the link AgentOps 0.4 prints.
 */
import t from "tap";
import { API_KEY, build, INVALID_API_KEY, OTHER_PROJECT_KEY, UNKNOWN_KEY } from "./helper.ts";
import { SMALL, sendTraces, TRACE, TRACE_SESSION } from "./otlp.helpers.ts";

const token = async (env: Awaited<ReturnType<typeof build>>, key = API_KEY) => {
  const res = await env.post("/v3/auth/token", { api_key: key });
  if (res.statusCode !== 200) throw new Error(`token: ${res.statusCode} ${res.body}`);
  return res.json().token as string;
};
const read = (env: Awaited<ReturnType<typeof build>>, url: string, key = API_KEY) =>
  env.inject({ method: "GET", url, headers: { "x-agentmon-api-key": key } });

t.test("T5: a 30-day token of the key's project, no session_id; 400, 401 and 4.6 on bad keys", async (t) => {
  const env = await build(t);
  const res = await env.post("/v3/auth/token", { api_key: API_KEY });
  t.equal(res.statusCode, 200, res.body);
  const answer = res.json();
  t.match(answer, { status: "success", token: String, project_id: String, project_prem_status: "pro" });
  const claims = JSON.parse(Buffer.from(answer.token.split(".")[1], "base64url").toString());
  t.strictSame(Object.keys(claims).sort(), ["exp", "iat", "key_id", "project_id"], "no session_id");
  t.equal(claims.exp - claims.iat, 30 * 24 * 3600, "exp = iat + 30 days");
  t.equal(claims.project_id, answer.project_id);

  const notUuid = await env.post("/v3/auth/token", { api_key: "not-a-uuid" });
  t.equal(notUuid.statusCode, 400, "a key that is not a UUID is 400");
  t.equal(notUuid.json().error, "Invalid request");
  const unknown = await env.post("/v3/auth/token", { api_key: UNKNOWN_KEY });
  t.equal(unknown.statusCode, 401);
  t.strictSame(unknown.json(), INVALID_API_KEY);
  const missing = await env.post("/v3/auth/token", {});
  t.equal(missing.statusCode, 400, "no api_key is 400");
});

t.test("T5: unknown keys count for 4.6", async (t) => {
  const env = await build(t, { authFailLimit: 3 });
  for (let i = 0; i < 3; i++) {
    t.equal((await env.post("/v3/auth/token", { api_key: UNKNOWN_KEY }, {}, "10.0.0.9")).statusCode, 401);
  }
  const blocked = await env.post("/v3/auth/token", { api_key: API_KEY }, {}, "10.0.0.9");
  t.equal(blocked.statusCode, 429, "the address is blocked, even with a good key");
  t.ok(Number(blocked.headers["retry-after"]) > 0);
  const traces = await sendTraces(env, SMALL, { headers: { authorization: `Bearer ${UNKNOWN_KEY}` } });
  t.equal(traces.statusCode, 401, "a bad key on /v1/traces");
});

t.test("T5: the token works on OTLP and v4 only; revoking its key ends it at once (4.3)", async (t) => {
  const env = await build(t);
  const jwt = await token(env);
  t.equal((await sendTraces(env, SMALL, { headers: { authorization: `Bearer ${jwt}` } })).statusCode, 200);
  const v2 = await env.withJwt("/v2/create_events", { events: [{ type: "llm" }] }, jwt);
  t.equal(v2.statusCode, 401, "a T5 token is not a session JWT");
  const update = await env.withJwt("/v2/update_session", { session: { end_state: "Success" } }, jwt);
  t.equal(update.statusCode, 401);

  const key = (await env.store.listApiKeys()).find(
    (k) =>
      k.project_id === JSON.parse(Buffer.from(jwt.split(".")[1] as string, "base64url").toString()).project_id &&
      k.revoked_at === null,
  );
  await env.store.revokeApiKey(key?.id as string, new Date().toISOString());
  const after = await sendTraces(env, SMALL, { headers: { authorization: `Bearer ${jwt}` } });
  t.equal(after.statusCode, 401, "the revoked key's token fails");
  t.strictSame(after.json(), { code: 16, message: "Please check your API key and try again" });
  const logs = await env.inject({
    method: "POST",
    url: "/v4/logs/upload/",
    headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json", "trace-id": TRACE },
    payload: JSON.stringify({ body: "x" }),
  });
  t.equal(logs.statusCode, 401, "and on the v4 endpoint");
});

t.test("T7: every credential form, in order; project attributes never choose the project", async (t) => {
  const env = await build(t);
  const jwt = await token(env);
  const session = await env.session("v2-session");
  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
  const good: [string, Record<string, string>][] = [
    ["a T5 token", { authorization: `Bearer ${jwt}` }],
    ["a v2 session JWT", { authorization: `Bearer ${session}` }],
    ["an API key as a bearer token", { authorization: `Bearer ${API_KEY}` }],
    ["Basic with the key as the password", { authorization: basic("api", API_KEY) }],
    ["Basic with the key as the user", { authorization: basic(API_KEY, "") }],
    ["X-Agentmon-Api-Key", { "x-agentmon-api-key": API_KEY }],
    ["X-Agentops-Api-Key", { "x-agentops-api-key": API_KEY }],
  ];
  for (const [why, headers] of good) {
    t.equal((await sendTraces(env, SMALL, { headers })).statusCode, 200, why);
  }
  const bad: [string, Record<string, string>][] = [
    ["nothing", {}],
    ["an unknown key", { authorization: `Bearer ${UNKNOWN_KEY}` }],
    ["a forged token", { authorization: `Bearer ${jwt.slice(0, -4)}AAAA` }],
    ["Basic with a wrong key", { authorization: basic("api", UNKNOWN_KEY) }],
    ["a bearer token that is neither", { authorization: "Bearer hello" }],
  ];
  for (const [why, headers] of bad) {
    const res = await sendTraces(env, SMALL, { headers });
    t.equal(res.statusCode, 401, why);
  }
  t.equal((await read(env, `/v2/sessions/${TRACE_SESSION}`)).statusCode, 200, "stored in the key's project");
  t.equal((await read(env, `/v2/sessions/${TRACE_SESSION}`, OTHER_PROJECT_KEY)).statusCode, 404, "not the other's");

  const other = await sendTraces(env, SMALL, { headers: { authorization: `Bearer ${OTHER_PROJECT_KEY}` } });
  t.equal(other.statusCode, 200, "another project's spans of the same trace: a partial success");
  t.equal(Number(other.json().partialSuccess.rejectedSpans), 2, "both spans refused (S3's 409, per span)");
  t.match(other.json().partialSuccess.errorMessage, /another project/);
});

t.test("T6: logs upload by decimal or hex Trace-Id; created if new; read back; 400 and 409", async (t) => {
  const env = await build(t);
  const jwt = await token(env);
  const upload = (traceId: string, body: unknown, auth = `Bearer ${jwt}`) =>
    env.inject({
      method: "POST",
      url: "/v4/logs/upload/",
      headers: { authorization: auth, "content-type": "application/json", "trace-id": traceId },
      payload: JSON.stringify(body),
    });
  const decimal = BigInt(`0x${TRACE}`).toString(10);
  const first = await upload(decimal, { body: "one\n" });
  t.equal(first.statusCode, 200, first.body);
  t.strictSame(first.json(), {
    status: "success",
    url: `http://agentmon.test/v2/sessions/${TRACE_SESSION}/logs`,
    size: 4,
  });
  const second = await upload(TRACE.toUpperCase(), { body: "twö\n" });
  t.equal(second.json().size, 9, "hex in any case names the same trace; the size is in bytes");
  const logs = await read(env, `/v2/sessions/${TRACE_SESSION}/logs`);
  t.equal(logs.statusCode, 200);
  t.match(logs.headers["content-type"], /^text\/plain/);
  t.equal(logs.body, "one\ntwö\n");
  const session = await read(env, `/v2/sessions/${TRACE_SESSION}`);
  t.equal(session.json().session.end_state, null, "a session made by logs is running");
  t.equal((await sendTraces(env, SMALL)).statusCode, 200, "spans may follow into it");

  for (const bad of ["0", "zz", "1".repeat(40), ""]) {
    const res = await upload(bad, { body: "x" });
    t.equal(res.statusCode, 400, `Trace-Id ${JSON.stringify(bad)}`);
  }
  t.equal((await upload(TRACE, { text: "x" })).statusCode, 400, "no body field");
  const foreign = await upload(TRACE, { body: "x" }, `Bearer ${OTHER_PROJECT_KEY}`);
  t.equal(foreign.statusCode, 409, "another project's trace");
  t.equal((await read(env, `/v2/sessions/${TRACE_SESSION}/logs`, OTHER_PROJECT_KEY)).statusCode, 404);
});

t.test("T12: /sessions?trace_id= redirects to the session's page", async (t) => {
  const env = await build(t);
  const res = await env.inject({ method: "GET", url: `/sessions?trace_id=${TRACE.toUpperCase()}` });
  t.equal(res.statusCode, 302);
  t.equal(res.headers.location, `/sessions/${TRACE_SESSION}`);
  const none = await env.inject({ method: "GET", url: "/sessions" });
  t.strictSame([none.statusCode, none.headers.location], [200, undefined], "without one: the sessions list");
  const bad = await env.inject({ method: "GET", url: "/sessions?trace_id=xyz" });
  t.equal(bad.statusCode, 400);
});
