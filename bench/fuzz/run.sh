#!/usr/bin/env bash
# Runs one libFuzzer target (issue 36) for SECONDS, from the committed seed corpus, under
# AddressSanitizer. Prints libFuzzer's last status line (execs, coverage) and the crash count;
# a crash leaves its input in bench/fuzz/crashes/ (keep it as a regression test).
#   bash bench/fuzz/run.sh fuzz-json 600    # fuzz-json, fuzz-yaml, fuzz-templates, fuzz-routes, fuzz-providers, fuzz-events
# -enable-testing: fuzz-providers reads the transports' own answer types (internal to their module).
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then export PATH="$PATH:/opt/swift/usr/bin"; fi
TARGET=${1:?target, e.g. fuzz-json}
SECONDS_TO_RUN=${2:-600}
FLAGS=(-c release --product "$TARGET" -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing --scratch-path .build-fuzz)
swift build "${FLAGS[@]}" >/dev/null
BIN=$(swift build "${FLAGS[@]}" --show-bin-path)/$TARGET
corpus=corpus/${TARGET#fuzz-}
work=$(mktemp -d /tmp/pushpipe-fuzz.XXXXXX)
mkdir -p crashes
cp "$corpus"/* "$work/"
# The loader's, the routes' and the templates' runs keep one-time statics (schemas, the
# registry, the store, Mustache's) and a buffer of Foundation's file reading until exit, which
# LeakSanitizer reports at exit as leaks of no input: off there.
case "$TARGET" in fuzz-yaml|fuzz-routes|fuzz-templates|fuzz-events|fuzz-providers) export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} ;; esac
# A finding stops at its fatalError with the message; Swift's backtracer would then trip
# AddressSanitizer itself (it reads the stack of the crashed thread).
export SWIFT_BACKTRACE=enable=no
set +e
"$BIN" "$work" -max_total_time="$SECONDS_TO_RUN" -artifact_prefix=crashes/ -print_final_stats=1 > "$work.log" 2>&1
status=$?
set -e
grep -E '^#[0-9]+.*(DONE|pulse|NEW)' "$work.log" | tail -n 1
grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$work.log" || true
echo "crashes: $(ls crashes | wc -l) (exit $status); corpus grew to $(ls "$work" | wc -l) inputs"
rm -rf "$work" "$work.log"
exit $status
