/**
 * The PostgreSQL adapter of `Store` (docs/decisions/016-postgresql.md), over node-postgres: any
 * number of agentmon nodes share one database, and nothing a node keeps in memory can answer for
 * the others. Writes are group-committed on a pool of writer connections (group-commit.ts) and
 * settle once committed (G7); reads go to a pool of their own, so a slow commit never holds them
 * up. Every failure leaves as a typed error (errors.ts translates SQLSTATEs).
 */
import pg from "pg";
import {
  importedEntries,
  type PriceEntry,
  type PriceTable,
  priceEvent,
  priceTable,
  shippedPrices,
} from "../../domain/prices.ts";
import { patchEvent } from "../../domain/records.ts";
import type { ScoreFilter } from "../../domain/scores.ts";
import { wordsOf } from "../../domain/search.ts";
import { parseTimestamp, type Timestamp } from "../../domain/timestamps.ts";
import type { EventRecord, ImportedPrices, Position, UnpricedModel } from "../../domain/types.ts";
import { SchemaMismatch, StorageFault } from "../errors.ts";
import { eventRow, rowTotals } from "../rows.ts";
import type { Store } from "../store.ts";
import { analyticsBreakdown, analyticsSeries } from "./analytics.ts";
import { rethrow } from "./errors.ts";
import { type EventPatcher, eventsPage, updateEvents, upsertAgent } from "./events.ts";
import { GROUP_MAX_ROWS, PgGroupCommit } from "./group-commit.ts";
import { keyQueries } from "./keys.ts";
import { migrate, schemaVersion, versionOf } from "./migrate.ts";
import { people, TokenMismatch } from "./people.ts";
import { postgresProjector } from "./projector.ts";
import * as scores from "./scores.ts";
import {
  createSession,
  deleteBatch,
  deleteSession,
  listSessions,
  pkOf,
  readSession,
  recordOf,
  sessionRow,
  updateSession as updateSessionRow,
} from "./sessions.ts";
import { appendLog, attachRecords, attachScores, ingestTraces, sessionLogs } from "./traces.ts";

export interface PostgresStore extends Store {
  /** Group transactions committed since the store was made: lets tests see calls coalesce. */
  readonly commits: number;
  /** The pool of read connections: what shares state between nodes beside the store may use (http/ratelimit.ts). */
  readonly pool: pg.Pool;
}

export interface PostgresOptions {
  /** `postgres://user:password@host:port/database`, as libpq takes it (sslmode and all). */
  url: string;
  /** Writer connections, groups committed at once (at least 2 by default: one slow commit stalls nothing). */
  writers?: number | undefined;
  /** Reader connections. Default 4. */
  readers?: number | undefined;
  /** As db/sqlite/store.ts StoreOptions. */
  prices?: PriceTable;
  priceOverrides?: PriceEntry[] | undefined;
  patcher?: EventPatcher;
  /** Called with an error of an idle connection (the server went away); the pool replaces it. */
  onConnectionError?: (error: Error) => void;
  /** The application_name the connections show in pg_stat_activity. Default "agentmon". */
  applicationName?: string;
}

/** bigint (int8) and numeric come back as numbers: every value of ours fits a double exactly. */
const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC) return Number;
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

function newPool(options: PostgresOptions, max: number, role: string) {
  const pool = new pg.Pool({
    connectionString: options.url,
    max,
    types,
    application_name: `${options.applicationName ?? "agentmon"} ${role}`,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
  });
  const report = (error: Error) => options.onConnectionError?.(error);
  // Without these listeners, a connection the server drops kills the process (stack-notes 8).
  pool.on("error", report);
  pool.on("connect", (client) => client.on("error", report));
  return pool;
}

/**
 * Every method's failures as typed errors (db/errors.ts), whatever node-postgres threw; once the
 * store is closed, every call but close() and stats() fails as a stopping server's does.
 */
