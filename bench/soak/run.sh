#!/usr/bin/env bash
# Fault soak (issue 12): the daemon on an http.event pipeline, a reply folder and the shipped
# OGS pipeline, against the in-process APNs stand-in answering a mix of 200, 503, 429, 410
# and GOAWAY, killed with SIGKILL every 2-8 s and restarted; then a calm run until all that
# was accepted is delivered. Prints one line: accepted, delivered, lost (must be 0), sent
# more than once, integrity_check. 127.0.0.1 only; bounded by SECONDS (default 180).
#   SECONDS_OF_FAULTS=180 SEED=12 bash bench/soak/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then export PATH="$PATH:/opt/swift/usr/bin"; fi
swift build -c release --product pushpipe >/dev/null
swift build -c release --product pushpipe-bench >/dev/null
PUSHPIPE_BINARY="$PWD/.build/release/pushpipe" .build/release/pushpipe-bench soak \
  --seconds "${SECONDS_OF_FAULTS:-180}" --seed "${SEED:-12}"
