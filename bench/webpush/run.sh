#!/usr/bin/env bash
# Web Push: the encryption alone (an ECDH and a key pair per message, RFC 8291), then the whole
# path (webpush renderer and transport, VAPID, HTTPS) against a push-service stand-in in another
# process that answers 201 without checking (`pushpipe-bench webpush-standin`), bracketed by
# h2load over HTTP/1.1 (16 connections) posting a body of the same size to the same stand-in.
# Bounded: COUNT notifications, two h2load runs of COUNT requests.
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
"$bench" webpush-standin --port "$PORT" --ca-file "$RUN/ca.pem" --seconds 900 > "$RUN/standin.log" &
standin=$!
until grep -q '^listening' "$RUN/standin.log" 2>/dev/null; do
  kill -0 "$standin" 2>/dev/null || { echo "the stand-in did not start"; exit 1; }
  sleep 0.1
done

# The reference: an encrypted message's size (a 200-byte message + 86 + 1 + 16), with the
# headers pushpipe sends, over HTTP/1.1 with TLS.
head -c 303 /dev/urandom > "$RUN/body"
h2load_rate() {
  h2load --h1 -n "$COUNT" -c 16 -d "$RUN/body" -H 'ttl: 86400' -H 'urgency: normal' -H 'content-encoding: aes128gcm' \
    -H 'authorization: vapid t=x.y.z, k=B' "https://127.0.0.1:$PORT/push/1" > "$RUN/h2load.txt"
  awk '/^finished in/ { gsub(",", "", $4); print $4 }' "$RUN/h2load.txt"
}
before=$(h2load_rate)
"$bench" webpush --base-url "https://localhost:$PORT" --ca-file "$RUN/ca.pem" --count "$COUNT" | tee "$RUN/pushpipe.txt"
after=$(h2load_rate)
rate=$(sed -nE 's/.* = ([0-9]+)\/s.*/\1/p' "$RUN/pushpipe.txt")
python3 -c "
before, after, rate = $before, $after, $rate
h = (before + after) / 2
print('h2load (HTTP/1.1, 16 connections): %.0f/s before, %.0f/s after; pushpipe %d/s = %.0f%% of it' % (before, after, rate, 100 * rate / h))"