function typedErrors<S extends object>(store: S, closed: () => boolean): S {
  for (const [name, method] of Object.entries(store)) {
    if (typeof method !== "function") continue;
    const always = name === "close" || name === "stats";
    (store as Record<string, unknown>)[name] = async (...args: unknown[]) => {
      if (closed() && !always) throw new StorageFault("unavailable", "the server is stopping");
      return (method as (...a: unknown[]) => Promise<unknown>)(...args).catch(rethrow);
    };
  }
  return store;
}

/** `run` in a transaction of its own on a connection of `pool`. */
async function transaction<T>(pool: pg.Pool, run: (tx: pg.ClientBase) => Promise<T>, begin = "BEGIN"): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query(begin);
    const value = await run(client);
    await client.query("COMMIT");
    return value;
  } catch (error) {
    await client.query("ROLLBACK").catch((e: Error) => (broken = e));
    throw error;
  } finally {
    client.release(broken);
  }
}

/** The promise's answer, or `otherwise` when it failed with TokenMismatch (its transaction rolled back). */
const mismatch = <T, O>(promise: Promise<T>, otherwise: O): Promise<T | O> =>
  promise.catch((error: unknown) => {
    if (error instanceof TokenMismatch) return otherwise;
    throw error;
  });

/** Connects, migrates (under the advisory lock: every node may do it at once) and answers the store. */
export async function openPostgresStore(options: PostgresOptions): Promise<PostgresStore> {
  const writers = newPool(options, Math.max(2, options.writers ?? 2), "writer");
  const readers = newPool(options, Math.max(1, options.readers ?? 4), "reader");
  // The projector's connection (projector.ts: one batch at a time on a node).
  const projecting = newPool(options, 1, "projector");
  try {
    const client = await writers.connect();
    try {
      await migrate(client);
    } finally {
      client.release();
    }
    const imported = options.prices === undefined ? await importedPrices(readers) : undefined;
    return postgresStore(writers, readers, projecting, options, imported);
  } catch (error) {
    await Promise.all([writers.end(), readers.end(), projecting.end()]).catch(() => undefined);
    if (error instanceof SchemaMismatch) throw error;
    return rethrow(error);
  }
}

async function importedPrices(db: pg.Pool): Promise<ImportedPrices | undefined> {
  const { rows } = await db.query<{ imported_at: string; source: string; body: string }>(
    "SELECT imported_at, source, body FROM price_imports ORDER BY seq DESC LIMIT 1",
  );
  const row = rows[0];
  return row === undefined ? undefined : { text: row.body, source: row.source, imported_at: row.imported_at };
}

