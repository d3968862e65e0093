/**
 * The better-sqlite3 adapter of `Store`: one connection, WAL, statements prepared once (one file
 * per table group: keys.ts, sessions.ts, events.ts). Reads run at once; writes are
 * group-committed (group-commit.ts) and settle once committed (G7). better-sqlite3 is
 * synchronous; the async methods only wrap it. Every failure leaves as a typed error
 * (errors.ts translates SQLite's codes).
 */
import { statSync } from "node:fs";
import {
  importedEntries,
  type PriceEntry,
  type PriceTable,
  priceEvent,
  priceTable,
  shippedPrices,
} from "../../domain/prices.ts";
import { patchEvent } from "../../domain/records.ts";
import { wordsOf } from "../../domain/search.ts";
import { parseTimestamp, type Timestamp } from "../../domain/timestamps.ts";
import type { EventRecord, TraceOutcome } from "../../domain/types.ts";
import { SchemaMismatch } from "../errors.ts";
import { type EventRow, eventRow } from "../rows.ts";
import type { StorageStats, Store } from "../store.ts";
import { analyticsQueries } from "./analytics.ts";
import { type Checkpointer, startCheckpointer } from "./checkpointer.ts";
import { rethrow } from "./errors.ts";
import { type EventPatcher, eventStatements } from "./events.ts";
import { GROUP_MAX_ROWS, GroupCommit } from "./group-commit.ts";
import { keyStatements } from "./keys.ts";
import { schemaVersion, versionOf } from "./migrate.ts";
import type { Db } from "./open.ts";
import { peopleStatements, TokenMismatch } from "./people.ts";
import { priceStatements } from "./prices.ts";
import { CHANGE, sqliteProjector } from "./projector.ts";
import { scoreStatements } from "./scores.ts";
import { SessionTable } from "./sessions.ts";
import { rowsOf, type TraceRows, TraceTable, traceRows } from "./traces.ts";

export interface SqliteStore extends Store {
  /** Group transactions committed since the store was made: lets tests see calls coalesce. */
  readonly commits: number;
  /** ingestTraces with the events' rows already built (`traceRows`), e.g. by another thread. */
  ingestTraceRows(projectId: string, writes: TraceRows[], keyId?: string): Promise<TraceOutcome[]>;
  /** insertEvents with the rows already built (`eventRow`), e.g. by another thread. */
  /** `words`: each row's words for the search index (search.ts wordsOf), computed by the caller. */
  insertEventRows(
    projectId: string,
    sessionId: string,
    rows: EventRow[],
    keyId?: string,
    words?: string[],
  ): Promise<number | false>;
}

export interface StoreOptions {
  /**
   * Prices the llm events that update_events changes (a table cost is re-priced). Default: the
   * layers of domain/prices.ts priceTable: `priceOverrides`, the table imported into this
   * database (read now), the shipped one.
   */
  prices?: PriceTable;
  /** AGENTMON_PRICES' entries, when `prices` is not given. */
  priceOverrides?: PriceEntry[] | undefined;
  /** How update_events applies an entry; default: domain/records.ts patchEvent, then re-priced. */
  patcher?: EventPatcher;
  /** Run WAL checkpoints from a worker thread (checkpointer.ts) for a file database; default true. */
  checkpointer?: boolean | undefined;
}

/** Every method's failures as typed errors (db/errors.ts), whatever SQLite threw. */
function typedErrors<S extends object>(store: S): S {
  for (const [name, method] of Object.entries(store)) {
    if (typeof method !== "function") continue;
    (store as Record<string, unknown>)[name] = (...args: unknown[]) =>
      (method as (...a: unknown[]) => Promise<unknown>)(...args).catch(rethrow);
  }
  return store;
}

