#!/bin/sh
# The harness's files form layers: each calls only files of a lower rank,
# so the main file calls down, the modes never call back into the worker,
# and there is no circle (each file's header states its rank too).
# Reads the symbols of the built objects with nm (STRESS_OBJECTS, or every
# object here) and fails on any use of a function or variable of a file
# of the same rank or above, and on a file with no rank.
set -eu
command -v nm >/dev/null || { echo "nm not found"; exit 77; }
objs=${STRESS_OBJECTS:-$(ls ./*.o 2>/dev/null || :)}
[ -n "$objs" ] || { echo "no objects of lfpool-stress here"; exit 77; }
# shellcheck disable=SC2086
nm -A $objs | awk '
BEGIN {
	# rank: a file may call only files of a lower rank
	split("clock tally mode usage bound check tsan-supp", r0)
	for (i in r0) rank[r0[i]] = 0
	split("options validate report exhaust rcu", r1)
	for (i in r1) rank[r1[i]] = 1
	split("life trim", r2); for (i in r2) rank[r2[i]] = 2
	split("handle drain", r3); for (i in r3) rank[r3[i]] = 3
	rank["idle"] = 4
	rank["ops"] = 5
	rank["worker"] = 6
	rank["lfpool-stress"] = 7
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
}'
