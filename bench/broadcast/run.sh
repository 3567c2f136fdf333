#!/usr/bin/env bash
# Peak memory of one broadcast (an event for every user) to 10,000 and to 100,000 tokens:
# it must stay flat, since the processor renders and delivers one page of users at a time.
# In-process only (the stdout transport, output discarded). TOKENS="10000 100000".
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib/build.sh
build_release pushpipe-bench
for tokens in ${TOKENS:-10000 100000}; do
  .build/release/pushpipe-bench broadcast --tokens "$tokens" | grep '^broadcast:'
done
