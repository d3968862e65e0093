/**
 * What the OTLP routes (shared/spec/otlp.md T1, T2, T10) need of HTTP beyond the other routes:
 * their own body limit, protobuf bodies, OTLP/JSON whose 64-bit integers keep their digits, and
 * failures as a `google.rpc.Status` in the request's media type. A route is an OTLP route when
 * its operation in openapi.yaml says `x-fastify-config: { otlp: <message> }`, which
 * fastify-openapi-glue puts on its route's config.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type ApiError, unsupportedMediaType } from "../domain/errors.ts";
import { type OtlpBinary, otlpBinary } from "../ingest/otlp/binary.ts";

/** What an OTLP route's handler gets as its body: bytes of protobuf, or parsed OTLP/JSON. */
export type OtlpBody = Uint8Array | Record<string, unknown>;

const PROTOBUF = "application/x-protobuf";

/** Which OTLP message a route takes (`traces`, `logs`, `metrics`), or undefined for the other routes. */
export const otlpRoute = (req: FastifyRequest): string | undefined =>
  (req.routeOptions.config as { otlp?: string } | undefined)?.otlp;

/** Whether the request's body is protobuf: its Content-Type, case-insensitively, parameters aside. */
export const isProtobuf = (req: FastifyRequest): boolean =>
  (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() === PROTOBUF;

interface PartialSuccess {
  rejectedSpans?: string;
  rejectedLogRecords?: string;
  errorMessage: string;
}

/** A handler's JSON answer (OTLP/JSON) as the protobuf message of its route. */
function protobufAnswer(binary: OtlpBinary, kind: string, answer: { partialSuccess?: PartialSuccess }): Uint8Array {
  const partial = answer.partialSuccess;
  const rejected = Number(partial?.rejectedSpans ?? partial?.rejectedLogRecords ?? 0);
  const detail = partial ? { rejected, message: partial.errorMessage } : undefined;
  if (kind === "traces") return binary.encodeTraceResponse(detail);
  if (kind === "logs") return binary.encodeLogsResponse(detail);
  return binary.encodeMetricsResponse();
}

/**
 * The OTLP routes get their own body limit (T2), counted by http/body.ts before and after
 * inflation, and answer in the request's media type (T1): their handlers return the OTLP/JSON
 * answer the spec types, which is sent as it is, or encoded as its protobuf message.
 */
export function otlpRoutes(app: FastifyInstance, bodyLimit: number) {
  // Route-level, so that no other route pays for a hook.
  app.addHook("onRoute", (route) => {
    const kind = (route.config as { otlp?: string } | undefined)?.otlp;
    if (kind === undefined) return;
    route.bodyLimit = bodyLimit;
    const answerInKind = async (req: FastifyRequest, reply: FastifyReply) => {
      if (isProtobuf(req)) {
        const binary = await otlpBinary();
        reply
          .type(PROTOBUF)
          .serializer((answer) => Buffer.from(protobufAnswer(binary, kind, answer as object)) as never);
      } else {
        reply.type("application/json; charset=utf-8").serializer((answer) => JSON.stringify(answer));
      }
    };
    route.preHandler = [...[route.preHandler ?? []].flat(), answerInKind];
  });
}

/** The gRPC code of each HTTP status an OTLP route answers (google.rpc.Code). */
export const GRPC_CODES: Record<number, number> = {
  400: 3, // INVALID_ARGUMENT
  401: 16, // UNAUTHENTICATED
  403: 7, // PERMISSION_DENIED
  404: 5, // NOT_FOUND
  405: 12, // UNIMPLEMENTED
  408: 4, // DEADLINE_EXCEEDED
  409: 6, // ALREADY_EXISTS
  413: 8, // RESOURCE_EXHAUSTED
  415: 3, // INVALID_ARGUMENT
  429: 8, // RESOURCE_EXHAUSTED
  503: 14, // UNAVAILABLE
};

/**
 * T10: an OTLP route's failure as a google.rpc.Status, binary for a protobuf request, JSON
 * otherwise and whenever the media type itself was refused (415). The status and headers
 * (Retry-After) are the same as any route's.
 */
export async function sendOtlpError(req: FastifyRequest, reply: FastifyReply, error: ApiError) {
  failures.set(req.raw, error);
  const code = GRPC_CODES[error.statusCode] ?? 13; // INTERNAL
  // A refused media type gets the OTLP advice, not the JSON-only advice of the other routes.
  const message =
    error.statusCode === 415 && error.body.message === unsupportedMediaType().body.message
      ? "Send the body as application/x-protobuf or application/json (OTLP/HTTP)"
      : error.body.message;
  reply.code(error.statusCode).headers(error.headers);
  if (isProtobuf(req) && error.statusCode !== 415) {
    const binary = await otlpBinary();
    return reply.type(PROTOBUF).send(Buffer.from(binary.encodeStatus(code, message)));
  }
  return reply.type("application/json; charset=utf-8").send({ code, message });
}

/**
 * The failure each OTLP request was answered with, by its raw request, so that the OTLP/gRPC edge
 * (http/grpc.ts), which sends its calls through these routes, can tell a refusal it should ask
 * the client to retry after (the memory ceiling, O2) from one it should not, beyond the status.
 */
const failures = new WeakMap<object, ApiError>();

/** The failure an OTLP request (its raw request) was answered with, if it failed. */
export const otlpFailure = (raw: object): ApiError | undefined => failures.get(raw);
