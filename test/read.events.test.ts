/**
 * The read API (issue 5): a session's events, as they were sent and in pages of 1000, through real
 * HTTP (inject) on a real SQLite store. Data is always written through the write API, so what is
 * read back is what a client sent.
 */
import t from "tap";
import { build, eventViews, isSuccess } from "./helper.ts";
import { allPages, at, createEvents, ids, read, T0 } from "./read.helpers.ts";

// ----------------------------------------------------------------------------------- events

t.test("events are returned as they were sent (G5), with cost_source on llm events", async (t) => {
  const api = await build(t);
  const jwt = await api.session("g5");
  const sent = [
    {
      event_type: "tools",
      id: "t1",
      timestamp: "2026-11-22T10:39:43.640361+05:30",
      tool_name: "calc",
      params: { a: 1 },
      returns: "2",
      logs: null,
      agent_id: "planner",
      custom: { nested: [1, null, { deep: true }] },
      nothing: null,
    },
    {
      type: "llm",
      id: "l1",
      init_timestamp: "2026-11-22T05:09:44Z",
      end_timestamp: "2026-11-22T05:09:45.5Z",
      model: "gpt-4o-mini",
      prompt: [{ role: "user", content: "2+2?" }],
      completion: { role: "assistant", content: "4" },
      prompt_tokens: 10,
      completion_tokens: 5,
      thread_id: "th",
      params: { temperature: 0 },
      cost_source: "mine",
    },
    {
      type: "llm",
      id: "l2",
      init_timestamp: "2026-11-22T05:09:46Z",
      cost: 0.5,
      model: "gpt-4o-mini",
      prompt_tokens: 1,
    },
    { type: "llm", id: "l3", init_timestamp: "2026-11-22T05:09:47Z", model: "no-such-model", prompt_tokens: 1 },
    {
      type: "error",
      id: "e1",
      init_timestamp: "2026-11-22T05:09:48Z",
      code: 42,
      details: { why: "x" },
      cost_source: 7,
    },
  ];
  await createEvents(api, jwt, sent);
  const res = await read(api, "/v2/sessions/g5/events");
  const events = isSuccess(t, res, ["events", "scores", "next_cursor"]).events;
  t.strictSame(events, [
    {
      id: "t1",
      type: "tool",
      session_id: "g5",
      init_timestamp: "2026-11-22T05:09:43.640361Z",
      end_timestamp: null,
      agent_id: "planner",
      name: "calc",
      input: { a: 1 },
      output: "2",
      event_type: "tools",
      timestamp: "2026-11-22T05:09:43.640361Z",
      tool_name: "calc",
      params: { a: 1 },
      returns: "2",
      custom: { nested: [1, null, { deep: true }] },
      nothing: null,
    },
    {
      id: "l1",
      type: "llm",
      session_id: "g5",
      init_timestamp: "2026-11-22T05:09:44Z",
      end_timestamp: "2026-11-22T05:09:45.5Z",
      agent_id: null,
      model: "gpt-4o-mini",
      prompt_tokens: 10,
      completion_tokens: 5,
      prompt: [{ role: "user", content: "2+2?" }],
      completion: { role: "assistant", content: "4" },
      thread_id: "th",
      params: { temperature: 0 },
      cost: 0.0000045,
      cost_source: "table",
    },
    {
      id: "l2",
      type: "llm",
      session_id: "g5",
      init_timestamp: "2026-11-22T05:09:46Z",
      end_timestamp: null,
      agent_id: null,
      model: "gpt-4o-mini",
      prompt_tokens: 1,
      cost: 0.5,
      cost_source: "client",
    },
    {
      id: "l3",
      type: "llm",
      session_id: "g5",
      init_timestamp: "2026-11-22T05:09:47Z",
      end_timestamp: null,
      agent_id: null,
      model: "no-such-model",
      prompt_tokens: 1,
      cost_source: "unknown",
    },
    {
      id: "e1",
      type: "error",
      session_id: "g5",
      init_timestamp: "2026-11-22T05:09:48Z",
      end_timestamp: null,
      agent_id: null,
      code: 42,
      details: { why: "x" },
      cost_source: 7,
    },
  ]);

  t.test("each event is the write side's view of it, plus the cost the server knows on llm events", async (t) => {
    const written = await eventViews(api.store, "g5");
    t.equal(written.length, events.length);
    events.forEach((event: Record<string, unknown>, i: number) => {
      const written_ = written[i] as Record<string, unknown>;
      if (event.type !== "llm") {
        t.strictSame(event, written_, `${event.id} is exactly the write side's view`);
        return;
      }
      const { cost_source, cost, ...rest } = event;
      const { cost: sentCost, cost_source: sentSource, ...writtenRest } = written_;
      t.strictSame(rest, writtenRest, `${event.id}: the same fields`);
      t.equal(
        sentCost,
        cost_source === "client" ? cost : undefined,
        `${event.id}: the write side shows only a client's cost`,
      );
      t.equal(
        sentSource,
        event.id === "l1" ? "mine" : undefined,
        `${event.id}: a client's own cost_source is kept in storage`,
      );
    });
  });

  t.test("export lists the same events in the same order", async (t) => {
    t.strictSame((await read(api, "/v2/sessions/g5/export")).json().events, events);
  });

  t.test("type filters by kind, one or several, singular or the SDK's plural", async (t) => {
    const kinds = async (query: string) => ids((await read(api, `/v2/sessions/g5/events?${query}`)).json().events);
    t.strictSame(await kinds("type=llm"), ["l1", "l2", "l3"]);
    t.strictSame(await kinds("type=llms"), ["l1", "l2", "l3"]);
    t.strictSame(await kinds("type=tools&type=error"), ["t1", "e1"]);
    t.strictSame(await kinds("type=tool&type=tools"), ["t1"], "a kind named twice is listed once");
    t.strictSame(await kinds("type=action"), []);
    t.strictSame(await kinds("type=llm&type=tool&type=action&type=error"), ["t1", "l1", "l2", "l3", "e1"]);
  });
});

