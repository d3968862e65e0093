/**
 * The traces the OTLP browser test (test/browser.otlp.test.ts) shows, written through the Store
 * as the OTLP mapping writes them (ingest/otlp/span.ts): each span an event with its parent_id
 * and the span under `extra.otel` (otlp.md T14, T15), an ERROR span with its exception event
 * (T16). At fixed instants, so that the screenshot is the same on every run.
 */
import type { Store } from "../../db/store.ts";
import type { JsonObject, Kind, RootCandidate, SpanEventRecord, TraceWrite } from "../../domain/types.ts";
import { iso } from "../db/records.ts";

/** 2026-11-22T09:00:00Z in microseconds. */
const US0 = Date.parse("2026-11-22T09:00:00Z") * 1000;
const nanos = (ms: number) => `${(US0 + ms * 1000) * 1000}`;

/** A finished trace (its root has arrived) and a running one (no root yet), as session ids (T12). */
export const TRACE = "4bf92f35-77b3-4da7-a3ce-929d0e0e4736";
export const RUNNING = "5bf92f35-77b3-4da7-a3ce-929d0e0e4736";

/** The trace's span ids. */
export const SPAN = {
  root: "a1a1a1a1a1a1a1a1",
  agent: "b2b2b2b2b2b2b2b2",
  llm1: "c3c3c3c3c3c3c3c3",
  search: "d4d4d4d4d4d4d4d4",
  llm2: "e5e5e5e5e5e5e5e5",
  calc: "f6f6f6f6f6f6f6f6",
} as const;
export const EXCEPTION = `${SPAN.search}:exception:0`;

/** The markup a span attribute carries: it must stay text. */
export const XSS_ATTRIBUTE = `<img src=x onerror="window.__xss=3">`;

const str = (key: string, value: string) => ({ key, value: { stringValue: value } });
const int = (key: string, value: number) => ({ key, value: { intValue: String(value) } });

interface SpanSpec {
  id: string;
  parent: string | null;
  type: Kind;
  name: string;
  /** Start and end, in ms after 09:00:00. */
  from: number;
  to: number;
  kind?: number;
  attributes?: { key: string; value: JsonObject }[];
  status?: { code: number; message?: string };
  events?: JsonObject[];
  fields?: JsonObject;
  model?: string;
  agent?: string;
}

const RESOURCE = {
  attributes: [str("service.name", "shop-agent"), str("telemetry.sdk.language", "python"), str("host.name", "e2e")],
};

function spanEvent(spec: SpanSpec): SpanEventRecord {
  return {
    id: spec.id,
    type: spec.type,
    parent_id: spec.parent,
    own_agent_id: spec.agent ?? null,
    init_timestamp: iso(US0 + spec.from * 1000),
    init_us: US0 + spec.from * 1000,
    end_timestamp: iso(US0 + spec.to * 1000),
    agent_id: spec.agent ?? null,
    model: spec.model ?? null,
    prompt_tokens: spec.model ? 120 : null,
    completion_tokens: spec.model ? 30 : null,
    cost: null,
    cost_source: "unknown",
    fields: spec.fields ?? {},
    aliases: [],
    extra: {
      otel: {
        name: spec.name,
        kind: spec.kind ?? 1,
        startTimeUnixNano: nanos(spec.from),
        endTimeUnixNano: nanos(spec.to),
        attributes: spec.attributes ?? [],
        ...(spec.status ? { status: spec.status } : {}),
        events: spec.events ?? [],
        links: [],
        scope: { name: "opentelemetry.instrumentation.openai", version: "0.40.2" },
        resource: RESOURCE,
      },
    },
  };
}

/** The finished trace, top to bottom as the waterfall nests it. */
const SPECS: SpanSpec[] = [
  {
    id: SPAN.root,
    parent: null,
    type: "action",
    name: "checkout.workflow",
    from: 0,
    to: 9000,
    kind: 2,
    fields: { action_type: "checkout.workflow" },
    attributes: [str("agentops.span.kind", "workflow")],
  },
  {
    id: SPAN.agent,
    parent: SPAN.root,
    type: "action",
    name: "planner.agent",
    from: 100,
    to: 8500,
    agent: "planner",
    fields: { action_type: "planner.agent" },
    attributes: [str("gen_ai.operation.name", "invoke_agent"), str("gen_ai.agent.name", "Planner")],
  },
  {
    id: SPAN.llm1,
    parent: SPAN.agent,
    type: "llm",
    name: "chat gpt-4o-mini",
    from: 200,
    to: 1800,
    kind: 3,
    model: "gpt-4o-mini",
    fields: { prompt: [{ role: "user", content: "Find shoes" }], completion: { role: "assistant", content: "ok" } },
    attributes: [
      str("gen_ai.operation.name", "chat"),
      str("gen_ai.request.model", "gpt-4o-mini"),
      int("gen_ai.usage.input_tokens", 120),
      { key: "gen_ai.request.stop_sequences", value: { arrayValue: { values: [{ stringValue: "END" }] } } },
      str("app.note", XSS_ATTRIBUTE),
    ],
  },
  {
    id: SPAN.search,
    parent: SPAN.agent,
    type: "tool",
    name: "execute_tool web.search",
    from: 2000,
    to: 3000,
    fields: { name: "web.search", input: { q: "shoes" } },
    attributes: [str("gen_ai.tool.name", "web.search"), { key: "retry", value: { boolValue: true } }],
    status: { code: 2, message: "rate limited by the search API" },
    events: [
      {
        timeUnixNano: nanos(2950),
        name: "exception",
        attributes: [str("exception.type", "RateLimitError"), str("exception.message", "429 Too Many Requests")],
      },
    ],
  },
  {
    id: SPAN.llm2,
    parent: SPAN.agent,
    type: "llm",
    name: "chat gpt-4o",
    from: 3200,
    to: 5000,
    kind: 3,
    model: "gpt-4o",
    fields: { prompt: "Pick the cheapest", completion: "calc" },
    attributes: [str("gen_ai.operation.name", "chat"), str("gen_ai.request.model", "gpt-4o")],
  },
  {
    id: SPAN.calc,
    parent: SPAN.llm2,
    type: "tool",
    name: "execute_tool calculator",
    from: 4000,
    to: 4200,
    fields: { name: "calculator", input: "42.10 * 3" },
    attributes: [str("gen_ai.tool.name", "calculator")],
  },
];

