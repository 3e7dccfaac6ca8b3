#!/bin/sh
# Per-dispatch host overhead of `ephc run` on each target: the median wall
# time of dispatch_overhead.eir at N dispatches minus that at 0, over N.
#
#   bench/dispatch/run.sh [ephc] [N] [targets]     e.g. build/tools/ephc/ephc 20000 "cpu vulkan"
set -e
EPHC=${1:-build/tools/ephc/ephc}
N=${2:-20000}
TARGETS=${3:-"cpu vulkan interp"}
REPS=${REPS:-5}
PROG=$(dirname "$0")/dispatch_overhead.eir
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
wall() {  # median seconds of `ephc run` with --arg $2 on target $1
  for i in $(seq "$REPS"); do
    s=$(date +%s.%N)
    out=$("$EPHC" run "$PROG" --target="$1" --arg "$2")
    e=$(date +%s.%N)
    [ "$out" = "$2" ] || { echo "wrong result on $1: $out" >&2; exit 1; }
    echo "$e - $s" | bc -l
  done | median
}
for t in $TARGETS; do
  t0=$(wall "$t" 0)
  tn=$(wall "$t" "$N")
  us=$(echo "($tn - $t0) * 1000000 / $N" | bc -l)
  printf '%-7s N=%-6s 0: %.3f s  N: %.3f s  per dispatch: %.2f us\n' "$t" "$N" "$t0" "$tn" "$us"
done
