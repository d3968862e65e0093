/**
 * OTLP over gRPC (docs/decisions/028-otlp-grpc.md): the collector services' Export methods of
 * traces, logs and metrics on a port of their own (AGENTMON_OTLP_GRPC_PORT), beside OTLP/HTTP.
 *
 * The edge only translates. Each call becomes the OTLP/HTTP request it would have been: its bytes
 * (grpc-js reads them, gunzips a `grpc-encoding: gzip` message, and refuses one over the body
 * limit itself) are sent as `application/x-protobuf` to `POST /v1/traces`, `/v1/logs` or
 * `/v1/metrics` of the same app (Fastify's inject: no socket), with the credential metadata as
 * headers and the caller's address. So every rule of those routes holds for gRPC by construction:
 * T7's credentials, 4.6 and O3, the scopes (4.7), the body limit, the memory ceiling in the same
 * budget (decision 019), NUL refusal (decision 017), decoding (T10), the partial success (T8),
 * G7, the metrics and the log line. The route's answer is the gRPC answer: its protobuf body is
 * the Export*ServiceResponse as it is, and its failure becomes the status the OTLP specification
 * gives it (failureStatus), with a google.rpc.RetryInfo when the client should retry.
 *
 * @grpc/grpc-js is loaded only when the port is asked for, so a server without it does not pay for
 * the module at start.
 */
import type {
  Metadata,
  MethodDefinition,
  Server,
  ServerUnaryCall,
  ServiceDefinition,
  sendUnaryData,
  UntypedServiceImplementation,
} from "@grpc/grpc-js";
import type { FastifyInstance } from "fastify";
import { ApiError, internalError } from "../domain/errors.ts";
import { encodeStatus } from "../ingest/otlp/decode.ts";
import { InflightRefusal } from "./inflight.ts";
import { OverloadRefusal } from "./limits.ts";
import { GRPC_CODES, otlpFailure } from "./otlp.ts";

/** google.rpc.Code values this edge answers itself. */
const INTERNAL = 13;
const RESOURCE_EXHAUSTED = 8;
const UNAVAILABLE = 14;

/** The three collector services, each with its one method, and the OTLP/HTTP route it goes to. */
const SERVICES = [
  { service: "opentelemetry.proto.collector.trace.v1.TraceService", route: "/v1/traces" },
  { service: "opentelemetry.proto.collector.logs.v1.LogsService", route: "/v1/logs" },
  { service: "opentelemetry.proto.collector.metrics.v1.MetricsService", route: "/v1/metrics" },
] as const;

/** The metadata a call's OTLP/HTTP request carries as headers: T7's credentials, and the proxy's address. */
const FORWARDED = ["authorization", "x-agentmon-api-key", "x-agentops-api-key", "x-forwarded-for"] as const;

/** Seconds a client is asked to wait when the server is stopping. */
const SHUTDOWN_RETRY_AFTER = 5;

/** Bytes in, bytes out: the messages are decoded and encoded by the routes (ingest/otlp/). */
const identity = (bytes: Buffer) => bytes;

/**
 * The Export method of an OTLP collector service, its messages left as bytes: the server's, and
 * the one the tests, the crash test and the bench call it through.
 */
export const exportMethod = (service: string): MethodDefinition<Buffer, Buffer> => ({
  path: `/${service}/Export`,
  requestStream: false,
  responseStream: false,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
  originalName: "export",
});

/** A service of one unary method, `Export`. */
const exportService = (service: string): ServiceDefinition<UntypedServiceImplementation> => ({
  Export: exportMethod(service),
});

/** The status of a call that failed: its code, its message, and when to retry (seconds) if it may be. */
export interface GrpcFailure {
  code: number;
  message: string;
  retryAfter?: number | undefined;
}

/**
 * An OTLP route's failure as the OTLP/gRPC status (opentelemetry-proto specification.md, "OTLP/gRPC
 * Response"): RESOURCE_EXHAUSTED is retryable only with a RetryInfo, so it carries one when the
 * refusal passes (the per-key rate and 4.6's failed-check limit, 429; the memory ceiling and O2's
 * event-loop lag, 503) and none when it does not (the body limit, 413); UNAVAILABLE, with its
 * RetryInfo, when the server stops or storage is unavailable (the other 503s). Everything else
 * keeps T10's code (GRPC_CODES), so a bad body is INVALID_ARGUMENT and never INTERNAL.
 */