function postgresStore(
  writers: pg.Pool,
  readers: pg.Pool,
  projecting: pg.Pool,
  options: PostgresOptions,
  importedAtOpen: ImportedPrices | undefined,
): PostgresStore {
  let table = options.prices;
  const prices = () => {
    table ??= priceTable(options.priceOverrides, shippedPrices(), importedEntries(importedAtOpen));
    return table;
  };
  const apply: EventPatcher = options.patcher ?? ((stored, patch) => priceEvent(patchEvent(stored, patch), prices()));
  const projector = postgresProjector(projecting, readers);
  const group = new PgGroupCommit(writers, Math.max(2, options.writers ?? 2), () => projector.schedule());
  let closed = false;
  /**
   * A read that uses a projection reflects every write acknowledged before it started, on any
   * node (decision 033): what is queued is projected first.
   */
  const current =
    <A extends unknown[], R>(read: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await projector.catchUp();
      return read(...args);
    };
  /**
   * A write whose answer or filter reads a projection (update_session's totals, a bulk delete's
   * filter): caught up first, then queued, not caught up inside its transaction (a batch may wait
   * for a row lock the write holds). Queued in the order made, and close() waits for them.
   */
  let arrivals: Promise<unknown> = Promise.resolve();
  const writeCurrent = <T>(
    rows: number,
    keyId: string | undefined,
    projectId: string,
    run: (tx: pg.ClientBase) => Promise<T>,
  ) => {
    const caught = projector.catchUp();
    let call: Promise<T> | undefined;
    const queued = Promise.all([caught, arrivals]).then(() => {
      call = group.write(rows, { keyId, projectId }, run);
    });
    arrivals = queued.catch(() => undefined);
    return queued.then(() => call as Promise<T>);
  };

  /** A write of a JWT (keyId) runs only when its key is live for the project (4.3, group-commit.ts). */
  const write = <T>(
    rows: number,
    keyId: string | undefined,
    projectId: string,
    run: (tx: pg.ClientBase) => Promise<T>,
  ) => open().then(() => group.write(rows, { keyId, projectId }, run));
  const open = async () => {
    if (closed) throw new StorageFault("unavailable", "the server is stopping");
  };
  /** A read transaction whose statements all see one snapshot. */
  const snapshot = <T>(run: (tx: pg.ClientBase) => Promise<T>) =>
    transaction(readers, run, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  const inSession = async <T>(
    db: pg.Pool | pg.ClientBase,
    projectId: string,
    sessionId: string,
    run: (pk: number) => Promise<T>,
    otherwise: T,
  ) => {
    const pk = await pkOf(db, projectId, sessionId);
    return pk === undefined ? otherwise : run(pk);
  };

  return typedErrors(
    {
      pool: readers,
      get commits() {
        return group.commits;
      },
      metaValue: (key, fallback) => keyQueries.metaValue(readers, key, fallback),
      // An operator's call, rare: a transaction of its own, outside the group commit (as on SQLite).
      createApiKey: (hash, prefix, projectName, now, scopes) =>
        transaction(writers, (tx) => keyQueries.create(tx, hash, prefix, projectName, now, scopes)),
      apiKeyByHash: (hash) => keyQueries.byHash(readers, hash),
      apiKeyById: (id) => keyQueries.byId(readers, id),
      listApiKeys: () => keyQueries.list(readers),
      revokeApiKey: (id, now) => keyQueries.revoke(readers, id, now),
      listProjects: () => keyQueries.projects(readers),
      createProject: (name, now) => keyQueries.createProject(writers, name, now),
      setRetention: (name, days) => keyQueries.setRetention(readers, name, days),

      // People (decision 035): rare writes, each a transaction of its own outside the group commit
      // (as createApiKey); a TokenMismatch rolls its transaction back and is answered `otherwise`.
      createUser: (user, member) => transaction(writers, (tx) => people.createUser(tx, user, member)),
      userById: (id) => people.userById(readers, id),
      userByEmail: (email) => people.userByEmail(readers, email),
      listUsers: () => people.listUsers(readers),
      setUserDisabled: (userId, at) => transaction(writers, (tx) => people.setUserDisabled(tx, userId, at)),
      createUserToken: (token) => people.createUserToken(writers, token),
      signUp: (tokenHash, kind, user, now) =>
        mismatch(
          transaction(writers, (tx) => people.signUp(tx, tokenHash, kind, user, now)),
          "invalid" as const,
        ),
      resetPassword: (tokenHash, hash, now) =>
        mismatch(
          transaction(writers, (tx) => people.resetPassword(tx, tokenHash, hash, now)),
          undefined,
        ),
      setMember: (projectId, userId, role, now) =>
        transaction(writers, (tx) => people.setMember(tx, projectId, userId, role, now)),
      listMembers: (projectId) => people.listMembers(readers, projectId),
      membershipsOf: (userId) => people.membershipsOf(readers, userId),
      createBrowserSession: (session) => people.createBrowserSession(writers, session),
      browserSession: (idHash, now) => people.browserSession(readers, idHash, now),
      deleteBrowserSession: (idHash) => people.deleteBrowserSession(writers, idHash),
      deleteUserSessions: (userId) => people.deleteUserSessions(writers, userId),
      appendAudit: (record) => people.appendAudit(writers, record),
      listAudit: (options) => people.listAudit(readers, options),

      createSession: (projectId, session) => group.write(1, undefined, (tx) => createSession(tx, projectId, session)),
      async getSession(projectId, id) {
        const row = await sessionRow(readers, projectId, id);
        return row && recordOf(row);
      },
      // Queued at once, as every write (concurrent updates commit in the order made); its answer's
      // totals are read once the projector has caught up, so they count every event acknowledged
      // before (decision 033).
      async updateSession(projectId, id, changes, keyId) {
        const updated = await write(1, keyId, projectId, (tx) => updateSessionRow(tx, projectId, id, changes));
        if (updated === undefined || closed) return updated;
        // The update is committed: its answer never fails for the catch-up (a stopping server,
        // storage gone since), it then carries the totals its transaction read.
        try {
          await projector.catchUp();
          const row = await sessionRow(readers, projectId, id);
          return row ? { session: updated.session, totals: rowTotals(row) } : updated;
        } catch {
          return updated;
        }
      },
      listSessions: current((projectId, filter, after, limit, sort) =>
        listSessions(readers, projectId, filter, after, limit, sort),
      ),
      readSession: current((projectId, sessionId, parts) =>
        snapshot((tx) => readSession(tx, projectId, sessionId, parts)),
      ),
      listEventsPage: (projectId, sessionId, page) =>
        inSession(readers, projectId, sessionId, (pk) => eventsPage(readers, pk, page), undefined),
      deleteSession: (projectId, sessionId) =>
        group.write(1, undefined, (tx) => deleteSession(tx, projectId, sessionId)),
      // A batch is one call of the group commit, weighed as a full group so that it runs in a
      // transaction of its own (as on SQLite); a dry run reads one snapshot.
      deleteSessions: (projectId, filter, batch) =>
        batch.dryRun
          ? current(() => snapshot((tx) => deleteBatch(tx, projectId, filter, batch)))()
          : writeCurrent(GROUP_MAX_ROWS, undefined, projectId, (tx) => deleteBatch(tx, projectId, filter, batch)),
      // Deleted rows' space is reused by (auto)vacuum; nothing is given back to the file system here.
      reclaimSpace: async () => ({ freed: 0, left: 0 }),
      analyticsSeries: current((projectId, filter, ranges) =>
        snapshot((tx) => analyticsSeries(tx, projectId, filter, ranges)),
      ),
      analyticsBreakdown: current((projectId, filter, request) =>
        snapshot((tx) => analyticsBreakdown(tx, projectId, filter, request)),
      ),

      insertEvents: (projectId, sessionId, list: EventRecord[], keyId) =>
        group.events(projectId, sessionId, list.map(eventRow), wordsOf(list), keyId),
      updateEvents: (projectId, sessionId, patches, keyId) =>
        write(patches.length, keyId, projectId, (tx) =>
          inSession(tx, projectId, sessionId, (pk) => updateEvents(tx, pk, patches, apply), {
            status: "no-session" as const,
          }),
        ),
      upsertAgent: (projectId, sessionId, agent, keyId) =>
        write(1, keyId, projectId, (tx) =>
          inSession(tx, projectId, sessionId, (pk) => upsertAgent(tx, pk, agent), false),
        ),

      ingestTraces: (projectId, writes, keyId) =>
        write(
          writes.reduce((rows, w) => rows + Math.max(1, w.events.length), 0),
          keyId,
          projectId,
          (tx) => ingestTraces(tx, projectId, writes),
        ),
      attachSpanRecords: (projectId, records, keyId) =>
        write(records.length, keyId, projectId, (tx) => attachRecords(tx, projectId, records)),
      ingestEvaluations: (projectId, records, list, keyId) =>
        write(records.length + list.reduce((n, w) => n + w.scores.length, 0), keyId, projectId, async (tx) => ({
          records: await attachRecords(tx, projectId, records),
          scores: await attachScores(tx, projectId, list),
        })),
      appendSessionLog: (projectId, sessionId, text, now, keyId) =>
        write(1, keyId, projectId, (tx) => {
          const at = parseTimestamp(now) as Timestamp;
          return appendLog(tx, projectId, sessionId, text, { iso: at.iso, us: at.us });
        }),
      readSessionLog: (projectId, sessionId) =>
        inSession(readers, projectId, sessionId, (pk) => sessionLogs(readers, pk), undefined),

      insertScores: (projectId, list, keyId) =>
        write(list.length, keyId, projectId, (tx) => scores.insertScores(tx, projectId, list)),
      // Current: the projector resolves scores waiting for their response's span (decision 038).
      getScore: current((projectId: string, id: string) => scores.getScore(readers, projectId, id)),
      listScores: current((projectId: string, filter: ScoreFilter, after: Position | undefined, limit: number) =>
        scores.listScores(readers, projectId, filter, after, limit),
      ),
      updateScore: (projectId, id, changes) =>
        write(1, undefined, projectId, (tx) => scores.updateScore(tx, projectId, id, changes)),
      deleteScore: (projectId, id) => write(1, undefined, projectId, (tx) => scores.deleteScore(tx, projectId, id)),
      putScoreConfig: (projectId, config) => scores.putScoreConfig(writers, projectId, config),
      listScoreConfigs: (projectId) => scores.listScoreConfigs(readers, projectId),
      scoreSeries: current((projectId, query, ranges) =>
        snapshot((tx) => scores.scoreSeries(tx, projectId, query, ranges)),
      ),
      scoreBreakdown: current((projectId, query) => snapshot((tx) => scores.scoreBreakdown(tx, projectId, query))),

      importPrices: async (text, source, now) => {
        await group.write(1, undefined, (tx) =>
          tx.query("INSERT INTO price_imports (imported_at, source, body) VALUES ($1, $2, $3)", [now, source, text]),
        );
      },
      importedPrices: () => importedPrices(readers),
      async unpricedModels() {
        const { rows } = await readers.query<UnpricedModel>(
          `SELECT model, count(*)::int AS events,
           count(*) FILTER (WHERE prompt_tokens IS NOT NULL OR completion_tokens IS NOT NULL
             OR cache_read_tokens IS NOT NULL OR cache_creation_tokens IS NOT NULL
             OR reasoning_tokens IS NOT NULL)::int AS with_tokens,
           min(init_us) AS first_us, max(init_us) AS last_us
         FROM events WHERE type = 'llm' AND cost_source = 'unknown' AND model IS NOT NULL
         GROUP BY model ORDER BY events DESC, model COLLATE "C"`,
        );
        return rows;
      },

      async ping(now) {
        const version = await versionOf(readers);
        if (version !== schemaVersion()) throw new SchemaMismatch(version, schemaVersion());
        await group.write(1, undefined, (tx) => keyQueries.heartbeat(tx, now));
        return version;
      },
      rebuildProjections: () => projector.rebuild(),
      projectBatch: () => projector.step(),
      async stats() {
        if (closed) return { ...group.stats(), databaseBytes: 0, walBytes: 0 };
        const { rows } = await readers.query<{ bytes: number }>("SELECT pg_database_size(current_database()) AS bytes");
        return {
          ...group.stats(),
          databaseBytes: rows[0]?.bytes ?? 0,
          walBytes: 0,
          projection: await projector.stats(),
        };
      },
      async close() {
        if (closed) return;
        closed = true;
        // What is queued is committed (or fails) before the connections close: no call is dropped.
        // What is queued for the projector stays queued: the next read, on any node, projects it.
        await arrivals;
        await group.drained();
        await projector.close();
        await Promise.all([writers.end(), readers.end(), projecting.end()]);
      },
    } satisfies PostgresStore,
    () => closed,
  );
}
