#!/usr/bin/env bash
# Peak memory of one broadcast (an event for every user) to 10,000 and to 100,000 tokens:
# it must stay flat, since the processor renders and delivers one page of users at a time.
# In-process only (the stdout transport, output discarded). TOKENS="10000 100000".
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then export PATH="$PATH:/opt/swift/usr/bin"; fi
swift build -c release --product pushpipe-bench >/dev/null
for tokens in ${TOKENS:-10000 100000}; do
  .build/release/pushpipe-bench broadcast --tokens "$tokens" | grep '^broadcast:'
done
