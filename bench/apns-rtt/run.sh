#!/usr/bin/env bash
# APNs over a long round trip: a stand-in that answers each request DELAY ms after it came
# (`pushpipe-bench apns-delayed`: the kernel here has no netem), and the adaptive pool, which
# starts with one connection and may open up to MAX_CONNECTIONS. The stand-in advertises
# STREAMS concurrent streams per connection, so the ideal is MAX_CONNECTIONS × STREAMS ÷ RTT.
# Each pushpipe run is bracketed by h2load on MAX_CONNECTIONS connections × STREAMS streams
# against the same stand-in: what any client reaches there on this machine.
# Bounded: each run sends about SECONDS_PER_RUN seconds' worth at the ideal rate (COUNT at 0 ms).
#   DELAYS="0 50 150" MAX_CONNECTIONS=8 STREAMS=100 bash bench/apns-rtt/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
DELAYS=${DELAYS:-"0 50 150"}
MAX_CONNECTIONS=${MAX_CONNECTIONS:-8}
STREAMS=${STREAMS:-100}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
COUNT=${COUNT:-200000}
PORT=${PORT:-8453}

source bench/lib/build.sh
prepare_bench

RUN=$(mktemp -d /tmp/pushpipe-apns-rtt.XXXXXX)
source bench/lib/nginx-apns.sh
standin=
cleanup() {
  [ -n "$standin" ] && kill "$standin" 2>/dev/null || true
  rm -rf "$RUN"
}
trap cleanup EXIT
make_apns_certificates "$RUN"
apns_reference_load "$RUN" "$PORT"
# The reference load's arguments, on MAX_CONNECTIONS connections of STREAMS streams each.
h2load_args=(-c "$MAX_CONNECTIONS" -m "$STREAMS" "${H2LOAD_APNS[@]:4}")

h2load_rate() {
  h2load -n "$1" "${h2load_args[@]}" > "$RUN/h2load.txt"
  awk '/^finished in/ { gsub(",", "", $4); print $4 }' "$RUN/h2load.txt"
}

echo "== $MAX_CONNECTIONS connections at most × $STREAMS streams (the stand-in's limit); pushpipe starts with 1"
for delay in $DELAYS; do
  "$bench" apns-delayed --port "$PORT" --delay-ms "$delay" --streams "$STREAMS" \
    --certificate "$RUN/server.pem" --key "$RUN/server.key" --seconds 900 > "$RUN/standin.log" &
  standin=$!
  until grep -q '^listening' "$RUN/standin.log" 2>/dev/null; do
    kill -0 "$standin" 2>/dev/null || { echo "the stand-in did not start"; exit 1; }
    sleep 0.1
  done
  if [ "$delay" -gt 0 ]; then
    ideal=$((MAX_CONNECTIONS * STREAMS * 1000 / delay))
    count=$((ideal * SECONDS_PER_RUN))
  else
    ideal=0
    count=$COUNT
  fi
  before=$(h2load_rate "$count")
  opened_before=$(grep -c '^connection' "$RUN/standin.log" || true)
  line=$("$bench" apns --base-url "https://localhost:$PORT" --ca-file "$RUN/ca.pem" --count "$count" \
    --connections 1 --max-connections "$MAX_CONNECTIONS" --max-streams 1000 \
    --concurrency $((2 * MAX_CONNECTIONS * STREAMS)) | tail -1)
  opened=$(( $(grep -c '^connection' "$RUN/standin.log" || true) - opened_before ))
  after=$(h2load_rate "$count")
  kill "$standin" 2>/dev/null || true
  wait "$standin" 2>/dev/null || true
  standin=
  echo "$line"
  rate=$(echo "$line" | sed -E 's/.* = ([0-9]+)\/s.*/\1/')
  cpu=$(echo "$line" | sed -E 's/.*\(([0-9.]+) s per 1000\).*/\1/')
  python3 -c "
delay, ideal, rate, before, after = $delay, $ideal, $rate, $before, $after
h = (before + after) / 2
line = 'RTT %3d ms: pushpipe %6d/s' % (delay, rate)
if ideal: line += ' = %3.0f%% of ideal %d/s' % (100 * rate / ideal, ideal)
line += '; h2load %.0f/s (%.0f before, %.0f after), pushpipe/h2load %.0f%%; %d connection(s) opened; %.0f µs CPU each' % (h, before, after, 100 * rate / h, $opened, $cpu * 1000)
print(line)"
done
