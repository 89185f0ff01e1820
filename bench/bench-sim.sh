#!/bin/sh
# bench-sim.sh: the full published comparison on the openb trace, and the
# speed of one replay.  Usage: bench/bench-sim.sh [BUILD_DIR] (default build)
# Trace folder: $HERD_TRACES or ../shared/traces/openb.
set -eu
build=${1:-build}
herd=$build/src/cli/herd
dir=${HERD_TRACES:-../shared/traces/openb}
nodes=$dir/openb_node_list_gpu_node.csv
echo "== speed: default trace, one seed, median of 5"
for pol in fgd herd; do
	for i in 1 2 3 4 5; do
		/usr/bin/time -f %e "$herd" sim --nodes "$nodes" --pods "$dir/openb_pod_list_default.csv" \
			--policy $pol --seeds 42 -json 2>&1 >/dev/null
	done | sort -n | sed -n 3p | sed "s/^/$pol seconds (median): /"
done
echo "== synthetic 10,000 nodes x 8 GPUs (openb's task mix, half full, with departures)"
for pol in fgd herd bestfit; do "$build/bench/bench_sched" $pol 10000 20000; done
echo "== the same, scoring every node (no groups)"
for pol in fgd herd; do "$build/bench/bench_sched" $pol 10000 1000 scan; done
echo "== published comparison (seeds 42-51)"
for f in "$dir"/openb_pod_list_*.csv; do
	echo "-- $(basename "$f")"
	"$herd" sim --nodes "$nodes" --pods "$f" --policy random,dotprod,clustering,packing,bestfit,fgd,herd
done