export function sqliteStore(db: Db, options: StoreOptions = {}): SqliteStore {
  const priceRows = priceStatements(db);
  // The imported table is the one there now (an import while the server runs applies from its
  // next start, for both threads alike); it is checked on first use, so that a table a newer
  // agentmon refuses stops `serve` (which checks it at start) and not `agentmon keys`.
  const importedAtOpen = options.prices === undefined ? priceRows.imported() : undefined;
  let table = options.prices;
  const prices = () => {
    table ??= priceTable(options.priceOverrides, shippedPrices(), importedEntries(importedAtOpen));
    return table;
  };
  const apply: EventPatcher = options.patcher ?? ((stored, patch) => priceEvent(patchEvent(stored, patch), prices()));
  const checkpointer = startCheckpointing(db, options.checkpointer !== false);
  const keys = keyStatements(db);
  const projector = sqliteProjector(db);
  projector.checkVersions();
  const sessions = new SessionTable(db, projector);
  const events = eventStatements(db, projector);
  const traces = new TraceTable(db, projector);
  const group = new GroupCommit(db, projector);
  const readSession = db.transaction(sessions.read.bind(sessions));
  const countBatch = db.transaction(sessions.deleteBatch.bind(sessions));
  const analytics = analyticsQueries(db);
  /** A read that uses a projection sees every write acknowledged before it (decision 033). */
  const current =
    <A extends unknown[], R>(read: (...args: A) => R) =>
    async (...args: A): Promise<R> => {
      projector.catchUp();
      return read(...args);
    };
  const people = peopleStatements(db);
  const scores = scoreStatements(
    db,
    (projectId, sessionId) => sessions.pkOf(projectId, sessionId),
    (pk) => projector.queue(pk, CHANGE.scores),
    (lo, hi) => projector.resolve(lo, hi),
    (pk, lo, hi) => projector.scored(pk, lo, hi),
  );
  /** A write whose TokenMismatch (the savepoint rolled back) is answered `otherwise`. */
  const tokenWrite = <T, O>(run: () => T, otherwise: O) =>
    group.write(1, run).catch((error: unknown) => {
      if (error instanceof TokenMismatch) return otherwise;
      throw error;
    });

  /**
   * A write call: queued for the next group commit, and run there only when the session is in
   * the project and, for a JWT's write, the key it was issued through is still live (4.3).
   */
  const write = <T>(rows: number, keyId: string | undefined, projectId: string, run: () => T) =>
    group.write(rows, () => {
      keys.requireLive(keyId, projectId);
      return run();
    });
  const inSession = <T>(projectId: string, sessionId: string, run: (pk: number) => T, otherwise: T) => {
    const pk = sessions.pkOf(projectId, sessionId);
    return pk === undefined ? otherwise : run(pk);
  };
  const ingestTraceRows = (projectId: string, writes: TraceRows[], keyId?: string) =>
    write(rowsOf(writes), keyId, projectId, () => traces.ingest(projectId, writes));
  const insertEventRows = (projectId: string, sessionId: string, rows: EventRow[], keyId?: string, words?: string[]) =>
    write(rows.length, keyId, projectId, () =>
      inSession<number | false>(projectId, sessionId, (pk) => events.insert(pk, rows, words), false),
    );

  return typedErrors({
    get commits() {
      return group.commits;
    },
    metaValue: async (key, fallback) => keys.metaValue(key, fallback),
    createApiKey: async (hash, prefix, projectName, now, scopes) => keys.create(hash, prefix, projectName, now, scopes),
    apiKeyByHash: async (hash) => keys.byHash(hash),
    apiKeyById: async (id) => keys.byId(id),
    listApiKeys: async () => keys.list(),
    revokeApiKey: async (id, now) => keys.revoke(id, now),
    listProjects: async () => keys.projects(),
    createProject: (name, now) => group.write(1, () => keys.createProject(name, now)),
    setRetention: (name, days) => group.write(1, () => keys.setRetention(name, days)),

    createUser: (user, member) => group.write(1, () => people.createUser(user, member)),
    userById: async (id) => people.userById(id),
    userByEmail: async (email) => people.userByEmail(email),
    listUsers: async () => people.listUsers(),
    setUserDisabled: (userId, at) => group.write(1, () => people.setUserDisabled(userId, at)),
    createUserToken: (token) => group.write(1, () => people.createUserToken(token)),
    signUp: (tokenHash, kind, user, now) =>
      tokenWrite(() => people.signUp(tokenHash, kind, user, now), "invalid" as const),
    resetPassword: (tokenHash, hash, now) => tokenWrite(() => people.resetPassword(tokenHash, hash, now), undefined),
    setMember: (projectId, userId, role, now) => group.write(1, () => people.setMember(projectId, userId, role, now)),
    listMembers: async (projectId) => people.listMembers(projectId),
    membershipsOf: async (userId) => people.membershipsOf(userId),
    createBrowserSession: (session) => group.write(1, () => people.createBrowserSession(session)),
    browserSession: async (idHash, now) => people.browserSession(idHash, now),
    deleteBrowserSession: (idHash) => group.write(1, () => people.deleteBrowserSession(idHash)),
    deleteUserSessions: (userId) => group.write(1, () => people.deleteUserSessions(userId)),
    appendAudit: (record) => group.write(1, () => people.appendAudit(record)),
    listAudit: async (options) => people.listAudit(options),

    createSession: (projectId, session) => group.write(1, () => sessions.create(projectId, session)),
    getSession: async (projectId, id) => sessions.get(projectId, id),
    updateSession: (projectId, id, changes, keyId) =>
      write(1, keyId, projectId, () => sessions.update(projectId, id, changes)),
    listSessions: current((projectId, filter, after, limit, sort) =>
      sessions.list(projectId, filter, after, limit, sort),
    ),
    readSession: current(readSession),
    listEventsPage: async (projectId, sessionId, page) =>
      inSession(projectId, sessionId, (pk) => events.page(pk, page), undefined),
    deleteSession: (projectId, sessionId) => group.write(1, () => sessions.delete(projectId, sessionId)),
    // A batch is one call of the group commit, weighed as a full group so that it runs in a
    // transaction of its own, between groups of request writes; a dry run is a read.
    deleteSessions: async (projectId, filter, batch) =>
      batch.dryRun
        ? countBatch(projectId, filter, batch)
        : group.write(GROUP_MAX_ROWS, () => sessions.deleteBatch(projectId, filter, batch)),
    // The deletes' projection first (their shares, totals and index entries go too), so that the
    // pages it frees are given back with the rest.
    reclaimSpace: (maxPages) =>
      group.write(1, () => {
        projector.catchUp();
        return reclaim(db, maxPages);
      }),
    analyticsSeries: current(analytics.series),
    analyticsBreakdown: current(analytics.breakdown),
    rebuildProjections: async () => projector.rebuild(),
    projectBatch: async () => projector.step(),

    insertEvents: (projectId, sessionId, list: EventRecord[], keyId) =>
      insertEventRows(projectId, sessionId, list.map(eventRow), keyId, wordsOf(list)),
    insertEventRows,
    updateEvents: (projectId, sessionId, patches, keyId) =>
      write(patches.length, keyId, projectId, () =>
        inSession(projectId, sessionId, (pk) => events.update(pk, patches, apply), { status: "no-session" as const }),
      ),
    upsertAgent: (projectId, sessionId, agent, keyId) =>
      write(1, keyId, projectId, () => inSession(projectId, sessionId, (pk) => events.upsertAgent(pk, agent), false)),

    ingestTraces: (projectId, writes, keyId) => ingestTraceRows(projectId, writes.map(traceRows), keyId),
    ingestTraceRows,
    attachSpanRecords: (projectId, records, keyId) =>
      write(records.length, keyId, projectId, () => traces.attachRecords(projectId, records)),
    ingestEvaluations: (projectId, records, list, keyId) =>
      write(records.length + list.reduce((n, w) => n + w.scores.length, 0), keyId, projectId, () => ({
        records: traces.attachRecords(projectId, records),
        scores: traces.attachScores(projectId, list, (pk, rows) => scores.insertAt(projectId, pk, rows)),
      })),
    appendSessionLog: (projectId, sessionId, text, now, keyId) =>
      write(1, keyId, projectId, () => {
        const at = parseTimestamp(now) as Timestamp;
        return traces.appendLog(projectId, sessionId, text, { iso: at.iso, us: at.us });
      }),
    readSessionLog: async (projectId, sessionId) => inSession(projectId, sessionId, (pk) => traces.logs(pk), undefined),

    insertScores: (projectId, list, keyId) =>
      write(list.length, keyId, projectId, () => scores.insert(projectId, list)),
    // Current: the projector resolves scores waiting for their response's span (decision 038).
    getScore: current((projectId: string, id: string) => scores.get(projectId, id)),
    listScores: current(scores.list),
    updateScore: (projectId, id, changes) => group.write(1, () => scores.update(projectId, id, changes)),
    deleteScore: (projectId, id) => group.write(1, () => scores.delete(projectId, id)),
    putScoreConfig: (projectId, config) => group.write(1, () => scores.putConfig(projectId, config)),
    listScoreConfigs: async (projectId) => scores.configs(projectId),
    scoreSeries: current((projectId, query, ranges) => scores.series(projectId, query, ranges)),
    scoreBreakdown: current((projectId, query) => scores.breakdown(projectId, query)),

    importPrices: (text, source, now) => group.write(1, () => priceRows.import(text, source, now)),
    importedPrices: async () => priceRows.imported(),
    unpricedModels: async () => priceRows.unpriced(),

    async ping(now) {
      const version = versionOf(db);
      if (version !== schemaVersion()) throw new SchemaMismatch(version, schemaVersion());
      await group.write(1, () => keys.heartbeat(now));
      return version;
    },
    stats: async () => ({ ...group.stats(), ...databaseSize(db), projection: projector.stats() }),
    async close() {
      // What is queued is committed (or fails) before the connection closes: no call is dropped.
      // A call made after close() fails in its flush, as any use of a closed connection does.
      group.drain();
      projector.close();
      await checkpointer?.stop(); // first, so that this connection is the last and cleans the WAL up
      if (db.open) db.close();
    },
  } satisfies SqliteStore);
}

