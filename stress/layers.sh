#!/bin/sh
# SPDX-License-Identifier: MIT
# The harness's files form layers: each calls only files of a lower rank,
# so the main file calls down, the modes never call back into the worker,
# and there is no circle (each file's header states its rank too).
# Reads the symbols of the built objects with nm (STRESS_OBJECTS, or every
# object here) and fails on any use of a function or variable of a file
# of the same rank or above, and on a file with no rank. From the sources
# (in $srcdir), fails on a file that includes the header of a file of the
# same rank or above (stress.h and run.h are everyone's), and on a file
# with neither a header of its own nor a place on the list of those that
# need none.
set -eu
# rank: a file may call only files of a lower rank
ranks='
0 clock tally mode usage bound check tsan-supp
1 options validate report exhaust rcu
2 life trim
3 handle drain
4 idle
5 ops
6 worker
7 lfpool-stress
'
command -v nm >/dev/null || { echo "nm not found"; exit 77; }
objs=${STRESS_OBJECTS:-$(ls ./*.o 2>/dev/null || :)}
[ -n "$objs" ] || { echo "no objects of lfpool-stress here"; exit 77; }
fail=0
# shellcheck disable=SC2086
nm -A $objs | awk -v ranks="$ranks" '
BEGIN {
	n = split(ranks, w, "\n")
	for (i = 1; i <= n; i++) {
		k = split(w[i], f, " ")
		for (j = 2; j <= k; j++) rank[f[j]] = f[1]
	}
}
{
	# "file.o:addr type name" or "file.o: U name"
	n = split($1, p, ":"); obj = p[n - 1]
	sub(/.*\//, "", obj); sub(/\.o(bj)?$/, "", obj)
	files[obj] = 1
	if (NF == 3 && $2 ~ /^[TDBRV]$/) def[$3] = obj
	if (NF == 3 && $2 == "U") { nu++; uobj[nu] = obj; usym[nu] = $3 }
}
END {
	bad = 0
	for (o in files)
		if (!(o in rank)) {
			printf "layers: %s.c has no rank\n", o; bad = 1
		}
	for (i = 1; i <= nu; i++) {
		o = uobj[i]; s = usym[i]
		if (!(s in def) || def[s] == o || !(o in rank) ||
		    !(def[s] in rank))
			continue
		if (rank[def[s]] >= rank[o]) {
			printf "layers: %s.c (rank %d) calls %s in %s.c (rank %d)\n",
			       o, rank[o], s, def[s], rank[def[s]]
			bad = 1
		}
		calls++
	}
	printf "layers: %d uses between files, all downward: %s\n",
	       calls, bad ? "no" : "yes"
	exit bad
}' || fail=1

# The headers, from the sources: a file includes its own header, stress.h
# and run.h (the state every worker shares), and only the headers of
# files of a lower rank, so that what it can call is what it includes.
# The main file and tsan-supp.c offer nothing and need no header.
src=${srcdir:-.}
if ! [ -f "$src/stress.h" ]; then
	echo "layers: no sources in $src, headers not checked"
	exit $fail
fi
for f in "$src"/*.c "$src"/*.h; do
	awk '/^#include "/ { h = $2; gsub(/"/, "", h); print FILENAME, h }' "$f"
done | awk -v ranks="$ranks" -v src="$src" '
BEGIN {
	n = split(ranks, w, "\n")
	for (i = 1; i <= n; i++) {
		k = split(w[i], f, " ")
		for (j = 2; j <= k; j++) rank[f[j]] = f[1]
	}
	shared["stress"] = shared["run"] = 1
	noheader["lfpool-stress"] = noheader["tsan-supp"] = 1
	for (u in rank)
		if (!(u in noheader) &&
		    (getline line < (src "/" u ".h")) < 0) {
			printf "layers: %s.c has no header %s.h\n", u, u; bad = 1
		}
}
{
	u = $1; sub(/.*\//, "", u); sub(/\.[ch]$/, "", u)
	h = $2; sub(/\.h$/, "", h)
	if (h == u || h in shared || !(h in rank)) next
	if (!(u in rank)) {
		if (u in shared) {
			printf "layers: %s.h includes %s.h, a file'"'"'s header\n", u, h
			bad = 1
		}
		next
	}
	if (rank[h] >= rank[u]) {
		fn = $1; sub(/.*\//, "", fn)
		printf "layers: %s (rank %d) includes %s.h (rank %d)\n",
		       fn, rank[u], h, rank[h]
		bad = 1
	}
	incs++
}
END {
	printf "layers: %d headers of other files included, all of lower ranks: %s\n",
	       incs, bad ? "no" : "yes"
	exit bad
}' || fail=1
exit $fail
