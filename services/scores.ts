/**
 * Scores and score configs (issue 25, openapi.yaml SC1-SC7, decision 037): checked here against
 * the project's configs, kept by the store as raw rows.
 */
import type { Store } from "../db/store.ts";
import { decodeCursor, encodeCursor } from "../domain/cursor.ts";
import { type ErrorDetail, forbidden, invalidParameters, invalidRequest, notFound } from "../domain/errors.ts";
import { uuidv7 } from "../domain/ids.ts";
import {
  breaksConfig,
  configProblems,
  readValue,
  type ScoreAuthor,
  type ScoreConfigRecord,
  type ScoreDataType,
  type ScoreFilter,
  type ScoreRecord,
  type ScoreSource,
  type ScoreValue,
} from "../domain/scores.ts";
import { parseTimestamp, timestampFromMillis } from "../domain/timestamps.ts";
import type { JsonObject } from "../domain/types.ts";
import type { Context } from "./context.ts";
import { type Actor, audit } from "./people.ts";

/** A score as POST /v2/scores takes it (openapi.yaml ScoreInput, checked by ajv). */
export interface ScoreInput {
  id?: string | null;
  name: string;
  value: ScoreValue;
  data_type?: ScoreDataType | null;
  session_id?: string | null;
  event_id?: string | null;
  conversation_id?: string | null;
  response_id?: string | null;
  source?: ScoreSource | null;
  comment?: string | null;
  metadata?: JsonObject | null;
  timestamp?: string | null;
}

/** Who scores, and where: the project; a JWT's session and key (SC2); the author (SC7). */
export interface Scorer {
  projectId: string;
  author: ScoreAuthor;
  /** A JWT's: its session (the default target, and the only one allowed) and its key (4.3). */
  jwt?: { session_id: string; key_id: string };
}

const configsByName = async (store: Store, projectId: string) =>
  new Map((await store.listScoreConfigs(projectId)).map((config) => [config.name, config]));

/** SC1-SC7: every score checked, then all stored in one write, or none; answers the ids in request order. */
export async function recordScores(context: Context, scorer: Scorer, inputs: ScoreInput[]): Promise<string[]> {
  const now = context.now();
  const received = timestampFromMillis(now);
  const configs = await configsByName(context.store, scorer.projectId);
  const problems: ErrorDetail[] = [];
  const ids: string[] = [];
  const unique = new Map<string, ScoreRecord>(); // the same id twice: the later copy wins (SC6)
  const paths = new Map<string, string>();
  inputs.forEach((input, index) => {
    const path = `scores[${index}]`;
    const sessionId = input.session_id ?? (input.conversation_id == null ? scorer.jwt?.session_id : undefined);
    if (scorer.jwt && (input.conversation_id != null || sessionId !== scorer.jwt.session_id)) {
      throw forbidden(scorer.jwt.session_id, input.conversation_id ?? sessionId ?? "");
    }
    const record = checkedScore(input, path, problems, configs);
    const id = input.id ?? uuidv7(now);
    ids.push(id);
    if (sessionId != null && input.conversation_id != null) {
      problems.push({
        path: `${path}.conversation_id`,
        message: "a score judges a session or a conversation, not both",
      });
    } else if (input.response_id != null && input.conversation_id != null) {
      problems.push({
        path: `${path}.response_id`,
        message: "a score judges a response of a session or a conversation, not both",
      });
    } else if (sessionId == null && input.conversation_id == null && input.response_id == null) {
      problems.push({ path: `${path}.session_id`, message: "is required (or conversation_id, or response_id)" });
    } else if (input.event_id != null && sessionId == null) {
      problems.push({ path: `${path}.event_id`, message: "an event is scored with its session_id" });
    }
    if (!record) return;
    const timestamp = input.timestamp == null ? received : parseTimestamp(input.timestamp);
    if (!timestamp) {
      problems.push({ path: `${path}.timestamp`, message: "must be an RFC 3339 date-time" });
      return;
    }
    unique.set(id, {
      id,
      name: input.name,
      ...record,
      session_id: sessionId ?? null,
      event_id: input.event_id ?? null,
      conversation_id: input.conversation_id ?? null,
      response_id: input.response_id ?? null,
      source: input.source ?? "api",
      comment: input.comment ?? null,
      author: scorer.author,
      metadata: input.metadata ?? {},
      timestamp: timestamp.iso,
      time_us: timestamp.us,
      created_at: received.iso,
      updated_at: null,
    });
    paths.set(id, path);
  });
  if (problems.length > 0) throw invalidRequest(problems);
  const list = [...unique.values()];
  const result = await context.store.insertScores(scorer.projectId, list, scorer.jwt?.key_id);
  if ("missing" in result) {
    const missing = result.missing.map((index) => list[index] as ScoreRecord);
    const details = missing.map((score) => ({
      path: `${paths.get(score.id)}.session_id`,
      message: `no session ${score.session_id} in this project`,
    }));
    throw notFound(`No session ${[...new Set(missing.map((s) => s.session_id))].join(", ")} in this project`, details);
  }
  return ids;
}

/** SC4, SC5: the value read as its data type and checked against its name's config. */
function checkedScore(
  input: { name: string; value: ScoreValue; data_type?: ScoreDataType | null | undefined },
  path: string,
  problems: ErrorDetail[],
  configs: Map<string, ScoreConfigRecord>,
): { data_type: ScoreDataType; value: ScoreValue } | undefined {
  const config = configs.get(input.name);
  const read = readValue(input.value, input.data_type ?? config?.data_type);
  if ("problem" in read) {
    problems.push({ path: path === "" ? "value" : `${path}.value`, message: read.problem });
    return undefined;
  }
  const broken = config ? breaksConfig(read, config, path) : [];
  problems.push(...broken);
  return broken.length === 0 ? read : undefined;
}

