# Sourced by the instruction counts (bench/apns/instructions.sh, bench/gate/run.sh): `count`
# runs a program to its exit and prints how many user-space instructions it executed.
# `perf stat -e instructions` where the machine has counters, else a qemu-user plugin
# (bench/lib/qemu-instructions.c): no hardware counter here, and valgrind 3.19 dies when a
# Swift 6.3 binary starts its first dispatch thread. Emulated, pushpipe runs about 30 times
# slower, so the figure compares builds; it is not the native count.
#   use_instruction_counter RUN; count PROGRAM ARGS...   (count on stdout; the program's own in $INSTRUCTION_DIR/output)
use_instruction_counter() {
  INSTRUCTION_DIR=$1
  local counters
  # Read whole before testing: `grep -q` closing the pipe early fails the pipeline under
  # pipefail, which sent a machine without counters down the perf branch.
  counters=$(perf stat -e instructions true 2>&1 || echo "not supported")
  if [[ $counters == *"not supported"* ]]; then
    if ! command -v qemu-x86_64 >/dev/null 2>&1; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user >/dev/null
    fi
    gcc -O2 -shared -fPIC -fvisibility=hidden "$(dirname "${BASH_SOURCE[0]}")/qemu-instructions.c" -o "$INSTRUCTION_DIR/libinstructions.so"
    INSTRUCTION_COUNTER="qemu-user and bench/lib/qemu-instructions.c (perf has no instruction counter here)"
    count() {
      local program=$1
      shift
      qemu-x86_64 -plugin "$INSTRUCTION_DIR/libinstructions.so" -d plugin "$(command -v "$program")" "$@" 2>&1 >"$INSTRUCTION_DIR/output" \
        | awk '/^instructions: / { print $2 }'
    }
    # A long-running program (a daemon): started in the background (COUNTED_PID), its count
    # written to FILE when it exits (`stop_counted` sends it SIGTERM); `counted FILE` reads it.
    count_in_background() {
      local file=$1 program=$2
      shift 2
      qemu-x86_64 -plugin "$INSTRUCTION_DIR/libinstructions.so" -d plugin -D "$file" "$(command -v "$program")" "$@" &
      COUNTED_PID=$!
    }
    stop_counted() { kill -TERM "$COUNTED_PID"; }
  else
    INSTRUCTION_COUNTER="perf stat -e instructions"
    count() {
      perf stat -x, -e instructions -o "$INSTRUCTION_DIR/perf.txt" "$@" >"$INSTRUCTION_DIR/output" 2>/dev/null || return 1
      awk -F, '/instructions/ { print $1; exit }' "$INSTRUCTION_DIR/perf.txt"
    }
    count_in_background() {
      local file=$1
      shift
      perf stat -x, -e instructions -o "$file" "$@" &
      COUNTED_PID=$!
    }
    # perf writes its count when its child exits: the signal goes to the child.
    stop_counted() { pkill -TERM -P "$COUNTED_PID"; }
  fi
}

# The count a `count_in_background` wrote, once its program exited.
counted() { sed -nE 's/^instructions: ([0-9]+)$/\1/p; s/^([0-9]+),[^,]*,instructions.*/\1/p' "$1" | head -n 1; }

# Instructions per item from counts for SMALL and LARGE items: start-up cancels out.
#   per_item SMALL_COUNT LARGE_COUNT SMALL LARGE
per_item() {
  if [ -z "$1" ] || [ -z "$2" ]; then echo "not counted: the counter failed on this binary (bench/README.md)" >&2; return 1; fi
  python3 -c "print('%.0f' % (($2 - $1) / ($4 - $3)))"
}
