/**
 * What the TypeScript client's types refuse. Never run: `tsc --noEmit` (npm test's typecheck)
 * compiles it, and each `@ts-expect-error` fails that typecheck if the line after it compiles.
 * test/client.types.test.ts compiles it again without those comments and checks that each such
 * line is an error whose message contains the text after `expects:`, and that the rest compiles.
 */
import {
  type AgentmonError,
  agentmon,
  createAgentmonClient,
  type EventInput,
  type Stats,
} from "../../clients/typescript/index.ts";

export async function refused(): Promise<void> {
  const am = agentmon({ baseUrl: "http://127.0.0.1:3000", apiKey: "11111111-1111-4111-8111-111111111111" });
  const s = await am.startSession({ tags: ["demo"] });

  // @ts-expect-error expects: Type '"chat"' is not assignable to type 'EventKind'
  await s.recordEvents([{ type: "chat" }]);
  // @ts-expect-error expects: Type 'string' is not assignable to type 'number'
  await s.recordEvents([{ type: "llm", prompt_tokens: "5" }]);
  // @ts-expect-error expects: 'prompt_tokns' does not exist in type 'EventInput'
  await s.recordEvents([{ type: "llm", prompt_tokns: 5 }]);
  // @ts-expect-error expects: Property 'type' is missing
  await s.recordEvents([{ model: "gpt-4o-mini" }]);
  // @ts-expect-error expects: Type 'number' is not assignable to type 'string'
  await s.recordEvents([{ type: "llm", model: 4 }]);
  // @ts-expect-error expects: Property 'role' is missing
  await s.recordEvents([{ type: "llm", prompt: [{ content: "hi" }] }]);
  // @ts-expect-error expects: Argument of type '"Done"' is not assignable to parameter of type 'EndState'
  await s.end("Done");
  // @ts-expect-error expects: Type 'number' is not assignable to type 'string'
  await am.startSession({ tags: [1] });
  // @ts-expect-error expects: 'end_reason' does not exist
  await s.update({ end_reason: "typo of end_state_reason" });
  // @ts-expect-error expects: Property 'id' is missing
  await s.registerAgent({ name: "Planner" });
  // @ts-expect-error expects: Property 'id' is missing
  await s.updateEvents([{ completion: "4" }]);
  // @ts-expect-error expects: Type '"chats"' is not assignable
  await am.listEvents("run", { type: ["llms", "chats"] });

  // The raw client: paths, parameters and bodies are openapi.yaml's.
  // @ts-expect-error expects: Argument of type '"/v2/create_event"' is not assignable
  await am.raw.POST("/v2/create_event", { body: { events: [] } });
  // @ts-expect-error expects: 'id' does not exist in type '{ session:
  await am.raw.POST("/v2/create_session", { body: { id: "flat" } });
  // @ts-expect-error expects: Type 'string' is not assignable to type 'number'
  await am.raw.GET("/v2/sessions", { params: { query: { limit: "10" } } });
  // @ts-expect-error expects: Expected 2 arguments, but got 1
  await am.raw.GET("/v2/sessions/{session_id}");
  // @ts-expect-error expects: Type '"chat"' is not assignable to type '"llm" | "tool" | "action" | "error" | null'
  await createAgentmonClient({ baseUrl: "" }).POST("/v2/create_events", { body: { events: [{ type: "chat" }] } });

  // Answers are typed too.
  const page = await am.listSessions();
  // @ts-expect-error expects: Type 'string' is not assignable to type 'number'
  const cost: number = page.sessions[0]?.stats.cost ?? 0;
  const stats: Stats = await am.getStats("run");
  // @ts-expect-error expects: Property 'tokens' does not exist on type
  void stats.tokens;
  void cost;
}

/** What the types accept: these lines must compile. */
export async function accepted(): Promise<void> {
  const am = agentmon({ baseUrl: "http://127.0.0.1:3000", apiKey: process.env.AGENTMON_API_KEY });
  const s = await am.startSession({ id: "run", tags: ["demo"], host_env: { OS: { OS: "Linux" } }, end_state: null });
  await s.recordEvents([
    { type: "llm", model: "gpt-4o-mini", prompt: [{ role: "user", content: "2+2?" }], completion: "4", cost: 0.1 },
    { type: "tool", name: "search", input: { q: "x" }, output: ["a"], agent_id: "planner" },
    { type: "error", error_type: "ValueError", code: 500, details: { why: "boom" }, trigger_event_id: "ev-1" },
  ]);
  // A field of one's own (G5) is sent by widening the type on purpose.
  const custom: EventInput & { my_field: string } = { type: "action", action_type: "click", my_field: "kept" };
  await s.recordEvents([custom]);
  await s.updateEvents([{ id: "ev-1", completion_tokens: 3 }]);
  await s.end("Success", { reason: "done" });
  const list = await am.listSessions({ tag: ["demo"], end_state: "failed", limit: 20 });
  const next: string | null = list.next_cursor;
  for await (const event of am.events("run", { type: ["llm", "error"] })) void event.init_timestamp;
  try {
    await am.getSession("run");
  } catch (error) {
    const e = error as AgentmonError;
    const fields: [number, string, string] = [e.status, e.error, e.message];
    void fields;
  }
  void next;
}
