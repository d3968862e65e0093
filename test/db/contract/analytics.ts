/**
 * The Store contract: analytics (Store.analyticsSeries, Store.analyticsBreakdown). A seeded mix
 * of sessions and events (ties of durations, sessions without events, running sessions, repeated
 * tags, names with SQL metacharacters, errors triggered by event id or by span parent) is
 * answered by the store and by a plain computation over what readSession gives back (statsView's
 * durations, the events as stored); both must be the same, exactly, on every engine.
 */
import type { Test } from "tap";
import {
  type BreakdownBy,
  type BreakdownSort,
  EMPTY,
  type Group,
  type Measures,
  nearestRank,
  rankGroups,
  sumGroups,
} from "../../../domain/analytics.ts";
import { parseTimestamp } from "../../../domain/timestamps.ts";
import type { EndState, EventRecord, Kind, SessionSnapshot } from "../../../domain/types.ts";
import { statsView } from "../../../domain/views.ts";
import { iso, US0 } from "../records.ts";
import type { Fixtures } from "./fixture.ts";
import { eventAt, NASTY, newSession, WHOLE } from "./values.ts";

/** A small deterministic generator (mulberry32). */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const SECOND = 1_000_000;
const HOUR = 3600 * SECOND;
const TAGS = ["x", "y", NASTY, "z"];
const MODELS = ["m1", "m2", NASTY, null];
const TOOLS = ["search", "fetch", `${NASTY}'`];
const AGENTS = ["a1", "a2", NASTY];
const STATES: (EndState | null)[] = ["Success", "Fail", "Indeterminate", null];

interface Row {
  pk: string;
  key: string | null;
  end_state: EndState | null;
  events: number;
  errors: number;
  prompt: number;
  completion: number;
  cost: number;
  dur: number | null;
}

/** The plain computation: a group's measures from its rows (distinct sessions). */
function measuresOf(rows: Row[]): Measures {
  const durations = rows.flatMap((r) => (r.dur === null ? [] : [r.dur]));
  return {
    sessions: new Set(rows.map((r) => r.pk)).size,
    failures: new Set(rows.filter((r) => r.end_state === "Fail").map((r) => r.pk)).size,
    events: rows.reduce((n, r) => n + r.events, 0),
    error_events: rows.reduce((n, r) => n + r.errors, 0),
    prompt_tokens: rows.reduce((n, r) => n + r.prompt, 0),
    completion_tokens: rows.reduce((n, r) => n + r.completion, 0),
    cost: rows.reduce((n, r) => n + r.cost, 0),
    p50_us: nearestRank(durations, 50),
    p95_us: nearestRank(durations, 95),
    p99_us: nearestRank(durations, 99),
  };
}

const sessionRow = (s: SessionSnapshot, key: string | null): Row => {
  const stats = statsView(s.session, s.totals);
  return {
    pk: s.session.id,
    key,
    end_state: s.session.end_state,
    events: s.totals.events,
    errors: s.totals.event_counts.error,
    prompt: s.totals.prompt_tokens,
    completion: s.totals.completion_tokens,
    cost: s.totals.cost,
    dur: Math.round(stats.duration_ms * 1000),
  };
};

