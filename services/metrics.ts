/**
 * What GET /metrics shows (docs/decisions/012-metrics.md), in Prometheus's text format, with
 * prom-client. Each app has a registry of its own, so that several apps in one process (the
 * tests) never share a counter:
 * - requests by operation and status, and their durations (http/metrics.ts counts them, into
 *   histograms of plain numbers: RequestTable);
 * - requests refused by reason (401, 413, 429, 503 and which storage fault);
 * - what was taken in: new sessions, events, spans, GenAI log records; and spans and log records
 *   refused one by one inside an OTLP partial success (the services count them: IngestCounts);
 * - storage, asked of the store at each scrape (Store.stats(); for the storage thread that is one
 *   message to it): the write queue, group-commit sizes and commit latency, the database's bytes.
 * Process figures (CPU, memory, event-loop lag, GC) are prom-client's default metrics, kept once
 * per process in a registry of their own (they watch the process, not an app) and appended.
 */
import { Counter, collectDefaultMetrics, type Metric, Registry } from "prom-client";
import type { StorageStats } from "../db/store.ts";
import { type HistogramSnapshot, Histogram as LibHistogram } from "../lib/histogram.ts";
import type { IngestCounts, Ingested } from "./context.ts";

/** The media type of the answer: Prometheus's text format 0.0.4. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/** Why a request was refused, as the label `reason` of agentmon_requests_rejected_total says it. */
export type Rejection =
  | "unauthorized"
  | "payload_too_large"
  | "too_many_requests"
  | "unavailable"
  | "storage_busy"
  | "storage_full"
  | "storage_unavailable"
  | "storage_behind"
  | "storage_schema";
const REJECTIONS: Rejection[] = [
  "unauthorized",
  "payload_too_large",
  "too_many_requests",
  "unavailable",
  "storage_busy",
  "storage_full",
  "storage_unavailable",
  "storage_behind",
  "storage_schema",
];
const INGESTED: Ingested[] = ["sessions", "events", "spans", "log_records"];

/** Seconds; from a quick read to a slow storage fault. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** How long a scrape waits for the store's figures before it answers without them (agentmon_storage_up 0). */
const STATS_WAIT_MS = 3000;

let processRegistry: Registry | undefined;
/** The process's own figures, collected once per process whatever the number of apps in it. */
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

type Sample = { value: number; labels: Record<string, string | number>; metricName?: string };

/**
 * A metric whose samples are computed when the registry renders it (from the request table, or
 * the last storage snapshot): prom-client's registry renders any object with a name, a type and
 * get().
 */
function fromSnapshot(
  registry: Registry,
  name: string,
  help: string,
  type: "gauge" | "counter" | "histogram",
  samples: () => Sample[],
) {
  const metric = {
    name,
    help,
    type,
    aggregator: "sum",
    get: async () => ({ name, help, type, aggregator: "sum", values: samples() }),
  };
  registry.registerMetric(metric as unknown as Metric);
}

/** A histogram snapshot as Prometheus's _bucket (cumulative), _sum and _count samples. */
function histogramSamples(
  name: string,
  snapshot: HistogramSnapshot | undefined,
  labels: Record<string, string | number> = {},
): Sample[] {
  if (snapshot === undefined) return [];
  const samples: Sample[] = [];
  let cumulative = 0;
  snapshot.bounds.forEach((bound, index) => {
    cumulative += snapshot.counts[index] ?? 0;
    samples.push({ metricName: `${name}_bucket`, labels: { ...labels, le: bound }, value: cumulative });
  });
  samples.push({ metricName: `${name}_bucket`, labels: { ...labels, le: "+Inf" }, value: snapshot.count });
  samples.push({ metricName: `${name}_sum`, labels, value: snapshot.sum });
  samples.push({ metricName: `${name}_count`, labels, value: snapshot.count });
  return samples;
}

