#!/usr/bin/env bash
# Tokens at scale (issue 15): TOKENS registrations through the register route (wrk, keep-alive
# connections, a distinct user and token per request), then one broadcast to all of them.
# Prints the registration rate, the database size, and the daemon's memory before and at the
# peak of the broadcast (VmHWM is reset in between). Release build, stdout transport with the
# output discarded (what is measured is pushpipe: routes, store, paging, rendering, outcome
# rows). 127.0.0.1 only; bounded by TOKENS.
#   TOKENS=1000000 CONNECTIONS=32 PORT=8097 bash bench/tokens/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
TOKENS=${TOKENS:-1000000}   # even: two wrk threads register half each
CONNECTIONS=${CONNECTIONS:-32}
PORT=${PORT:-8097}
ADMIN_PORT=${ADMIN_PORT:-9097}
if ! command -v wrk >/dev/null 2>&1; then apt-get update -qq && apt-get install -y -qq wrk >/dev/null; fi
source bench/lib/daemon.sh
use_daemon tokens
cat > "$RUN/pipelines/tokens.yaml" <<'YAML'
pipeline: tokens
routes:
  # One client registers a million devices here: no per-client limit (limits.per_client defaults to 50/s).
  - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token, limits: {per_client: 'off'}}
sources:
  - {type: http.event, path: /events, require_user: false}
renderer: {type: apns.alert, title: Sven, body: "{{text}}", custom: {message_id: {$from: message_id}}}
transport: {type: stdout, format: compact}
YAML
# Each of wrk's threads registers its share, each request a new user and token; past its share
# it asks /healthz until the script, counting rows, stops wrk (wrk itself only stops by time).
cat > "$RUN/register.lua" <<LUA
local total, threads = $TOKENS, 2
local counter = 0
function setup(thread) thread:set("id", counter); counter = counter + 1 end
function init(args) made = 0; share = math.floor(total / threads) end
function request()
  if made >= share + 16 then return wrk.format("GET", "/healthz") end  -- a few spare: wrk may drop one at start
  local n = id * share + made + 1   -- from 1: an all-zero token is refused
  made = made + 1
  return wrk.format("POST", "/register", {["content-type"] = "application/json"},
    string.format('{"user_id": "u%08d", "device_token": "%064x"}', n, n))
end
LUA
start_daemon --listen "127.0.0.1:$PORT" --admin-listen "127.0.0.1:$ADMIN_PORT" --store "sqlite:$RUN/state.sqlite"
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null && break; sleep 0.1; done

echo "== $TOKENS registrations through POST /register, wrk, $CONNECTIONS keep-alive connections"
registered() {
  python3 -c "import sqlite3; print(sqlite3.connect('file:$RUN/state.sqlite?mode=ro', uri=True).execute('SELECT count(*) FROM registrations').fetchone()[0])"
}
start=$(date +%s.%N)
wrk -t2 -c"$CONNECTIONS" -d3600s --timeout 10s -s "$RUN/register.lua" "http://127.0.0.1:$PORT" > "$RUN/wrk.txt" &
WRK=$!
until [ "$(registered)" -ge "$TOKENS" ]; do
  kill -0 "$WRK" 2>/dev/null || { echo "wrk stopped early"; cat "$RUN/wrk.txt"; exit 1; }
  sleep 0.2
done
end=$(date +%s.%N)
kill -INT "$WRK"; wait "$WRK" || true
grep -E "requests in|Latency|Non-2xx" "$RUN/wrk.txt" || true
python3 -c "print('registration: %d tokens in %.1f s = %.0f/s' % ($TOKENS, $end - $start, $TOKENS / ($end - $start)))"
sizes() {
  local main wal
  main=$(stat -c %s "$RUN/state.sqlite"); wal=$(stat -c %s "$RUN/state.sqlite-wal" 2>/dev/null || echo 0)
  python3 -c "print('%s: state.sqlite %.0f MB (%.0f bytes per token) + WAL %.0f MB' % ('$1', $main / 1e6, $main / $TOKENS, $wal / 1e6))"
}
sizes "database after registration"
rss() { awk -v key="$1" '$1 == key":" { printf "%.0f", $2 / 1024 }' "/proc/$DAEMON/status"; }
echo "daemon after registration: RSS $(rss VmRSS) MB, peak so far $(rss VmHWM) MB"

echo "== one broadcast to all $TOKENS tokens"
echo 5 > "/proc/$DAEMON/clear_refs"   # resets VmHWM to the current RSS
start=$(date +%s.%N)
curl -sf -XPOST "http://127.0.0.1:$PORT/events" -H 'content-type: application/json' -d '{"text": "hello everyone", "message_id": "m1"}' > /dev/null
while :; do
  delivered=$(curl -sf "http://127.0.0.1:$ADMIN_PORT/metrics" | awk -F' ' '/^pushpipe_deliveries_total\{pipeline="tokens".*outcome="delivered"/ { print $2 }')
  [ "${delivered%.*}" -ge "$TOKENS" ] 2>/dev/null && break
  kill -0 "$DAEMON" || { echo "daemon died"; cat "$RUN/daemon.log"; exit 1; }
  sleep 1
done
end=$(date +%s.%N)
python3 -c "print('broadcast: %d deliveries in %.1f s = %.0f/s' % ($TOKENS, $end - $start, $TOKENS / ($end - $start)))"
echo "daemon during the broadcast: peak RSS $(rss VmHWM) MB (now $(rss VmRSS) MB)"
sizes "database after the broadcast (a delivery row per token)"
