/**
 * Real-client replay: every request body the AgentOps SDK 0.3.x sent (test/fixtures), in
 * order, against the app; each must be answered 200, and what was stored is read back.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { openThreadedStore } from "../db/sqlite/thread.ts";
import { sessionView } from "../domain/views.ts";
import { build, eventViews, inspect, tempDir } from "./helper.ts";

const FIXTURES = new URL("./fixtures/agentops-sdk-0.3/", import.meta.url);

interface Fixture {
  method: "POST";
  path: string;
  headers: Record<string, string>;
  body: Record<string, any>;
}

const load = (version: string): [string, Fixture][] =>
  readdirSync(new URL(`${version}/`, FIXTURES))
    .sort()
    .map((name) => [name, JSON.parse(readFileSync(new URL(`${version}/${name}`, FIXTURES), "utf8")) as Fixture]);

/** Replays one SDK version's requests; answers the fixtures and every response body. */
async function replay(t: Test, version: string, storage: Storage) {
  // The server's two stores: :memory: in this thread, and a file on the storage thread.
  const env = await build(
    t,
    storage === "thread" ? { store: await openThreadedStore({ path: join(tempDir(t), "a.db") }) } : {},
  );
  const fixtures = load(version);
  const answers: Record<string, any>[] = [];
  let jwt = "";
  for (const [name, fixture] of fixtures) {
    const headers = { ...fixture.headers };
    if (headers.Authorization) headers.Authorization = `Bearer ${jwt}`;
    const res = await env.inject({
      method: fixture.method,
      url: fixture.path,
      headers,
      payload: JSON.stringify(fixture.body),
    });
    t.equal(res.statusCode, 200, `${version}/${name} is answered 200`);
    const body = res.json();
    t.equal(body.status, "success", `${version}/${name} says success`);
    if (body.jwt) jwt = body.jwt;
    answers.push(body);
  }
  return { ...env, fixtures: fixtures.map(([, f]) => f), answers };
}

type Storage = "memory" | "thread";

for (const [version, storage] of readdirSync(FIXTURES)
  .sort()
  .flatMap((v) => (["memory", "thread"] as const).map((s) => [v, s] as const))) {
  t.test(`AgentOps SDK ${version} (${storage}): every request is accepted and everything is stored`, async (t) => {
    const { store, fixtures, answers } = await replay(t, version, storage);
    const created = fixtures[0]?.body.session;
    const ended = fixtures[4]?.body.session;
    const sessionId: string = created.session_id;

    const session = await inspect(store).getSession(sessionId);
    t.ok(session, "the session exists under the SDK's session_id");
    if (!session) return;
    const view = sessionView(session);
    t.equal(view.id, sessionId);
    t.same(view.tags, ended.tags, "tags are the last list sent");
    t.same(view.host_env, created.host_env, "host_env is kept whole, keys with spaces included");
    t.equal(view.init_timestamp, created.init_timestamp.replace("+00:00", "Z"));
    t.equal(view.end_timestamp, ended.end_timestamp.replace("+00:00", "Z"));
    t.equal(view.end_state, "Success");
    t.equal(view.end_state_reason, "driver finished");
    t.same((view as Record<string, unknown>).event_counts, ended.event_counts, "unknown fields keep the last value");
    t.equal((view as Record<string, unknown>).video, null, "unknown nulls are kept");
    t.notOk("jwt" in view, "the echoed jwt is never stored");
    t.notOk(JSON.stringify(session).includes("mocksig"), "no trace of the token anywhere in the record");

    const final = answers[4] as { session: Record<string, unknown>; token_cost: string; session_url: string };
    t.same(final.session, JSON.parse(JSON.stringify(view)), "update_session answers the stored session");
    const llmCost = fixtures[3]?.body.events.find((e: { cost?: number }) => e.cost !== undefined)?.cost;
    // 0.3.18 sends no cost: its gpt-4o-mini call (12 + 1 tokens) is priced from prices/models.json.
    t.equal(final.token_cost, llmCost === undefined ? "0.0000024" : "0.0000021", "token_cost sums the llm costs");
    t.equal(final.session_url, `http://agentmon.test/sessions/${sessionId}`);

    const agents = await inspect(store).listAgents(sessionId);
    t.same(
      agents.map((a) => ({ id: a.id, name: a.name })),
      [{ id: fixtures[1]?.body.id, name: "realclient-driver-agent" }],
      "the agent is registered",
    );

    const sent: Record<string, any>[] = fixtures[3]?.body.events;
    const find = (kind: string) => sent.find((e) => e.event_type === kind) as Record<string, any>;
    const events = await eventViews(store, sessionId);
    const distinctIds = new Set(sent.map((e) => e.id).filter((id) => id));
    const withoutId = sent.filter((e) => !e.id).length;
    t.equal(events.length, distinctIds.size + withoutId, "one stored event per distinct id, plus those sent without");
    t.same((answers[3] as { event_ids: string[] }).event_ids.length, sent.length, "one event id per event sent");

    const byKind = Object.fromEntries(events.map((e) => [e.type, e])) as Record<string, Record<string, any>>;
    t.same(Object.keys(byKind).sort(), ["action", "error", "llm", "tool"], "all four kinds are stored");
    const llm = find("llms");
    t.match(byKind.llm, {
      id: llm.id,
      event_type: "llms",
      model: "gpt-4o-mini",
      prompt: llm.prompt,
      completion: llm.completion,
      prompt_tokens: 12,
      completion_tokens: 1,
      thread_id: llm.thread_id,
      params: { temperature: 0 },
      returns: "4",
      agent_id: llm.agent_id,
      init_timestamp: llm.init_timestamp.replace("+00:00", "Z"),
      end_timestamp: llm.end_timestamp.replace("+00:00", "Z"),
    });
    const tool = find("tools");
    t.match(byKind.tool, {
      id: tool.id,
      name: "calculator",
      input: { a: 2, b: 2 },
      output: "4",
      params: { a: 2, b: 2 },
      returns: "4",
      logs: { note: "ok" },
    });
    const action = find("actions");
    t.match(byKind.action, {
      id: action.id,
      action_type: "plan",
      params: { goal: "add numbers" },
      returns: "use calculator",
      logs: "planning step",
    });
    const error = find("errors");
    t.match(byKind.error, {
      error_type: "ValueError",
      code: "E_SYNTH",
      details: "synthetic error from driver",
      logs: error.logs,
      init_timestamp: (error.init_timestamp ?? error.timestamp).replace("+00:00", "Z"),
    });
    if (error.trigger_event_id) t.equal(byKind.error?.trigger_event_id, error.trigger_event_id);
    if (!error.id) t.match(byKind.error?.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7/, "an error sent without id gets a UUIDv7");
    for (const [key, value] of Object.entries(error)) {
      if (!["event_type", "timestamp", "init_timestamp", "end_timestamp", "id"].includes(key))
        t.same(byKind.error?.[key], value, `error.${key} kept as sent`);
    }
  });
}
