/**
 * A file database's storage thread, started as early as a server's start allows: right after its
 * configuration is read, before the server's own modules load (B4, decision 041). Its Node
 * instance and the database's opening then run on the other core while this one loads Fastify
 * and the app; cli/storage.ts's openServerStore takes it from there. PostgreSQL and `:memory:`
 * have no thread: undefined, and the server opens them itself.
 */
import { openThreadedStore, type ThreadedStore } from "../db/sqlite/thread.ts";
import type { Config } from "./config.ts";

export interface StartedThread {
  /** Settles once the database is open; rejects as openThreadedStore does. */
  opened: Promise<ThreadedStore>;
  /** Who is told if the thread stops on its own later (set once the server is built). */
  onFailure(report: (error: Error) => void): void;
}

export function startStorageThread(config: Config): StartedThread | undefined {
  if (config.databaseUrl !== undefined || config.db === ":memory:" || config.db === "") return undefined;
  let report = (_error: Error) => {};
  const opened = openThreadedStore({
    path: config.db,
    synchronous: config.synchronous,
    prices: config.prices ?? [],
    onFailure: (error) => report(error),
  });
  // Awaited by openServerStore; a start that fails before that must not also report it unhandled.
  opened.catch(() => undefined);
  return {
    opened,
    onFailure(next) {
      report = next;
    },
  };
}
