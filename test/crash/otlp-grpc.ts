/**
 * The crash test's OTLP/gRPC clients (docs/decisions/028-otlp-grpc.md): batches made as
 * test/crash/otlp.ts makes them, as protobuf, sent to the TraceService's Export on the server's
 * gRPC port. An answer is read as its HTTP twin would be: OK is a 200 (complete when nothing was
 * rejected); UNAVAILABLE or RESOURCE_EXHAUSTED carrying a RetryInfo is the server's refusal (503:
 * nothing stored); a status without details that a lost connection gives (UNAVAILABLE, CANCELLED,
 * DEADLINE_EXCEEDED, INTERNAL for a reset stream) is no answer at all (0: the kill); any other
 * status is a problem.
 */
import * as grpc from "@grpc/grpc-js";
import { exportMethod } from "../../http/grpc.ts";
import { decodeTraceResponse } from "../otlp.encode.ts";
import { nextOtlpBatch, type OtlpBatch, type OtlpClient } from "./otlp.ts";
import type { SendNext, Sent } from "./round.ts";

export const OTLP_GRPC_CLIENTS = 2;
const REQUEST_TIMEOUT_MS = 30_000;

const TraceService = grpc.makeGenericClientConstructor(
  { Export: exportMethod("opentelemetry.proto.collector.trace.v1.TraceService") },
  "TraceService",
);
type ExportClient = grpc.Client & {
  Export(
    body: Buffer,
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    done: (error: grpc.ServiceError | null, response?: Buffer) => void,
  ): void;
};

/** One client per server address: a restarted server has a new port, and the old client is closed. */
let current: { address: string; client: ExportClient } | undefined;
function clientFor(address: string): ExportClient {
  if (current?.address !== address) {
    current?.client.close();
    const client = new TraceService(address, grpc.credentials.createInsecure()) as unknown as ExportClient;
    current = { address, client };
  }
  return current.client;
}

export function closeGrpcClients() {
  current?.client.close();
  current = undefined;
}

const LOST = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.CANCELLED,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.INTERNAL,
]);

/** Sends the batch over gRPC; the status its HTTP twin would have had (see above). */
export function sendOtlpGrpc(address: string, apiKey: string, batch: OtlpBatch) {
  return new Promise<{ status: number; complete: boolean; answer: unknown }>((resolve) => {
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${apiKey}`);
    const deadline = Date.now() + REQUEST_TIMEOUT_MS;
    clientFor(address).Export(Buffer.from(batch.body), metadata, { deadline }, (error, response) => {
      if (!error) {
        const answer = decodeTraceResponse(response ?? Buffer.alloc(0));
        resolve({ status: 200, complete: answer.partialSuccess === undefined, answer });
        return;
      }
      const detailed = (error.metadata?.get("grpc-status-details-bin").length ?? 0) > 0;
      const retryable = error.code === grpc.status.UNAVAILABLE || error.code === grpc.status.RESOURCE_EXHAUSTED;
      const status = detailed && retryable ? 503 : !detailed && LOST.has(error.code) ? 0 : 600 + error.code;
      resolve({ status, complete: false, answer: `${grpc.status[error.code]}: ${error.details}` });
    });
  });
}

/** Batches acknowledged over gRPC itself (not by a retry over HTTP), so a test sees gRPC was used. */
export const grpcAcked = { batches: 0 };

/** A gRPC client's next batch, made, sent to the server's gRPC port now, and its state recorded. */
export const otlpGrpcSender =
  (client: OtlpClient, apiKey: string, address: () => string): SendNext =>
  async () => {
    const batch = nextOtlpBatch(client, "protobuf");
    const answer = await sendOtlpGrpc(address(), apiKey, batch);
    const sent: Sent = { status: answer.status, items: batch.spans.length };
    if (answer.status === 0) return sent;
    batch.state = answer.status === 200 ? "acked" : "refused";
    if (answer.status === 200) grpcAcked.batches++;
    const label = `otlp/grpc ${batch.spans[0]?.id} (${batch.spans.length} spans)`;
    if (answer.status === 200 && !answer.complete) sent.problem = `${label}: OK ${JSON.stringify(answer.answer)}`;
    if (answer.status !== 200 && answer.status !== 503) sent.problem = `${label}: ${answer.answer}`;
    return sent;
  };
