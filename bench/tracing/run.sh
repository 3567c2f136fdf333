#!/usr/bin/env bash
# What tracing costs on the APNs path (issue 35), as bench/apns/ab.sh measures builds: alternating
# runs, each pair between two h2load runs of the same stand-in.
#   OLD=/path/to/pushpipe-bench-before-tracing NEW=.build-release/release/pushpipe-bench PAIRS=5 bash bench/tracing/run.sh
# 1. tracing off: OLD against NEW (must be within the noise);
# 2. NEW off against NEW tracing every event, exported over OTLP/HTTP to nginx's sink;
# 3. NEW off against NEW tracing 10% of the events (traceidratio).
# Bounded: 3 × PAIRS × 2 runs of COUNT notifications. OTEL_* variables of the caller are not read.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OLD:?OLD=path of pushpipe-bench before tracing}" "${NEW:?NEW=path of pushpipe-bench with tracing}"
for variable in $(compgen -e | grep '^OTEL_' || true); do unset "$variable"; done
export PAIRS=${PAIRS:-5} COUNT=${COUNT:-200000}
echo "=== tracing off: before (A) and after (B)"
A=$OLD B=$NEW bash bench/apns/ab.sh
echo "=== tracing every event (B) against off (A)"
A=$NEW B=$NEW B_ARGS="--otlp-endpoint @OTLP@ --trace-ratio 1" bash bench/apns/ab.sh
echo "=== tracing 10% of the events (B) against off (A)"
A=$NEW B=$NEW B_ARGS="--otlp-endpoint @OTLP@ --trace-ratio 0.1" bash bench/apns/ab.sh
