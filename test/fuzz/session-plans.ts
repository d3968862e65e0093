/** The parts of the session plans (create_session, update_session): S1/S4 ids, S1/S3/S4/S5 breaks, the read-back. */
import fc from "fast-check";
import type { LightMyRequestResponse } from "fastify";
import type { Segment } from "../arbitraries/spec.ts";
import { utcOf } from "../arbitraries/timestamps.ts";
import { canonical, clone, DELETE, isObject, objectOf, pathText, setAt } from "../arbitraries/values.ts";
import { decodeJwt, storedSession } from "../helper.ts";
import type { Ctx } from "./app.ts";
import { sameValue, show } from "./checks.ts";
import type { Body, Break, Pick } from "./plan.ts";
import { badEndStateArb, canonicalState, given, idArb, SESSION_NAMED, unknownOf } from "./rules.ts";

/**
 * S1/S4: `id` and `session_id` equal when both are given. On create one of them is made present
 * (`id`); on update (`only` = the JWT's session) each one given becomes that id, null or absent.
 */
export function fixSessionIds(fields: Body, pick: Pick, id: string, only?: string): Body {
  const next = clone(fields);
  for (const key of ["id", "session_id"]) {
    if (only !== undefined && given(next[key])) next[key] = [only, null, DELETE][pick(3)];
    if (next[key] === DELETE) delete next[key];
  }
  if (given(next.id) && given(next.session_id)) next.session_id = next.id;
  if (only === undefined && !given(next.id) && !given(next.session_id)) next[pick(2) === 0 ? "id" : "session_id"] = id;
  return next;
}

export const sessionIdOf = (fields: Body): string => (given(fields.id) ? fields.id : fields.session_id);

/** The unversioned body's form, by the documented rule: a `session` object and no top-level id. */
export const isWrapped = (body: Body) => isObject(body.session) && body.id == null && body.session_id == null;

/** S1 and S5 rules broken inside the session fields at `prefix` (`session.` or flat). */
export function sessionBreaks(body: Body, fieldsAt: Segment[], ctx: Ctx, create: boolean): Break[] {
  const prefix = fieldsAt.length === 0 ? "" : `${pathText(fieldsAt)}.`;
  const fields = fieldsAt.reduce((at: any, k) => at[k], body) as Body;
  const at = (key: string, value: unknown, base: unknown = body) => setAt(base, [...fieldsAt, key], value);
  const breaks: Break[] = [
    {
      what: "id and session_id differ (S1)",
      expect: { status: 400, error: "Invalid request", path: `${prefix}session_id` },
      body: fc
        .tuple(idArb, idArb)
        .filter(([a, b]) => a !== b)
        .map(([a, b]) => at("session_id", b, at("id", a))),
    },
    {
      what: "an end_state that is neither a state nor an alias (S5)",
      expect: { status: 400, error: "Invalid request", path: `${prefix}end_state` },
      body: badEndStateArb.map((state) => at("end_state", state)),
    },
  ];
  if (create) {
    // Flat bodies must not turn into wrapped ones when their id goes.
    const noId = at("session_id", DELETE, at("id", DELETE));
    const flatSafe =
      fieldsAt.length === 0 && isObject(fields.session) ? setAt(noId, ["session"], "not a session") : noId;
    breaks.push(
      {
        what: "neither id nor session_id (S1)",
        expect: { status: 400, error: "Invalid request", path: `${prefix}id` },
        body: fc.constant(flatSafe),
      },
      {
        what: "the id of another project's session (S3)",
        expect: { status: 409, error: "Session already exists" },
        body: fc.constant(at("session_id", DELETE, at("id", ctx.foreignSessionId))),
      },
    );
  } else {
    breaks.push({
      what: "the id of another session (S4)",
      expect: { status: 403, error: "Forbidden" },
      body: fc.constant(at("session_id", DELETE, at("id", ctx.otherSessionId))),
    });
  }
  return breaks;
}

export async function sessionReadback(ctx: Ctx, fields: Body, res: LightMyRequestResponse, before: unknown) {
  const id = sessionIdOf(fields);
  const body = res.json();
  if (body.session_id !== id) return `session_id answered ${show(body.session_id)}, sent ${show(id)}`;
  if (body.session_url !== `http://agentmon.test/sessions/${encodeURIComponent(id)}`)
    return `session_url ${body.session_url}`;
  if (decodeJwt(body.jwt).claims.session_id !== id) return "the JWT names another session";
  const stored = await storedSession(ctx.api.store, id);
  if (stored === undefined) return `session ${show(id)} is not stored`;
  if (before !== undefined) {
    return canonical(stored) === canonical(before) ? undefined : "an existing session was overwritten (S3)";
  }
  const init = given(fields.init_timestamp) ? utcOf(fields.init_timestamp) : stored.init_timestamp;
  const expected = objectOf([
    ["id", id],
    ["init_timestamp", init],
    ["end_timestamp", given(fields.end_timestamp) ? utcOf(fields.end_timestamp) : null],
    ["end_state", given(fields.end_state) ? canonicalState(fields.end_state) : null],
    ["end_state_reason", fields.end_state_reason ?? null],
    ["tags", fields.tags ?? null],
    ["host_env", fields.host_env ?? null],
    ...unknownOf(fields, SESSION_NAMED),
  ]);
  if (utcOf(stored.init_timestamp) !== stored.init_timestamp)
    return `init_timestamp ${stored.init_timestamp} is not UTC`;
  return sameValue(stored, expected, "the stored session");
}
