/**
 * GET /v2/sessions sorts and filters (issue 15 part 2): every sort in both orders, paged across
 * ties of its key; cursors bound to their sort; each filter alone, at its bounds, and shared by
 * GET /v2/export and POST /v2/delete_sessions; bad values. Real HTTP (inject) on the store STORE
 * names; data is written through the write API.
 */
import t from "tap";
import { build, isAnswer, isInvalid, OTHER_PROJECT_KEY, type TestApp } from "./helper.ts";
import { allPages, at, createEvents, ids, isBadParameter, read, T0 } from "./read.helpers.ts";

const COSTS = [0, 0.01, 0.02, 0.03, 0.04];

interface Row {
  id: string;
  start: number;
  duration: number;
  cost: number;
  tokens: number;
  events: number;
  model: string;
  errors: boolean;
  extra: Record<string, unknown>;
}

/**
 * 30 sessions: i's start is T0 + i s; k = i % 5 sets its llm event's tokens and cost (so six
 * sessions share each), i % 4 its duration (ended 0, 1 or 2 s after its start, or running: its
 * last event ends 200 ms after its start), an error event every fourth, a model of three.
 */
async function seed(api: TestApp) {
  const rows: Row[] = [];
  for (let i = 0; i < 30; i++) {
    const id = `s${String(i).padStart(2, "0")}`;
    const k = i % 5;
    const start = T0 + i * 1000;
    const ended = i % 4 !== 3;
    const extra: Record<string, unknown> = {
      customer: i % 3 === 0 ? "acme" : "globex",
      retries: i % 2,
      flag: i % 5 === 0,
    };
    const jwt = await api.session(id, {
      init_timestamp: at(start),
      ...(ended ? { end_timestamp: at(start + (i % 4) * 1000), end_state: "Success" } : {}),
      ...extra,
    });
    const model = `m${i % 3}`;
    const events: unknown[] = [
      {
        type: "llm",
        id: `${id}-llm`,
        init_timestamp: at(start + 100),
        end_timestamp: at(start + 200),
        model,
        prompt_tokens: 10 * k,
        completion_tokens: k,
        cost: COSTS[k],
      },
      ...Array.from({ length: k }, (_, n) => ({
        type: "tool",
        id: `${id}-t${n}`,
        init_timestamp: at(start + 100),
        end_timestamp: at(start + 150),
      })),
    ];
    if (i % 4 === 0) events.push({ type: "error", id: `${id}-err`, init_timestamp: at(start + 100) });
    await createEvents(api, jwt, events);
    rows.push({
      id,
      start,
      duration: ended ? (i % 4) * 1000 : 200,
      cost: COSTS[k] as number,
      tokens: 11 * k,
      events: events.length,
      model,
      errors: i % 4 === 0,
      extra,
    });
  }
  await api.session("theirs", { init_timestamp: at(T0) }, OTHER_PROJECT_KEY);
  return rows;
}

const KEYS = {
  start_time: (r: Row) => r.start,
  duration: (r: Row) => r.duration,
  cost: (r: Row) => r.cost,
  tokens: (r: Row) => r.tokens,
  events: (r: Row) => r.events,
} as const;

/** The rows in a sort's order: its key, then id, both in the order's direction. */
function ordered(rows: Row[], sort: keyof typeof KEYS, order: "desc" | "asc") {
  const key = KEYS[sort];
  const sign = order === "desc" ? -1 : 1;
  return [...rows]
    .sort((a, b) => sign * (key(a) - key(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)))
    .map((r) => r.id);
}

const sessionsOf = async (api: TestApp, query: string) => {
  const res = await read(api, `/v2/sessions?limit=200&${query}`);
  if (res.statusCode !== 200) throw new Error(`${query}: ${res.statusCode} ${res.body}`);
  return ids(res.json().sessions);
};

