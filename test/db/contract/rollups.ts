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
import { EMPTY, type Measures, SLOT_US, seriesFromRollups } from "../../../domain/analytics.ts";
import type { SpanEventRecord } from "../../../domain/types.ts";
import { iso, patch, US0 } from "../records.ts";
import type { Fixtures } from "./fixture.ts";
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

export function rollupContract(t: Test, { fresh }: Fixtures) {
  t.test("rollups: the unfiltered series equals the exact scan after every kind of write", async (t) => {
    const { store, p, other } = await fresh(t);
    t.equal(US0 % SLOT_US, 0, "US0 is on a slot edge");
    const hours = Array.from({ length: 12 }, (_, i) => ({ lo: US0 + (i - 2) * HOUR, hi: US0 + (i - 1) * HOUR }));
    const quarter = Array.from({ length: 8 }, (_, i) => ({ lo: US0 + i * SLOT_US, hi: US0 + (i + 1) * SLOT_US }));
    const whole = [{ lo: US0 - 2 * HOUR, hi: US0 + 10 * HOUR }];
    t.ok(seriesFromRollups({}, hours) && !seriesFromRollups(EVERY, hours), "the rule: no filter, slot edges");
    t.notOk(seriesFromRollups({}, [{ lo: US0 + 1, hi: US0 + HOUR }]), "a range inside a slot takes the exact scan");

    const check = async (what: string) => {
      for (const ranges of [hours, quarter, whole]) {
        same(t, await store.analyticsSeries(p, {}, ranges), await store.analyticsSeries(p, EVERY, ranges), what);
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
        eventAt("c", init + 3 * SECOND, { type: "tool", model: null }, init + (i + 1) * 7 * SECOND),
      ]);
    }
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
    await store.deleteSessions(p, {}, { maxSessions: 1000, maxEvents: 100_000, dryRun: false });
    t.strictSame(
      await store.analyticsSeries(p, {}, hours),
      hours.map(() => EMPTY),
      "all deleted: every point empty",
    );
  });
}
