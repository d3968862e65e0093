/**
 * A generated data set for the read benchmarks (issue 15): `npx tsx scripts/dataset.ts --db F
 * [--sessions N] [--seed S] [--days D]` (or `--database-url postgres://...`). Seeded, so the same
 * arguments give the same data; written through the Store (the adapter's own write path, group
 * commit and all), so everything agentmon derives at write time (per-session totals, the search
 * index) is there exactly as a server would have made it.
 *
 * The skew is meant to look like real agent traffic:
 * - sessions spread over D days (default 365) ending today, busier on weekdays and office hours;
 * - events per session long-tailed (log-normal, mean ≈ 10: 1 M sessions ≈ 10 M events);
 * - a few models, most calls on the cheap one; token counts and so costs long-tailed;
 * - tools with their own latency profiles (one slow, one flaky);
 * - 5% of sessions fail (end state Fail, with an error event), 2% end Indeterminate, 1% still run;
 * - tags: an environment, and one customer of 500 (Zipf-like), also in extra.customer;
 * - prompts from a vocabulary, so full-text search has common and rare words (RARE_WORD appears
 *   in about one session of 10 000).
 */
import { parseArgs } from "node:util";
import type { Store } from "../db/store.ts";
import type { EventRecord, Kind, NewSession } from "../domain/types.ts";

export const RARE_WORD = "kumquat";
const DAY_US = 86_400_000_000;

/** mulberry32: a small, fast, seedable generator (the data set must not depend on Math.random). */
export function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    logNormal: (median: number, sigma: number) => median * Math.exp(sigma * normal()),
    pick: <T>(weighted: readonly (readonly [T, number])[]): T => {
      let r = next() * weighted.reduce((sum, [, w]) => sum + w, 0);
      for (const [value, weight] of weighted) {
        r -= weight;
        if (r < 0) return value;
      }
      return (weighted[weighted.length - 1] as readonly [T, number])[0];
    },
  };
}
type Random = ReturnType<typeof random>;

/** Models with their share of llm calls and $ per million input / output tokens. */
export const MODELS = [
  ["gpt-4o-mini", 50, 0.15, 0.6],
  ["gpt-4o", 20, 2.5, 10],
  ["claude-3-5-sonnet", 15, 3, 15],
  ["claude-3-5-haiku", 10, 0.8, 4],
  ["o1", 5, 15, 60],
] as const;
/** Tools with their share of tool calls, median latency (ms) and how often they fail. */
export const TOOLS = [
  ["web_search", 30, 900, 0.01],
  ["read_file", 25, 15, 0.005],
  ["run_python", 15, 2500, 0.04],
  ["http_get", 12, 400, 0.08],
  ["sql_query", 10, 120, 0.01],
  ["write_file", 5, 25, 0.002],
  ["send_email", 3, 700, 0.02],
] as const;
const WORDS = (
  "weather invoice refund order customer shipping delay lisbon paris tokyo report summary quarterly " +
  "revenue forecast contract clause translate spanish portuguese german python error stack trace " +
  "database migration index query latency timeout retry backoff schedule meeting calendar flight " +
  "hotel booking ticket support password reset account balance transfer payment card fraud alert"
).split(" ");

function sentence(rng: Random, words: number) {
  const out: string[] = [];
  for (let i = 0; i < words; i += 1) out.push(WORDS[rng.int(WORDS.length)] as string);
  if (rng.next() < 0.0001) out[rng.int(out.length)] = RARE_WORD;
  return out.join(" ");
}

const iso = (us: number) => {
  const ms = Math.floor(us / 1000);
  const micros = String(us % 1_000_000).padStart(6, "0");
  return `${new Date(ms).toISOString().slice(0, 19)}.${micros}Z`;
};

export interface DatasetOptions {
  sessions: number;
  seed?: number;
  days?: number;
  /** The last instant of the data set, microseconds; default now. */
  endUs?: number;
  /** Sessions written at once (calls in flight); default 64. */
  concurrency?: number;
  /**
   * The index of the first session (default 0): a second call with `first` = the sessions the
   * first wrote adds new sessions (bench:storage's 10 M step continues its 1 M step). The
   * generator is seeded with seed + first, so the same arguments still give the same data.
   */
  first?: number;
  /** Stop starting sessions once this many events were written (bench:storage counts events). */
  maxEvents?: number;
  onProgress?: (written: number) => void;
}

