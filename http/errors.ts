/**
 * The one place where failures become answers: every error, whoever threw it (a handler, a
 * service, a storage adapter, Fastify, ajv, Node's HTTP parser), leaves as a contract G2 body
 * with its status. Nothing internal reaches the client.
 */
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Conflict, KeyRevoked, SchemaMismatch, StorageFault } from "../db/errors.ts";
import {
  ApiError,
  internalError,
  invalidJwt,
  invalidParameters,
  invalidRequest,
  payloadTooLarge,
  serviceUnavailable,
  unsupportedMediaType,
} from "../domain/errors.ts";
import { answeredWhileArriving, type LingerBound, linger } from "./linger.ts";
import { otlpRoute, sendOtlpError } from "./otlp.ts";
import type { Routes } from "./routes.ts";
import { type AjvError, detailsFromAjv } from "./validation.ts";

/**
 * The 503 of a storage fault (O4, O2's write backlog). A read (GET, HEAD) stored nothing to begin
 * with, so its message does not say so: a refused search is not a refused write.
 */
export const storageUnavailable = (reason: string, read = false) =>
  serviceUnavailable(
    `Storage is unavailable (${reason})${read ? "" : "; nothing was stored"}. Retry after 5 seconds`,
    5,
  );

const READS = new Set(["GET", "HEAD"]);

const errorName: Record<number, string> = {
  400: "Bad request",
  404: "Not found",
  405: "Method not allowed",
  413: "Payload too large",
  415: "Unsupported media type",
};

/** A detail path under `query` or `path`: `query.limit`, `query.tag[1]`, `query["odd name"]`. */
const under = (prefix: string, path: string) =>
  path === "" ? prefix : path.startsWith("[") ? `${prefix}${path}` : `${prefix}.${path}`;

/** ajv's verdict on a part of the request: the body's problems, or the parameters'. */
function invalid(errors: AjvError[], context: string | undefined): ApiError {
  const details = detailsFromAjv(errors);
  if (context === "querystring") return invalidParameters(details.map((d) => ({ ...d, path: under("query", d.path) })));
  if (context === "params") return invalidParameters(details.map((d) => ({ ...d, path: under("path", d.path) })));
  if (context === "headers") return invalidParameters(details.map((d) => ({ ...d, path: under("header", d.path) })));
  return invalidRequest(details);
}

const FASTIFY_ERRORS: Record<string, (bodyLimit: number) => ApiError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: payloadTooLarge,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => unsupportedMediaType(),
  FST_ERR_BAD_URL: () =>
    new ApiError(400, { error: "Bad request", message: "The URL is not valid percent-encoded UTF-8" }),
  FST_ERR_MAX_PARAM_LENGTH: () =>
    new ApiError(414, {
      error: "URI too long",
      message: "A path parameter is longer than 3072 characters; ids are at most 256",
    }),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () =>
    new ApiError(400, { error: "Bad request", message: "The request body does not match its Content-Length" }),
};
const undecodable = () =>
  new ApiError(400, {
    error: "Bad request",
    message: "The request body could not be decompressed as its Content-Encoding says",
  });
for (const code of ["Z_DATA_ERROR", "Z_BUF_ERROR", "ERR_STREAM_PREMATURE_CLOSE"]) FASTIFY_ERRORS[code] = undecodable;

/** Every error as a contract G2 answer; `method` is the request's (a read's 503 says it stored nothing only if it wrote). */
export function toApiError(err: unknown, bodyLimit: number, method = "POST"): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof KeyRevoked) return invalidJwt();
  if (err instanceof StorageFault) return storageUnavailable(err.reason, READS.has(method));
  if (err instanceof SchemaMismatch) return storageUnavailable(err.message, READS.has(method));
  if (err instanceof Conflict) {
    return new ApiError(409, { error: "Conflict", message: "Another call wrote the same record; retry the call" });
  }
  const e = err as Partial<FastifyError> & { validation?: AjvError[] };
  if (e.validation) return invalid(e.validation, e.validationContext);
  const known = e.code === undefined ? undefined : FASTIFY_ERRORS[e.code];
  if (known) return known(bodyLimit);
  const status = e.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return new ApiError(status, { error: errorName[status] ?? "Bad request", message: e.message ?? "Bad request" });
  }
  return internalError();
}

/**
 * Errors Node's HTTP parser meets before there is a request to route (O1 timeouts, oversized or
 * broken headers) get a G2 body too; the connection is then closed, lingering (http/linger.ts):
 * the client may still be sending its request, and closing at once would reset the connection
 * under the answer. A request that has its answer already (a refusal sent before its body was
 * read, whose body was still arriving when O1's timeout came) gets no second one.
 */
