#!/usr/bin/env bash
# One full OGS check at scale: 10,000 registered users with 5 active games each, served from
# memory by a stand-in process on 127.0.0.1; pushpipe's poller (default concurrency, 30 s
# interval, requests spread over the interval) must finish the check within the interval.
# Prints the check's duration, pushpipe's CPU seconds and peak RSS. Bounded: both processes
# stop by themselves.   USERS=10000 INTERVAL=30 bash bench/ogs/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
USERS=${USERS:-10000}
INTERVAL=${INTERVAL:-30}

# BENCH=path/to/pushpipe-bench runs another build (A/B comparisons) instead of building this one.
source bench/lib/build.sh
if [ -z "${BENCH:-}" ]; then build_release pushpipe-bench; fi
bench=${BENCH:-.build/release/pushpipe-bench}
out=$(mktemp)
trap 'kill "$standin" 2>/dev/null || true; rm -f "$out"' EXIT
"$bench" ogs-standin --users "$USERS" --seconds $((INTERVAL * 4 + 60)) > "$out" &
standin=$!
until grep -q '^listening' "$out"; do
  kill -0 "$standin" 2>/dev/null || { echo "stand-in failed"; exit 1; }
  sleep 0.2
done
port=$(awk '/^listening/ { print $2 }' "$out")
"$bench" ogs --base-url "http://127.0.0.1:$port" --users "$USERS" --interval "$INTERVAL" | tail -1
