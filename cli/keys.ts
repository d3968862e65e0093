/** `agentmon keys create|list|revoke`: API keys, on one short-lived connection in this thread. */
import type { Store } from "../db/store.ts";
import { DEFAULT_SCOPES, hashApiKey, isApiKeyShape, keyPrefix, readScopes } from "../domain/keys.ts";
import type { ApiKeyRecord, Scope } from "../domain/types.ts";
import { audit, CLI_ACTOR } from "../services/people.ts";
import { type Config, ConfigError, DEFAULT_PROJECT, type Output, USAGE } from "./config.ts";
import { openCommandStore } from "./storage.ts";

const now = () => new Date().toISOString();

/** Creates a key in a project, with these scopes (4.7); answers the key itself, which is never stored. */
export async function createKey(
  store: Store,
  project: string,
  key: string = crypto.randomUUID(),
  scopes: readonly Scope[] = DEFAULT_SCOPES,
) {
  const record = await store.createApiKey(hashApiKey(key), keyPrefix(key), project, now(), scopes);
  return { key, record };
}

/** What the audit trail needs (decision 035): the store and the clock. */
export const auditContext = (store: Store) => ({ store, now: Date.now, publicUrl: () => "" });

const describeKey = (k: ApiKeyRecord) =>
  `${k.prefix}…  ${k.project_name}  ${k.scopes.join(",")}  created ${k.created_at}${k.revoked_at ? `  REVOKED ${k.revoked_at}` : ""}`;

/** `--scope ingest,read`: the scopes, checked before anything is opened; DEFAULT_SCOPES when not given. */
function scopesFlag(given: string | undefined): Scope[] {
  if (given === undefined) return [...DEFAULT_SCOPES];
  const read = readScopes(given);
  if ("error" in read) throw new ConfigError(`--scope: ${read.error}`);
  return read.scopes;
}

export async function keys(
  sub: string | undefined,
  args: string[],
  flags: Record<string, string | undefined>,
  config: Config,
  io: Output,
) {
  if (flags.scope !== undefined && sub !== "create") throw new ConfigError(`--scope is a flag of keys create only`);
  const scopes = sub === "create" ? scopesFlag(flags.scope) : [];
  const store = await openCommandStore(config);
  try {
    if (sub === "create") {
      const project = flags.project ?? DEFAULT_PROJECT;
      if (project.trim() === "") throw new ConfigError("--project must not be empty");
      const { key, record } = await createKey(store, project, undefined, scopes);
      await audit(auditContext(store), CLI_ACTOR, "key.created", {
        projectId: record.project_id,
        target: `${record.prefix}…`,
        details: { scopes: record.scopes },
      });
      io.out(key);
      io.err(
        `Created API key ${record.prefix}… in project "${project}" with scope${record.scopes.length === 1 ? "" : "s"} ${record.scopes.join(",")}. Keep it now: it is not shown again.`,
      );
      return 0;
    }
    if (sub === "list") {
      const all = await store.listApiKeys();
      if (all.length === 0) io.out("No API keys yet: `agentmon keys create` makes one.");
      for (const k of all) io.out(describeKey(k));
      return 0;
    }
    if (sub === "revoke") {
      const given = (args[0] ?? "").trim().toLowerCase().replace(/…$/, "");
      if (given.length < 4) throw new ConfigError("keys revoke needs a key or a key prefix of at least 4 characters");
      let matches: ApiKeyRecord[];
      if (isApiKeyShape(given)) {
        const exact = await store.apiKeyByHash(hashApiKey(given));
        matches = exact ? [exact] : [];
      } else if (given.length <= 8) {
        matches = (await store.listApiKeys()).filter((k) => k.prefix.startsWith(given));
      } else {
        throw new ConfigError("give the whole key, or its prefix as `agentmon keys list` shows it (8 characters)");
      }
      if (matches.length === 0) throw new ConfigError(`no API key matches "${given}"`);
      if (matches.length > 1) throw new ConfigError(`"${given}" matches ${matches.length} keys; give more of the key`);
      const key = matches[0] as ApiKeyRecord;
      if (key.revoked_at !== null) {
        io.out(`API key ${key.prefix}… was already revoked at ${key.revoked_at}`);
        return 0;
      }
      await store.revokeApiKey(key.id, now());
      await audit(auditContext(store), CLI_ACTOR, "key.revoked", {
        projectId: key.project_id,
        target: `${key.prefix}…`,
      });
      io.out(`Revoked API key ${key.prefix}… of project "${key.project_name}"; it and its JWTs now fail.`);
      return 0;
    }
    io.err(USAGE);
    return 2;
  } finally {
    await store.close();
  }
}