export function clientErrors(bound: LingerBound) {
  return function clientError(err: NodeJS.ErrnoException, socket: Socket) {
    if (err.code === "ECONNRESET" || socket.destroyed) return;
    const attached = (socket as { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    if (attached?.headersSent) {
      socket.destroy(); // an answer is half-written: nothing more can be said on this connection
      return;
    }
    if (socket.writable && !answeredWhileArriving(socket)) socket.write(clientErrorAnswer(err));
    linger(socket, bound);
  };
}

/** The raw HTTP/1.1 answer to an error of Node's parser. */
function clientErrorAnswer(err: NodeJS.ErrnoException): string {
  const [status, reason, body] =
    err.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? [
          408,
          "Request Timeout",
          { error: "Request timeout", message: "The request did not arrive in time; send it again" },
        ]
      : err.code === "HPE_HEADER_OVERFLOW"
        ? [
            431,
            "Request Header Fields Too Large",
            { error: "Request header fields too large", message: "The request headers are over 16 KiB" },
          ]
        : [400, "Bad Request", { error: "Bad request", message: "The request is not valid HTTP/1.1" }];
  const text = JSON.stringify(body);
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`;
}

/**
 * The metrics listener's clientError (it takes no bodies, so nothing lingers): Node's parser
 * errors get their G2 body, then the connection is closed.
 */
export function clientError(err: NodeJS.ErrnoException, socket: Duplex) {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  if (socket.writable) socket.write(clientErrorAnswer(err));
  socket.destroy();
}

/**
 * RFC 9112 §3.2: an HTTP/1.1 request without a Host header, or with more than one, is a 400
 * (an empty one too, as Node refused it). Node answers the missing one itself with a bare 400 and
 * no body (its `requireHostHeader`, turned off in http/limits.ts's server options and in the
 * metrics listener's), before any hook could give it a G2 body; so it is refused here instead.
 * Node keeps only the first of several Host lines, so those are counted in the raw headers. An
 * HTTP/1.0 request may have no Host, as Node allows it. Answers the message, or undefined.
 */
export function hostProblem(req: IncomingMessage): string | undefined {
  if (req.httpVersionMajor !== 1 || req.httpVersionMinor !== 1) return undefined;
  let hosts = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if ((req.rawHeaders[i] as string).toLowerCase() === "host") hosts++;
  }
  if (hosts === 1 && req.headers.host) return undefined;
  return hosts > 1
    ? "An HTTP/1.1 request must have one Host header, not several (RFC 9112 section 3.2)"
    : "An HTTP/1.1 request must have a Host header naming the server (RFC 9112 section 3.2)";
}

/**
 * hostProblem's 400, in the first hook of every route (and of the 404 and 405 answers), through
 * the error handler: a G2 body (an OTLP route's Status), before credentials are read; the
 * connection is then closed, as Node closed it.
 */
export function hostRequired(app: FastifyInstance) {
  app.addHook("onRequest", async (req) => {
    const problem = hostProblem(req.raw);
    if (problem) throw new ApiError(400, { error: "Bad request", message: problem }, { connection: "close" });
  });
}

/** Sends an error as its G2 answer. */
export const sendError = (reply: FastifyReply, error: ApiError) =>
  reply.code(error.statusCode).headers(error.headers).send(error.body);

export interface ErrorOptions {
  bodyLimit: number;
  routes: Routes;
  /** A last look at an error answer before it is sent (the credentials plugin's: G3 order). */
  review?: (req: FastifyRequest, error: ApiError) => Promise<ApiError>;
}

/** The error handler, and the 404 and 405 answers of routes the spec does not have. */
export function errorAnswers(app: FastifyInstance, { bodyLimit, routes, review }: ErrorOptions) {
  app.setErrorHandler(async (err, req, reply) => {
    let error = toApiError(err, bodyLimit, req.method);
    if (review) error = await review(req, error);
    if (error.statusCode === 500 || error.statusCode === 503) req.log.error({ err }, "request failed");
    if (otlpRoute(req) === undefined) sendError(reply, error);
    else await sendOtlpError(req, reply, error);
  });
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split("?")[0] ?? "";
    const allowed = routes.allowedOn(path);
    if (allowed) {
      reply
        .code(405)
        .header("allow", allowed.join(", "))
        .send({
          error: "Method not allowed",
          message: `${req.method} is not allowed on ${path}; use ${allowed.join(", ")}`,
        });
      return;
    }
    reply.code(404).send({ error: "Not found", message: `There is no route ${req.method} ${path}` });
  });
}
