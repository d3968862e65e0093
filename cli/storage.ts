/**
 * Which store the commands use: PostgreSQL when AGENTMON_DATABASE_URL is given (several nodes on
 * one database, docs/decisions/016-postgresql.md), else the SQLite file AGENTMON_DB. Opening
 * failures become one line (ConfigError), never a stack trace.
 */
import type pg from "pg";
import type { PostgresStore } from "../db/postgres/store.ts";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import type { Store } from "../db/store.ts";
import { type Config, ConfigError, withoutPassword } from "./config.ts";
import { type StartedThread, startStorageThread } from "./storage-thread.ts";

/** What the log lines call the database. */
export const databaseName = (config: Config) =>
  config.databaseUrl === undefined ? config.db : withoutPassword(config.databaseUrl);

function cannotOpen(config: Config, error: unknown): ConfigError {
  return new ConfigError(`cannot open the database ${databaseName(config)}: ${(error as Error).message}`);
}

async function openPostgres(config: Config, role: string, small: boolean): Promise<PostgresStore> {
  try {
    // Loaded only now (docs/decisions/034-cold-start.md): pg alone cost a SQLite server's start
    // about 35 ms, most of it Node's fetch, which pg asks for to tell whether it runs on Cloudflare.
    const { openPostgresStore } = await import("../db/postgres/store.ts");
    return await openPostgresStore({
      url: config.databaseUrl as string,
      priceOverrides: config.prices,
      applicationName: `agentmon ${role}`,
      ...(small ? { writers: 2, readers: 1 } : {}),
    });
  } catch (error) {
    throw cannotOpen(config, error);
  }
}

/**
 * The server's store: PostgreSQL; else a file database on its own thread (db/sqlite/thread.ts),
 * `:memory:` in this one (it cannot be shared between threads, and a test pipeline's start stays fast).
 */
export async function openServerStore(
  config: Config,
  onFailure: (error: Error) => void,
  started?: StartedThread,
): Promise<{ store: Store; pool?: pg.Pool }> {
  if (config.databaseUrl !== undefined) {
    const store = await openPostgres(config, "serve", false);
    // The shared limits (cli/limits.ts) count in the same database, on the store's read pool.
    return { store, pool: store.pool };
  }
  try {
    if (config.db === ":memory:" || config.db === "") {
      const store = sqliteStore(openDb(config.db, { synchronous: config.synchronous }), {
        priceOverrides: config.prices,
      });
      return { store };
    }
    // Started early by `serve` (server.ts), or now.
    const thread = started ?? (startStorageThread(config) as StartedThread);
    thread.onFailure(onFailure);
    return { store: await thread.opened };
  } catch (error) {
    throw cannotOpen(config, error);
  }
}

/** The store of a short command (keys, prices): one connection's worth, in this thread. */
export async function openCommandStore(config: Config): Promise<Store> {
  if (config.databaseUrl !== undefined) return openPostgres(config, "cli", true);
  try {
    return sqliteStore(openDb(config.db, { synchronous: config.synchronous }), { checkpointer: false });
  } catch (error) {
    throw cannotOpen(config, error);
  }
}