/** Every row of a grouping: a session per key it has, or an event of the grouping. */
function rowsBy(by: BreakdownBy, snapshots: SessionSnapshot[]): Row[] {
  return snapshots.flatMap((s) => {
    if (by === "end_state") return [sessionRow(s, s.session.end_state)];
    if (by === "tag") {
      const tags = [...new Set(s.session.tags ?? [])];
      return tags.length === 0 ? [sessionRow(s, null)] : tags.map((tag) => sessionRow(s, tag));
    }
    if (by === "agent") {
      const agents = [
        ...new Set([...s.agents.map((a) => a.id), ...s.events.flatMap((e) => (e.agent_id ? [e.agent_id] : []))]),
      ];
      return agents.length === 0 ? [sessionRow(s, null)] : agents.map((agent) => sessionRow(s, agent));
    }
    const kinds: Record<string, Kind | undefined> = { model: "llm", tool: "tool", type: undefined };
    const triggered = (e: EventRecord) =>
      s.events.filter(
        (r) => r.type === "error" && ((r.fields.trigger_event_id as string | undefined) ?? r.parent_id) === e.id,
      ).length;
    return s.events
      .filter((e) => kinds[by] === undefined || e.type === kinds[by])
      .map((e) => {
        const key = by === "model" ? e.model : by === "tool" ? ((e.fields.name as string | undefined) ?? null) : e.type;
        const end = e.end_timestamp === null ? null : (parseTimestamp(e.end_timestamp)?.us ?? null);
        const llm = e.type === "llm";
        return {
          pk: s.session.id,
          key,
          end_state: s.session.end_state,
          events: 1,
          errors: triggered(e),
          prompt: llm ? (e.prompt_tokens ?? 0) : 0,
          completion: llm ? (e.completion_tokens ?? 0) : 0,
          cost: llm ? (e.cost ?? 0) : 0,
          dur: end === null ? null : Math.max(0, end - e.init_us),
        };
      });
  });
}

function expectedBreakdown(by: BreakdownBy, sort: BreakdownSort, limit: number, snapshots: SessionSnapshot[]) {
  const rows = rowsBy(by, snapshots);
  const keys = [...new Set(rows.map((r) => r.key))];
  const groups: Group[] = keys.map((key) => ({ key, ...measuresOf(rows.filter((r) => r.key === key)) }));
  const { top, rest } = rankGroups(groups, sort, limit);
  if (rest.length === 0) return { items: top, other: null };
  const restKeys = new Set(rest.map((g) => g.key));
  const together = measuresOf(rows.filter((r) => restKeys.has(r.key)).map((r, i) => ({ ...r, pk: `${r.pk}#${i}` })));
  return {
    items: top,
    other: { ...sumGroups(rest), p50_us: together.p50_us, p95_us: together.p95_us, p99_us: together.p99_us },
  };
}

