/**
 * The read API (issue 5): the session list in pages, and its filters alone and combined, through
 * real HTTP (inject) on a real SQLite store. Data is always written through the write API.
 */
import t from "tap";
import { build, OTHER_PROJECT_KEY } from "./helper.ts";
import { allPages, at, createEvents, ids, read, T0 } from "./read.helpers.ts";

// ----------------------------------------------------------------------------------- session pages

t.test("sessions: 450 sessions, pages of 200, newest first, each exactly once", async (t) => {
  const api = await build(t);
  // Two sessions share each second, so the id (descending) decides between them.
  const created: { id: string; us: number }[] = [];
  for (let i = 0; i < 450; i += 1) {
    const id = `p${String(i).padStart(3, "0")}`;
    const ms = T0 + Math.floor(i / 2) * 1000;
    await api.session(id, { init_timestamp: at(ms) });
    created.push({ id, us: ms * 1000 });
  }
  await api.session("elsewhere", { init_timestamp: at(T0 + 10_000_000) }, OTHER_PROJECT_KEY);
  const order = [...created].sort((a, b) => b.us - a.us || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).map((s) => s.id);

  const { rows, pages } = await allPages<{ session: { id: string } }>(api, "/v2/sessions?limit=200", "sessions");
  t.equal(pages, 3);
  t.equal(rows.length, 450);
  t.equal(new Set(ids(rows)).size, 450, "no session twice");
  t.strictSame(ids(rows), order, "init_timestamp descending, then id descending");
  t.notOk(ids(rows).includes("elsewhere"), "another project's sessions are never listed");

  t.test("the default page is 50", async (t) => {
    const body = (await read(api, "/v2/sessions")).json();
    t.equal(body.sessions.length, 50);
    t.strictSame(ids(body.sessions), order.slice(0, 50));
  });

  t.test("a page of exactly the rest has no next_cursor", async (t) => {
    const first = (await read(api, "/v2/sessions?limit=200")).json();
    const second = (await read(api, `/v2/sessions?limit=200&cursor=${first.next_cursor}`)).json();
    const third = (await read(api, `/v2/sessions?limit=50&cursor=${second.next_cursor}`)).json();
    t.equal(third.sessions.length, 50);
    t.equal(third.next_cursor, null);
  });

  t.test("stable while sessions arrive: newer ones wait for a new first page; none is listed twice", async (t) => {
    let added = false;
    const { rows } = await allPages<{ session: { id: string } }>(
      api,
      "/v2/sessions?limit=200",
      "sessions",
      async () => {
        if (added) return;
        added = true;
        await api.session("new-newest", { init_timestamp: at(T0 + 9_000_000) });
        await api.session("new-tie", { init_timestamp: at(T0 + 224_000) }); // the newest pair's second
        await api.session("new-oldest", { init_timestamp: at(T0 - 1000) });
      },
    );
    const got = ids(rows).map(String);
    t.equal(new Set(got).size, got.length, "no session twice");
    t.strictSame(
      got.filter((id) => /^p\d+$/.test(id)),
      order,
      "every session there before paging began, once, in order",
    );
    t.notOk(got.includes("new-newest"));
    t.notOk(got.includes("new-tie"), "a session sorting before the cursor is not seen");
    t.ok(got.includes("new-oldest"), "one sorting after the cursor is");
    t.equal(ids((await read(api, "/v2/sessions?limit=1")).json().sessions)[0], "new-newest", "a new first page has it");
  });
});

// ----------------------------------------------------------------------------------- filters

interface Row {
  id: string;
  us: number;
  tags: string[] | null;
  state: string | null;
  reason: string | null;
  agents: Set<string>;
}

