/**
 * What the two adapters' migrations share: their files, `NNN-name.sql` in a folder of their own
 * (db/sqlite/migrations/, db/postgres/migrations/), forward only, numbered without gaps. Only the
 * adapters import this file (.dependency-cruiser.mjs).
 */
import { readdirSync } from "node:fs";

/** The migration files of `folder`, in order; a gap or a stray number is an error. */
export function migrationFiles(folder: URL): string[] {
  const files = readdirSync(folder)
    .filter((name) => /^\d{3}-[\w-]+\.sql$/.test(name))
    .sort();
  files.forEach((name, index) => {
    if (Number(name.slice(0, 3)) !== index + 1) throw new Error(`migration ${name} is out of sequence`);
  });
  return files;
}
