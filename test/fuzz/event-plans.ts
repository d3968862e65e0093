/** The plans of create_events and update_events: E2/E5 fix-ups, E2/E5/E6 breaks, and the read-backs (E3, E4, E6, G5, G6). */
import fc from "fast-check";
import type { EventRecord } from "../../domain/types.ts";
import { eventView } from "../../domain/views.ts";
import { utcOf } from "../arbitraries/timestamps.ts";
import { canonical, clone, DELETE, pickFrom, setAt } from "../arbitraries/values.ts";
import { inspect } from "../helper.ts";
import type { Ctx } from "./app.ts";
import { sameValue, show } from "./checks.ts";
import type { Body, Break, Pick, Plan } from "./plan.ts";
import { EVENT_NAMED, given, idArb, KIND_OF, own, PLURAL } from "./rules.ts";

/** E2/E5 rules for one event: kinds agree (one given on create), session_id the JWT's or none. */
function fixEvent(raw: Body, ctx: Ctx, pick: Pick, needKind: boolean): Body {
  const event = clone(raw);
  if (given(event.type) && given(event.event_type) && PLURAL[event.type] !== event.event_type) {
    event.event_type = PLURAL[event.type];
  }
  if (needKind && !given(event.type) && !given(event.event_type)) {
    const kind = Object.keys(PLURAL)[pick(4)] as string;
    if (pick(2) === 0) event.type = kind;
    else event.event_type = PLURAL[kind];
  }
  if (given(event.session_id)) event.session_id = pick(2) === 0 ? ctx.sessionId : null;
  return event;
}

const kindOf = (event: Body): string | undefined => (given(event.type) ? event.type : KIND_OF[event.event_type]);

function eventBreaks(body: Body, ctx: Ctx, update: boolean): Break[] {
  const events = body.events as Body[];
  return events.slice(0, 3).flatMap((event, i): Break[] => {
    const at = (key: string, value: unknown, base: unknown = body) => setAt(base, ["events", i, key], value);
    const disagree = fc
      .tuple(pickFrom(...Object.keys(PLURAL)), pickFrom(...Object.keys(KIND_OF)))
      .filter(([type, plural]) => PLURAL[type] !== plural)
      .map(([type, plural]) => at("event_type", plural, at("type", type)));
    const breaks: Break[] = [
      {
        what: "type and event_type disagree (E2)",
        expect: { status: 400, error: "Invalid request", path: `events[${i}].event_type` },
        body: disagree,
      },
      {
        what: "session_id names another session (E5)",
        expect: { status: 403, error: "Forbidden" },
        body: fc.constant(at("session_id", ctx.otherSessionId)),
      },
    ];
    if (!update) {
      breaks.push({
        what: "no kind (E2)",
        expect: { status: 400, error: "Invalid request", path: `events[${i}].type` },
        body: fc.constant(at("event_type", DELETE, at("type", DELETE))),
      });
    } else {
      const named = event.event_id ?? event.id;
      breaks.push(
        {
          what: "no event_id (E6)",
          expect: { status: 400, error: "Invalid request", path: `events[${i}].event_id` },
          body: fc.constant(at("id", DELETE, at("event_id", DELETE))),
        },
        {
          what: "event_id and id differ (E6)",
          expect: { status: 400, error: "Invalid request", path: `events[${i}].id` },
          body: fc.constant(at("id", `${named}-other`, at("event_id", named))),
        },
        {
          what: "an id the session does not have (E6)",
          expect: { status: 404, error: "Not found", path: `events[${i}].event_id` },
          body: fc
            .oneof(idArb, fc.constant(ctx.otherEventId))
            .filter((id) => !ctx.eventIds.includes(id))
            .map((id) => at("id", DELETE, at("event_id", id))),
        },
      );
    }
    return breaks;
  });
}