t.test("filters: each alone and every combination, as one page and across pages", async (t) => {
  const api = await build(t);
  const model: Row[] = [];
  const STATES = [
    ["completed", "Success"],
    ["failed", "Fail"],
    ["unknown", "Indeterminate"],
    [null, null],
  ] as const;
  const REASONS = [null, "Timeout in step", "ÉCHEC du réseau", "ok"];
  for (let i = 0; i < 40; i += 1) {
    const id = `f${String(i).padStart(2, "0")}`;
    const ms = T0 + Math.floor(i / 2) * 60_000;
    const tags = i % 10 === 9 ? null : ([["red"], ["red", "blue"], ["blue", "green"]][i % 3] ?? null);
    const [alias, state] = STATES[i % 4] ?? [null, null];
    const text = REASONS[(i + Math.floor(i / 4)) % 4]; // not in step with the end states
    const reason = text === null ? null : `${text} ${i}`;
    const fields: Record<string, unknown> = { init_timestamp: at(ms), tags };
    if (alias !== null) fields.end_state = alias;
    if (reason !== null) fields.end_state_reason = reason;
    const jwt = await api.session(id, fields);
    const agents = new Set<string>();
    if (i % 5 === 0) {
      await api.withJwt("/v2/create_agent", { id: "planner", name: "P" }, jwt); // registered only
      agents.add("planner");
    }
    if (i % 5 === 1) {
      await createEvents(api, jwt, [{ type: "tool", agent_id: "planner" }]); // named by an event only
      agents.add("planner");
    }
    if (i % 7 === 0) {
      await createEvents(api, jwt, [{ type: "llm", agent_id: "coder" }]);
      agents.add("coder");
    }
    model.push({ id, us: ms * 1000, tags, state, reason, agents });
  }
  // Another project's sessions match every filter too, and must never show.
  const other = await api.session(
    "other-f",
    { init_timestamp: at(T0 + 600_000), tags: ["red", "blue"], end_state: "failed", end_state_reason: "Timeout" },
    OTHER_PROJECT_KEY,
  );
  await api.withJwt("/v2/create_agent", { id: "planner" }, other);

  const order = (rows: Row[]) =>
    [...rows].sort((a, b) => b.us - a.us || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).map((r) => r.id);
  const FROM = T0 + 5 * 60_000;
  const TO = T0 + 15 * 60_000;

  const TAGS = [undefined, ["red"], ["red", "blue"]];
  const STATE = [undefined, "failed"];
  const RANGE = [undefined, true];
  const AGENT = [undefined, "planner"];
  const Q = [undefined, "TIMEOUT"];
  let combinations = 0;
  let nonEmpty = 0;
  for (const tags of TAGS)
    for (const state of STATE)
      for (const range of RANGE)
        for (const agent of AGENT)
          for (const q of Q) {
            const params = new URLSearchParams();
            for (const tag of tags ?? []) params.append("tag", tag);
            if (state) params.set("end_state", state);
            // from with an offset: 10:35+05:30 is 05:05Z.
            if (range) params.set("from", "2026-11-22T10:35:00+05:30");
            if (range) params.set("to", at(TO));
            if (agent) params.set("agent_id", agent);
            if (q) params.set("q", q);
            const expected = order(
              model.filter(
                (r) =>
                  (tags ?? []).every((tag) => r.tags?.includes(tag)) &&
                  (!state || r.state === "Fail") &&
                  (!range || (r.us >= FROM * 1000 && r.us < TO * 1000)) &&
                  (!agent || r.agents.has(agent)) &&
                  (!q || (r.reason ?? "").toLowerCase().includes(q.toLowerCase())),
              ),
            );
            if (expected.length > 0) nonEmpty += 1;
            const name = params.toString() || "no filter";
            const page = (await read(api, `/v2/sessions?limit=200&${params}`)).json();
            t.strictSame(ids(page.sessions), expected, `${name}: one page`);
            const { rows } = await allPages<{ session: { id: string } }>(
              api,
              `/v2/sessions?limit=3&${params}`,
              "sessions",
            );
            t.strictSame(ids(rows), expected, `${name}: pages of 3`);
            combinations += 1;
          }
  t.equal(combinations, 48);
  t.ok(nonEmpty >= 40, `most combinations select some sessions, not none (${nonEmpty})`);

  t.test("all six filters at once", async (t) => {
    const query = `tag=red&end_state=Fail&from=${at(T0)}&to=${at(T0 + 20 * 60_000)}&agent_id=planner&q=timeout`;
    const expected = order(
      model.filter(
        (r) =>
          r.tags?.includes("red") &&
          r.state === "Fail" &&
          r.agents.has("planner") &&
          (r.reason ?? "").toLowerCase().includes("timeout"),
      ),
    );
    t.ok(expected.length > 0);
    t.strictSame(ids((await read(api, `/v2/sessions?${query}`)).json().sessions), expected);
  });

  const list = async (query: string) => ids((await read(api, `/v2/sessions?limit=200&${query}`)).json().sessions);
  t.test("tag: a session must have every tag given; an unknown tag matches nothing", async (t) => {
    t.strictSame(await list("tag=green"), order(model.filter((r) => r.tags?.includes("green"))));
    t.strictSame(await list("tag=red&tag=green"), []);
    t.strictSame(await list("tag=red&tag=red"), await list("tag=red"), "a tag named twice is one condition");
    t.strictSame(await list("tag=nope"), []);
  });
  t.test("end_state: canonical names and S5 aliases, any case", async (t) => {
    const of = (state: string | null) => order(model.filter((r) => r.state === state));
    t.strictSame(await list("end_state=Success"), of("Success"));
    t.strictSame(await list("end_state=OK"), of("Success"));
    t.strictSame(await list("end_state=errored"), of("Fail"));
    t.strictSame(await list("end_state=INDETERMINATE"), of("Indeterminate"));
    t.strictSame(await list("end_state="), of("Indeterminate"), 'the alias "" is Indeterminate (S5)');
  });
  t.test("from is inclusive, to exclusive, on init_timestamp", async (t) => {
    const first = model.find((r) => r.id === "f10") as Row; // T0 + 5 min exactly
    t.equal(first.us, FROM * 1000);
    t.strictSame(await list(`from=${at(FROM)}&to=${at(FROM + 1)}`), ["f11", "f10"]);
    t.strictSame(await list(`from=${at(FROM - 60_000)}&to=${at(FROM)}`), ["f09", "f08"]);
    t.strictSame(await list(`to=${at(T0)}`), []);
    t.strictSame(await list(`from=${encodeURIComponent("2026-11-22 05:19:00")}`), ["f39", "f38"], "no offset: UTC");
  });
  t.test("agent_id: a registered agent or an event's agent_id", async (t) => {
    t.strictSame(await list("agent_id=coder"), order(model.filter((r) => r.agents.has("coder"))));
    t.ok((await list("agent_id=planner")).includes("f00"), "registered only");
    t.ok((await list("agent_id=planner")).includes("f01"), "named by an event only");
    t.strictSame(await list("agent_id=nobody"), []);
  });
  t.test("q: words of end_state_reason, case and accents folded (test/search.test.ts has the rest)", async (t) => {
    const with_ = (text: string) => order(model.filter((r) => (r.reason ?? "").includes(text)));
    t.strictSame(await list("q=%C3%A9chec"), with_("ÉCHEC"), "échec finds ÉCHEC");
    t.strictSame(await list("q=reseau"), with_("réseau"), "reseau finds réseau");
    t.strictSame(await list("q=step%201"), with_("step 1"), "the last word is a prefix: 1, 10 ... 19");
    t.strictSame(await list("q=ime"), [], "a word's middle is not a word");
    t.strictSame(await list("q="), order(model), "an empty q filters nothing");
    t.strictSame(await list("q=%25"), order(model), "nor does a q without a word");
  });
});