export const scoreNotFound = (id: string) => notFound(`No score ${id} in this project`);

/** The score as the API answers it (no storage-only fields). */
export const scoreView = ({ time_us: _, ...score }: ScoreRecord) => score;

/** Scores the session answer lists at most (GET /v2/scores?session_id= pages them all). */
export const SESSION_SCORES = 1000;

/** The session's scores and its events', newest first: `limit` of them, or every one (paged). */
export async function sessionScores(store: Store, projectId: string, sessionId: string, limit?: number) {
  const scores: ScoreRecord[] = [];
  let after: { init_us: number; id: string } | undefined;
  for (;;) {
    const want = limit === undefined ? SESSION_SCORES : Math.min(SESSION_SCORES, limit - scores.length);
    const page = await store.listScores(projectId, { session_id: sessionId }, after, want);
    scores.push(...page);
    const last = page.at(-1);
    if (page.length < want || !last || (limit !== undefined && scores.length >= limit)) break;
    after = { init_us: last.time_us, id: last.id };
  }
  return scores.map(scoreView);
}

/** The scores of these events of the session, newest first. */
export async function eventScores(store: Store, projectId: string, sessionId: string, eventIds: string[]) {
  if (eventIds.length === 0) return [];
  const found = await store.listScores(projectId, { session_id: sessionId, event_ids: eventIds }, undefined, 100_000);
  return found.map(scoreView);
}

export async function getScore(store: Store, projectId: string, id: string) {
  const score = await store.getScore(projectId, id);
  if (!score) throw scoreNotFound(id);
  return scoreView(score);
}

/** PATCH /v2/scores/{score_id}: the fields given, checked as a new score's (SC4, SC5). */
export async function updateScore(
  context: Context,
  projectId: string,
  id: string,
  patch: {
    value?: ScoreValue;
    data_type?: ScoreDataType;
    comment?: string | null;
    metadata?: JsonObject;
    timestamp?: string;
  },
) {
  const stored = await context.store.getScore(projectId, id);
  if (!stored) throw scoreNotFound(id);
  const problems: ErrorDetail[] = [];
  const configs = await configsByName(context.store, projectId);
  const value = patch.value ?? stored.value;
  // A new data type without a new value reads the stored value as that type.
  const checked = checkedScore(
    { name: stored.name, value, data_type: patch.data_type ?? (patch.value === undefined ? stored.data_type : null) },
    "",
    problems,
    configs,
  );
  const timestamp = patch.timestamp === undefined ? undefined : parseTimestamp(patch.timestamp);
  if (patch.timestamp !== undefined && !timestamp)
    problems.push({ path: "timestamp", message: "must be an RFC 3339 date-time" });
  if (problems.length > 0 || !checked) throw invalidRequest(problems);
  const updated = await context.store.updateScore(projectId, id, {
    ...checked,
    comment: patch.comment === undefined ? stored.comment : patch.comment,
    metadata: patch.metadata ?? stored.metadata,
    timestamp: timestamp?.iso ?? stored.timestamp,
    time_us: timestamp?.us ?? stored.time_us,
    updated_at: timestampFromMillis(context.now()).iso,
  });
  if (!updated) throw scoreNotFound(id);
  return scoreView(updated);
}

export async function deleteScore(store: Store, projectId: string, id: string) {
  if (!(await store.deleteScore(projectId, id))) throw scoreNotFound(id);
}

const CURSOR_PROBLEM = {
  path: "query.cursor",
  message: "is not a cursor this operation made; pass next_cursor back as it was given",
};

/** GET /v2/scores: a page of the project's scores, newest first. */
export async function listScores(
  store: Store,
  projectId: string,
  query: Omit<ScoreFilter, "from_us" | "to_us"> & { from?: string; to?: string; limit?: number; cursor?: string },
) {
  const { from, to, limit = 100, cursor, ...fields } = query;
  const problems: ErrorDetail[] = [];
  const filter: ScoreFilter = { ...fields };
  for (const [name, text] of [
    ["from", from],
    ["to", to],
  ] as const) {
    if (text === undefined) continue;
    const at = parseTimestamp(text);
    if (!at) problems.push({ path: `query.${name}`, message: "must be an RFC 3339 date-time" });
    else if (name === "from") filter.from_us = at.us;
    else filter.to_us = at.us;
  }
  const after = cursor === undefined ? undefined : decodeCursor("scores", cursor);
  if (cursor !== undefined && !after) problems.push(CURSOR_PROBLEM);
  if (problems.length > 0) throw invalidParameters(problems);
  const rows = await store.listScores(projectId, filter, after, limit + 1);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const next_cursor =
    rows.length > limit && last ? encodeCursor("scores", { init_us: last.time_us, id: last.id }) : null;
  return { scores: page.map(scoreView), next_cursor };
}

/** PUT /v2/score-configs/{name}: checked (SC5's rules of a config), kept, audited. */
export async function putScoreConfig(
  context: Context,
  by: Actor,
  projectId: string,
  name: string,
  request: {
    data_type: ScoreDataType;
    min?: number | null;
    max?: number | null;
    categories?: string[] | null;
    description?: string | null;
  },
) {
  const problems = configProblems(request);
  if (problems.length > 0) throw invalidRequest(problems);
  const now = timestampFromMillis(context.now()).iso;
  const config = await context.store.putScoreConfig(projectId, {
    name,
    data_type: request.data_type,
    min: request.min ?? null,
    max: request.max ?? null,
    categories: request.categories ? [...new Set(request.categories)] : null,
    description: request.description ?? null,
    created_at: now,
    updated_at: now,
  });
  await audit(context, by, "score_config.set", { projectId, target: name, details: { ...request } });
  return config;
}
