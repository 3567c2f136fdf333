#!/usr/bin/env bash
# Instructions per notification (issue 15): a figure that does not drift with the machine.
# `perf stat -e instructions` where the machine has counters, else a qemu-user plugin, on
# pushpipe (the APNs benchmark driver, SQLite, 1 connection) and on h2load against the same
# nginx stand-in. Each runs twice, SMALL and LARGE notifications, and the difference is
# divided by LARGE − SMALL, so start-up (key loading, TLS handshake, migrations) cancels out.
#   SMALL=2000 LARGE=10000 bash bench/apns/instructions.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
SMALL=${SMALL:-2000}
LARGE=${LARGE:-10000}
PORT=${PORT:-8444}
source bench/lib/build.sh
prepare_bench

RUN=$(mktemp -d /tmp/pushpipe-instructions.XXXXXX)
source bench/lib/nginx-apns.sh
trap 'stop_nginx_apns "$RUN"; rm -rf "$RUN"' EXIT
start_nginx_apns "$RUN" "$PORT"
apns_reference_load "$RUN" "$PORT"

source bench/lib/instructions.sh
use_instruction_counter "$RUN"
echo "counting with $INSTRUCTION_COUNTER"
pushpipe() { count "$bench" apns --base-url "https://localhost:$PORT" --ca-file "$RUN/ca.pem" --count "$1" --connections 1; }
reference() { count h2load -n "$1" "${H2LOAD_APNS[@]}"; }
per() { per_item "$1" "$2" "$SMALL" "$LARGE" || true; }
p_small=$(pushpipe "$SMALL"); p_large=$(pushpipe "$LARGE")
h_small=$(reference "$SMALL"); h_large=$(reference "$LARGE")
echo "pushpipe: $p_small instructions for $SMALL notifications, $p_large for $LARGE: $(per "$p_small" "$p_large") per notification"
echo "h2load:   $h_small instructions for $SMALL requests, $h_large for $LARGE: $(per "$h_small" "$h_large") per request"
