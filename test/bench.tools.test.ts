/**
 * The benchmarks' own small parts (issue 24's instruments), without running a benchmark: the
 * GET /metrics parser that reads the projector's lag, the table-to-group attribution of
 * bench:storage, and the arguments of bench:storage and the load generator's child process.
 */
import t from "tap";
import { parseScenarios } from "../scripts/bench/against.ts";
import { lagOf, orNa, sampleOf, summarize } from "../scripts/bench/lag.ts";
import { loadArgs, parseLoadArgs } from "../scripts/bench/load-child.ts";
import { attribute, groupOf } from "../scripts/bench/storage-groups.ts";
import { parseStorageArgs } from "../scripts/bench-storage.ts";

const EXPOSITION = `# HELP agentmon_projection_backlog Changes committed but not projected yet.
# TYPE agentmon_projection_backlog gauge
agentmon_projection_backlog{projection="session_rollups"} 120
agentmon_projection_backlog{projection="event_search"} 30
# HELP agentmon_projection_lag_seconds Age of the oldest change not projected yet.
# TYPE agentmon_projection_lag_seconds gauge
agentmon_projection_lag_seconds{projection="session_rollups"} 0.25
agentmon_projection_lag_seconds{projection="event_search"} 1.5
agentmon_projection_backlog_total 999
agentmon_storage_up 1
`;

t.test("the projector's gauges are read from a scrape, summed or the largest", async (t) => {
  t.same(lagOf(EXPOSITION), { agentmon_projection_backlog: 150, agentmon_projection_lag_seconds: 1.5 });
  t.equal(sampleOf("agentmon_projection_backlog 7\n", "agentmon_projection_backlog"), 7, "without labels");
  t.equal(sampleOf("agentmon_projection_backlog 7 1700000000000\n", "agentmon_projection_backlog"), 7, "timestamp");
  t.equal(sampleOf('x{a="}"} 2\n', "x"), 2, "a brace inside a label value");
  t.equal(sampleOf("x +Inf\n", "x"), Number.POSITIVE_INFINITY);
  t.equal(sampleOf("x_total 3\nxy 4\n", "x"), undefined, "other metrics sharing the prefix are not it");
  t.equal(sampleOf("x garbage\n", "x"), undefined, "a malformed value is skipped");
  t.same(
    lagOf("agentmon_storage_up 1\n"),
    { agentmon_projection_backlog: undefined, agentmon_projection_lag_seconds: undefined },
    "a server without a projector: no value, not zero",
  );
});

t.test("lag summaries: max and nearest-rank p99, scrapes without the gauge counted apart", async (t) => {
  const samples = Array.from({ length: 100 }, (_, i) => ({
    agentmon_projection_backlog: i + 1,
    agentmon_projection_lag_seconds: i < 10 ? undefined : i / 10,
  }));
  t.same(summarize(samples, "agentmon_projection_backlog"), { scrapes: 100, missing: 0, max: 100, p99: 99 });
  const lag = summarize(samples, "agentmon_projection_lag_seconds");
  t.equal(lag.missing, 10);
  t.equal(lag.max, 9.9);
  t.same(summarize([], "agentmon_projection_backlog"), { scrapes: 0, missing: 0, max: undefined, p99: undefined });
  t.equal(orNa(undefined), "n/a");
  t.equal(orNa(12345), "12,345");
});

t.test("tables and indexes are attributed to raw rows, a projection, or other", async (t) => {
  t.same(groupOf("events"), { kind: "raw", group: "events" });
  t.same(groupOf("events_by_session_time", "events"), { kind: "raw", group: "events" }, "an index: its table");
  t.same(groupOf("sqlite_autoindex_sessions_1", "sessions"), { kind: "raw", group: "sessions" });
  t.same(groupOf("sessions_by_project_cost", "sessions"), {
    kind: "projection",
    group: "session totals (sort indexes)",
  });
  t.same(groupOf("session_rollup_durations"), { kind: "projection", group: "session_rollup_durations" });
  t.same(groupOf("session_models_by_model", "session_models"), { kind: "projection", group: "session_models" });
  for (const shadow of ["event_search", "event_search_data", "event_search_idx", "event_search_pending"])
    t.same(groupOf(shadow), { kind: "projection", group: "event_search*" }, shadow);
  t.same(groupOf("session_search_docsize"), { kind: "projection", group: "session_search*" });
  t.same(groupOf("events_search", "events"), { kind: "projection", group: "event_search*" }, "PostgreSQL's GIN index");
  t.same(groupOf("sessions_search", "sessions"), { kind: "projection", group: "session_search*" });
  t.same(groupOf("projection_watermarks"), { kind: "projection", group: "projection_watermarks" });
  t.same(groupOf("projection_changes_pkey", "projection_changes"), {
    kind: "projection",
    group: "projection_changes",
  });
  t.same(groupOf("session_shares"), { kind: "projection", group: "session_shares" });
  t.same(groupOf("sqlite_schema"), { kind: "other", group: "sqlite internals" });
  t.same(groupOf("something_new"), { kind: "other", group: "something_new" }, "an unknown table is not missed");

  const lines = attribute([
    { name: "events", table: "events", bytes: 100 },
    { name: "events_by_agent", table: "events", bytes: 20 },
    { name: "event_search_data", table: "event_search_data", bytes: 7 },
    { name: "event_search_idx", table: "event_search_idx", bytes: 3 },
    { name: "something_new", table: "something_new", bytes: 1 },
    { name: "sessions", table: "sessions", bytes: 200 },
  ]);
  t.same(
    lines.map((l) => [l.kind, l.group, l.bytes]),
    [
      ["raw", "sessions", 200],
      ["raw", "events", 120],
      ["projection", "event_search*", 10],
      ["other", "something_new", 1],
    ],
    "summed per group: raw, projections, other; largest first",
  );
});

