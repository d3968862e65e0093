/** What the `agentmon` command tests (test/server.*.test.ts) share. */
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import type { ApiKeyRecord } from "../domain/types.ts";
import { main } from "../server.ts";

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An `io` for main() that keeps what it prints. */
export function capture() {
  const out: string[] = [];
  const err: string[] = [];
  // By line, as a terminal shows them: one write may hold several (the first key's block).
  const lines = (into: string[]) => (text: string) => into.push(...text.split("\n"));
  return { out, err, io: { out: lines(out), err: lines(err) } };
}

/** Runs `agentmon <args> --db <db>` in-process with an empty environment. */
export async function run(args: string[], db: string) {
  const c = capture();
  const code = await main([...args, "--db", db], {}, c.io);
  return { code, out: c.out, err: c.err };
}

/** The key records in a database file, read through a connection of its own. */
export async function keysIn(db: string): Promise<ApiKeyRecord[]> {
  const store = sqliteStore(openDb(db));
  try {
    return await store.listApiKeys();
  } finally {
    await store.close();
  }
}

export async function seedKeys(db: string, project: string, keys: string[]) {
  const store = sqliteStore(openDb(db));
  for (const key of keys) await store.createApiKey(hashApiKey(key), keyPrefix(key), project, new Date().toISOString());
  await store.close();
}

/** Every text cell of every table of a database file, lower-cased. */
export function allCells(db: string): string[] {
  const conn = openDb(db);
  try {
    const tables = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
    return tables.flatMap(({ name }) =>
      (conn.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[]).flatMap((row) =>
        Object.values(row).map((value) => String(value).toLowerCase()),
      ),
    );
  } finally {
    conn.close();
  }
}
