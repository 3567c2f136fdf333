#!/usr/bin/env bash
# Instructions per notification (issue 15): a figure that does not drift with the machine.
# `perf stat -e instructions` where the machine has counters, else valgrind's callgrind, on
# pushpipe (the APNs benchmark driver, SQLite, 1 connection) and on h2load against the same
# nginx stand-in. Each runs twice, SMALL and LARGE notifications, and the difference is
# divided by LARGE − SMALL, so start-up (key loading, TLS handshake, migrations) cancels out.
#   SMALL=2000 LARGE=6000 bash bench/apns/instructions.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
SMALL=${SMALL:-2000}
LARGE=${LARGE:-6000}
PORT=${PORT:-8444}
if ! command -v h2load >/dev/null 2>&1; then apt-get update -qq && apt-get install -y -qq nghttp2-client >/dev/null; fi
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then export PATH="$PATH:/opt/swift/usr/bin"; fi
if [ -z "${BENCH:-}" ]; then swift build -c release --product pushpipe-bench >/dev/null 2>&1; fi
bench=${BENCH:-.build/release/pushpipe-bench}

RUN=$(mktemp -d /tmp/pushpipe-instructions.XXXXXX)
source bench/lib/nginx-apns.sh
trap 'stop_nginx_apns "$RUN"; rm -rf "$RUN"' EXIT
start_nginx_apns "$RUN" "$PORT"
python3 -c 'import json; body = {"aps": {"alert": {"title": "Benchmark", "body": "x" * 120}, "sound": "default", "badge": 1}, "n": 1}; s = json.dumps(body, separators=(",", ":")); print(s + " " * (200 - len(s)), end="")' > "$RUN/payload.json"

if perf stat -e instructions true 2>&1 | grep -q "not supported"; then
  echo "counting with valgrind --tool=callgrind (perf has no instruction counter here)"
  # Swift binaries run stripped: valgrind 3.19 gives up on Swift 6.3's debug info.
  count() {
    local program=$1; shift
    if [ "$program" != h2load ]; then strip -o "$RUN/stripped" "$program"; program=$RUN/stripped; fi
    rm -f "$RUN/cg.out"
    valgrind --tool=callgrind --callgrind-out-file="$RUN/cg.out" "$program" "$@" >/dev/null 2>"$RUN/cg.err" || true
    awk '/^summary:|^totals:/ { print $2; exit }' "$RUN/cg.out" 2>/dev/null || true
  }
else
  echo "counting with perf stat -e instructions"
  count() { perf stat -x, -e instructions -o "$RUN/perf.txt" "$@" >/dev/null 2>&1; awk -F, '/instructions/ { print $1; exit }' "$RUN/perf.txt"; }
fi
pushpipe() { count "$bench" apns --base-url "https://localhost:$PORT" --ca-file "$RUN/ca.pem" --count "$1" --connections 1; }
reference() {
  count h2load -n "$1" -c 1 -m 100 -d "$RUN/payload.json" -H 'apns-topic: com.example.bench' -H 'apns-push-type: alert' \
    -H 'apns-priority: 10' -H 'content-type: application/json' "https://127.0.0.1:$PORT/3/device/$(printf '%064d' 1)"
}
per() {
  if [ -z "$1" ] || [ -z "$2" ]; then echo "not counted: the counter failed on this binary (bench/README.md)"; return; fi
  python3 -c "print('%.0f' % (($2 - $1) / ($LARGE - $SMALL)))"
}
p_small=$(pushpipe "$SMALL"); p_large=$(pushpipe "$LARGE")
h_small=$(reference "$SMALL"); h_large=$(reference "$LARGE")
echo "pushpipe: $p_small instructions for $SMALL notifications, $p_large for $LARGE: $(per "$p_small" "$p_large") per notification"
echo "h2load:   $h_small instructions for $SMALL requests, $h_large for $LARGE: $(per "$h_small" "$h_large") per request"
