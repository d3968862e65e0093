/**
 * Shared by the OTLP/gRPC tests (docs/decisions/028-otlp-grpc.md): agentmon with its gRPC port
 * open on 127.0.0.1, a grpc-js client of the three collector services that sends and receives
 * bytes (so that a test may send any bytes at all), and reading a call's status, its RetryInfo
 * and the read API's export of a session.
 */
import * as grpc from "@grpc/grpc-js";
import type { Test } from "tap";
import type { AppOptions } from "../app.ts";
import type { Store } from "../db/store.ts";
import { google } from "../generated/otlp.js";
import { exportMethod, type GrpcListener, otlpGrpcListener } from "../http/grpc.ts";
import { API_KEY, build, MIB, type TestApp } from "./helper.ts";

export type Service = "traces" | "logs" | "metrics";

const SERVICES: Record<Service, string> = {
  traces: "opentelemetry.proto.collector.trace.v1.TraceService",
  logs: "opentelemetry.proto.collector.logs.v1.LogsService",
  metrics: "opentelemetry.proto.collector.metrics.v1.MetricsService",
};

/** What a call came back with: OK and the response's bytes, or a status. */
export interface Outcome {
  code: number;
  details: string;
  response?: Buffer;
  /** The RetryInfo's delay in seconds, when the status carried one in grpc-status-details-bin. */
  retryAfter?: number;
  /** Every type URL of the status's details. */
  detailTypes: string[];
}

/** The status details of grpc-status-details-bin: its code, message and RetryInfo. */
function readDetails(metadata: grpc.Metadata | undefined, outcome: Outcome) {
  const bin = metadata?.get("grpc-status-details-bin")[0];
  if (!(bin instanceof Buffer)) return;
  const status = google.rpc.Status.decode(bin);
  outcome.detailTypes = status.details.map((detail) => detail.type_url ?? "");
  for (const detail of status.details) {
    if (detail.type_url !== "type.googleapis.com/google.rpc.RetryInfo") continue;
    const info = google.rpc.RetryInfo.decode(detail.value ?? new Uint8Array(0));
    outcome.retryAfter = Number(info.retryDelay?.seconds ?? 0);
  }
  if (status.code !== outcome.code) outcome.details += ` (details say code ${status.code})`;
}

export interface GrpcClient {
  /** One unary call of `service`'s Export with these bytes and this metadata (gzip: grpc-encoding gzip). */
  call(service: Service, body: Uint8Array, metadata?: Record<string, string>, gzip?: boolean): Promise<Outcome>;
  close(): void;
}

/** A client of the three services at `address` (host:port), closed at teardown. */
export function grpcClient(t: Test, address: string): GrpcClient {
  const methods = Object.fromEntries(Object.entries(SERVICES).map(([service, name]) => [service, exportMethod(name)]));
  const Client = grpc.makeGenericClientConstructor(methods, "OtlpCollector");
  const plain = new Client(address, grpc.credentials.createInsecure());
  const gzipped = new Client(address, grpc.credentials.createInsecure(), {
    "grpc.default_compression_algorithm": grpc.compressionAlgorithms.gzip,
  });
  const close = () => {
    plain.close();
    gzipped.close();
  };
  t.teardown(close);
  const call = (service: Service, body: Uint8Array, headers: Record<string, string> = {}, gzip = false) =>
    new Promise<Outcome>((resolve) => {
      const metadata = new grpc.Metadata();
      for (const [name, value] of Object.entries(headers)) metadata.set(name, value);
      const client = (gzip ? gzipped : plain) as unknown as Record<
        Service,
        (
          body: Buffer,
          metadata: grpc.Metadata,
          done: (error: grpc.ServiceError | null, response?: Buffer) => void,
        ) => void
      >;
      client[service](Buffer.from(body), metadata, (error, response) => {
        if (error) {
          const outcome: Outcome = { code: error.code, details: error.details, detailTypes: [] };
          readDetails(error.metadata, outcome);
          resolve(outcome);
        } else {
          resolve({ code: grpc.status.OK, details: "", response: response ?? Buffer.alloc(0), detailTypes: [] });
        }
      });
    });
  return { call, close };
}

export const BEARER = { authorization: `Bearer ${API_KEY}` };

/**
 * agentmon (test/helper.ts build()) with its OTLP/gRPC port open on 127.0.0.1, closed at
 * teardown before the app, and a client of it.
 */
export async function grpcAgentmon(
  t: Test,
  options: Partial<AppOptions> & { store?: Store; bodyLimit?: number } = {},
): Promise<{ env: TestApp; listener: GrpcListener; client: GrpcClient }> {
  const { bodyLimit, ...appOptions } = options;
  const env = await build(t, appOptions);
  const listener = await otlpGrpcListener(env.app, {
    host: "127.0.0.1",
    port: 0,
    bodyLimit: bodyLimit ?? options.otlpBodyLimit ?? 16 * MIB,
  });
  // Teardowns run last first: the listener closes before the app (registered earlier) does.
  t.teardown(() => listener.close(0));
  const client = grpcClient(t, `127.0.0.1:${listener.port}`);
  return { env, listener, client };
}

/** A trace id (32 hex digits) as its session id (T12). */
export const sessionOf = (traceId: string) =>
  `${traceId.slice(0, 8)}-${traceId.slice(8, 12)}-${traceId.slice(12, 16)}-${traceId.slice(16, 20)}-${traceId.slice(20)}`;

/**
 * The session's export through the read API (status and body). A score's author id (the id of
 * each app's own key record) and created_at (its receive time) are each app's own: left out, so
 * that two apps' exports of the same requests compare equal.
 */
export async function exported(env: TestApp, sessionId: string) {
  const res = await env.inject({
    method: "GET",
    url: `/v2/sessions/${sessionId}/export`,
    headers: { "x-agentmon-api-key": API_KEY },
  });
  if (res.statusCode !== 200) return { status: res.statusCode, body: res.body };
  const body = res.json();
  if (Array.isArray(body.scores)) {
    body.scores = body.scores.map(
      ({ created_at: _, author, ...score }: { created_at: string; author: { type: string } }) => ({
        ...score,
        author: { type: author.type },
      }),
    );
  }
  return { status: res.statusCode, body };
}

/**
 * A store whose span and log writes wait at a gate until `open()`: `entered` resolves once a
 * write is waiting there, so a test holds a call in flight without a timer.
 */
export function gatedStore(store: Store) {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let entered!: () => void;
  const waiting = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const gated = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      if (property !== "ingestTraces" && property !== "attachSpanRecords") return value.bind(target);
      return async (...args: unknown[]) => {
        entered();
        await gate;
        return value.apply(target, args);
      };
    },
  });
  return { store: gated, open, entered: waiting };
}
