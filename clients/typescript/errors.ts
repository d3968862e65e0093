import type { ErrorDetail } from "./types.ts";

/**
 * A call agentmon refused: its HTTP status and the contract's error body (G2), `error` (a short,
 * stable name such as `Invalid request`) and `message` (what went wrong and what to do), with
 * `details` (one entry per problem) on a 400 schema violation. `retryAfter` is the seconds of a
 * 429 or 503's `Retry-After`. An answer that is not a G2 body (a proxy's HTML page) keeps
 * `error` = `HTTP <status>` and its text in `body`.
 */
export class AgentmonError extends Error {
  override readonly name = "AgentmonError";
  readonly status: number;
  readonly error: string;
  readonly details: ErrorDetail[] | undefined;
  readonly retryAfter: number | undefined;
  /** The response body as received: the parsed JSON, or its text. */
  readonly body: unknown;

  constructor(status: number, error: string, message: string, extra: AgentmonErrorExtra = {}) {
    super(message);
    this.status = status;
    this.error = error;
    this.details = extra.details;
    this.retryAfter = extra.retryAfter;
    this.body = extra.body;
  }

  /** The error of a refused response, from its status, its `Retry-After` and its body (parsed JSON or text). */
  static fromResponse(response: Response, body: unknown): AgentmonError {
    const retry = Number(response.headers.get("retry-after") ?? Number.NaN);
    const extra: AgentmonErrorExtra = { body, retryAfter: Number.isFinite(retry) ? retry : undefined };
    if (isErrorBody(body)) {
      return new AgentmonError(response.status, body.error, body.message, { ...extra, details: body.details });
    }
    const text = typeof body === "string" && body.length > 0 ? body.slice(0, 200) : response.statusText;
    return new AgentmonError(response.status, `HTTP ${response.status}`, text || "no error body", extra);
  }
}

interface AgentmonErrorExtra {
  details?: ErrorDetail[] | undefined;
  retryAfter?: number | undefined;
  body?: unknown;
}

function isErrorBody(body: unknown): body is { error: string; message: string; details?: ErrorDetail[] } {
  if (typeof body !== "object" || body === null) return false;
  const { error, message, details } = body as Record<string, unknown>;
  return typeof error === "string" && typeof message === "string" && (details === undefined || Array.isArray(details));
}

/** The 401 body of a bad, missing or expired JWT (4.1): the one answer that makes a session reauthorize. */
export const INVALID_JWT = "Invalid or expired JWT";

export function isInvalidJwt(status: number, body: unknown): boolean {
  return status === 401 && isErrorBody(body) && body.error === INVALID_JWT;
}
