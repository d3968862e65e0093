/**
 * Every failure a handler or hook reports is an ApiError: the status, the body of contract G2
 * and any headers (Retry-After, Allow). The error handler in app.ts sends it as it is.
 */
export interface ErrorDetail {
  path: string;
  message: string;
}

export interface ErrorBody {
  error: string;
  message: string;
  details?: ErrorDetail[];
}

export class ApiError extends Error {
  readonly statusCode: number;
  readonly body: ErrorBody;
  readonly headers: Record<string, string>;

  constructor(statusCode: number, body: ErrorBody, headers: Record<string, string> = {}) {
    super(body.message);
    this.name = "ApiError";
    this.statusCode = statusCode;
    this.body = body;
    this.headers = headers;
  }
}

/** The most entries a 400 lists; the message says how many more there were. */
export const MAX_DETAILS = 100;

/** A 400 for the body; `total` counts the problems when `details` lists only the first of them. */
export function invalidRequest(details: ErrorDetail[], total = details.length): ApiError {
  const shown = details.slice(0, MAX_DETAILS);
  const first = shown[0];
  const where = first === undefined ? "" : `: ${first.path === "" ? "" : `${first.path} `}${first.message}`;
  const more = total > 1 ? ` (and ${total - 1} more problem${total > 2 ? "s" : ""})` : "";
  return new ApiError(400, {
    error: "Invalid request",
    message: `The request body is not valid${where}${more}`,
    details: shown,
  });
}

/** A 400 for parameters, worded for them (the body's is "The request body is not valid"). */
export function invalidParameters(details: ErrorDetail[]): ApiError {
  const [first] = details;
  const more = details.length > 1 ? ` (and ${details.length - 1} more problem${details.length > 2 ? "s" : ""})` : "";
  return new ApiError(400, {
    error: "Invalid request",
    message: `The request is not valid${first ? `: ${first.path} ${first.message}` : ""}${more}`,
    details: details.slice(0, MAX_DETAILS),
  });
}

export const invalidApiKey = () =>
  new ApiError(401, { error: "Invalid API key", message: "Please check your API key and try again" });

export const invalidJwt = () =>
  new ApiError(401, {
    error: "Invalid or expired JWT",
    message: "Please reauthorize using the /v2/reauthorize_jwt endpoint",
  });

export const forbidden = (jwtSession: string, target: string) =>
  new ApiError(403, {
    error: "Forbidden",
    message: `This JWT belongs to session ${jwtSession}; it cannot write to session ${target}`,
  });

/** 403 for a credential whose key lacks the scope the operation needs (issue 16 part 4). */
export const missingScope = (has: readonly string[], needs: string) =>
  new ApiError(403, {
    error: "Forbidden",
    message: `This API key has scope${has.length === 1 ? "" : "s"} ${has.length === 0 ? "(none)" : has.join(", ")}; this operation needs ${needs}`,
  });

export const notFound = (message: string, details?: ErrorDetail[]) =>
  new ApiError(404, { error: "Not found", message, ...(details ? { details } : {}) });

export const sessionNotFound = (id: string) => notFound(`No session ${id} in this project`);

export const conflict = (id: string) =>
  new ApiError(409, {
    error: "Session already exists",
    message: `Session ${id} belongs to another project; choose another id`,
  });

export const payloadTooLarge = (limit: number) =>
  new ApiError(413, {
    error: "Payload too large",
    message: `The request body is larger than ${limit} bytes (after decompression); send fewer events per call`,
  });

export const unsupportedMediaType = (message = "Send the body as JSON with Content-Type: application/json") =>
  new ApiError(415, { error: "Unsupported media type", message });

export const tooManyRequests = (retryAfter: number, why = "Too many failed API key checks from this address") =>
  new ApiError(
    429,
    { error: "Too many requests", message: `${why}; retry after ${retryAfter} seconds` },
    { "retry-after": String(retryAfter) },
  );

export const serviceUnavailable = (message: string, retryAfter: number) =>
  new ApiError(503, { error: "Service unavailable", message }, { "retry-after": String(retryAfter) });

export const internalError = () =>
  new ApiError(500, {
    error: "Internal server error",
    message: "Something went wrong on the server; the request can be retried",
  });
