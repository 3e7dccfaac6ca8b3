#!/bin/sh
# Host <-> device round trips (h2d then d2h) of N u32 through `ephc run`:
# the median wall time of transfer.eir at R round trips minus that at 0,
# over R, per target. EPH_HOST (interp|jit|auto) picks how host code runs.
#
#   bench/dispatch/transfer.sh [ephc] [N] [R] [targets]   e.g. build/tools/ephc/ephc 16777216 10 "cpu vulkan"
set -e
EPHC=${1:-build/tools/ephc/ephc}
N=${2:-16777216}
R=${3:-10}
TARGETS=${4:-"cpu vulkan"}
REPS=${REPS:-5}
PROG=$(dirname "$0")/transfer.eir
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
wall() {  # median seconds on target $1 with $2 round trips
  for i in $(seq "$REPS"); do
    s=$(date +%s.%N)
    out=$("$EPHC" run "$PROG" --target="$1" --arg "$N" --arg "$2")
    e=$(date +%s.%N)
    [ "$out" = "$((N - 1))" ] || { echo "wrong result on $1: $out" >&2; exit 1; }
    echo "$e - $s" | bc -l
  done | median
}
for t in $TARGETS; do
  t0=$(wall "$t" 0)
  tr=$(wall "$t" "$R")
  ms=$(echo "($tr - $t0) * 1000 / $R" | bc -l)
  mb=$(echo "$N * 4 / 1048576" | bc)
  printf '%-7s %s MiB x %s: 0: %.3f s  R: %.3f s  per round trip: %.1f ms\n' "$t" "$mb" "$R" "$t0" "$tr" "$ms"
done
