/**
 * What GET /metrics shows (docs/decisions/012-metrics.md), in Prometheus's text format 0.0.4:
 * - requests by operation and status, and their durations (http/metrics.ts counts them);
 * - requests refused by reason (401, 413, 429, 503 and which storage fault);
 * - what was taken in: new sessions, events, spans, GenAI log records; and spans and log records
 *   refused one by one inside an OTLP partial success (the services count them: IngestCounts);
 * - storage, asked of the store at each scrape (Store.stats(); for the storage thread that is one
 *   message to it): the write queue, group-commit sizes and commit latency, the database's bytes;
 * - the process (CPU, memory, event-loop lag, GC): prom-client's default metrics.
 *
 * Counting is plain numbers, kept per app (each `Metrics`), so that several apps in one process
 * (the tests) never share a counter, and a request costs a map look-up and a short loop rather
 * than prom-client's label hashing. prom-client renders them: each app gets a Registry of its own
 * at its first scrape, holding metrics whose samples are computed as it renders; the process's
 * default metrics live once per process in a registry of their own (they watch the process, not
 * an app) and are appended. prom-client itself is loaded at the first scrape, so a server that is
 * never scraped does not pay for it at start (B4).
 */
import type { Metric, Registry } from "prom-client";
import type { StorageStats } from "../db/store.ts";
import { Histogram, type HistogramSnapshot } from "../lib/histogram.ts";
import type { IngestCounts, Ingested } from "./context.ts";
import type { InflightBytes } from "./inflight.ts";

/** The media type of the answer: Prometheus's text format 0.0.4 (prom-client's PROMETHEUS_CONTENT_TYPE). */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

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
  | "storage_schema"
  | "inflight_bytes";
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
  "inflight_bytes",
];
const INGESTED: Ingested[] = ["sessions", "events", "spans", "log_records"];
const REJECTED_ITEMS = ["spans", "log_records"] as const;
const SWEPT = ["sessions", "events"] as const;

/** Seconds; from a quick read to a slow storage fault. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** How long a scrape waits for the store's figures before it answers without them (agentmon_storage_up 0). */
const STATS_WAIT_MS = 3000;

type PromClient = typeof import("./prom-client.ts");
let promClient: Promise<PromClient> | undefined;
const loadPromClient = () => {
  promClient ??= import("./prom-client.ts");
  return promClient;
};

let processRegistry: Promise<Registry> | undefined;
/** The process's own figures, collected once per process whatever the number of apps in it. */
function processMetrics(): Promise<Registry> {
  processRegistry ??= loadPromClient().then(({ Registry, collectDefaultMetrics }) => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    return registry;
  });
  return processRegistry;
}

type Sample = { value: number; labels: Record<string, string | number>; metricName?: string };
interface Definition {
  name: string;
  help: string;
  type: "gauge" | "counter" | "histogram";
  samples: () => Sample[];
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

/** A counter per value of one label, every value present from the start (at 0) for alert rules. */
class Counts<L extends string> {
  readonly #values = new Map<L, number>();
  constructor(values: readonly L[]) {
    for (const value of values) this.#values.set(value, 0);
  }
  add(value: L, n: number) {
    this.#values.set(value, (this.#values.get(value) ?? 0) + n);
  }
  samples(label: string): Sample[] {
    return [...this.#values].map(([value, n]) => ({ value: n, labels: { [label]: value } }));
  }
}

/**
 * Requests by operation and status, each a histogram of plain numbers. Both label sets are
 * bounded: the spec's operations, the statuses the server answers; neither is the client's choice.
 */
class RequestTable {
  readonly #byOperation = new Map<string, Map<number, Histogram>>();

  observe(operation: string, status: number, seconds: number) {
    let byStatus = this.#byOperation.get(operation);
    if (byStatus === undefined) {
      byStatus = new Map();
      this.#byOperation.set(operation, byStatus);
    }
    let histogram = byStatus.get(status);
    if (histogram === undefined) {
      histogram = new Histogram(DURATION_BUCKETS);
      byStatus.set(status, histogram);
    }
    histogram.observe(seconds);
  }