/** One session of the data set: its record and its events, all from `rng`. */
export function makeSession(rng: Random, index: number, startUs: number, spanUs: number) {
  // Busier on weekdays and in office hours: redraw a time that falls on a quiet hour half the time.
  let init = startUs + Math.floor(rng.next() * spanUs);
  const hour = new Date(init / 1000).getUTCHours();
  const weekday = new Date(init / 1000).getUTCDay();
  if ((hour < 7 || hour > 19 || weekday === 0 || weekday === 6) && rng.next() < 0.5) {
    init = startUs + Math.floor(rng.next() * spanUs);
  }
  const customer = `customer-${Math.min(499, Math.floor(500 * rng.next() ** 3))}`;
  const env = rng.pick([
    ["prod", 70],
    ["dev", 20],
    ["staging", 10],
  ] as const);
  const fate = rng.pick([
    ["Success", 92],
    ["Fail", 5],
    ["Indeterminate", 2],
    ["running", 1],
  ] as const);
  const count = Math.max(1, Math.round(rng.logNormal(7.4, 0.75)));
  const agent = `agent-${index % 7}`;
  const events: EventRecord[] = [];
  let at = init + 1000;
  for (let n = 0; n < count; n += 1) {
    const last = n === count - 1;
    const type: Kind =
      fate === "Fail" && last
        ? "error"
        : rng.pick([
            ["llm", 55],
            ["tool", 35],
            ["action", 10],
          ] as const);
    const event: EventRecord = {
      id: `e${n}`,
      type,
      init_timestamp: iso(at),
      init_us: at,
      end_timestamp: null,
      agent_id: agent,
      model: null,
      prompt_tokens: null,
      completion_tokens: null,
      cost: null,
      fields: {},
      aliases: [],
      extra: {},
    };
    let duration = 0;
    if (type === "llm") {
      const [model, , input, output] = rng.pick(MODELS.map((m) => [m, m[1]] as const));
      const prompt = Math.round(rng.logNormal(900, 1));
      const completion = Math.round(rng.logNormal(160, 0.9));
      Object.assign(event, {
        model,
        prompt_tokens: prompt,
        completion_tokens: completion,
        cost: (prompt * input + completion * output) / 1e6,
        cost_source: "table",
        fields: {
          prompt: [
            { role: "system", content: "You are a careful assistant." },
            { role: "user", content: sentence(rng, 12) },
          ],
          completion: { role: "assistant", content: sentence(rng, 20) },
        },
      });
      duration = Math.round(rng.logNormal(1_200_000, 0.6) * (model === "o1" ? 6 : 1));
    } else if (type === "tool") {
      const [name, , median, flaky] = rng.pick(TOOLS.map((t) => [t, t[1]] as const));
      event.fields = { name, params: { query: sentence(rng, 4) }, returns: sentence(rng, 10) };
      if (rng.next() < flaky) event.fields.returns = `error: ${sentence(rng, 3)} timeout`;
      duration = Math.round(rng.logNormal(median * 1000, 0.8));
    } else if (type === "action") {
      event.fields = { action_type: "plan", logs: sentence(rng, 8) };
      duration = Math.round(rng.logNormal(5000, 0.5));
    } else {
      event.fields = { error_type: "ToolError", code: "E_TIMEOUT", details: `${sentence(rng, 6)} failed` };
    }
    if (duration > 0) event.end_timestamp = iso(at + duration);
    events.push(event);
    at += duration + Math.round(rng.logNormal(200_000, 1));
  }
  const ended = fate !== "running";
  const session: NewSession = {
    id: `s-${String(index).padStart(8, "0")}`,
    init_timestamp: iso(init),
    init_us: init,
    end_timestamp: ended ? iso(at) : null,
    end_state: ended ? fate : null,
    end_state_reason: fate === "Fail" ? `step ${events.length} failed: ${sentence(rng, 3)}` : null,
    tags: [env, customer],
    host_env: null,
    extra: { customer, release: `v1.${index % 5}.0` },
  };
  return { session, events, agent };
}

/**
 * Writes the data set into the project through the store; answers the sessions and events written.
 * Only the Store's write methods are used (never SQL into derived tables), so whatever agentmon
 * derives from the rows, at write time or later by a projector (issue 24), it derives itself.
 */
export async function generateDataset(store: Store, projectId: string, options: DatasetOptions) {
  const first = options.first ?? 0;
  const rng = random((options.seed ?? 1) + first);
  const days = options.days ?? 365;
  const endUs = options.endUs ?? Date.now() * 1000;
  const startUs = endUs - days * DAY_US;
  const spanUs = days * DAY_US - 3_600_000_000; // room for the longest session before endUs
  let next = first;
  let events = 0;
  const last = first + options.sessions;
  const maxEvents = options.maxEvents ?? Number.POSITIVE_INFINITY;
  const worker = async () => {
    while (next < last && events < maxEvents) {
      const index = next;
      next += 1;
      const made = makeSession(rng, index, startUs, spanUs);
      // Counted before the writes: the workers in flight must see it to stop at maxEvents.
      events += made.events.length;
      await store.createSession(projectId, made.session);
      await store.upsertAgent(projectId, made.session.id, { id: made.agent, name: "planner", extra: {} });
      await store.insertEvents(projectId, made.session.id, made.events);
      if (index % 10_000 === 0) options.onProgress?.(index);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 64 }, worker));
  return { sessions: next - first, events };
}

async function main() {
  const { values } = parseArgs({
    options: {
      db: { type: "string" },
      "database-url": { type: "string" },
      sessions: { type: "string", default: "1000000" },
      seed: { type: "string", default: "1" },
      days: { type: "string", default: "365" },
      key: { type: "string", default: "0b7c6f4e-5a4e-4b0a-9c1e-2f3d4a5b6c7d" },
    },
  });
  const { hashApiKey, keyPrefix } = await import("../domain/keys.ts");
  let store: Store;
  if (values["database-url"]) {
    const { openPostgresStore } = await import("../db/postgres/store.ts");
    store = await openPostgresStore({ url: values["database-url"] });
  } else if (values.db) {
    const { openDb } = await import("../db/sqlite/open.ts");
    const { sqliteStore } = await import("../db/sqlite/store.ts");
    store = sqliteStore(openDb(values.db), { checkpointer: false });
  } else {
    throw new Error("give --db <file> or --database-url <url>");
  }
  const key = await store.createApiKey(
    hashApiKey(values.key),
    keyPrefix(values.key),
    "default",
    iso(Date.now() * 1000),
  );
  const start = performance.now();
  const written = await generateDataset(store, key.project_id, {
    sessions: Number(values.sessions),
    seed: Number(values.seed),
    days: Number(values.days),
    onProgress: (n) => process.stderr.write(`\r${n} sessions`),
  });
  await store.close();
  const seconds = (performance.now() - start) / 1000;
  console.log(
    `\n${written.sessions} sessions, ${written.events} events in ${seconds.toFixed(1)} s; API key ${values.key}`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