t.test("bench:storage's arguments", async (t) => {
  t.same(parseStorageArgs([]), { steps: [1_000_000, 10_000_000], engine: "sqlite", shape: "dataset", keep: false });
  t.same(parseStorageArgs(["--quick"]).steps, [100_000]);
  t.same(parseStorageArgs(["--events", "100k,1m,2.5M", "--postgres", "--shape", "b1"]), {
    steps: [100_000, 1_000_000, 2_500_000],
    engine: "postgres",
    shape: "b1",
    keep: false,
  });
  t.same(parseStorageArgs(["--events", "1e6"]).steps, [1_000_000]);
  t.throws(() => parseStorageArgs(["--events", "lots"]), /--events takes counts like 1000000, 1m or 100k, not "lots"/);
  t.throws(() => parseStorageArgs(["--events", "0"]), /--events takes counts/);
  t.throws(() => parseStorageArgs(["--events", "1m,100k"]), /--events steps must grow/);
  t.throws(() => parseStorageArgs(["--shape", "huge"]), /--shape is dataset or b1, not "huge"/);
  t.throws(() => parseStorageArgs(["--nope"]), /Unknown option '--nope'/);
  t.equal(parseStorageArgs(["--db", "/tmp/x.db", "--events", "5m"]).db, "/tmp/x.db");
  t.throws(() => parseStorageArgs(["--db", "x.db", "--postgres"]), /--db is a SQLite file; not with --postgres/);
});

t.test("the load generator's arguments, there and back", async (t) => {
  const o = parseLoadArgs(["--url", "http://127.0.0.1:1", "--key", "k"]);
  t.same(o, {
    url: "http://127.0.0.1:1",
    key: "k",
    kind: "events",
    perCall: 100,
    connections: 50,
    seconds: 20,
    warmup: 3,
  });
  const otlp = { ...o, kind: "otlp" as const, perCall: 1, connections: 5, seconds: 2, warmup: 0 };
  t.same(parseLoadArgs(loadArgs(otlp)), otlp);
  t.throws(() => parseLoadArgs(["--key", "k"]), /--url is required/);
  t.throws(() => parseLoadArgs(["--url", "u"]), /--key is required/);
  t.throws(() => parseLoadArgs(["--url", "u", "--key", "k", "--kind", "grpc"]), /--kind is events or otlp/);
  t.throws(
    () => parseLoadArgs(["--url", "u", "--key", "k", "--connections", "0"]),
    /--connections must be a whole number ≥ 1, not "0"/,
  );
  t.throws(() => parseLoadArgs(["--url", "u", "--key", "k", "--seconds", "1.5"]), /--seconds must be a whole number/);
  t.equal(parseLoadArgs(["--url", "u", "--key", "k", "--seconds", "0"]).seconds, 0, "0: until stopped");
  t.throws(
    () => parseLoadArgs(["--url", "u", "--key", "k", "--kind", "otlp", "--seconds", "0"]),
    /--seconds 0 \(until stopped\) is for --kind events/,
  );
});

t.test("bench --against's scenarios", async (t) => {
  t.same(parseScenarios(undefined), ["B1", "B2", "B4", "B7"], "all of issue 24's by default");
  t.same(parseScenarios("b7, B1"), ["B1", "B7"], "any case, in the run's order");
  t.throws(() => parseScenarios("B1,B3"), /--scenarios takes a list of B1, B2, B4, B7; not "B1,B3"/);
  t.throws(() => parseScenarios(" , "), /--scenarios takes a list/);
});
