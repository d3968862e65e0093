/** The plan of every operation with a body, and the valid bodies made from the schema's values by them. */
import fc from "fast-check";
import type { Operation } from "../arbitraries/spec.ts";
import { utcOf } from "../arbitraries/timestamps.ts";
import { clone, DELETE, depthOf, objectOf, pickFrom, setAt } from "../arbitraries/values.ts";
import { decodeJwt, inspect, storedSession } from "../helper.ts";
import type { Ctx } from "./app.ts";
import { sameValue, show } from "./checks.ts";
import { createEventsPlan, updateEventsPlan } from "./event-plans.ts";
import type { Body, Pick, Plan } from "./plan.ts";
import { AGENT_NAMED, canonicalState, conv, given, idArb, SESSION_NAMED, unknownOf } from "./rules.ts";
import { fixSessionIds, isWrapped, sessionBreaks, sessionIdOf, sessionReadback } from "./session-plans.ts";

const PLANS: Record<string, Plan> = {
  createSession: {
    fix: (body, _ctx, pick, id) => ({ ...clone(body), session: fixSessionIds(body.session, pick, id) }),
    breaks: (body, ctx) => sessionBreaks(body, ["session"], ctx, true),
    before: (ctx, sent) => storedSession(ctx.api.store, sessionIdOf(sent.session)),
    readback: (ctx, sent, res, before) => sessionReadback(ctx, sent.session, res, before),
  },
  createSessionUnversioned: {
    fix(body, _ctx, pick, id) {
      if (isWrapped(body)) {
        const wrapped: Body = { ...clone(body), session: fixSessionIds(body.session, pick, id) };
        // G5: null means "not given", so a null top-level id leaves the body wrapped.
        if (pick(4) === 0) wrapped[pick(2) === 0 ? "id" : "session_id"] = null;
        return wrapped;
      }
      return fixSessionIds(body, pick, id);
    },
    breaks(body, ctx) {
      const breaks = sessionBreaks(body, isWrapped(body) ? ["session"] : [], ctx, true);
      if (isWrapped(body)) {
        breaks.push({
          what: "a wrapped body beside a null top-level id, with a bad session id (S1, G5)",
          expect: { status: 400, error: "Invalid request" },
          body: pickFrom<unknown>(5, "", "x".repeat(257), {}, ["x"], true).map((bad) =>
            setAt(setAt(setAt(body, ["session", "session_id"], DELETE), ["session", "id"], bad), ["id"], null),
          ),
        });
      }
      return breaks;
    },
    before: (ctx, sent) => storedSession(ctx.api.store, sessionIdOf(isWrapped(sent) ? sent.session : sent)),
    readback: (ctx, sent, res, before) => sessionReadback(ctx, isWrapped(sent) ? sent.session : sent, res, before),
  },
  updateSession: {
    fix: (body, ctx, pick, id) => ({ ...clone(body), session: fixSessionIds(body.session, pick, id, ctx.sessionId) }),
    breaks: (body, ctx) => sessionBreaks(body, ["session"], ctx, false),
    before: (ctx) => storedSession(ctx.api.store, ctx.sessionId),
    async readback(ctx, sent, res, before: Body) {
      const fields = sent.session as Body;
      const expected = clone(before);
      for (const key of ["end_state_reason", "tags", "host_env"]) if (given(fields[key])) expected[key] = fields[key];
      for (const key of ["init_timestamp", "end_timestamp"]) if (given(fields[key])) expected[key] = utcOf(fields[key]);
      if (given(fields.end_state)) expected.end_state = canonicalState(fields.end_state);
      const merged = objectOf([...Object.entries(expected), ...unknownOf(fields, SESSION_NAMED)]);
      const stored = await storedSession(ctx.api.store, ctx.sessionId);
      const body = res.json();
      if (!/^\d+\.\d{2,12}$/.test(body.token_cost)) return `token_cost ${body.token_cost}`;
      return (
        sameValue(stored, merged, "the updated session (S4)") ??
        sameValue(body.session, stored, "the answered session (S6)")
      );
    },
  },
  createEvents: createEventsPlan,
  createEventsUnversioned: createEventsPlan,
  updateEvents: updateEventsPlan,
  createAgent: {
    fix(body, ctx, pick) {
      const agent = clone(body);
      if (given(agent.session_id)) agent.session_id = pick(2) === 0 ? ctx.sessionId : null;
      return agent;
    },
    breaks: (body, ctx) => [
      {
        what: "session_id names another session (E7)",
        expect: { status: 403, error: "Forbidden" },
        body: fc.constant(setAt(body, ["session_id"], ctx.otherSessionId)),
      },
    ],
    before: async (ctx) => new Map((await inspect(ctx.api.store).listAgents(ctx.sessionId)).map((a) => [a.id, a])),
    async readback(ctx, sent, res, before: Map<string, { name: string | null; extra: Body }>) {
      if (res.json().agent_id !== sent.id) return `agent_id ${show(res.json().agent_id)}`;
      const after = new Map((await inspect(ctx.api.store).listAgents(ctx.sessionId)).map((a) => [a.id, a]));
      for (const [id, agent] of after) {
        const old = before.get(id);
        if (id !== sent.id) {
          const problem = sameValue(agent, old, `agent ${show(id)} (not named)`);
          if (problem) return problem;
          continue;
        }
        // E7: an upsert; a null name keeps the stored one, unknown fields merge (G5).
        const expected = {
          id,
          name: sent.name ?? old?.name ?? null,
          extra: objectOf([...Object.entries(old?.extra ?? {}), ...unknownOf(sent, AGENT_NAMED)]),
        };
        const problem = sameValue(agent, expected, "the stored agent");
        if (problem) return problem;
      }
      return after.has(sent.id) ? undefined : "the agent is not stored";
    },
  },
  reauthorizeJwt: {
    fix: (body, ctx, pick) => ({ ...clone(body), session_id: ctx.sessionIds[pick(ctx.sessionIds.length)] }),
    breaks: (body, ctx) => [
      {
        what: "a session the project does not have (4.5)",
        expect: { status: 404, error: "Not found" },
        body: fc
          .oneof(idArb, fc.constant(ctx.foreignSessionId))
          .filter((id) => !ctx.sessionIds.includes(id))
          .map((id) => setAt(body, ["session_id"], id)),
      },
    ],
    before: async (ctx) => ctx.digest(),
    async readback(ctx, sent, res, before: string) {
      const { claims } = decodeJwt(res.json().jwt);
      if (claims.session_id !== sent.session_id) return `the JWT names ${show(claims.session_id)}`;
      return ctx.digest() === before ? undefined : "reauthorize_jwt changed the database";
    },
  },
};

