#!/usr/bin/env bash
# Reply latency (issue 15): a reply file closed in Sven's folder → the request received by an
# APNs stand-in (HTTP/2 + TLS, verifying the provider token), through the real daemon on the
# shipped pipelines/sven-replies.yaml, release build. 1,000 files at 20 per second; prints
# p50/p90/p99/max. Bounded: the files are counted, the daemon is stopped at the end.
#   FILES=1000 RATE=20 bash bench/sven/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
FILES=${FILES:-1000}
RATE=${RATE:-20}
source bench/lib/build.sh
if [ -z "${BENCH:-}" ]; then build_release pushpipe-bench pushpipe; fi
bench=${BENCH:-.build/release/pushpipe-bench}
PUSHPIPE_BINARY=${PUSHPIPE_BINARY:-$(dirname "$bench")/pushpipe}
# Absolute: the driver starts the daemon from another folder.
export PUSHPIPE_BINARY="$(cd "$(dirname "$PUSHPIPE_BINARY")" && pwd)/$(basename "$PUSHPIPE_BINARY")"
"$bench" reply-latency --files "$FILES" --rate "$RATE" --pipeline pipelines/sven-replies.yaml
