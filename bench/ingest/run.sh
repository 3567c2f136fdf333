#!/usr/bin/env bash
# Ingestion: h2load --h1 posts COUNT events over 16 and 64 keep-alive connections to an
# http.event → json.template → stdout pipeline (output discarded). Every 202 means the event
# is committed to SQLite (group commit); the slowest request shows how long one caller can
# be held by the commits of others. 127.0.0.1 only; bounded by COUNT. STORE=postgres://… runs
# the daemon on that database instead (a scratch one: the runs' rows stay in it).
#   COUNT=30000 PORT=8099 bash bench/ingest/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
COUNT=${COUNT:-30000}
PORT=${PORT:-8099}
if ! command -v h2load >/dev/null 2>&1; then apt-get update -qq && apt-get install -y -qq nghttp2-client >/dev/null; fi
source bench/lib/daemon.sh
use_daemon ingest
store=()
if [ -n "${STORE:-}" ]; then store=(--store "$STORE"); fi
cat > "$RUN/pipelines/ingest.yaml" <<'YAML'
pipeline: ingest
routes:
  - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token}
sources:
  - {type: http.event, path: /events}
renderer: {type: json.template, payload: {title: "{{title}}"}}
transport: {type: stdout, format: compact}
YAML
printf '{"user": "alice", "title": "Hello"}' > "$RUN/event.json"
# Once the daemon answers, registers alice's device TOKEN: every event goes to her.
register_alice() {
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/register" && break; sleep 0.1; done
  curl -s -XPOST "http://127.0.0.1:$PORT/register" -H 'content-type: application/json' \
    -d "{\"user_id\": \"alice\", \"device_token\": \"$1\"}" > /dev/null
}
start_daemon --listen "127.0.0.1:$PORT" --admin-listen off "${store[@]}"
register_alice 808605752f2f8d4c9ae1b3f4e9d2c7a1
for connections in 16 64; do
  echo "== $COUNT events, h2load --h1, $connections keep-alive connections"
  h2load --h1 -n "$COUNT" -c "$connections" -d "$RUN/event.json" -H 'content-type: application/json' \
    "http://127.0.0.1:$PORT/events" | grep -E '^finished in|^status codes|time for request'
done

# Issue 15: the same while every event is delivered over HTTP/2 to the nginx APNs stand-in,
# first as fast as h2load can (the rate), then at a fixed 2,000 events/s (16 clients × 125/s,
# each request's time in h2load's log: the p99).
stop_daemon
source bench/lib/nginx-apns.sh
APNS_PORT=${APNS_PORT:-8443}
start_nginx_apns "$RUN" "$APNS_PORT"
trap 'stop_nginx_apns "$RUN"; cleanup' EXIT
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$RUN/AuthKey.p8" 2>/dev/null
rm -rf "$RUN/var" "$RUN/pipelines/ingest.yaml"   # a new store and only the APNs pipeline
cat > "$RUN/pipelines/ingest-apns.yaml" <<YAML
pipeline: ingest-apns
routes:
  - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token}
sources:
  - {type: http.event, path: /events}
renderer: {type: apns.alert, title: "{{title}}", body: "An event for {{user}}"}
transport:
  type: apns
  team_id: BENCHTEAM1
  key_id: BENCHKEY01
  key_path: $RUN/AuthKey.p8
  bundle_id: com.example.bench
  base_url: https://localhost:$APNS_PORT
  ca_file: $RUN/ca.pem
  max_streams: 100
# A 202 waits while delivery.concurrency events are unfinished (backpressure), and an event stays
# unfinished through the APNs round trip and the outcome's commit (about 3 ms here): the
# default 32 cap the rate near 32 / 3 ms whatever the CPU. As many as the connection's streams.
delivery: {concurrency: 100}
YAML
start_daemon --listen "127.0.0.1:$PORT" --admin-listen off "${store[@]}"
register_alice 808605752f2f8d4c9ae1b3f4e9d2c7a1808605752f2f8d4c9ae1b3f4e9d2c7a1
echo "== $COUNT events delivered to the nginx APNs stand-in, h2load --h1, 64 keep-alive connections"
h2load --h1 -n "$COUNT" -c 64 -d "$RUN/event.json" -H 'content-type: application/json' \
  "http://127.0.0.1:$PORT/events" | grep -E '^finished in|^status codes|time for request'
echo "== 2,000 events/s for 10 s (16 connections × 125/s), delivered to the nginx APNs stand-in"
h2load --h1 -n 20000 -c 16 --rps 125 -d "$RUN/event.json" -H 'content-type: application/json' --log-file "$RUN/latency.log" \
  "http://127.0.0.1:$PORT/events" | grep -E '^finished in|^status codes'
python3 - "$RUN/latency.log" <<'PY'
import sys
times = sorted(int(line.split()[2]) / 1000 for line in open(sys.argv[1]) if line.strip())
pick = lambda q: times[min(len(times) - 1, int(len(times) * q))]
print("202 answer times at 2,000/s over %d events: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms"
      % (len(times), pick(0.5), pick(0.9), pick(0.99), times[-1]))
PY
{ grep -c "error" "$RUN/daemon.log" || true; } | sed 's/^/daemon log errors: /'
# Accepted is not delivered: stopped (it drains what is in flight), the daemon's store tells.
stop_daemon
if [ -n "${STORE:-}" ]; then
  count=$(psql "$STORE" -tAq -c "SELECT count(*) FROM deliveries WHERE pipeline = 'ingest-apns' AND outcome = 'delivered'")
  echo "delivered to the stand-in: $count of $((COUNT + 20000)) accepted"
else
  python3 - "$RUN/var/pushpipe.sqlite" "$((COUNT + 20000))" <<'PY'
import sqlite3, sys
count = sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM deliveries WHERE outcome = 'delivered'").fetchone()[0]
print("delivered to the stand-in: %d of %s accepted" % (count, sys.argv[2]))
PY
fi