export function analyticsContract(t: Test, { fresh, eventRollups }: Fixtures) {
  t.test("analytics: the series and every breakdown equal a plain computation over the stored sessions", async (t) => {
    const { store, p, other } = await fresh(t);
    const next = random(15);
    const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)] as T;
    const ids: string[] = [];
    for (let i = 0; i < 60; i += 1) {
      const id = `s${i}`;
      ids.push(id);
      const init = US0 + Math.floor(next() * 48) * HOUR + Math.floor(next() * 3600) * SECOND;
      // Durations from a few values, so that ties are common; some sessions run on (no end).
      const state = pick(STATES);
      const ended = state !== null || next() < 0.3;
      const end = init + pick([0, 1, 2, 2, 5, 30]) * SECOND + (next() < 0.2 ? 123 : 0);
      const tags = next() < 0.2 ? null : Array.from({ length: Math.floor(next() * 3) }, () => pick(TAGS));
      await store.createSession(
        p,
        newSession(id, {
          init_us: init,
          init_timestamp: iso(init),
          end_state: state,
          end_timestamp: ended ? iso(end) : null,
          tags,
        }),
      );
      if (next() < 0.3) await store.upsertAgent(p, id, { id: pick(AGENTS), name: null, extra: {} });
      const events: EventRecord[] = [];
      const count = Math.floor(next() * 6);
      for (let n = 0; n < count; n += 1) {
        const kind = pick<Kind>(["llm", "llm", "tool", "action", "error"]);
        const at = init + (n + 1) * SECOND;
        const endAt = next() < 0.25 ? undefined : at + pick([0, 500_000, 1_000_000, 3_000_000]);
        const fields: Record<string, unknown> = {};
        let parent: string | undefined;
        if (kind === "tool" && next() < 0.9) fields.name = pick(TOOLS);
        if (kind === "error" && events.length > 0) {
          const target = pick(events).id;
          if (next() < 0.5) fields.trigger_event_id = target;
          else parent = target;
        }
        events.push(
          eventAt(
            `e${n}`,
            at,
            {
              type: kind,
              model: kind === "llm" ? pick(MODELS) : null,
              prompt_tokens: kind === "llm" ? Math.floor(next() * 100) : null,
              completion_tokens: kind === "llm" ? Math.floor(next() * 10) : null,
              cost: kind === "llm" && next() < 0.8 ? Math.floor(next() * 64) / 16 : null,
              cost_source: "client",
              agent_id: next() < 0.2 ? pick(AGENTS) : null,
              fields,
              ...(parent === undefined ? {} : { parent_id: parent }),
            },
            endAt,
          ),
        );
      }
      if (events.length > 0) await store.insertEvents(p, id, events);
    }
    // Another project's session in the same hours: never counted.
    await store.createSession(other, newSession("theirs", { init_us: US0 + HOUR, end_state: "Fail", tags: ["x"] }));
    await store.insertEvents(other, "theirs", [eventAt("e0", US0 + HOUR, { model: "m1", cost: 5 }, US0 + 2 * HOUR)]);

    const snapshots = (await Promise.all(ids.map((id) => store.readSession(p, id, WHOLE)))) as SessionSnapshot[];

    t.test("series: six-hour ranges, and ranges with nothing", async (t) => {
      const ranges = Array.from({ length: 10 }, (_, i) => ({ lo: US0 + i * 6 * HOUR, hi: US0 + (i + 1) * 6 * HOUR }));
      const got = await store.analyticsSeries(p, {}, ranges);
      const want = ranges.map(({ lo, hi }) => {
        const rows = snapshots
          .filter((s) => s.session.init_us >= lo && s.session.init_us < hi)
          .map((s) => sessionRow(s, null));
        return rows.length === 0 ? EMPTY : measuresOf(rows);
      });
      t.strictSame(got, want);
      t.ok(want[9] === EMPTY && want.some((m) => m.sessions > 3), "the data has full and empty ranges");
      const failed = await store.analyticsSeries(p, { end_state: "Fail", tags: ["x"] }, ranges);
      const failedWant = ranges.map(({ lo, hi }) => {
        const rows = snapshots
          .filter((s) => s.session.end_state === "Fail" && (s.session.tags ?? []).includes("x"))
          .filter((s) => s.session.init_us >= lo && s.session.init_us < hi)
          .map((s) => sessionRow(s, null));
        return rows.length === 0 ? EMPTY : measuresOf(rows);
      });
      t.strictSame(failed, failedWant, "with filters");
      t.strictSame(await store.analyticsSeries(p, {}, []), [], "no range, no point");
    });

    const bys: BreakdownBy[] = ["model", "type", "tag", "end_state", "agent", "tool"];
    for (const by of bys) {
      t.test(`breakdown by ${by}`, async (t) => {
        for (const [sort, limit] of [
          ["cost", 100],
          ["cost", 2],
          ["sessions", 1],
          ["duration_p95", 2],
          ["tokens", 3],
          ["failures", 2],
          ["events", 1],
        ] as [BreakdownSort, number][]) {
          const got = await store.analyticsBreakdown(p, {}, { by, sort, limit });
          t.strictSame(got, expectedBreakdown(by, sort, limit, snapshots), `sort ${sort}, limit ${limit}`);
        }
        const range = { from_us: US0 + 6 * HOUR, to_us: US0 + 30 * HOUR };
        const inRange = snapshots.filter((s) => s.session.init_us >= range.from_us && s.session.init_us < range.to_us);
        // A range of whole hours: event groupings come from the rollups on SQLite, with the same
        // numbers here (each histogram bucket holds one distinct duration).
        const rolledUp = eventRollups && (by === "model" || by === "type" || by === "tool");
        t.strictSame(
          await store.analyticsBreakdown(p, range, { by, sort: "cost", limit: 3 }),
          { ...expectedBreakdown(by, "cost", 3, inRange), ...(rolledUp ? { percentiles: "approximate" } : {}) },
          "a range",
        );
        t.strictSame(
          await store.analyticsBreakdown(other, { tags: ["nope"] }, { by, sort: "cost", limit: 3 }),
          { items: [], other: null },
          "nothing matches",
        );
      });
    }
  });
}
