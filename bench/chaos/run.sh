#!/usr/bin/env bash
# Chaos soak (issue 33): three daemons on one PostgreSQL database, a shared reply folder, the OGS
# stand-in and a slow, faulty APNs stand-in per daemon; SIGKILL, SIGTERM, SIGHUP with a changed
# pipeline, pg_terminate_backend and a database outage at random; the third daemon's clock a
# minute ahead (Debian's faketime). Prints one table; exits 1 on anything lost, any unexplained
# duplicate or rows left. 127.0.0.1 only; bounded by SECONDS_OF_FAULTS (default 600).
#   SECONDS_OF_FAULTS=600 OUTAGE=30 SEED=33 bash bench/chaos/run.sh   (OUTAGE_AT=15: the first outage 15 s in;
#   CHAOS_LOGS=DIR: each daemon's whole log in DIR/instance-N.log; ADVERSARIAL=1: the hostile
#   counterparts of issue 45 too: see bench/README.md)
# Uses $PUSHPIPE_TEST_POSTGRES_URL when set; otherwise starts a throwaway server (Debian's postgresql).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v faketime >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime >/dev/null; }
swift build --product pushpipe >/dev/null
swift build --product pushpipe-bench >/dev/null
if [ -z "${PUSHPIPE_TEST_POSTGRES_URL:-}" ]; then
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  PGDATA=$(mktemp -d /tmp/pushpipe-chaos-postgres.XXXXXX)
  PGPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  as_postgres() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$1"; else sh -c "$1"; fi; }
  [ "$(id -u)" = 0 ] && chown postgres "$PGDATA"
  as_postgres "'$PGBIN/initdb' -D '$PGDATA' -A trust -U postgres >/dev/null"
  as_postgres "'$PGBIN/pg_ctl' -D '$PGDATA' -o '-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGDATA' -l '$PGDATA/server.log' -w start >/dev/null"
  trap "as_postgres \"'$PGBIN/pg_ctl' -D '$PGDATA' -m fast -w stop >/dev/null\" || true; rm -rf '$PGDATA'" EXIT
  export PUSHPIPE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$PGPORT/postgres?sslmode=disable"
fi
.build/debug/pushpipe-bench chaos --seconds "${SECONDS_OF_FAULTS:-600}" --outage "${OUTAGE:-30}" --seed "${SEED:-33}" \
  ${OUTAGE_AT:+--outage-at "$OUTAGE_AT"} ${CHAOS_LOGS:+--logs "$CHAOS_LOGS"} ${ADVERSARIAL:+--adversarial}
