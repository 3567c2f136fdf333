#!/usr/bin/env bash
# A/B of two builds on the APNs path, alternating, each pair bracketed by h2load: the machine's
# speed drifts (shared cores), so each rate is read against the mean of the h2load runs around
# it, and the order of A and B swaps every pair.
#   A=/path/to/old/pushpipe-bench B=.build/release/pushpipe-bench PAIRS=3 COUNT=200000 bash bench/apns/ab.sh
# A_ARGS / B_ARGS: more arguments for one side's `apns` run; @OTLP@ in them is the URL of the
# OTLP/HTTP sink nginx also serves (bench/tracing/run.sh traces one side).
# Bounded: PAIRS × 2 runs of COUNT notifications, PAIRS + 1 h2load runs; nginx stops at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${A:?A=path of the first pushpipe-bench}" "${B:?B=path of the second pushpipe-bench}"
PAIRS=${PAIRS:-3}
COUNT=${COUNT:-200000}
CONNECTIONS=${CONNECTIONS:-1}
PORT=${PORT:-8443}

if ! command -v nginx >/dev/null 2>&1 || ! command -v h2load >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq nginx nghttp2-client >/dev/null
fi
RUN=$(mktemp -d /tmp/pushpipe-apns-ab.XXXXXX)
source bench/lib/nginx-apns.sh
cleanup() { stop_nginx_apns "$RUN"; rm -rf "$RUN"; }
trap cleanup EXIT
start_nginx_apns "$RUN" "$PORT"
apns_reference_load "$RUN" "$PORT"

h2load_rate() { apns_h2load_rate "$RUN" "$COUNT" 2>/dev/null; }
# "RATE CPU-SECONDS-PER-1000" of one run.
pushpipe_run() {
  local extra=${2//@OTLP@/http://127.0.0.1:$((PORT + 1))}
  # shellcheck disable=SC2086 # the extra arguments are words
  "$1" apns --base-url "https://localhost:$PORT" --ca-file "$RUN/ca.pem" --count "$COUNT" --connections "$CONNECTIONS" $extra \
    | tail -1 | sed -E 's/.* = ([0-9]+)\/s.*\(([0-9.]+) s per 1000\).*/\1 \2/'
}

echo "== $PAIRS pairs of $COUNT notifications, $CONNECTIONS connection(s); A=$A ${A_ARGS:-} B=$B ${B_ARGS:-}"
previous=$(h2load_rate)
for pair in $(seq 1 "$PAIRS"); do
  if [ $((pair % 2)) = 1 ]; then first=A; else first=B; fi
  declare -A rate=() cpu=()
  for side in $first $([ $first = A ] && echo B || echo A); do
    args_name=${side}_ARGS
    read -r rate[$side] cpu[$side] <<< "$(pushpipe_run "${!side}" "${!args_name:-}")"
  done
  next=$(h2load_rate)
  python3 -c "
h = ($previous + $next) / 2
a, b = ${rate[A]}, ${rate[B]}
print('pair $pair ($first first): h2load %.0f/s; A %d/s (%.1f%%, %s ms CPU per 1000), B %d/s (%.1f%%, %s ms), B/A %.3f'
      % (h, a, 100 * a / h, ${cpu[A]} * 1000, b, 100 * b / h, ${cpu[B]} * 1000, b / a))"
  previous=$next
done
