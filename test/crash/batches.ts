/**
 * The crash test's clients (test/crash.test.ts) and what they send: seeded randomness, and
 * create_events batches of realistic events with ids unique over the whole test.
 */
import { randomUUID } from "node:crypto";

const BATCH_SIZE = [20, 50] as const;

// ----------------------------------------------------------------------------- seeded randomness

/** mulberry32: small, fast, good enough to pick sizes and delays reproducibly. */
export function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)] as T;
  return { int, pick };
}
export type Random = ReturnType<typeof random>;

// ----------------------------------------------------------------------------- batches

type Kind = "llm" | "tool" | "action" | "error";
/** refused: answered, but not 200 (nothing may be stored); unknown: no answer (the kill). */
type State = "acked" | "refused" | "unknown";

export interface Batch {
  client: number;
  ids: string[];
  kinds: Kind[];
  /** The exact request body, kept so that a retry sends the same bytes. */
  body: string;
  state: State;
}

export interface Client {
  n: number;
  sessionId: string;
  jwt: string;
  rng: Random;
  batches: Batch[];
}

const WORDS = ["agent", "plan", "search", "the", "invoice", "summary", "tool", "result", "step", "retry", "context"];
const sentence = (rng: Random, words: number) => Array.from({ length: words }, () => rng.pick(WORDS)).join(" ");
/** An SDK-style timestamp, with an explicit +00:00 offset. */
const at = (ms: number) => new Date(ms).toISOString().replace("Z", "+00:00");

/** One event with a realistic body of its kind, in the SDK's form or the seed spec's. */
function eventBody(rng: Random, kind: Kind, id: string, sessionId: string, previous: string | undefined) {
  const start = Date.now() - rng.int(0, 60_000);
  const common = { id, session_id: sessionId, init_timestamp: at(start), end_timestamp: at(start + rng.int(1, 900)) };
  const sdk = rng.int(0, 1) === 1;
  switch (kind) {
    case "llm":
      return sdk
        ? {
            ...common,
            event_type: "llms",
            model: "gpt-4o-mini",
            thread_id: randomUUID(),
            params: { temperature: 0.2, max_tokens: 256 },
            prompt: [
              { role: "system", content: "You are a careful assistant." },
              { role: "user", content: sentence(rng, rng.int(20, 200)) },
            ],
            completion: { role: "assistant", content: sentence(rng, rng.int(10, 120)) },
            returns: "ok",
            prompt_tokens: rng.int(10, 2000),
            completion_tokens: rng.int(1, 500),
            cost: rng.int(1, 5000) / 1e7,
          }
        : {
            ...common,
            type: "llm",
            model: "claude-3-haiku",
            prompt: sentence(rng, rng.int(20, 200)),
            completion: sentence(rng, rng.int(10, 120)),
            prompt_tokens: rng.int(10, 2000),
            completion_tokens: rng.int(1, 500),
            cost: rng.int(1, 5000) / 1e7,
          };
    case "tool":
      return sdk
        ? {
            ...common,
            event_type: "tools",
            name: "web_search",
            tool_name: "web_search",
            params: { query: sentence(rng, 6), top_k: rng.int(1, 10) },
            returns: { hits: Array.from({ length: rng.int(1, 5) }, () => sentence(rng, 12)) },
            logs: { note: "ok", attempt: 1 },
          }
        : {
            ...common,
            type: "tool",
            name: "calculator",
            input: { a: rng.int(0, 99), b: rng.int(0, 99) },
            output: "42",
          };
    case "action":
      return {
        ...common,
        event_type: "actions",
        action_type: "plan",
        name: "plan",
        params: { goal: sentence(rng, 8) },
        returns: sentence(rng, 15),
        logs: "planning step",
        screenshot: null,
      };
    case "error":
      return {
        ...common,
        type: "error",
        error_type: "ValueError",
        code: "E_TOOL",
        details: sentence(rng, 10),
        logs: `Traceback (most recent call last):\n  File "agent.py", line ${rng.int(1, 400)}, in main\nValueError: bad`,
        ...(previous === undefined ? {} : { trigger_event_id: previous, trigger_event_type: "tools" }),
      };
  }
}

const KINDS: readonly Kind[] = ["llm", "llm", "llm", "llm", "tool", "tool", "tool", "action", "error"];

/** The client's next batch: ids `<client>-<batch>-<n>`, unique over the whole test. */
export function nextBatch(client: Client): Batch {
  const { rng } = client;
  const b = client.batches.length;
  const size = rng.int(...BATCH_SIZE);
  const ids = Array.from({ length: size }, (_, n) => `c${client.n}-${b}-${n}`);
  const kinds = ids.map(() => rng.pick(KINDS));
  const events = ids.map((id, n) => eventBody(rng, kinds[n] as Kind, id, client.sessionId, ids[n - 1]));
  const batch: Batch = { client: client.n, ids, kinds, body: JSON.stringify({ events }), state: "unknown" };
  client.batches.push(batch);
  return batch;
}