t.test("sorts: each key in both orders, pages of 4 across ties, each session once", async (t) => {
  const api = await build(t);
  const rows = await seed(api);

  // The stats agree with what was sent, so the orders below are those of the numbers shown.
  const all = (await read(api, "/v2/sessions?limit=200")).json().sessions as {
    session: { id: string };
    stats: { duration_ms: number; cost: string; prompt_tokens: number; completion_tokens: number; events: number };
  }[];
  for (const { session, stats } of all) {
    const row = rows.find((r) => r.id === session.id) as Row;
    t.strictSame(
      {
        duration: stats.duration_ms,
        cost: Number(stats.cost),
        tokens: stats.prompt_tokens + stats.completion_tokens,
        events: stats.events,
      },
      { duration: row.duration, cost: row.cost, tokens: row.tokens, events: row.events },
      `${session.id}: stats`,
    );
  }

  for (const sort of Object.keys(KEYS) as (keyof typeof KEYS)[]) {
    for (const order of ["desc", "asc"] as const) {
      const { rows: got, pages } = await allPages<{ session: { id: string } }>(
        api,
        `/v2/sessions?sort=${sort}&order=${order}&limit=4`,
        "sessions",
      );
      t.equal(pages, 8, `${sort} ${order}: 30 sessions in pages of 4`);
      t.strictSame(ids(got), ordered(rows, sort, order), `${sort} ${order}: the key, then id, in that direction`);
    }
  }
  t.strictSame(await sessionsOf(api, "order=asc"), ordered(rows, "start_time", "asc"), "sort defaults to start_time");
  t.strictSame(await sessionsOf(api, "sort=cost"), ordered(rows, "cost", "desc"), "order defaults to desc");

  t.test("a session listed already whose key grows meanwhile is not listed again", async (t) => {
    const walk: string[] = [];
    let cursor: string | null = null;
    let grown = false;
    do {
      const query: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
      const body = (await read(api, `/v2/sessions?sort=events&order=desc&limit=10${query}`)).json();
      walk.push(...ids(body.sessions).map(String));
      cursor = body.next_cursor;
      if (!grown) {
        // The last session of the first page gains events: it moves ahead, where the walk has been.
        grown = true;
        const last = walk[walk.length - 1] as string;
        const jwt = await api.session(last);
        await createEvents(api, jwt, [{ type: "action", id: `${last}-more`, init_timestamp: at(T0) }]);
      }
    } while (cursor !== null);
    t.equal(walk.length, 30);
    t.equal(new Set(walk).size, 30, "each session once");
  });

  t.test("cursors belong to their sort and order", async (t) => {
    const cursorOf = async (query: string) => (await read(api, `/v2/sessions?limit=2&${query}`)).json().next_cursor;
    const byCost = await cursorOf("sort=cost");
    const byDefault = await cursorOf("");
    const misuse: [string, string][] = [
      [`sort=tokens&cursor=${byCost}`, "a cost cursor for tokens"],
      [`sort=cost&order=asc&cursor=${byCost}`, "a desc cursor for asc"],
      [`cursor=${byCost}`, "a cost cursor for the default order"],
      [`sort=cost&cursor=${byDefault}`, "a default cursor for cost"],
      [`sort=start_time&order=asc&cursor=${byDefault}`, "a desc cursor for start_time asc"],
    ];
    for (const [query, what] of misuse) {
      const res = await read(api, `/v2/sessions?${query}`);
      const body = isBadParameter(t, res, ["query.cursor"]);
      t.match(body.details?.[0]?.message, /^is not a cursor this operation made/, what);
    }
    const same = await read(api, `/v2/sessions?sort=cost&order=desc&limit=2&cursor=${byCost}`);
    t.equal(same.statusCode, 200, "the same sort and order take it");
    t.strictSame(ids(same.json().sessions), ordered(rows, "cost", "desc").slice(2, 4));
    const events = await read(api, `/v2/sessions/s00/events?cursor=${byCost}`);
    isBadParameter(t, events, ["query.cursor"]);
  });
});