/** The create_events read-back of one event: every field as sent (E3, E4, G5, G6). */
function eventProblem(sent: Body, view: Body, sessionId: string): string | undefined {
  if (view.type !== kindOf(sent)) return `type ${view.type}, sent ${kindOf(sent)}`;
  if (view.session_id !== sessionId) return `session_id ${show(view.session_id)}`;
  const init = given(sent.init_timestamp)
    ? utcOf(sent.init_timestamp)
    : given(sent.timestamp)
      ? utcOf(sent.timestamp)
      : undefined;
  if (init !== undefined ? view.init_timestamp !== init : utcOf(view.init_timestamp) !== view.init_timestamp) {
    return `init_timestamp ${view.init_timestamp}, sent ${show(sent.init_timestamp)} / ${show(sent.timestamp)}`;
  }
  const end = given(sent.end_timestamp) ? utcOf(sent.end_timestamp) : null;
  if (view.end_timestamp !== end) return `end_timestamp ${view.end_timestamp}, expected ${end}`;
  if (given(sent.timestamp) && view.timestamp !== sent.timestamp && view.timestamp !== utcOf(sent.timestamp)) {
    return `timestamp ${show(view.timestamp)}, sent ${show(sent.timestamp)}`;
  }
  for (const key of Object.keys(sent)) {
    if (["type", "id", "session_id", "init_timestamp", "end_timestamp", "timestamp"].includes(key)) continue;
    const value = own(sent, key);
    if (value === null && EVENT_NAMED.has(key)) continue; // null means not given
    if (!Object.hasOwn(view, key)) return `${show(key)} is not stored`;
    const problem = sameValue(own(view, key), value, show(key));
    if (problem) return problem;
  }
  return undefined;
}

interface EventsBefore {
  records: Map<string, EventRecord>;
  views: Map<string, Body>;
}

async function eventsNow(ctx: Ctx): Promise<EventsBefore> {
  const records = await inspect(ctx.api.store).listEvents(ctx.sessionId);
  return {
    records: new Map(records.map((r) => [r.id, r])),
    views: new Map(records.map((r) => [r.id, eventView(r, ctx.sessionId) as Body])),
  };
}

export const createEventsPlan: Plan = {
  fix(body, ctx, pick) {
    const events = (body.events as Body[]).map((e) => fixEvent(e, ctx, pick, true));
    // E3: now and then an id the session already has (a retry), or an earlier event's (the later copy wins).
    for (const [i, event] of events.entries()) {
      const choice = pick(8);
      if (choice === 0) event.id = ctx.eventIds[pick(ctx.eventIds.length)];
      if (choice === 1 && i > 0) event.id = events[pick(i)]?.id ?? null;
    }
    return { ...clone(body), events };
  },
  breaks: (body, ctx) => eventBreaks(body, ctx, false),
  before: eventsNow,
  async readback(ctx, sent, res, before: EventsBefore) {
    const ids: unknown[] = res.json().event_ids;
    const events = sent.events as Body[];
    if (!Array.isArray(ids) || ids.length !== events.length)
      return `event_ids ${show(ids)} for ${events.length} events`;
    const after = await eventsNow(ctx);
    const last = new Map<string, Body>(); // E3: the same id twice in one call keeps the later copy
    for (const [i, event] of events.entries()) {
      if (given(event.id) && ids[i] !== event.id) return `event_ids[${i}] is ${show(ids[i])}, sent ${show(event.id)}`;
      last.set(ids[i] as string, event);
    }
    for (const [id, view] of after.views) {
      const old = before.views.get(id);
      const event = last.get(id);
      if (old !== undefined) {
        // E3: an id already stored is not stored again; untouched events stay as they were.
        const problem = sameValue(view, old, `event ${show(id)} (stored before)`);
        if (problem) return problem;
      } else if (event === undefined) return `event ${show(id)} appeared from nowhere`;
      else {
        const problem = eventProblem(event, view, ctx.sessionId);
        if (problem) return `event ${show(id)}: ${problem}`;
      }
    }
    for (const id of last.keys()) if (!after.views.has(id)) return `event ${show(id)} is not stored`;
    return undefined;
  },
};