export function failureStatus(error: ApiError): GrpcFailure {
  const message = error.body.message;
  const retryHeader = Number(error.headers["retry-after"]);
  const retryAfter = Number.isFinite(retryHeader) && retryHeader > 0 ? retryHeader : undefined;
  if (error.statusCode === 429) return { code: RESOURCE_EXHAUSTED, message, retryAfter: retryAfter ?? 1 };
  if (error.statusCode === 503) {
    const overloaded = error instanceof InflightRefusal || error instanceof OverloadRefusal;
    return { code: overloaded ? RESOURCE_EXHAUSTED : UNAVAILABLE, message, retryAfter: retryAfter ?? 1 };
  }
  return { code: GRPC_CODES[error.statusCode] ?? INTERNAL, message };
}

/** The caller's address, as `req.ip` would be over HTTP: grpc-js's peer (`host:port`) without its port. */
export function peerAddress(peer: string): string {
  const host = /^(.*):\d+$/.exec(peer)?.[1] ?? peer;
  return host.replace(/^\[(.*)\]$/, "$1");
}

export interface GrpcListener {
  /** Where the services are served, such as `http://127.0.0.1:4317`. */
  url: string;
  port: number;
  /**
   * Stops taking calls and waits for those in flight to be answered, at most `graceMs`; then
   * ends the ones left (their clients see CANCELLED or UNAVAILABLE, and retry).
   */
  close(graceMs?: number): Promise<void>;
}

export interface GrpcOptions {
  host: string;
  port: number;
  /** The OTLP body limit (otlp.md T2): the largest message, before and after gzip. */
  bodyLimit: number;
}

/**
 * AGENTMON_OTLP_GRPC_PORT: the OTLP/gRPC services, on the app's host, in plaintext (h2c), as the
 * OTLP/HTTP port is. Close it (and let its calls drain) before the app closes: a call in flight
 * goes through the app.
 */
export async function otlpGrpcListener(app: FastifyInstance, options: GrpcOptions): Promise<GrpcListener> {
  const grpc = await import("@grpc/grpc-js");
  const server: Server = new grpc.Server({
    "grpc.max_receive_message_length": options.bodyLimit,
    // No channelz service is served, so its per-call bookkeeping is not kept either.
    "grpc.enable_channelz": 0,
  });
  /** A failure's status, with its RetryInfo in `grpc-status-details-bin` when it has one. */
  const status = (failure: GrpcFailure) => {
    const metadata: Metadata = new grpc.Metadata();
    if (failure.retryAfter !== undefined) {
      const details = encodeStatus(failure.code, failure.message, failure.retryAfter);
      metadata.set("grpc-status-details-bin", Buffer.from(details));
    }
    return { code: failure.code, details: failure.message, metadata };
  };

  const exportTo = (route: string) => (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
    const headers: Record<string, string> = { "content-type": "application/x-protobuf" };
    for (const name of FORWARDED) {
      const value = call.metadata.get(name)[0];
      if (typeof value === "string") headers[name] = value;
    }
    app
      .inject({
        method: "POST",
        url: route,
        headers,
        payload: call.request,
        remoteAddress: peerAddress(call.getPeer()),
      })
      .then(
        (res) => {
          if (res.statusCode === 200) {
            callback(null, res.rawPayload);
            return;
          }
          // Every failure of an OTLP route passes through its error handler (sendOtlpError); one
          // that did not (none is known) keeps its HTTP status's meaning.
          const retryAfter = res.headers["retry-after"];
          const error =
            otlpFailure(res.raw.req) ??
            new ApiError(
              res.statusCode,
              { error: "Refused", message: `The request was refused (HTTP ${res.statusCode})` },
              typeof retryAfter === "string" ? { "retry-after": retryAfter } : {},
            );
          callback(status(failureStatus(error)));
        },
        (error: { code?: string }) => {
          // The app closed while the call was being read (a stop that did not wait for it): the
          // client retries, here once the server is back, or elsewhere.
          if (error.code === "FST_ERR_REOPENED_CLOSE_SERVER") {
            const message = "The server is shutting down; retry in a moment";
            callback(status({ code: UNAVAILABLE, message, retryAfter: SHUTDOWN_RETRY_AFTER }));
            return;
          }
          app.log.error({ err: error, route }, "OTLP/gRPC call failed");
          callback(status(failureStatus(internalError())));
        },
      );
  };

  for (const { service, route } of SERVICES) {
    server.addService(exportService(service), { Export: exportTo(route) });
  }

  const bracketed = options.host.includes(":") ? `[${options.host}]` : options.host;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${bracketed}:${options.port}`, grpc.ServerCredentials.createInsecure(), (error, bound) => {
      if (error) reject(error);
      else resolve(bound);
    });
  });

  let closed: Promise<void> | undefined;
  return {
    url: `http://${bracketed}:${port}`,
    port,
    close: (graceMs = 30_000) => {
      closed ??= new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      return closed;
    },
  };
}
