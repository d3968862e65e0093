#!/usr/bin/env bash
# The whole gate, in order: generated types are current, lint, layers (no import cycle, no import
# up the layering: .dependency-cruiser.mjs), typecheck, the Prometheus rules (promtool), the tap
# suite, then the HTTP tests again on the storage thread and on PostgreSQL. It always ends with one
# line "N passed, N failed" (tap's assertion counts, all runs together); it fails if any run fails.
set -uo pipefail
cd "$(dirname "$0")/.."

gate() {
  local name=$1
  shift
  echo "== ${name}: $*"
  if ! "$@"; then
    echo "== ${name} failed"
    echo "0 passed, 1 failed"
    exit 1
  fi
}

gate "generated types are current (npm run generate to refresh)" npm run -s check:generated
gate "lint" npm run -s lint
gate "layers (rules in .dependency-cruiser.mjs)" npm run -s check:layers
gate "typecheck" npm run -s typecheck
# The sample alerting rules (docs/prometheus) with Prometheus's own checker: syntax, PromQL, label
# templates, duplicates. Every prometheus.yml there too (there is none yet). Where promtool is
# missing this gate is skipped, saying so; .ci/run installs it, so CI never skips it.
if command -v promtool >/dev/null; then
  gate "prometheus rules (promtool)" promtool check rules docs/prometheus/*.rules.yml
  for config in docs/prometheus/prometheus*.yml; do
    [ -e "$config" ] && gate "prometheus config (promtool)" promtool check config --syntax-only "$config"
  done
else
  echo "== the prometheus rules check was skipped: promtool is not installed (apt-get install prometheus)"
fi

# The HTTP test files (a family split by rule is one glob), a second time on the storage thread
# (STORE=sqlite-thread; test/helper.ts build()), the store production uses for a file database.
# Left out: files that never call build() (crash, layers, openapi), and the costly ones whose time
# goes elsewhere than the store: fuzz (30 s; its round trips are in the Store contract, which runs
# on the thread; fuzz.names is in, with a tenth of its SQLite cases, since the names and headers it
# fuzzes reach each engine's own SQL), browser (Chromium), server, overload and shutdown (mostly
# child processes, which use the storage thread anyway), the CLI's (cost.cli, container: child
# processes too), and client.pack (npm pack and tsc: its subject is the package, not the store).
# Each build() here starts a storage thread: about 0.2-0.4 s a test.
THREAD_TESTS=(
  test/analytics.*.test.ts test/attacks.*.test.ts test/auth.*.test.ts test/cost.bills.test.ts test/cost.migration.test.ts
  test/cost.overrides.test.ts test/cost.pricing.test.ts test/events.*.test.ts test/faults.test.ts
  test/general.*.test.ts test/limits.l*.test.ts test/read.*.test.ts test/replay.test.ts test/sessions.*.test.ts
  test/ui.test.ts test/otlp.t1-t4.test.ts test/otlp.t5-t7.test.ts test/otlp.replay.test.ts test/metrics.test.ts
  test/client.test.ts test/compat.*.test.ts test/otlp.grpc.test.ts test/otlp.grpc.clients.test.ts
  test/fuzz.names.test.ts test/conformance.fields.test.ts test/search.test.ts test/linger.test.ts
)

# The HTTP tests a third time on PostgreSQL (STORE=postgres; a database per build(), test/postgres.ts),
# the same list but for the two whose subject is the SQLite file itself (faults: a full disk, a
# read-only file; cost.migration: SQLite's schema migration).
POSTGRES_TESTS=()
for file in "${THREAD_TESTS[@]}"; do
  case "$file" in test/faults.test.ts | test/cost.migration.test.ts) ;; *) POSTGRES_TESTS+=("$file") ;; esac
done

logs=()
trap 'rm -f "${logs[@]}"' EXIT
total_passed=0
total_failed=0
final=0
failures=""

# run NAME [ENV=VALUE...] -- TAP ARGS...: one tap run, its assertion counts added to the totals.
run() {
  local name=$1
  shift
  local env=()
  while [ "$1" != "--" ]; do
    env+=("$1")
    shift
  done
  shift
  local log
  log=$(mktemp)
  logs+=("$log")
  echo "== tests: ${name}"
  local start=$SECONDS
  env "${env[@]}" npx --no-install tap --disable-coverage --reporter=tap "$@" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  local summary passed failed
  summary=$(grep -E '^# \{ total: [0-9]+' "$log" | tail -n 1)
  passed=$(sed -nE 's/.*pass: ([0-9]+).*/\1/p' <<<"$summary")
  failed=$(sed -nE 's/.*fail: ([0-9]+).*/\1/p' <<<"$summary")
  passed=${passed:-0}
  failed=${failed:-0}
  if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
  echo "== ${name}: ${passed} passed, ${failed} failed, in $((SECONDS - start)) s"
  if [ "$failed" -ne 0 ]; then
    failures+="-- ${name}:"$'\n'"$(grep -nE -A40 '^[[:space:]]*not ok ' "$log" | head -n 300)"$'\n'
  fi
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  if [ "$status" -ne 0 ]; then final=$status; fi
}

run "tap" -- "$@"
run "tap, the HTTP tests on the storage thread (STORE=sqlite-thread)" STORE=sqlite-thread -- "${THREAD_TESTS[@]}"
# Skipped, with one line that says why, only where PostgreSQL does not answer and is not required
# (AGENTMON_REQUIRE_POSTGRES=1: .ci/run sets it, so CI never skips it).
if why=$(npx --no-install tsx scripts/postgres-available.ts); then
  run "tap, the HTTP tests on PostgreSQL (STORE=postgres)" STORE=postgres -- "${POSTGRES_TESTS[@]}"
else
  echo "== the PostgreSQL leg was skipped: ${why}"
fi

# What failed, again at the end, so that a log cut to its last lines still says which test it was.
if [ "$total_failed" -ne 0 ]; then
  echo "== what failed (the 'not ok' lines of each run and what tap said of them, innermost first;"
  echo "   a file that failed without a failing assertion, e.g. a timeout or a crash, shows only its own line)"
  printf '%s' "$failures"
fi
echo "${total_passed} passed, ${total_failed} failed"
exit "$final"
