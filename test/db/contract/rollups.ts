/**
 * The Store contract: the time series' rollups (docs/decisions/026-analytics-rollups.md). A
 * series with no filter and slot-aligned ranges is answered from the rollups; the same series
 * asked with a filter that keeps every session (min_duration_us 0) takes the exact scan. After
 * every kind of write (create_session, create_events, a duplicate, update_events, update_session
 * changing the end and moving the start to another slot, OTLP spans, delete, bulk delete, a
 * retention sweep) both must give the same sums and counts (cost within 1e-9 relative: doubles
 * added in another order), and percentiles v ≤ answer < 1.02·v of the exact v.
 */
import type { Test } from "tap";
import {
  type Breakdown,
  type BreakdownBy,
  breakdownRollupPlan,
  EMPTY,
  type Measures,
  SLOT_US,
  seriesFromRollups,
} from "../../../domain/analytics.ts";
import type { SpanEventRecord } from "../../../domain/types.ts";
import { iso, patch, US0 } from "../records.ts";
import type { Fixtures } from "./fixture.ts";
import { sameAsRebuild } from "./projections.ts";
import { eventAt, newSession } from "./values.ts";

const SECOND = 1_000_000;
const HOUR = 3600 * SECOND;
/** Every session: duration_us >= 0. A filter, so the exact scan, selecting the same sessions. */
const EVERY = { min_duration_us: 0 };

/** How many percentiles the rollups answered other than the exact value (the histogram at work). */
let approximate = 0;

function same(t: Test, got: Measures[], exact: Measures[], what: string) {
  t.equal(got.length, exact.length, `${what}: as many points`);
  exact.forEach((want, i) => {
    const have = got[i] as Measures;
    const { cost, p50_us, p95_us, p99_us, ...sums } = have;
    const { cost: wantCost, p50_us: w50, p95_us: w95, p99_us: w99, ...wantSums } = want;
    t.strictSame(sums, wantSums, `${what}, point ${i}: sums and counts`);
    t.ok(Math.abs(cost - wantCost) <= 1e-9 * Math.max(1, Math.abs(wantCost)), `${what}, point ${i}: cost ${cost}`);
    for (const [a, v] of [
      [p50_us, w50],
      [p95_us, w95],
      [p99_us, w99],
    ] as [number | null, number | null][]) {
      if (v === null) t.equal(a, null, `${what}, point ${i}: no duration`);
      else {
        t.ok(a !== null && a >= v && a < v * 1.02 + 1e-6, `${what}, point ${i}: ${a} for ${v}`);
        if (a !== v) approximate++;
      }
    }
  });
}

/** Breakdowns answered from the event rollups (SQLite migration 011), and how many. */
let fromEventRollups = 0;

/** A breakdown against the exact one: the same groups in the same order, sums, and percentiles. */
function sameBreakdown(t: Test, got: Breakdown, exact: Breakdown, what: string) {
  if (got.percentiles === "approximate") fromEventRollups++;
  t.equal(exact.percentiles ?? "exact", "exact", `${what}: the filtered one is exact`);
  t.strictSame(
    got.items.map((g) => g.key),
    exact.items.map((g) => g.key),
    `${what}: the same groups, in the same order`,
  );
  same(t, got.items, exact.items, `${what}, items`);
  t.equal(got.other === null, exact.other === null, `${what}: other, or not`);
  if (got.other && exact.other) same(t, [got.other], [exact.other], `${what}, other`);
}