t.test("filters: each alone, at its bounds, with a sort; export and bulk delete take the same", async (t) => {
  const api = await build(t);
  const rows = await seed(api);
  const expect = (keep: (r: Row) => boolean, sort: keyof typeof KEYS = "start_time", order: "desc" | "asc" = "desc") =>
    ordered(rows.filter(keep), sort, order);
  const cases: [string, (r: Row) => boolean][] = [
    ["model=m1", (r) => r.model === "m1"],
    ["model=nope", () => false],
    ["model=M1", () => false],
    ["extra.customer=acme", (r) => r.extra.customer === "acme"],
    ["extra.customer=acme&extra.retries=1", (r) => r.extra.customer === "acme" && r.extra.retries === 1],
    ["extra.retries=0", (r) => r.extra.retries === 0],
    ["extra.flag=true", (r) => r.extra.flag === true],
    ["extra.flag=false", (r) => r.extra.flag === false],
    ["extra.customer=ACME", () => false],
    ["extra.nothing=acme", () => false],
    ["min_cost=0.02", (r) => r.cost >= 0.02],
    ["max_cost=0.02", (r) => r.cost <= 0.02],
    ["min_cost=0.01&max_cost=0.03", (r) => r.cost >= 0.01 && r.cost <= 0.03],
    ["min_cost=0.015", (r) => r.cost >= 0.015],
    ["max_cost=0", (r) => r.cost === 0],
    ["min_duration_ms=1000", (r) => r.duration >= 1000],
    ["max_duration_ms=200", (r) => r.duration <= 200],
    ["min_duration_ms=200&max_duration_ms=200", (r) => r.duration === 200],
    ["min_duration_ms=199.999&max_duration_ms=200.001", (r) => r.duration === 200],
    ["has_errors=true", (r) => r.errors],
    ["has_errors=false", (r) => !r.errors],
    ["model=m0&has_errors=true&min_cost=0.01", (r) => r.model === "m0" && r.errors && r.cost >= 0.01],
  ];
  for (const [query, keep] of cases) {
    const expected = expect(keep);
    t.strictSame(await sessionsOf(api, query), expected, query);
    t.strictSame(
      await sessionsOf(api, `${query}&sort=cost&order=asc`),
      expect(keep, "cost", "asc"),
      `${query}, by cost`,
    );
  }
  t.test("pages of a filtered sort", async (t) => {
    const { rows: got } = await allPages<{ session: { id: string } }>(
      api,
      "/v2/sessions?model=m2&sort=tokens&limit=3",
      "sessions",
    );
    t.strictSame(
      ids(got),
      expect((r) => r.model === "m2", "tokens", "desc"),
    );
  });

  t.test("GET /v2/export: the same filters", async (t) => {
    const res = await read(api, "/v2/export?model=m1&has_errors=false&extra.customer=globex&min_duration_ms=1000");
    t.equal(res.statusCode, 200);
    const lines = res.body
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line))
      .filter((doc) => doc.session);
    t.strictSame(
      lines.map((doc) => doc.session.id),
      expect((r) => r.model === "m1" && !r.errors && r.extra.customer === "globex" && r.duration >= 1000),
    );
    isBadParameter(t, await read(api, "/v2/export?min_cost=abc"), ["query.min_cost"]);
  });

  t.test("POST /v2/delete_sessions: the same filters in the body, extra as an object", async (t) => {
    const count = async (body: Record<string, unknown>) => {
      const res = await api.withKey("/v2/delete_sessions", { ...body, dry_run: true });
      t.equal(res.statusCode, 200, JSON.stringify(body));
      return res.json().sessions;
    };
    t.equal(await count({ model: "m1" }), rows.filter((r) => r.model === "m1").length);
    t.equal(
      await count({ extra: { customer: "acme", retries: 1 } }),
      expect((r) => r.extra.customer === "acme" && r.extra.retries === 1).length,
    );
    t.equal(await count({ extra: { flag: true } }), expect((r) => r.extra.flag === true).length);
    t.equal(await count({ has_errors: true, min_cost: "0.02" }), expect((r) => r.errors && r.cost >= 0.02).length);
    t.equal(
      await count({ min_duration_ms: "1000", max_duration_ms: "1000" }),
      expect((r) => r.duration === 1000).length,
    );
    t.equal(await count({ max_cost: "0" }), expect((r) => r.cost === 0).length);
    for (const [body, path] of [
      [{ "extra.customer": "acme" }, '["extra.customer"]'],
      [{ extra: {} }, "extra"],
      [{ extra: { customer: null } }, "extra.customer"],
      [{ min_cost: "x" }, "min_cost"],
      [{ min_duration_ms: 5 }, "min_duration_ms"],
      [{ has_errors: "yes" }, "has_errors"],
      [{ model: "" }, "model"],
    ] as [Record<string, unknown>, string][]) {
      const res = await api.withKey("/v2/delete_sessions", body);
      t.equal(res.statusCode, 400, JSON.stringify(body));
      t.ok(
        (res.json().details as { path: string }[]).some((d) => d.path === path || d.path.startsWith(path)),
        `${JSON.stringify(body)}: names ${path} (${res.body})`,
      );
    }
    const removed = await api.withKey("/v2/delete_sessions", { model: "m1", has_errors: true });
    isAnswer(t, removed, 200, {
      status: "success",
      sessions: expect((r) => r.model === "m1" && r.errors).length,
      events: rows.filter((r) => r.model === "m1" && r.errors).reduce((n, r) => n + r.events, 0),
      dry_run: false,
    });
    t.strictSame(await sessionsOf(api, "model=m1&has_errors=true"), [], "gone");
  });
});

t.test("bad values: a 400 naming query.<name>", async (t) => {
  const api = await build(t);
  const bad: [string, string][] = [
    ["sort=price", "query.sort"],
    ["sort=", "query.sort"],
    ["order=up", "query.order"],
    ["order=DESC", "query.order"],
    ["model=", "query.model"],
    ["min_cost=abc", "query.min_cost"],
    ["min_cost=-1", "query.min_cost"],
    ["max_cost=1e3", "query.max_cost"],
    ["max_cost=0.0000000000001", "query.max_cost"],
    ["min_duration_ms=1.2345", "query.min_duration_ms"],
    ["max_duration_ms=-5", "query.max_duration_ms"],
    ["max_duration_ms=", "query.max_duration_ms"],
    ["has_errors=yes", "query.has_errors"],
    ["has_errors=1", "query.has_errors"],
    ["extra.a=1&extra.a=2", "query.extra.a"],
    ["extra.=x", "query.extra."],
  ];
  for (const [query, path] of bad) {
    const res = await read(api, `/v2/sessions?${query}`);
    isBadParameter(t, res, [path]);
  }
  const many = Array.from({ length: 21 }, (_, i) => `extra.k${i}=v`).join("&");
  isBadParameter(t, await read(api, `/v2/sessions?${many}`), ["query.extra"]);
  t.equal((await read(api, "/v2/sessions?extra.a.b=1")).statusCode, 200, "a dot after the first is part of the key");
  const proto = await read(api, "/v2/sessions?extra.__proto__=x&extra.constructor=y");
  t.equal(proto.statusCode, 200, "__proto__ and constructor are keys like any other");
  t.strictSame(proto.json().sessions, []);
  isInvalid(t, await read(api, "/v2/sessions?sort=cost&min_cost=x&has_errors=maybe"), [
    "query.min_cost",
    "query.has_errors",
  ]);
});
