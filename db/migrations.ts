/**
 * What the two adapters' migrations share: their files, `NNN-name.sql` in a folder of their own
 * (db/sqlite/migrations/, db/postgres/migrations/), forward only, numbered without gaps. Only the
 * adapters import this file (.dependency-cruiser.mjs).
 */
import { readdirSync, readFileSync } from "node:fs";

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

/**
 * The engine's current schema as one file (`schema.sql`, made by scripts/schema.ts from the
 * migrations; docs/decisions/034-cold-start.md), or undefined when there is none or it stops
 * short of `version`, the migrations' count (a migration added without `npm run generate`): a
 * fresh database then runs the migrations, as an older one does.
 */
export function currentSchema(file: URL, version: number): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  const stamped = /^-- agentmon schema version (\d+)$/m.exec(text.slice(0, 1000));
  return stamped && Number(stamped[1]) === version ? text : undefined;
}