/** Fields whose read view depends on the event's kind and its alias history (E4 aliases). */
const ALIASED = new Set(["name", "tool_name", "input", "output", "params", "returns", "timestamp"]);

export const updateEventsPlan: Plan = {
  fix(body, ctx, pick) {
    const events = (body.events as Body[]).map((raw) => {
      const event = fixEvent(raw, ctx, pick, false);
      const id = ctx.eventIds[pick(ctx.eventIds.length)] as string;
      const form = pick(3);
      event.event_id = form === 2 ? null : id;
      event.id = form === 0 ? null : id;
      if (form === 0 && pick(2) === 0) delete event.id;
      return event;
    });
    return { ...clone(body), events };
  },
  breaks: (body, ctx) => eventBreaks(body, ctx, true),
  before: eventsNow,
  async readback(ctx, sent, res, before: EventsBefore) {
    const entries = sent.events as Body[];
    const named = new Map<string, Body[]>();
    for (const entry of entries) {
      const id = given(entry.event_id) ? entry.event_id : entry.id;
      named.set(id, [...(named.get(id) ?? []), entry]);
    }
    if (res.json().updated !== named.size) return `updated ${res.json().updated}, expected ${named.size}`;
    const after = await eventsNow(ctx);
    if (after.views.size !== before.views.size) return "update_events changed the number of events";
    for (const [id, view] of after.views) {
      const old = before.views.get(id) as Body;
      const record = before.records.get(id) as EventRecord;
      const list = named.get(id);
      if (list === undefined) {
        const problem = sameValue(view, old, `event ${show(id)} (not named)`);
        if (problem) return problem;
        continue;
      }
      // Entries naming the same event apply in order: the last value given for each field wins.
      const expected = new Map<string, unknown>();
      let kind = record.type as string;
      let init: string | undefined;
      let end: string | undefined;
      for (const entry of list) {
        kind = kindOf(entry) ?? kind;
        if (given(entry.init_timestamp) || given(entry.timestamp))
          init = utcOf(entry.init_timestamp ?? entry.timestamp);
        if (given(entry.end_timestamp)) end = utcOf(entry.end_timestamp);
        for (const key of Object.keys(entry)) {
          const value = own(entry, key);
          if (["type", "event_type", "id", "event_id", "session_id", "init_timestamp", "end_timestamp"].includes(key))
            continue;
          if (ALIASED.has(key) || (value === null && EVENT_NAMED.has(key))) continue;
          expected.set(key, value);
        }
      }
      if (view.type !== kind) return `event ${show(id)}: type ${view.type}, expected ${kind}`;
      if (init !== undefined && view.init_timestamp !== init)
        return `event ${show(id)}: init_timestamp ${view.init_timestamp}, expected ${init}`;
      if (end !== undefined && view.end_timestamp !== end)
        return `event ${show(id)}: end_timestamp ${view.end_timestamp}, expected ${end}`;
      if (list.some((e) => given(e.event_type)) && view.event_type !== PLURAL[kind])
        return `event ${show(id)}: event_type ${view.event_type}`;
      for (const [key, value] of expected) {
        const problem = sameValue(own(view, key), value, `event ${show(id)} ${show(key)}`);
        if (problem) return problem;
      }
      // An aliased field given reads as given (E4, E6), whatever the kind and the alias history;
      // left out: several entries for one event, and an older value kept under the name as an
      // unknown field (a tool alias that differed from its canonical field).
      const [only] = list;
      if (list.length === 1 && only) {
        for (const key of ALIASED) {
          const value = own(only, key);
          if (!given(value) || Object.hasOwn(record.extra, key)) continue;
          const read = own(view, key);
          const ok =
            key === "timestamp"
              ? read === value || read === utcOf(value as string)
              : canonical(read) === canonical(value);
          if (!ok) return `event ${show(id)} ${key}: read ${show(read)}, sent ${show(value)}`;
        }
      }
    }
    return undefined;
  },
};