export function rollupContract(t: Test, { fresh, eventRollups }: Fixtures) {
  t.test("rollups: the unfiltered series equals the exact scan after every kind of write", async (t) => {
    const { store, p, other, derived } = await fresh(t);
    t.equal(US0 % SLOT_US, 0, "US0 is on a slot edge");
    const hours = Array.from({ length: 12 }, (_, i) => ({ lo: US0 + (i - 2) * HOUR, hi: US0 + (i - 1) * HOUR }));
    const quarter = Array.from({ length: 8 }, (_, i) => ({ lo: US0 + i * SLOT_US, hi: US0 + (i + 1) * SLOT_US }));
    const whole = [{ lo: US0 - 2 * HOUR, hi: US0 + 10 * HOUR }];
    t.ok(seriesFromRollups({}, hours) && !seriesFromRollups(EVERY, hours), "the rule: no filter, slot edges");
    t.notOk(seriesFromRollups({}, [{ lo: US0 + 1, hi: US0 + HOUR }]), "a range inside a slot takes the exact scan");

    // Breakdowns: hours only, partial hours at both ends, and whole days with hours and partial
    // hours around them (the plan's three parts).
    const breakdownRanges = [
      { from_us: US0 - 2 * HOUR, to_us: US0 + 10 * HOUR },
      { from_us: US0 - 2 * HOUR + 17 * 60 * SECOND, to_us: US0 + 9 * HOUR + 5 * 60 * SECOND + 3 },
      { from_us: US0 - 50 * HOUR - 7, to_us: US0 + 75 * HOUR + 1 },
    ];
    t.ok(
      breakdownRanges.every((r) => breakdownRollupPlan(r, "model") !== undefined) &&
        (breakdownRollupPlan(breakdownRanges[2] as (typeof breakdownRanges)[2], "tool")?.days.length ?? 0) > 0 &&
        breakdownRollupPlan({ ...EVERY, from_us: US0, to_us: US0 + HOUR }, "model") === undefined &&
        breakdownRollupPlan({ from_us: US0, to_us: US0 + HOUR }, "tag") === undefined,
      "the rule: event groupings, no filter but the range",
    );
    const check = async (what: string) => {
      await sameAsRebuild(t, store, derived, what);
      for (const ranges of [hours, quarter, whole]) {
        same(t, await store.analyticsSeries(p, {}, ranges), await store.analyticsSeries(p, EVERY, ranges), what);
      }
      for (const range of breakdownRanges) {
        for (const by of ["model", "type", "tool"] as BreakdownBy[]) {
          for (const [sort, limit] of [
            ["events", 100],
            ["cost", 1],
          ] as const) {
            sameBreakdown(
              t,
              await store.analyticsBreakdown(p, range, { by, sort, limit }),
              await store.analyticsBreakdown(p, { ...range, ...EVERY }, { by, sort, limit }),
              `${what}, by ${by} (${sort}, ${limit}) over ${range.from_us - US0}..${range.to_us - US0}`,
            );
          }
        }
      }
    };

    // Sessions at many times and durations (spread, so that buckets of the histogram hold several).
    for (let i = 0; i < 40; i += 1) {
      const init = US0 + ((i * 7919) % 36_000) * 1000 * 1000 + (i % 3) * 17;
      const ended = i % 5 !== 0;
      await store.createSession(
        p,
        newSession(`s${i}`, {
          init_us: init,
          init_timestamp: iso(init),
          end_timestamp: ended ? iso(init + ((i * 987_654_321) % (3 * HOUR))) : null,
          end_state: ended ? (i % 4 === 0 ? "Fail" : "Success") : null,
        }),
      );
    }
    await store.createSession(other, newSession("theirs", { init_us: US0, init_timestamp: iso(US0) }));
    await check("create_session");

    for (let i = 0; i < 40; i += 3) {
      const init = US0 + ((i * 7919) % 36_000) * 1000 * 1000 + (i % 3) * 17;
      await store.insertEvents(p, `s${i}`, [
        eventAt(
          "a",
          init + SECOND,
          { model: "m1", prompt_tokens: i, completion_tokens: 2, cost: 0.1 * i },
          init + i * 1234,
        ),
        eventAt("b", init + 2 * SECOND, { type: "error", model: null }),
        eventAt(
          "c",
          init + 3 * SECOND,
          { type: "tool", model: null, fields: { name: i % 2 ? "search" : "fetch" } },
          init + (i + 1) * 7 * SECOND,
        ),
        // Errors naming their trigger, in the same call: one llm event, one tool event.
        eventAt("e1", init + 4 * SECOND, { type: "error", model: null, fields: { trigger_event_id: "a" } }),
        eventAt("e2", init + 5 * SECOND, { type: "error", model: null, fields: { trigger_event_id: "c" } }),
      ]);
    }
    // An error whose trigger comes in a later call, and an error naming a stored event.
    await store.insertEvents(p, "s1", [
      eventAt("early", US0 + 10 * SECOND, { type: "error", model: null, fields: { trigger_event_id: "late" } }),
    ]);
    await store.insertEvents(p, "s1", [
      eventAt("late", US0 + 11 * SECOND, { type: "tool", model: null, fields: { name: "slow" } }, US0 + 99 * SECOND),
    ]);
    await store.insertEvents(p, "s3", [
      eventAt("after", US0 + 12 * SECOND, { type: "error", model: null, fields: { trigger_event_id: "a" } }),
    ]);
    await check("create_events");
    await store.insertEvents(p, "s0", [eventAt("a", US0, { model: "m9", cost: 50 }), eventAt("d", US0 + HOUR, {})]);
    await check("a duplicate and a later event");

    await store.updateEvents(p, "s3", [
      patch({ event_id: "a", prompt_tokens: 400, completion_tokens: 1, cost: 0.5 }),
      patch({ event_id: "b", type: "llm" }),
    ]);
    await check("update_events");

    await store.updateSession(p, "s5", { end_timestamp: iso(US0 + 9 * HOUR), end_state: "Fail", extra: {} });
    await store.updateSession(p, "s6", { end_state: "Success", extra: {} });
    await check("update_session's end and state");
    const moved = US0 + 7 * HOUR + 123;
    await store.updateSession(p, "s9", { init_us: moved, init_timestamp: iso(moved), extra: {} });
    await check("update_session moving the start to another slot");
    // Both at once: the start to another hour and the end state to Fail, then back to Success.
    const both = US0 + 8 * HOUR + 7;
    await store.updateSession(p, "s6", { init_us: both, init_timestamp: iso(both), end_state: "Fail", extra: {} });
    await check("update_session moving the start and failing the session in one call");
    await store.updateSession(p, "s6", {
      init_us: US0 + 5,
      init_timestamp: iso(US0 + 5),
      end_state: "Success",
      extra: {},
    });
    await check("update_session moving it back and ending it Success");

    const span = (id: string, parent: string | null, s: number): SpanEventRecord => ({
      id,
      type: "llm",
      parent_id: parent,
      own_agent_id: null,
      init_timestamp: iso(US0 + s * SECOND),
      init_us: US0 + s * SECOND,
      end_timestamp: iso(US0 + (s + 2) * SECOND),
      agent_id: null,
      model: "gpt",
      prompt_tokens: 11,
      completion_tokens: 4,
      cost: 0.05,
      cost_source: "client",
      fields: {},
      aliases: [],
      extra: {},
    });
    const trace = (spans: SpanEventRecord[]) => ({
      session_id: "trace-1",
      init_timestamp: iso(Math.min(...spans.map((s) => s.init_us))),
      init_us: Math.min(...spans.map((s) => s.init_us)),
      conversation_id: null,
      root: null,
      events: spans,
      agents: [],
    });
    await store.ingestTraces(p, [trace([span("c1", "r", 1000), span("c2", "r", 1200)])]);
    await store.ingestTraces(p, [trace([span("r", null, 100)])]);
    await check("OTLP spans, the root earlier (another slot)");

    t.equal(await store.deleteSession(p, "s12"), true);
    await check("delete");
    await store.deleteSessions(p, { end_state: "Fail" }, { maxSessions: 100, maxEvents: 10_000, dryRun: false });
    await check("bulk delete");
    await store.deleteSessions(
      p,
      { idle_before_us: US0 + 5 * HOUR },
      { maxSessions: 100, maxEvents: 10_000, dryRun: false },
    );
    await check("a retention sweep");
    t.ok(
      (await store.analyticsSeries(p, {}, whole)).some((m) => m !== EMPTY && m.sessions > 3),
      "sessions are left to count",
    );
    t.ok(approximate > 0, `the rollups answered (${approximate} percentiles from the histogram, not exact)`);
    t.ok(
      eventRollups ? fromEventRollups > 0 : fromEventRollups === 0,
      `the event rollups answered ${fromEventRollups} breakdowns (${eventRollups ? "SQLite" : "none: exact here"})`,
    );
    await store.deleteSessions(p, {}, { maxSessions: 1000, maxEvents: 100_000, dryRun: false });
    t.strictSame(
      await store.analyticsSeries(p, {}, hours),
      hours.map(() => EMPTY),
      "all deleted: every point empty",
    );
  });
}
