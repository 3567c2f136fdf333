#!/usr/bin/env bash
# Ingestion: h2load --h1 posts COUNT events over 16 and 64 keep-alive connections to an
# http.event → json.template → stdout pipeline (output discarded). Every 202 means the event
# is committed to SQLite (group commit); the slowest request shows how long one caller can
# be held by the commits of others. 127.0.0.1 only; bounded by COUNT.
#   COUNT=30000 PORT=8099 bash bench/ingest/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
COUNT=${COUNT:-30000}
PORT=${PORT:-8099}
if ! command -v h2load >/dev/null 2>&1; then apt-get update -qq && apt-get install -y -qq nghttp2-client >/dev/null; fi
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then export PATH="$PATH:/opt/swift/usr/bin"; fi
swift build -c release --product pushpipe >/dev/null
BINARY=${PUSHPIPE_BINARY:-$PWD/.build/release/pushpipe}

RUN=$(mktemp -d /tmp/pushpipe-ingest-bench.XXXXXX)
cleanup() {
  [ -n "${DAEMON:-}" ] && kill "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null || true
  rm -rf "$RUN"
}
trap cleanup EXIT
mkdir -p "$RUN/pipelines"
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
(cd "$RUN" && PUSHPIPE_LOG_LEVEL=warning exec "$BINARY" run --listen "127.0.0.1:$PORT" --admin-listen off --plugins none > /dev/null 2> "$RUN/daemon.log") &
DAEMON=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/register" && break; sleep 0.1; done
curl -s -XPOST "http://127.0.0.1:$PORT/register" -H 'content-type: application/json' \
  -d '{"user_id": "alice", "device_token": "808605752f2f8d4c9ae1b3f4e9d2c7a1"}' > /dev/null
for connections in 16 64; do
  echo "== $COUNT events, h2load --h1, $connections keep-alive connections"
  h2load --h1 -n "$COUNT" -c "$connections" -d "$RUN/event.json" -H 'content-type: application/json' \
    "http://127.0.0.1:$PORT/events" | grep -E '^finished in|^status codes|time for request'
done
