# Sourced by the benchmarks that run the daemon as a process: the release binary (or
# PUSHPIPE_BINARY, for A/B runs), a scratch folder RUN removed at exit, and the daemon started
# in it and stopped (DAEMON is its pid). Callers with more to stop call `cleanup` from their own trap.
#   use_daemon NAME; start_daemon ARGS...; stop_daemon
use_daemon() {
  if [ -z "${PUSHPIPE_BINARY:-}" ]; then source bench/lib/build.sh; build_release pushpipe; fi
  BINARY=${PUSHPIPE_BINARY:-$PWD/.build/release/pushpipe}
  RUN=$(mktemp -d "/tmp/pushpipe-$1-bench.XXXXXX")
  mkdir -p "$RUN/pipelines"
  trap cleanup EXIT
}

cleanup() {
  stop_daemon
  rm -rf "$RUN"
}

# Runs `pushpipe run ARGS` in RUN (pipelines/ there), output discarded, log in RUN/daemon.log.
start_daemon() {
  (cd "$RUN" && PUSHPIPE_LOG_LEVEL=warning exec "$BINARY" run "$@" --plugins none > /dev/null 2> "$RUN/daemon.log") &
  DAEMON=$!
}

stop_daemon() {
  if [ -n "${DAEMON:-}" ]; then kill "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null || true; fi
  DAEMON=
}
