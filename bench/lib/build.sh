# Builds release products as production runs them: the PATH for /opt/swift, and on Linux the
# `jemalloc` trait (Debian's libjemalloc-dev, installed when missing). ALLOCATOR=glibc builds
# without the trait, to measure the difference (docs/operations.md, "Production build").
#   source bench/lib/build.sh; build_release pushpipe-bench [pushpipe]
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then export PATH="$PATH:/opt/swift/usr/bin"; fi
build_release() {
  local traits=()
  if [ "$(uname)" = Linux ] && [ "${ALLOCATOR:-jemalloc}" = jemalloc ]; then
    if [ ! -e /usr/include/jemalloc/jemalloc.h ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libjemalloc-dev >/dev/null
    fi
    traits=(--traits jemalloc)
  fi
  local product
  for product in "$@"; do
    swift build -c release --product "$product" "${traits[@]}" >/dev/null
  done
}

# What a measured run needs: h2load (every measurement is bracketed by it) and the driver,
# $BENCH when given, else built here. Sets `bench`.
#   source bench/lib/build.sh; prepare_bench
prepare_bench() {
  if ! command -v h2load >/dev/null 2>&1; then apt-get update -qq && apt-get install -y -qq nghttp2-client >/dev/null; fi
  if [ -z "${BENCH:-}" ]; then build_release pushpipe-bench; fi
  bench=${BENCH:-.build/release/pushpipe-bench}
}
