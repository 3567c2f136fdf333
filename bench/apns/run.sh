#!/usr/bin/env bash
# APNs throughput: nginx as an HTTP/2 + TLS APNs stand-in on 127.0.0.1, then
#   1. h2load (1 connection, 100 streams, 200-byte payload): the ceiling;
#   2. pushpipe end to end (events → apns.alert → apns → outcome in SQLite), 1 and 4 connections;
#   3. a long run for memory: peak RSS must stay flat.
# Bounded: every load stops after its count. nginx is stopped at the end.
#   COUNT=200000 LONG_COUNT=1000000 PORT=8443 bash bench/apns/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
COUNT=${COUNT:-200000}
LONG_COUNT=${LONG_COUNT:-1000000}
PORT=${PORT:-8443}

if ! command -v nginx >/dev/null 2>&1 || ! command -v h2load >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq nginx nghttp2-client >/dev/null
fi

# Built first, so the build does not run between the measurements.
# BENCH=path/to/pushpipe-bench measures another build (A/B) instead of building this one.
source bench/lib/build.sh
if [ -z "${BENCH:-}" ]; then build_release pushpipe-bench; fi

RUN=$(mktemp -d /tmp/pushpipe-apns-bench.XXXXXX)
source bench/lib/nginx-apns.sh
cleanup() {
  stop_nginx_apns "$RUN"
  rm -rf "$RUN"
}
trap cleanup EXIT
start_nginx_apns "$RUN" "$PORT"

# The reference load: 200 bytes of JSON, like a small alert.
apns_reference_load "$RUN" "$PORT"

# The machine's speed drifts (shared cores): h2load runs before and after pushpipe, and the
# ratio is taken against the mean of the two.
h2load_run() { apns_h2load_rate "$RUN" "$COUNT"; }
echo "== h2load: $COUNT requests, 1 connection, 100 concurrent streams, $(wc -c < "$RUN/payload.json")-byte payload"
before=$(h2load_run)

bench=${BENCH:-.build/release/pushpipe-bench}
common=(--base-url "https://localhost:$PORT" --ca-file "$RUN/ca.pem")

rates=()
for connections in 1 4; do
  echo "== pushpipe: $COUNT notifications, $connections connection(s)"
  line=$("$bench" apns "${common[@]}" --count "$COUNT" --connections "$connections" | tail -1)
  echo "$line"
  rates+=("$(echo "$line" | sed -E 's/.* = ([0-9]+)\/s.*/\1/')")
done

# The same on PostgreSQL (Debian's package, a throwaway server on 127.0.0.1 sharing the two
# cores), against the SQLite rate of this run.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then apt-get install -y -qq postgresql >/dev/null; fi
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
PGPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$RUN/postgres" && chown postgres "$RUN/postgres"
su postgres -s /bin/sh -c "'$PGBIN/initdb' -D '$RUN/postgres' -A trust -U postgres >/dev/null && '$PGBIN/pg_ctl' -D '$RUN/postgres' -o '-c listen_addresses=127.0.0.1 -p $PGPORT -k $RUN/postgres' -l '$RUN/postgres/log' -w start >/dev/null"
echo "== pushpipe on PostgreSQL: $COUNT notifications, 1 connection"
pgline=$("$bench" apns "${common[@]}" --count "$COUNT" --connections 1 --store "postgres://postgres@127.0.0.1:$PGPORT/postgres?sslmode=disable" | tail -1)
su postgres -s /bin/sh -c "'$PGBIN/pg_ctl' -D '$RUN/postgres' -m fast -w stop >/dev/null" || true
echo "$pgline"
pgrate=$(echo "$pgline" | sed -E 's/.* = ([0-9]+)\/s.*/\1/')
python3 -c "print('PostgreSQL/SQLite, 1 connection: %.0f%% (%s/s of %s/s)' % (100.0 * $pgrate / ${rates[0]}, '$pgrate', '${rates[0]}'))"

echo "== h2load again"
after=$(h2load_run)
ceiling=$(python3 -c "print('%.0f' % (($before + $after) / 2))")
echo "h2load: $before/s before, $after/s after, mean $ceiling/s"
for index in 0 1; do
  python3 -c "print('pushpipe/h2load, %s connection(s): %.0f%% (%s/s of %s/s)' % ('$([ $index = 0 ] && echo 1 || echo 4)', 100.0 * ${rates[$index]} / $ceiling, '${rates[$index]}', '$ceiling'))"
done

if [ "$LONG_COUNT" -gt 0 ]; then
  echo "== pushpipe: $LONG_COUNT notifications, 1 connection (memory over a long run)"
  "$bench" apns "${common[@]}" --count "$LONG_COUNT" --connections 1 | tail -1
fi
