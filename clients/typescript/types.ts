/**
 * The shapes the ergonomic API takes and gives, derived from the types generated from openapi.yaml
 * (generated/api.ts, written by the server repository's `npm run generate`; never edited).
 *
 * The contract keeps every field it does not name (G5), so its schemas carry an index signature
 * (`[key: string]: unknown`) and a misspelt field name type-checks against them. The inputs below
 * drop those index signatures: a field the contract does not name is a type error here, and a
 * field it names must have the contract's type. To send fields of your own, widen the type on
 * purpose (`const e: EventInput & { my_field: string } = …`) or use the raw client.
 */
import type { components, operations } from "./generated/api.ts";

type Schemas = components["schemas"];

/** A type's named properties, optional marks kept, without its index signatures. */
export type Named<T> = {
  [K in keyof T as string extends K ? never : number extends K ? never : symbol extends K ? never : K]: T[K];
};

/** The contract's error body (G2). */
export type ErrorBody = Schemas["Error"];
export type ErrorDetail = Schemas["ErrorDetail"];

/** An event's kind. The AgentOps SDK's plural `event_type` is accepted by the server; here `type` is required. */
export type EventKind = NonNullable<Schemas["Event"]["type"]>;

/** The canonical end states (S5). */
export type EndState = "Success" | "Fail" | "Indeterminate";

/** The fields of a session a caller gives to startSession or update; `id` defaults to a random UUID. */
export type SessionInput = Omit<Named<Schemas["SessionFields"]>, "id" | "session_id" | "jwt"> & { id?: string };

/** One event to record (E4): `type` and any named field of the contract's `Event`. */
export type EventInput = Omit<Named<Schemas["Event"]>, "type" | "event_type"> & { type: EventKind };

/** A change to a recorded event (E6): its `id` and the fields to replace. */
export type EventChange = Omit<Named<Schemas["Event"]>, "id"> & { id: string };

/** An agent to register (E7). */
export type AgentInput = Omit<Named<Schemas["CreateAgentRequest"]>, "session_id">;

export type Session = Schemas["Session"];
export type StoredEvent = Schemas["StoredEvent"];
export type Stats = Schemas["Stats"];
export type Agent = Schemas["Agent"];
export type SessionListItem = Schemas["SessionListItem"];
export type UpdateSessionResponse = Schemas["UpdateSessionResponse"];
export type ListSessionsResponse = Schemas["ListSessionsResponse"];
export type GetSessionResponse = Schemas["GetSessionResponse"];
export type ListSessionEventsResponse = Schemas["ListSessionEventsResponse"];
export type ExportSessionResponse = Schemas["ExportSessionResponse"];
export type OtlpJsonExport = Schemas["OtlpJsonRequest"];

/** A score to record (issue 25, SC1-SC7): `name`, `value` and its target; see openapi.yaml ScoreInput. */
export type ScoreInput = Schemas["ScoreInput"];
export type Score = Schemas["Score"];
export type ScorePage = Schemas["ScorePage"];
/** The filters and page of `GET /v2/scores`. */
export type ListScoresQuery = NonNullable<operations["listScores"]["parameters"]["query"]>;

/** The filters and page of `GET /v2/sessions`. */
export type ListSessionsQuery = NonNullable<operations["listSessions"]["parameters"]["query"]>;
/** The filter and page of `GET /v2/sessions/{session_id}/events`. */
export type ListEventsQuery = NonNullable<operations["listSessionEvents"]["parameters"]["query"]>;
