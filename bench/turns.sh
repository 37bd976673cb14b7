#!/usr/bin/env bash
# turns.sh BASE BENCH [ROUNDS] [BENCHTIME] compares a benchmark of ./bench
# at commit BASE with the working tree: it builds both test binaries, each
# from its own checkout, runs them in turns (base, head, base, head, ...)
# ROUNDS times (default 12) with -test.count 1 and -test.benchtime
# BENCHTIME (default 200000x: BenchmarkPipeline's stream once), prints
# every run, then the medians of each and head's throughput relative to
# base's: in hits/s where the benchmark reports it, else as the inverse of
# ns/op; as the ratio of the medians and the median of the rounds' ratios.
# The environment reaches both binaries (a variable base's benchmark does
# not read changes nothing there). BenchmarkPipeline timed its final
# snapshot in ns/op before ca802c0: compare such a base in hits/s, as the
# ratio does. Run it on an otherwise idle
# machine: this one's throughput moves by ±20% from hour to hour, which
# turns cancel and a single run does not.
#
#	bench/turns.sh e23a67d '^BenchmarkPipeline$/batch=1$'
set -euo pipefail
if [ $# -lt 2 ]; then
	echo "usage: $0 BASE BENCH [ROUNDS] [BENCHTIME]" >&2
	exit 2
fi
base=$1 bench=$2 rounds=${3:-12} benchtime=${4:-200000x}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
cleanup() {
	git -C "$root" worktree remove --force "$tmp/base" >/dev/null 2>&1 || true
	rm -rf "$tmp"
	git -C "$root" worktree prune
}
trap cleanup EXIT
git -C "$root" worktree add -q --detach "$tmp/base" "$base"
(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./bench)
(cd "$root" && go test -c -o "$tmp/head.test" ./bench)
# Each binary runs in its own checkout's bench directory; a run that fails
# or reports no benchmark stops the comparison, with its output.
dir_base=$tmp/base/bench dir_head=$root/bench
for i in $(seq "$rounds"); do
	for b in base head; do
		dir=dir_$b
		if ! (cd "${!dir}" && "$tmp/$b.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" -test.count 1) >"$tmp/out" 2>&1 ||
			! grep -q '^Benchmark.*/op' "$tmp/out"; then
			echo "$b, round $i: the run failed or matched no benchmark:" >&2
			cat "$tmp/out" >&2
			exit 1
		fi
		grep '^Benchmark.*/op' "$tmp/out" | sed "s/^/$b /"
	done
done | tee "$tmp/runs"

# value FILE NAME UNIT: the values of UNIT (ns/op, hits/s) in the lines of
# benchmark NAME, one a line.
value() {
	awk -v name="$2" -v unit="$3" '$2 == name { for (i = 3; i < NF; i++) if ($(i+1) == unit) print $i }' "$1"
}
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) printf "%.10g\n", v[(NR+1)/2]; else printf "%.10g\n", (v[NR/2] + v[NR/2+1]) / 2 }'
}
echo
grep '^base ' "$tmp/runs" >"$tmp/base.runs"
grep '^head ' "$tmp/runs" >"$tmp/head.runs"
for name in $(awk '{ print $2 }' "$tmp/runs" | sort -u); do
	echo "$name: median ns/op base $(value "$tmp/base.runs" "$name" ns/op | median), head $(value "$tmp/head.runs" "$name" ns/op | median)"
	if [ -n "$(value "$tmp/base.runs" "$name" hits/s)" ]; then
		# Throughput: base and head hits/s, one round a line.
		paste <(value "$tmp/base.runs" "$name" hits/s) <(value "$tmp/head.runs" "$name" hits/s) >"$tmp/pairs"
		what="hits/s"
	else
		# Throughput as the inverse of the time an op.
		paste <(value "$tmp/head.runs" "$name" ns/op) <(value "$tmp/base.runs" "$name" ns/op) >"$tmp/pairs"
		what="1/(ns/op)"
	fi
	b=$(awk '{ print $1 }' "$tmp/pairs" | median)
	h=$(awk '{ print $2 }' "$tmp/pairs" | median)
	r=$(awk '{ print $2 / $1 }' "$tmp/pairs" | median)
	awk -v b="$b" -v h="$h" -v r="$r" -v what="$what" 'BEGIN { printf "  throughput (%s) head/base: %.3f (ratio of the medians), %.3f (median of the rounds'"'"' ratios)\n", what, h / b, r }'
	if [ "$what" = "hits/s" ]; then
		echo "  median hits/s: base $b, head $h"
	fi
done
