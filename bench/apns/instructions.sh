#!/usr/bin/env bash
# Instructions per notification (issue 15): a figure that does not drift with the machine.
# `perf stat -e instructions` where the machine has counters, else a qemu-user plugin, on
# pushpipe (the APNs benchmark driver, SQLite, 1 connection) and on h2load against the same
# nginx stand-in. Each runs twice, SMALL and LARGE notifications, and the difference is
# divided by LARGE − SMALL, so start-up (key loading, TLS handshake, migrations) cancels out.
#   SMALL=2000 LARGE=10000 bash bench/apns/instructions.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
SMALL=${SMALL:-2000}
LARGE=${LARGE:-10000}
PORT=${PORT:-8444}
source bench/lib/build.sh
prepare_bench

RUN=$(mktemp -d /tmp/pushpipe-instructions.XXXXXX)
source bench/lib/nginx-apns.sh
trap 'stop_nginx_apns "$RUN"; rm -rf "$RUN"' EXIT
start_nginx_apns "$RUN" "$PORT"
apns_reference_load "$RUN" "$PORT"

# Read whole before testing: `grep -q` closing the pipe early fails the pipeline under pipefail,
# which sent a machine without counters down the perf branch.
counters=$(perf stat -e instructions true 2>&1 || echo "not supported")
if [[ $counters == *"not supported"* ]]; then
  # No hardware counter here, and valgrind 3.19 dies when a Swift 6.3 binary starts its first
  # dispatch thread: count under qemu-user with a plugin (bench/lib/qemu-instructions.c).
  # Emulated, pushpipe runs about 30 times slower, so what depends on time (how many
  # notifications a group commit gathers, idle threads waking) weighs more than on the real
  # machine: a figure for comparing builds, not the native count.
  if ! command -v qemu-x86_64 >/dev/null 2>&1; then apt-get update -qq && apt-get install -y -qq qemu-user >/dev/null; fi
  gcc -O2 -shared -fPIC -fvisibility=hidden bench/lib/qemu-instructions.c -o "$RUN/libinstructions.so"
  echo "counting with qemu-user and bench/lib/qemu-instructions.c (perf has no instruction counter here)"
  count() {
    local program=$1; shift
    qemu-x86_64 -plugin "$RUN/libinstructions.so" -d plugin "$(command -v "$program")" "$@" 2>&1 >/dev/null | awk '/^instructions: / { print $2 }'
  }
else
  echo "counting with perf stat -e instructions"
  count() { perf stat -x, -e instructions -o "$RUN/perf.txt" "$@" >/dev/null 2>&1; awk -F, '/instructions/ { print $1; exit }' "$RUN/perf.txt"; }
fi
pushpipe() { count "$bench" apns --base-url "https://localhost:$PORT" --ca-file "$RUN/ca.pem" --count "$1" --connections 1; }
reference() { count h2load -n "$1" "${H2LOAD_APNS[@]}"; }
per() {
  if [ -z "$1" ] || [ -z "$2" ]; then echo "not counted: the counter failed on this binary (bench/README.md)"; return; fi
  python3 -c "print('%.0f' % (($2 - $1) / ($LARGE - $SMALL)))"
}
p_small=$(pushpipe "$SMALL"); p_large=$(pushpipe "$LARGE")
h_small=$(reference "$SMALL"); h_large=$(reference "$LARGE")
echo "pushpipe: $p_small instructions for $SMALL notifications, $p_large for $LARGE: $(per "$p_small" "$p_large") per notification"
echo "h2load:   $h_small instructions for $SMALL requests, $h_large for $LARGE: $(per "$h_small" "$h_large") per request"
