#!/usr/bin/env bash
# Fault soak (issue 12): the daemon on an http.event pipeline, a reply folder and the shipped
# OGS pipeline, against the in-process APNs stand-in answering a mix of 200, 503, 429, 410
# and GOAWAY, killed with SIGKILL every 2-8 s and restarted; then a calm run until all that
# was accepted is delivered. Prints one line: accepted, delivered, lost (must be 0), sent
# more than once, integrity_check. 127.0.0.1 only; bounded by SECONDS (default 180).
#   SECONDS_OF_FAULTS=180 SEED=12 bash bench/soak/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib/build.sh
build_release pushpipe pushpipe-bench
PUSHPIPE_BINARY="$PWD/.build/release/pushpipe" .build/release/pushpipe-bench soak \
  --seconds "${SECONDS_OF_FAULTS:-180}" --seed "${SEED:-12}"