/** Operations added to the spec later: generic checks only, until they get a plan. */
const GENERIC_PLAN: Plan = {
  fix: (body) => body,
  breaks: () => [],
  before: async () => undefined,
  readback: async () => undefined,
};
export const hasPlan = (op: Operation) => Object.hasOwn(PLANS, op.operationId);
export const planOf = (op: Operation) => (hasPlan(op) ? (PLANS[op.operationId] as Plan) : GENERIC_PLAN);

/** What a valid body is made of: the schema's value (at most 100 levels deep), unbiased choices for the fix-up, an id. */
type Input = [unknown, number[], string];
export const inputs = (op: Operation): fc.Arbitrary<Input> =>
  fc
    .tuple(conv.valid(op.body), fc.array(fc.noBias(fc.nat()), { minLength: 16, maxLength: 16 }), idArb)
    .filter(([body]) => depthOf(body) <= 100);

/** The input made valid under the contract too, in this app and session. */
export function validBody(op: Operation, [body, picks, id]: Input, ctx: Ctx): Body {
  let next = 0;
  const pick: Pick = (n) => (picks[next++ % picks.length] as number) % n;
  return planOf(op).fix(body as Body, ctx, pick, id);
}

export const validBodies = (op: Operation, ctx: Ctx): fc.Arbitrary<Body> =>
  inputs(op).map((input) => validBody(op, input, ctx));