  /** Every (operation, status) seen, with its histogram's snapshot. */
  entries() {
    return [...this.#byOperation].flatMap(([operation, byStatus]) =>
      [...byStatus].map(([status, histogram]) => ({ labels: { operation, status }, snapshot: histogram.snapshot() })),
    );
  }
}

export class Metrics implements IngestCounts {
  readonly #storageStats: () => Promise<StorageStats>;
  /** The store's figures as the scrape being rendered got them; undefined when it could not. */
  #storage: StorageStats | undefined;
  #registry: Promise<Registry> | undefined;
  readonly #requests = new RequestTable();
  readonly #refused = new Counts(REJECTIONS);
  readonly #ingested = new Counts(INGESTED);
  readonly #rejectedItems = new Counts(REJECTED_ITEMS);
  /** The ceiling on memory, once an app has one (services/inflight.ts). */
  #inflight: Pick<InflightBytes, "bytes" | "limit"> | undefined;
  readonly #swept = new Counts(SWEPT);

  /** `storageStats`: the store's figures (Store.stats()), asked for at each scrape. */
  constructor(storageStats: () => Promise<StorageStats>) {
    this.#storageStats = storageStats;
  }

  /** One answered request; `rejection` when it was refused for one of the reasons counted. */
  request(operation: string, status: number, seconds: number, rejection?: Rejection) {
    this.#requests.observe(operation, status, seconds);
    if (rejection !== undefined) this.#refused.add(rejection, 1);
  }

  /** Shows the bytes of request bodies in flight and their budget. */
  observeInflight(inflight: Pick<InflightBytes, "bytes" | "limit">) {
    this.#inflight = inflight;
  }

  ingested(kind: Ingested, n: number) {
    if (n > 0) this.#ingested.add(kind, n);
  }

  rejected(kind: (typeof REJECTED_ITEMS)[number], n: number) {
    if (n > 0) this.#rejectedItems.add(kind, n);
  }

  /** Sessions and events the retention sweep removed (services/retention.ts). */
  swept(kind: (typeof SWEPT)[number], n: number) {
    if (n > 0) this.#swept.add(kind, n);
  }

  /** Every metric, as the text GET /metrics answers. */
  async exposition(): Promise<string> {
    const [registry, process] = await Promise.all([this.#registryOnce(), processMetrics()]);
    const storage = await this.#askStorage();
    // The registry calls every metric's get() synchronously as it starts rendering, so each
    // scrape renders the figures it got, even when scrapes overlap.
    this.#storage = storage;
    const own = registry.metrics();
    return (await own) + (await process.metrics());
  }

  #registryOnce(): Promise<Registry> {
    this.#registry ??= loadPromClient().then(({ Registry }) => {
      const registry = new Registry();
      for (const { name, help, type, samples } of this.#definitions()) {
        // prom-client's registry renders any object with a name, a type and get().
        const metric = { name, help, type, aggregator: "sum", get: async () => ({ ...metric, values: samples() }) };
        registry.registerMetric(metric as unknown as Metric);
      }
      return registry;
    });
    return this.#registry;
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

