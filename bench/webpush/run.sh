#!/usr/bin/env bash
# Web Push: the encryption alone (an ECDH and a key pair per message, RFC 8291), then the whole
# path (webpush renderer and transport, VAPID, HTTPS) against a push-service stand-in in another
# process that answers 201 without checking (`pushpipe-bench webpush-standin`), bracketed by
# h2load posting a body of the same size to the same stand-in: first over HTTP/1.1 (16
# connections), then against a stand-in that offers h2, as the browsers' push services do
# (h2load on 1 connection, 100 streams: what pushpipe's client opens to one origin).
# Bounded: per protocol, COUNT notifications and two h2load runs of COUNT requests.
#   COUNT=20000 bash bench/webpush/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
COUNT=${COUNT:-20000}
PORT=${PORT:-8463}

source bench/lib/build.sh
prepare_bench

RUN=$(mktemp -d /tmp/pushpipe-webpush-bench.XXXXXX)
standin=
cleanup() { [ -n "$standin" ] && kill "$standin" 2>/dev/null || true; rm -rf "$RUN"; }
trap cleanup EXIT
start_standin() {
  "$bench" webpush-standin --port "$PORT" --ca-file "$RUN/ca.pem" --seconds 900 "$@" > "$RUN/standin.log" &
  standin=$!
  local waited=0
  until grep -q '^listening' "$RUN/standin.log" 2>/dev/null; do
    kill -0 "$standin" 2>/dev/null || { echo "the stand-in did not start"; exit 1; }
    waited=$((waited + 1)); [ "$waited" -lt 300 ] || { echo "the stand-in did not start within 30 s"; exit 1; }
    sleep 0.1
  done
}

# The reference: an encrypted message's size (a 200-byte message + 86 + 1 + 16), with the
# headers pushpipe sends, over TLS.
head -c 303 /dev/urandom > "$RUN/body"
h2load_rate() {
  h2load "$@" -n "$COUNT" -d "$RUN/body" -H 'ttl: 86400' -H 'urgency: normal' -H 'content-encoding: aes128gcm' \
    -H 'authorization: vapid t=x.y.z, k=B' "https://127.0.0.1:$PORT/push/1" > "$RUN/h2load.txt"
  grep -q '^status codes: [1-9][0-9]* 2xx' "$RUN/h2load.txt" || { echo "h2load got no 2xx:"; cat "$RUN/h2load.txt"; exit 1; }
  awk '/^finished in/ { gsub(",", "", $4); print $4 }' "$RUN/h2load.txt"
}

measure() {
  local name=$1; shift
  local before after rate
  before=$(h2load_rate "$@")
  "$bench" webpush --base-url "https://localhost:$PORT" --ca-file "$RUN/ca.pem" --count "$COUNT" | tee "$RUN/pushpipe.txt"
  after=$(h2load_rate "$@")
  rate=$(sed -nE 's/.* = ([0-9]+)\/s.*/\1/p' "$RUN/pushpipe.txt")
  python3 -c "
before, after, rate = $before, $after, $rate
h = (before + after) / 2
print('h2load ($name): %.0f/s before, %.0f/s after; pushpipe %d/s = %.0f%% of it' % (before, after, rate, 100 * rate / h))"
}

echo "== HTTP/1.1"
start_standin
measure "HTTP/1.1, 16 connections" --h1 -c 16
kill "$standin"; wait "$standin" 2>/dev/null || true; standin=

echo "== HTTP/2"
start_standin --http2
measure "HTTP/2, 1 connection, 100 streams" -c 1 -m 100
