#!/bin/sh
# SPDX-License-Identifier: MIT
# Check one Promela model of tests/model with Spin, once.
#
# Usage: check.sh NAME EXPECT [spin -D options]
#   NAME    a name for the run; its files go to $MODEL_WORK/NAME
#   EXPECT  pass: the search must be exhaustive and find no error;
#           fail: Spin must find an assertion violation and write a trail
#           (for the deliberately broken variants of the model).
# Environment: MODEL (the model's file in tests/model, depot.pml),
#   SPIN (spin), MODEL_CC (cc), MODEL_WORK (model-work),
#   MODEL_MEM (MiB Spin may use, 4096), MODEL_CFLAGS (pan's optimisation,
#   -O2), MODEL_HASH (log2 of the hash table's slots for a pass, 26).
# Exit status: 0 if the expectation held, 1 if not.
set -eu

name=$1
expect=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
spin=${SPIN:-spin}
cc=${MODEL_CC:-cc}
mem=${MODEL_MEM:-4096}
cflags=${MODEL_CFLAGS:--O2}
hash=${MODEL_HASH:-26}
work=${MODEL_WORK:-model-work}/$name
model=${MODEL:-depot.pml}

rm -rf "$work"
mkdir -p "$work"
cp "$here/$model" "$work/"
cd "$work"

# Exhaustive search for safety properties (assertions and invalid end
# states), no bit-state hashing. COLLAPSE compresses the stored states
# losslessly; MEMLIM makes Spin stop, rather than swap, past $mem MiB.
"$spin" -a "$@" "$model" >spin.out 2>&1 || {
	cat spin.out >&2
	exit 1
}
# A broken variant is searched for its shortest counterexample (-i, which
# needs -DREACH), so that its trail is short enough to read.
if [ "$expect" = fail ]; then
	"$cc" $cflags -w -DSAFETY -DCOLLAPSE -DREACH -DMEMLIM="$mem" -o pan pan.c
	./pan -m200000 -w24 -i >pan.out 2>&1 || true
else
	"$cc" $cflags -w -DSAFETY -DCOLLAPSE -DMEMLIM="$mem" -o pan pan.c
	./pan -m200000 -w"$hash" >pan.out 2>&1 || true
fi

states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.out)
depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' pan.out)
memory=$(sed -n 's/^ *\([0-9.]*\).*total actual memory usage.*/\1/p' pan.out)
seconds=$(sed -n 's/^pan: elapsed time \([0-9.e+]*\).*/\1/p' pan.out)
echo "model $name ($*): ${states:-?} states, depth ${depth:-?}," \
	"${memory:-?} MiB, ${seconds:-?} s"

complete=yes
grep -q -e 'Search not completed' -e 'max search depth too small' \
	-e 'out of memory' pan.out && complete=no

case $expect in
pass)
	if [ "$complete" = yes ] && grep -q 'errors: 0' pan.out; then
		echo "model $name: every assertion holds in every state: PASS"
		exit 0
	fi
	cat pan.out >&2
	[ -f "$model.trail" ] && "$spin" -t -p -g "$@" "$model" | tail -n 40 >&2
	echo "model $name: FAIL (see $work)" >&2
	exit 1
	;;
fail)
	# Caught by one of the model's assertions, not by an array index out
	# of bounds (which pan also reports as an assertion).
	if grep 'assertion violated' pan.out | tail -n 1 |
		grep -qv 'invalid array index' && [ -f "$model.trail" ]; then
		grep 'assertion violated' pan.out | tail -n 1
		"$spin" -t -p -g "$@" "$model" >trail.txt 2>&1 || true
		echo "model $name: the bug is caught, trail of" \
			"$(sed -n 's/.*trail ends after \([0-9]*\) steps.*/\1/p' trail.txt)" \
			"steps in $work/trail.txt: PASS (expected failure)"
		exit 0
	fi
	cat pan.out >&2
	echo "model $name: the broken variant was NOT caught: FAIL" >&2
	exit 1
	;;
*)
	echo "check.sh: EXPECT is pass or fail, not '$expect'" >&2
	exit 2
	;;
esac