t.test("events: 2500 in a session, pages of 1000 in (init_timestamp, id) order, each exactly once", async (t) => {
  const api = await build(t);
  const jwt = await api.session("many");
  // Three events share each millisecond, so the id decides their order; sent in reverse.
  const all = Array.from({ length: 2500 }, (_, i) => ({
    type: ["llm", "tool", "action", "error"][i % 4],
    id: `e${String(i).padStart(4, "0")}`,
    init_timestamp: at(T0 + Math.floor(i / 3)),
  }));
  await createEvents(api, jwt, [...all].reverse());
  const order = all.map((e) => e.id);

  const seen: string[] = [];
  const { rows, pages } = await allPages<{ id: string }>(api, "/v2/sessions/many/events?limit=1000", "events");
  seen.push(...ids(rows).map(String));
  t.equal(pages, 3, "three pages");
  t.equal(rows.length, 2500);
  t.equal(new Set(seen).size, 2500, "no event twice");
  t.strictSame(seen, order, "in (init_timestamp, id) order");

  t.test("the default page is 100 events", async (t) => {
    const res = (await read(api, "/v2/sessions/many/events")).json();
    t.equal(res.events.length, 100);
    t.type(res.next_cursor, "string");
  });

  t.test("filtered by kind, across pages", async (t) => {
    const { rows } = await allPages<{ id: string }>(
      api,
      "/v2/sessions/many/events?limit=333&type=llm&type=errors",
      "events",
    );
    t.strictSame(
      ids(rows),
      all.filter((e) => e.type === "llm" || e.type === "error").map((e) => e.id),
    );
  });

  t.test("stable while events arrive: earlier ones are not seen, later ones are, none twice", async (t) => {
    const extra = [
      { type: "tool", id: "x-early", init_timestamp: at(T0 - 1000) },
      { type: "tool", id: "x-tie", init_timestamp: at(T0 + 100) }, // e0300's millisecond: inside the first page
      { type: "tool", id: "x-late", init_timestamp: at(T0 + 10_000) },
    ];
    let added = false;
    const { rows } = await allPages<{ id: string }>(
      api,
      "/v2/sessions/many/events?limit=1000",
      "events",
      async (page) => {
        if (page === 1 && !added) {
          added = true;
          await createEvents(api, jwt, extra);
        }
      },
    );
    const got = ids(rows).map(String);
    t.equal(new Set(got).size, got.length, "no event twice");
    t.strictSame(
      got.filter((id) => id.startsWith("e")),
      order,
      "every event there before paging began, once, in order",
    );
    t.notOk(got.includes("x-early"), "an event before the first page's end is not seen");
    t.notOk(got.includes("x-tie"), "nor one in the first page's span");
    t.ok(got.includes("x-late"), "an event after the cursor is");
  });
});