  #definitions(): Definition[] {
    const s = () => this.#storage;
    const one = (value: number | undefined): Sample[] => (value === undefined ? [] : [{ value, labels: {} }]);
    const requests = "agentmon_http_request_duration_seconds";
    return [
      {
        name: "agentmon_http_requests_total",
        help: "HTTP requests answered, by operation (openapi.yaml's operationId; none: no route) and status",
        type: "counter",
        samples: () => this.#requests.entries().map(({ labels, snapshot }) => ({ value: snapshot.count, labels })),
      },
      {
        name: requests,
        help: "Time from a request's arrival to the end of its answer, by operation and status",
        type: "histogram",
        samples: () =>
          this.#requests.entries().flatMap(({ labels, snapshot }) => histogramSamples(requests, snapshot, labels)),
      },
      {
        name: "agentmon_requests_rejected_total",
        help: "Requests refused: unauthorized (401), payload_too_large (413), too_many_requests (429), unavailable (503: shutting down or overloaded), storage_<fault> (503: that storage fault), inflight_bytes (503: the body would pass AGENTMON_INFLIGHT_BYTES)",
        type: "counter",
        samples: () => this.#refused.samples("reason"),
      },
      {
        name: "agentmon_ingested_total",
        help: "Taken in by calls that succeeded: sessions created, events stored by create_events (a retry's, already stored, not counted), OTLP spans and GenAI log records accepted",
        type: "counter",
        samples: () => this.#ingested.samples("kind"),
      },
      {
        name: "agentmon_rejected_total",
        help: "OTLP spans and log records refused one by one inside a partial success (the request itself succeeded)",
        type: "counter",
        samples: () => this.#rejectedItems.samples("kind"),
      },
      {
        name: "agentmon_inflight_bytes",
        help: "Bytes of request bodies being read or held until their answer is sent (raw, and inflated for gzip/deflate bodies)",
        type: "gauge",
        samples: () => one(this.#inflight?.bytes),
      },
      {
        name: "agentmon_inflight_limit_bytes",
        help: "AGENTMON_INFLIGHT_BYTES: past it new request bodies get 503 (reason inflight_bytes)",
        type: "gauge",
        samples: () => one(this.#inflight?.limit),
      },
      {
        name: "agentmon_retention_removed_total",
        help: "Sessions, and their events, removed by the retention sweep (AGENTMON_RETENTION_DAYS, agentmon projects set-retention)",
        type: "counter",
        samples: () => this.#swept.samples("kind"),
      },
      {
        name: "agentmon_storage_up",
        help: "1 when the store answered this scrape with its figures, else 0",
        type: "gauge",
        samples: () => one(s() === undefined ? 0 : 1),
      },
      {
        name: "agentmon_storage_queued_calls",
        help: "Write calls waiting for their group transaction",
        type: "gauge",
        samples: () => one(s()?.queuedCalls),
      },
      {
        name: "agentmon_storage_queued_rows",
        help: "Rows of the write calls waiting for their group transaction",
        type: "gauge",
        samples: () => one(s()?.queuedRows),
      },
      {
        name: "agentmon_storage_thread_pending_calls",
        help: "Calls sent to the storage thread and not answered yet (file databases only)",
        type: "gauge",
        samples: () => one(s()?.thread?.pendingCalls),
      },
      {
        name: "agentmon_storage_thread_backlog_rows",
        help: "Rows sent to the storage thread and not committed yet; past agentmon_storage_thread_backlog_limit_rows writes get 503 (O2)",
        type: "gauge",
        samples: () => one(s()?.thread?.backlogRows),
      },
      {
        name: "agentmon_storage_thread_backlog_limit_rows",
        help: "The most rows the storage thread may have in flight before writes get 503 (O2)",
        type: "gauge",
        samples: () => one(s()?.thread?.maxBacklogRows),
      },
      {
        name: "agentmon_storage_groups_total",
        help: "Group transactions: committed, or failed (rolled back whole by a storage fault)",
        type: "counter",
        samples: () => {
          const stats = s();
          if (stats === undefined) return [];
          return [
            { value: stats.committedGroups, labels: { outcome: "committed" } },
            { value: stats.failedGroups, labels: { outcome: "failed" } },
          ];
        },
      },
      {
        name: "agentmon_storage_group_calls",
        help: "Write calls per committed group transaction",
        type: "histogram",
        samples: () => histogramSamples("agentmon_storage_group_calls", s()?.groupCalls),
      },
      {
        name: "agentmon_storage_group_rows",
        help: "Rows per committed group transaction",
        type: "histogram",
        samples: () => histogramSamples("agentmon_storage_group_rows", s()?.groupRows),
      },
      {
        name: "agentmon_storage_commit_duration_seconds",
        help: "Seconds from BEGIN to the end of COMMIT of each committed group transaction (fsync included)",
        type: "histogram",
        samples: () => histogramSamples("agentmon_storage_commit_duration_seconds", s()?.commitSeconds),
      },
      {
        name: "agentmon_projection_backlog",
        help: "Changes queued for the projector and not projected yet (docs/decisions/033-projections.md); reads catch up on them first",
        type: "gauge",
        samples: () => one(s()?.projection?.backlog),
      },
      {
        name: "agentmon_projection_lag_seconds",
        help: "Age of the oldest change not projected yet: how far behind the writes the projections are (0 when caught up)",
        type: "gauge",
        samples: () => one(s()?.projection?.lagSeconds),
      },
      {
        name: "agentmon_projection_batches_total",
        help: "Projector batches run by this node since it started",
        type: "counter",
        samples: () => one(s()?.projection?.batches),
      },
      {
        name: "agentmon_projection_longest_batch_seconds",
        help: "The longest projector batch since this node started: the longest the projector held the database's write lock",
        type: "gauge",
        samples: () => one(s()?.projection?.longestBatchSeconds),
      },
      {
        name: "agentmon_database_bytes",
        help: "Bytes of the database on disk: its main file and its write-ahead log (in memory: its pages)",
        type: "gauge",
        samples: () => {
          const stats = s();
          if (stats === undefined) return [];
          return [
            { value: stats.databaseBytes, labels: { file: "main" } },
            { value: stats.walBytes, labels: { file: "wal" } },
          ];
        },
      },
    ];
  }
}
