/**
 * Score analytics as a projection (issue 25, docs/decisions/037-scores.md): `score_facts`, one row
 * per score of a session and group it counts in, so that a score's series and its breakdowns by
 * model, agent, tag and tool read one table and never the events. Pure: each engine's projector
 * loads a scored session's `Scored` (its scores, tags, agents and scored events) with a few
 * statements of its own and hands it over in the session's Change; this module decides the rows.
 *
 * The groups of a score (the `dim` rows; key null is the group of "none"):
 * - model: the scored event's model when it is an llm event, else every model of the session's
 *   llm events (as getAnalyticsBreakdown's `model` groups them);
 * - tool: the scored event's name when it is a tool event, else every tool the session called;
 * - agent: the scored event's agent when it has one, else every agent of the session (registered
 *   or named by an event, as the `agent_id` filter matches);
 * - tag: every tag of the session.
 * An event id that names no event of the session (yet: a span may be scored before it arrives)
 * counts like a score of the session; the span's arrival projects the session again.
 */
import { SEP, type Share } from "./share.ts";
import type { Change, Projection, ScoredEvent, SessionTable, Write } from "./types.ts";

export const SCORE_FACTS: SessionTable = {
  name: "score_facts",
  columns: [
    "session_pk",
    "score_pk",
    "project_id",
    "name",
    "dim",
    "key",
    "data_type",
    "num",
    "label",
    "source",
    "time_us",
  ],
};

/** The keys of a dimension of the share's event groups (`model`, `tool`): '' is null, '=x' is x. */
const sessionKeys = (share: Share, dim: string): (string | null)[] => {
  const prefix = `${dim}${SEP}`;
  const keys: (string | null)[] = [];
  for (const [group, sums] of Object.entries(share.groups)) {
    if (!group.startsWith(prefix) || sums[0] === 0) continue;
    const key = group.slice(prefix.length);
    keys.push(key === "" ? null : key.slice(1));
  }
  return keys;
};

const orNull = (keys: (string | null)[]) => (keys.length === 0 ? [null] : [...new Set(keys)]);

export const scoreFacts: Projection = {
  name: "score-facts",
  version: 1,
  tables: ["score_facts"],
  apply(changes: readonly Change[]): Write[] {
    const pks: number[] = [];
    const rows: unknown[][] = [];
    const added: unknown[][] = [];
    for (const { pk, after, scored } of changes) {
      if (scored === undefined) continue;
      // Only new scores (the session's groups did not change): their rows are added to its others.
      if (!scored.appended) pks.push(pk);
      if (after === undefined) continue;
      const into = scored.appended ? added : rows;
      const project = after.session.project;
      const models = orNull(sessionKeys(after, "model"));
      const tools = orNull(sessionKeys(after, "tool"));
      const agents = orNull(scored.agents);
      const tags = orNull(scored.tags);
      const events = new Map<string, ScoredEvent>(scored.events.map((e) => [e.id, e]));
      for (const score of scored.scores) {
        const event = score.event_id === null ? undefined : events.get(score.event_id);
        const row = (dim: string, key: string | null) =>
          into.push([
            pk,
            score.pk,
            project,
            score.name,
            dim,
            key,
            score.data_type,
            score.num,
            score.label,
            score.source,
            score.time_us,
          ]);
        row("", null);
        for (const key of event?.type === "llm" ? [event.model] : models) row("model", key);
        for (const key of event?.type === "tool" ? [event.tool] : tools) row("tool", key);
        for (const key of event?.agent != null ? [event.agent] : agents) row("agent", key);
        for (const key of tags) row("tag", key);
      }
    }
    const writes: Write[] = [];
    if (pks.length > 0) writes.push({ kind: "replace", table: SCORE_FACTS, pks, rows });
    if (added.length > 0) writes.push({ kind: "insert", table: SCORE_FACTS, rows: added });
    return writes;
  },
};
