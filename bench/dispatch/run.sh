#!/bin/sh
# Per-dispatch host overhead of `ephc run` on each target: the median time
# of dispatch_overhead.eir at N dispatches minus that at 0, over N.
#
#   bench/dispatch/run.sh [ephc] [N] [targets]     e.g. build/tools/ephc/ephc 20000 "cpu vulkan"
#
# PROG=bench/dispatch/alloc_free.eir times alloc/free pairs the same way.
set -e
EPHC=${1:-build/tools/ephc/ephc}
N=${2:-20000}
TARGETS=${3:-"cpu vulkan interp"}
REPS=${REPS:-5}
PROG=${PROG:-$(dirname "$0")/dispatch_overhead.eir}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# CLOCK=cpu (default): user + system seconds of the process (steadier on a
# shared machine); CLOCK=wall: elapsed seconds.
CLOCK=${CLOCK:-cpu}
wall() {  # median seconds of `ephc run` with --arg $2 on target $1
  for i in $(seq "$REPS"); do
    s=$(date +%s.%N)
    out=$(/usr/bin/time -f "%U %S" -o /tmp/eph_dispatch_time.$$ "$EPHC" run "$PROG" --target="$1" --arg "$2")
    e=$(date +%s.%N)
    [ "$out" = "$2" ] || { echo "wrong result on $1: $out" >&2; exit 1; }
    if [ "$CLOCK" = wall ]; then echo "$e - $s" | bc -l; else awk '{print $1 + $2}' /tmp/eph_dispatch_time.$$; fi
  done | median
  rm -f /tmp/eph_dispatch_time.$$
}
for t in $TARGETS; do
  t0=$(wall "$t" 0)
  tn=$(wall "$t" "$N")
  us=$(echo "($tn - $t0) * 1000000 / $N" | bc -l)
  printf '%-7s N=%-6s 0: %.3f s  N: %.3f s  per op: %.2f us\n' "$t" "$N" "$t0" "$tn" "$us"
done