/**
 * Requests by operation and status, each a histogram of plain numbers (lib/histogram.ts): a map
 * look-up and a short loop per request, where prom-client's labelled metrics hash their labels on
 * every call (about 30 times the cost, measured). Both label sets are bounded: the spec's
 * operations, the statuses the server answers.
 */
class RequestTable {
  readonly #byOperation = new Map<string, Map<number, LibHistogram>>();

  observe(operation: string, status: number, seconds: number) {
    let byStatus = this.#byOperation.get(operation);
    if (byStatus === undefined) {
      byStatus = new Map();
      this.#byOperation.set(operation, byStatus);
    }
    let histogram = byStatus.get(status);
    if (histogram === undefined) {
      histogram = new LibHistogram(DURATION_BUCKETS);
      byStatus.set(status, histogram);
    }
    histogram.observe(seconds);
  }

  /** Every (operation, status) seen, with its histogram's snapshot. */
  *entries() {
    for (const [operation, byStatus] of this.#byOperation) {
      for (const [status, histogram] of byStatus)
        yield { labels: { operation, status }, snapshot: histogram.snapshot() };
    }
  }
}

export class Metrics implements IngestCounts {
  readonly #registry = new Registry();
  readonly #storageStats: () => Promise<StorageStats>;
  #storage: StorageStats | undefined;
  readonly #requests = new RequestTable();
  readonly #refused = new Counter({
    name: "agentmon_requests_rejected_total",
    help: "Requests refused: unauthorized (401), payload_too_large (413), too_many_requests (429), unavailable (503: shutting down or overloaded), storage_<fault> (503: the storage fault)",
    labelNames: ["reason"] as const,
    registers: [this.#registry],
  });
  readonly #ingested = new Counter({
    name: "agentmon_ingested_total",
    help: "Taken in by calls that succeeded: sessions created, events sent to create_events, OTLP spans and GenAI log records accepted",
    labelNames: ["kind"] as const,
    registers: [this.#registry],
  });
  readonly #rejectedItems = new Counter({
    name: "agentmon_rejected_total",
    help: "OTLP spans and log records refused one by one inside a partial success (the request itself succeeded)",
    labelNames: ["kind"] as const,
    registers: [this.#registry],
  });

  /** `storageStats`: the store's figures (Store.stats()), asked for at each scrape. */
  constructor(storageStats: () => Promise<StorageStats>) {
    this.#storageStats = storageStats;
    processMetrics();
    // Every series that alert rules read exists from the start, at 0.
    for (const reason of REJECTIONS) this.#refused.inc({ reason }, 0);
    for (const kind of INGESTED) this.#ingested.inc({ kind }, 0);
    for (const kind of ["spans", "log_records"]) this.#rejectedItems.inc({ kind }, 0);
    this.#requestMetrics();
    this.#storageMetrics();
  }

  /** One answered request; `rejection` when it was refused for one of the reasons counted. */
  request(operation: string, status: number, seconds: number, rejection?: Rejection) {
    this.#requests.observe(operation, status, seconds);
    if (rejection !== undefined) this.#refused.inc({ reason: rejection });
  }

  ingested(kind: Ingested, n: number) {
    if (n > 0) this.#ingested.inc({ kind }, n);
  }

  rejected(kind: "spans" | "log_records", n: number) {
    if (n > 0) this.#rejectedItems.inc({ kind }, n);
  }

  /** Every metric, as the text GET /metrics answers. */
  async exposition(): Promise<string> {
    this.#storage = await this.#askStorage();
    // The registry reads the snapshot synchronously as it starts rendering, so concurrent
    // scrapes each render their own.
    const own = this.#registry.metrics();
    return (await own) + (await processMetrics().metrics());
  }

  /** The store's figures, or undefined when it cannot say (stopped, or slower than STATS_WAIT_MS). */
  async #askStorage(): Promise<StorageStats | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(resolve, STATS_WAIT_MS, undefined);
      timer.unref();
    });
    try {
      return await Promise.race([this.#storageStats(), late]);
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  #requestMetrics() {
    fromSnapshot(
      this.#registry,
      "agentmon_http_requests_total",
      "HTTP requests answered, by operation (openapi.yaml's operationId; none: no route) and status",
      "counter",
      () => [...this.#requests.entries()].map(({ labels, snapshot }) => ({ value: snapshot.count, labels })),
    );
    fromSnapshot(
      this.#registry,
      "agentmon_http_request_duration_seconds",
      "Time from a request's arrival to the end of its answer, by operation and status",
      "histogram",
      () =>
        [...this.#requests.entries()].flatMap(({ labels, snapshot }) =>
          histogramSamples("agentmon_http_request_duration_seconds", snapshot, labels),
        ),
    );
  }

  #storageMetrics() {
    const r = this.#registry;
    const s = () => this.#storage;
    const one = (value: number | undefined): Sample[] => (value === undefined ? [] : [{ value, labels: {} }]);
    fromSnapshot(
      r,
      "agentmon_storage_up",
      "1 when the store answered this scrape with its figures, else 0",
      "gauge",
      () => one(s() === undefined ? 0 : 1),
    );
    fromSnapshot(r, "agentmon_storage_queued_calls", "Write calls waiting for their group transaction", "gauge", () =>
      one(s()?.queuedCalls),
    );
    fromSnapshot(
      r,
      "agentmon_storage_queued_rows",
      "Rows of the write calls waiting for their group transaction",
      "gauge",
      () => one(s()?.queuedRows),
    );
    fromSnapshot(
      r,
      "agentmon_storage_thread_pending_calls",
      "Calls sent to the storage thread and not answered yet (file databases only)",
      "gauge",
      () => one(s()?.thread?.pendingCalls),
    );
    fromSnapshot(
      r,
      "agentmon_storage_thread_backlog_rows",
      "Rows sent to the storage thread and not committed yet; past agentmon_storage_thread_backlog_limit_rows writes get 503 (O2)",
      "gauge",
      () => one(s()?.thread?.backlogRows),
    );
    fromSnapshot(
      r,
      "agentmon_storage_thread_backlog_limit_rows",
      "The most rows the storage thread may have in flight before writes get 503 (O2)",
      "gauge",
      () => one(s()?.thread?.maxBacklogRows),
    );
    fromSnapshot(
      r,
      "agentmon_storage_groups_total",
      "Group transactions: committed, or failed (rolled back whole by a storage fault)",
      "counter",
      () => {
        const stats = s();
        if (stats === undefined) return [];
        return [
          { value: stats.committedGroups, labels: { outcome: "committed" } },
          { value: stats.failedGroups, labels: { outcome: "failed" } },
        ];
      },
    );
    fromSnapshot(r, "agentmon_storage_group_calls", "Write calls per committed group transaction", "histogram", () =>
      histogramSamples("agentmon_storage_group_calls", s()?.groupCalls),
    );
    fromSnapshot(r, "agentmon_storage_group_rows", "Rows per committed group transaction", "histogram", () =>
      histogramSamples("agentmon_storage_group_rows", s()?.groupRows),
    );
    fromSnapshot(
      r,
      "agentmon_storage_commit_duration_seconds",
      "Seconds from BEGIN to the end of COMMIT of each committed group transaction (fsync included)",
      "histogram",
      () => histogramSamples("agentmon_storage_commit_duration_seconds", s()?.commitSeconds),
    );
    fromSnapshot(
      r,
      "agentmon_database_bytes",
      "Bytes of the database on disk: its main file and its write-ahead log (in memory: its pages)",
      "gauge",
      () => {
        const stats = s();
        if (stats === undefined) return [];
        return [
          { value: stats.databaseBytes, labels: { file: "main" } },
          { value: stats.walBytes, labels: { file: "wal" } },
        ];
      },
    );
  }
}
