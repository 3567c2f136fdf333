#!/usr/bin/env bash
# Scheduled sends at scale (issue 49): SENDS events held by timing.schedule for 24 zones'
# instants GAP seconds apart, then sent zone by zone. Reports how long after its instant each
# zone's last send left, peak RSS while holding and while sending, and the store's size.
# SENDS="100000" (1000000 for the issue's figure, with LEAD=40); STORE=postgres://… for PostgreSQL;
# DAEMONS=3 (with STORE; 1 on SQLite): sent by `pushpipe run` processes through the APNs stand-in.
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib/build.sh
build_release pushpipe-bench
[ -n "${DAEMONS:-}" ] && build_release pushpipe
export PUSHPIPE_BINARY="$PWD/.build/release/pushpipe"
for sends in ${SENDS:-100000}; do
  .build/release/pushpipe-bench timing --sends "$sends" --zones 24 --gap "${GAP:-2}" \
    ${LEAD:+--lead "$LEAD"} ${STORE:+--store "$STORE"} ${DAEMONS:+--daemons "$DAEMONS"} | grep '^timing:'
done
