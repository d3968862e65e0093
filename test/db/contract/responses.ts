/**
 * The Store contract: scores of a model response (issue 25, docs/decisions/038-response-ids.md).
 * A score naming a `gen_ai.response.id` and no event is resolved by the projector to the span
 * whose own attributes carry that id, in whichever order the two arrive, within its session when
 * it names one, within its project always; `response_spans` equals a rebuild after every write.
 */
import type { Test } from "tap";
import type { ScoreRecord } from "../../../domain/scores.ts";
import type { SpanEventRecord, TraceWrite } from "../../../domain/types.ts";
import type { Fixtures } from "./fixture.ts";
import { sameAsRebuild } from "./projections.ts";
import { T0 } from "./values.ts";

const US = Date.parse(T0) * 1000;

const score = (id: string, fields: Partial<ScoreRecord> = {}): ScoreRecord => ({
  id,
  name: "quality",
  data_type: "numeric",
  value: 0.5,
  session_id: null,
  event_id: null,
  conversation_id: null,
  response_id: null,
  source: "eval",
  comment: null,
  author: { type: "api_key", id: "key-1" },
  metadata: {},
  timestamp: T0,
  time_us: US,
  created_at: T0,
  updated_at: null,
  ...fields,
});

const attribute = (key: string, value: string) => ({ key, value: { stringValue: value } });

/** An llm span whose own attributes carry `response` (none: null), and `events` as OTLP keeps them. */
const span = (id: string, response: string | null, model = "gpt-r", events: unknown[] = []): SpanEventRecord => ({
  id,
  type: "llm",
  parent_id: null,
  own_agent_id: null,
  init_timestamp: T0,
  init_us: US,
  end_timestamp: null,
  agent_id: null,
  model,
  prompt_tokens: 1,
  completion_tokens: 1,
  cost: 0,
  cost_source: "client",
  fields: {},
  aliases: [],
  extra: {
    otel: {
      name: "chat",
      attributes: [
        attribute("gen_ai.request.model", model),
        ...(response === null ? [] : [attribute("gen_ai.response.id", response)]),
      ],
      events,
    },
  },
});

const trace = (sessionId: string, ...spans: SpanEventRecord[]): TraceWrite => ({
  session_id: sessionId,
  init_timestamp: T0,
  init_us: US,
  conversation_id: null,
  root: null,
  events: spans,
  agents: [],
});

export function responseContract(t: Test, { fresh }: Fixtures) {
  t.test("scores of a response (decision 038) resolve to its span, in either order", async (t) => {
    const { store, p, other, derived } = await fresh(t);
    const check = (what: string) => sameAsRebuild(t, store, derived, what);
    const target = async (id: string) => {
      const found = await store.getScore(p, id);
      return found && [found.session_id, found.event_id, found.response_id];
    };

    // The span first, then its score.
    t.strictSame(await store.ingestTraces(p, [trace("trace-a", span("span-a", "resp-1"))]), ["created"]);
    await check("a span carrying a response id");
    t.strictSame(await store.insertScores(p, [score("after", { response_id: "resp-1" })]), { stored: 1 });
    t.strictSame(await target("after"), ["trace-a", "span-a", "resp-1"], "a score after its span: resolved");
    await check("a score of a stored span's response");

    // The score first: waiting, found by its response id; then its span.
    await store.insertScores(p, [score("before", { response_id: "resp-2", value: 1 })]);
    t.strictSame(await target("before"), [null, null, "resp-2"], "no span carries it yet: waiting");
    t.strictSame(
      (await store.listScores(p, { response_id: "resp-2" }, undefined, 10)).map((s) => s.id),
      ["before"],
      "listed by its response id",
    );
    await check("a score waiting for its span");
    await store.ingestTraces(p, [trace("trace-b", span("span-b", "resp-2", "gpt-b"))]);
    t.strictSame(await target("before"), ["trace-b", "span-b", "resp-2"], "the span arrives: resolved");
    await check("the span of a waiting score arrives");
    const byModel = await store.scoreBreakdown(p, { name: "quality", by: "model", from_us: 0, to_us: US + 1 });
    t.strictSame(
      byModel.map(({ key, sums }) => `${key}:${sums.count}`).sort(),
      ["gpt-b:1", "gpt-r:1"],
      "score analytics count each resolved score with its span's model",
    );

    // Within its session when it names one; the span's own attributes only; the project's spans only.
    await store.ingestTraces(p, [
      trace(
        "trace-c",
        span("span-c", null, "gpt-c", [
          { name: "gen_ai.evaluation.result", attributes: [attribute("gen_ai.response.id", "resp-3")] },
        ]),
        span("span-c2", "resp-1"),
      ),
    ]);
    await store.ingestTraces(other, [trace("trace-theirs", span("span-t", "resp-4"))]);
    await store.insertScores(p, [
      score("in-session", { session_id: "trace-c", response_id: "resp-1" }),
      score("not-in-session", { session_id: "trace-a", response_id: "resp-3" }),
      score("event-attribute", { response_id: "resp-3" }),
      score("theirs", { response_id: "resp-4" }),
      score("given-event", { session_id: "trace-c", event_id: "span-c", response_id: "resp-1" }),
    ]);
    t.strictSame(await target("in-session"), ["trace-c", "span-c2", "resp-1"], "the span of its own session");
    t.strictSame(await target("not-in-session"), ["trace-a", null, "resp-3"], "no such span in its session: waits");
    t.strictSame(await target("event-attribute"), [null, null, "resp-3"], "a span event's attribute is not the span's");
    t.strictSame(await target("theirs"), [null, null, "resp-4"], "another project's span is not found");
    t.strictSame(await target("given-event"), ["trace-c", "span-c", "resp-1"], "an event given is kept as given");
    t.strictSame(await target("after"), ["trace-a", "span-a", "resp-1"], "a resolved score stays where it went");
    await check("scores within a session, of a span event, of another project");

    // Two spans carry one id: the first session's; a retry changes nothing.
    await store.insertScores(p, [score("twice", { response_id: "resp-5" })]);
    await store.ingestTraces(p, [trace("trace-d", span("span-d", "resp-5"))]);
    await store.ingestTraces(p, [trace("trace-e", span("span-e", "resp-5"))]);
    t.strictSame(await target("twice"), ["trace-d", "span-d", "resp-5"]);
    t.strictSame(await store.insertScores(p, [score("twice", { response_id: "resp-5", value: 0 })]), { stored: 0 });
    t.equal((await store.getScore(p, "twice"))?.value, 0.5, "a retry changes nothing");
    await check("two spans of one response id");

    // A resolved score goes with its session; the span's index entry too.
    t.ok(await store.deleteSession(p, "trace-b"));
    t.equal(await store.getScore(p, "before"), undefined, "a resolved score goes with its session");
    await check("delete of a session with a resolved score");
    await store.deleteSessions(p, {}, { maxSessions: 100, maxEvents: 10_000, dryRun: false });
    await check("bulk delete");
    t.strictSame(
      (await store.listScores(p, {}, undefined, 100)).map((s) => s.id).sort(),
      ["event-attribute", "theirs"],
      "only the scores that never found their span are left",
    );
  });
}
