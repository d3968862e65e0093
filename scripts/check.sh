#!/usr/bin/env bash
# The whole gate, in order: generated types are current, lint, layers (no import cycle, no import
# up the layering: .dependency-cruiser.mjs), typecheck, the tap suite.
# It always ends with one line "N passed, N failed" (tap's assertion counts).
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

echo "== tests: tap"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
npx --no-install tap --disable-coverage --reporter=tap "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

summary=$(grep -E '^# \{ total: [0-9]+' "$log" | tail -n 1)
passed=$(sed -nE 's/.*pass: ([0-9]+).*/\1/p' <<<"$summary")
failed=$(sed -nE 's/.*fail: ([0-9]+).*/\1/p' <<<"$summary")
passed=${passed:-0}
failed=${failed:-0}
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "${passed} passed, ${failed} failed"
exit "$status"