/**
 * PRAGMA incremental_vacuum: up to `maxPages` free pages are moved to the end of the file and cut
 * off (the file shrinks at the next checkpoint, in WAL mode). Only a database with auto_vacuum =
 * INCREMENTAL (every new one; an older one after `agentmon vacuum`) has any to give.
 */
function reclaim(db: Db, maxPages: number) {
  if (Number(db.pragma("auto_vacuum", { simple: true })) !== 2) return { freed: 0, left: 0 };
  const before = Number(db.pragma("freelist_count", { simple: true }));
  db.pragma(`incremental_vacuum(${Math.max(1, Math.floor(maxPages))})`);
  const left = Number(db.pragma("freelist_count", { simple: true }));
  return { freed: before - left, left };
}

/** The bytes of the database on disk, main file and WAL; a database in memory counts its pages. */
function databaseSize(db: Db): Pick<StorageStats, "databaseBytes" | "walBytes"> {
  if (!db.open) return { databaseBytes: 0, walBytes: 0 };
  if (db.memory) {
    const pages = Number(db.pragma("page_count", { simple: true }));
    return { databaseBytes: pages * Number(db.pragma("page_size", { simple: true })), walBytes: 0 };
  }
  const size = (path: string) => statSync(path, { throwIfNoEntry: false })?.size ?? 0;
  return { databaseBytes: size(db.name), walBytes: size(`${db.name}-wal`) };
}

/**
 * A file database checkpoints from a worker thread (checkpointer.ts); this connection only does
 * when the worker falls 40 MB behind.
 */
function startCheckpointing(db: Db, wanted: boolean): Checkpointer | undefined {
  const onDisk = db.memory === false && !db.readonly && db.pragma("journal_mode", { simple: true }) === "wal";
  if (onDisk) db.pragma("wal_autocheckpoint = 10000");
  return onDisk && wanted ? startCheckpointer(db.name) : undefined;
}