/** The exception event of the ERROR span: a child of it (T16). */
const exception: SpanEventRecord = {
  ...spanEvent({ id: EXCEPTION, parent: SPAN.search, type: "error", name: "", from: 2950, to: 2950 }),
  end_timestamp: null,
  fields: {
    error_type: "RateLimitError",
    details: "429 Too Many Requests",
    trigger_event_id: SPAN.search,
  },
  extra: {},
};

const ROOT: RootCandidate = {
  rank: `1:${SPAN.root}`,
  fields: {
    end_timestamp: iso(US0 + 9_000_000),
    end_state: "Success",
    end_state_reason: null,
    tags: ["otel"],
    host_env: null,
    conversation_id: null,
    extra: { root_name: "checkout.workflow" },
  },
};

function write(session: string, events: SpanEventRecord[], root: RootCandidate | null): TraceWrite {
  const first = Math.min(...events.map((event) => event.init_us));
  return {
    session_id: session,
    init_timestamp: iso(first),
    init_us: first,
    conversation_id: null,
    root,
    events,
    agents: events.flatMap((event) =>
      event.own_agent_id ? [{ id: event.own_agent_id, name: "Planner", extra: {} }] : [],
    ),
  };
}

/**
 * The running trace: no root yet. Its spans name parents that have not arrived (the top level)
 * and, as a client might, a parent cycle (o2 ↔ o3, with o4 under o2): the cycle's members are
 * shown at the top level, o4 under o2.
 */
const ORPHANS: SpanSpec[] = [
  { id: "0000000000000001", parent: "9999999999999999", type: "llm", name: "o1", from: 100, to: 400, model: "m" },
  {
    id: "0000000000000002",
    parent: "0000000000000003",
    type: "tool",
    name: "o2",
    from: 500,
    to: 900,
    fields: { name: "o2" },
  },
  {
    id: "0000000000000003",
    parent: "0000000000000002",
    type: "tool",
    name: "o3",
    from: 600,
    to: 700,
    fields: { name: "o3" },
  },
  {
    id: "0000000000000004",
    parent: "0000000000000002",
    type: "action",
    name: "o4",
    from: 650,
    to: 800,
    fields: { action_type: "o4" },
  },
];

/** Writes both traces into the project through the Store. */
export async function createTraces(store: Store, projectId: string) {
  const outcomes = await store.ingestTraces(projectId, [
    write(TRACE, [...SPECS.map(spanEvent), exception], ROOT),
    write(RUNNING, ORPHANS.map(spanEvent), null),
  ]);
  if (outcomes.some((outcome) => outcome === "foreign")) throw new Error(`ingestTraces answered ${outcomes}`);
}

/** A large tree: a root, 50 agent spans of 40 children each, and a chain 500 spans deep. */
export const BIG_TREE = "6bf92f35-77b3-4da7-a3ce-929d0e0e4736";
export const BIG_TREE_EVENTS = 1 + 50 + 50 * 40 + 500;

export async function createBigTree(store: Store, projectId: string) {
  const hex = (n: number) => n.toString(16).padStart(16, "0");
  const specs: SpanSpec[] = [{ id: hex(1), parent: null, type: "action", name: "root", from: 0, to: 60_000 }];
  let n = 2;
  for (let a = 0; a < 50; a++) {
    const agent = hex(n++);
    specs.push({ id: agent, parent: hex(1), type: "action", name: `agent ${a}`, from: a * 1000, to: a * 1000 + 900 });
    for (let c = 0; c < 40; c++) {
      specs.push({
        id: hex(n++),
        parent: agent,
        type: "llm",
        name: `call ${a}.${c}`,
        from: a * 1000 + c * 20,
        to: a * 1000 + c * 20 + 15,
        model: "m",
      });
    }
  }
  let parent = hex(1);
  for (let d = 0; d < 500; d++) {
    const id = hex(n++);
    specs.push({
      id,
      parent,
      type: "tool",
      name: `depth ${d + 1}`,
      from: 55_000 + d,
      to: 59_000,
      fields: { name: `depth ${d + 1}` },
    });
    parent = id;
  }
  const root = { ...ROOT, fields: { ...ROOT.fields, end_timestamp: iso(US0 + 60_000_000) } };
  const outcomes = await store.ingestTraces(projectId, [write(BIG_TREE, specs.map(spanEvent), root)]);
  if (outcomes.some((outcome) => outcome === "foreign")) throw new Error(`ingestTraces answered ${outcomes}`);
}
