#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs the recipes of lfpool-probes(7), EXAMPLES, of one tracer, as a
# user types them: probes_recipes.sh bpftrace | perf (probes_bpftrace.test
# and probes_perf.test). Each block the page's source marks with
# '.\" recipe TOOL-WHAT' is read from the page, its roff escapes undone,
# so that the page and the test cannot drift; LIB, PROG, PID and "engine"
# are replaced, and it runs against probes_events (linked with the shared
# library) and probes_static (the same program linked with liblfpool.a).
# What it prints is checked against what the program counted (lfp_stats):
# the pool's name as text, and the number of events of each probe.
# Also: every recipe of the page has a check here and every check its
# recipe; each recipe line shows as written in the page that groff
# renders; each command line of README.md's "Watching pools live" is a
# line of a recipe.
#
# A tracer that attaches to a running program (-p PID), or that must be
# ready before the program starts (a filter on its name), is waited for
# in the program's memory: the first byte of a probe's site changes when
# a uprobe is installed there; then until the tracer sleeps waiting for
# events, which it enabled. Meanwhile the program waits for a line on a
# pipe (probes_events ... wait).
#
# Skipped (77), saying why, where the machine does not let the tool
# trace: probes not built, not root, no uprobes, the tool missing or
# refused, tracefs not mounted at /sys/kernel/tracing (where the perf
# recipes look). perf's events are global: one run at a time adds them
# (a lock shared with probes_trace.test), never over events someone else
# added, and deletes them on any exit. The tracing tests of one build
# take turns (probes-trace.lock), since a tracer of one would put its
# uprobes where another waits for its own.
set -u
LC_ALL=C
export LC_ALL
tool=${1:-}
case $tool in
bpftrace) tags="count hist interval comm static" ;;
perf) tags="define stat trace record delete" ;;
*) echo "usage: probes_recipes.sh bpftrace|perf" >&2; exit 2 ;;
esac
srcdir=${srcdir:-.}
page=$srcdir/../include/man/lfpool-probes.7
readme=$srcdir/../README.md
EXTRA=5
name="recipe-$$" # the pool's name, unique to this run
tracefs=/sys/kernel/tracing
tmp=$(mktemp -d "${TMPDIR:-/tmp}/probes_$tool.XXXXXX") || exit 1
added=
prog_pid=
bg_pid=
cleanup() {
	[ -n "$bg_pid" ] && kill "$bg_pid" 2>/dev/null
	[ -n "$prog_pid" ] && kill "$prog_pid" 2>/dev/null
	if [ -n "$added" ]; then
		perf probe -q --del 'lfpool:*' >/dev/null 2>&1
		perf probe -q --del 'sdt_lfpool:*' >/dev/null 2>&1
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fail=0
bad() { printf 'FAIL: %s\n' "$*"; fail=1; }
# What failed already (the page, README.md) fails the test all the same.
skip() {
	printf 'SKIP: %s\n' "$*"
	[ "$fail" = 0 ] || exit 1
	exit 77
}

# ---------------------------------------------------------------------
# The recipes, from the page: $tmp/recipe.TAG, and $tmp/tags in order.

[ -f "$page" ] || { echo "FAIL: $page not found"; exit 1; }
awk -v dir="$tmp" '
function unroff(s,   out, c, t, i) {
	out = ""
	while ((i = index(s, "\\")) > 0) {
		out = out substr(s, 1, i - 1)
		c = substr(s, i + 1, 1)
		s = substr(s, i + 2)
		if (c == "-") out = out "-"
		else if (c == "e") out = out "\\"
		else if (c == "&") ;
		else if (c == "(") {
			t = substr(s, 1, 2)
			s = substr(s, 3)
			if (t == "aq") out = out "\047"
			else if (t == "dq") out = out "\""
			else if (t == "ha") out = out "^"
			else unknown = unknown " \\(" t
		} else unknown = unknown " \\" c
	}
	return out s
}
/^\.\\" recipe / { tag = $3; file = dir "/recipe." tag; print tag >(dir "/tags"); next }
tag != "" && /^\.fi/ { close(file); tag = ""; next }
tag != "" && /^[.\047]/ { next }
tag != "" { print unroff($0) >file }
END {
	if (unknown != "") {
		print "FAIL: the recipes hold roff escapes this test cannot undo:" unknown
		exit 1
	}
}' "$page" || exit 1
[ -s "$tmp/tags" ] || { echo "FAIL: no recipe marked in $page"; exit 1; }
dups=$(sort "$tmp/tags" | uniq -d)
[ -z "$dups" ] || bad "recipes marked twice in the page: $dups"

# Every recipe of this tool has a check below, and every check a recipe.
have=$(sed -n "s/^$tool-//p" "$tmp/tags" | sort | tr '\n' ' ')
want=$(printf '%s\n' $tags | sort | tr '\n' ' ')
[ "$have" = "$want" ] ||
	bad "the page's $tool recipes are '$have', this test checks '$want'"

# As the page shows them (groff, where present): a line that renders
# otherwise (a quote or a dash made typographic) is not what runs here.
if command -v groff >/dev/null; then
	groff -man -Tutf8 -rLL=250n -P-cbou "$page" 2>/dev/null |
		sed 's/^ *//' >"$tmp/rendered"
	for f in "$tmp"/recipe.*; do
		sed 's/^ *//' "$f" | while IFS= read -r l; do
			grep -qxF -- "$l" "$tmp/rendered" ||
				printf 'FAIL: %s renders otherwise than it runs: %s\n' \
					"${f##*/recipe.}" "$l"
		done
	done >"$tmp/render.fail"
	[ -s "$tmp/render.fail" ] && { cat "$tmp/render.fail"; fail=1; }
else
	echo "note: groff not found, the rendered page is not compared"
fi

# README.md's short form: each command line is a line of a recipe.
if [ -f "$readme" ]; then
	awk '/^### Watching pools live/ { on = 1; next }
	on && /^##/ { exit }
	on && /^```sh/ { code = 1; next }
	on && /^```/ { code = 0; next }
	code && !/^#/ && NF' "$readme" >"$tmp/readme"
	[ -s "$tmp/readme" ] || bad "README.md shows no recipe under Watching pools live"
	while IFS= read -r l; do
		cat "$tmp"/recipe.* | grep -qxF -- "$l" ||
			bad "README.md's recipe is none of lfpool-probes(7)'s: $l"
	done <"$tmp/readme"
fi

# ---------------------------------------------------------------------
# May this machine trace?

[ "${HAVE_PROBES:-yes}" = yes ] || skip "built with --disable-probes"
[ "$(id -u)" = 0 ] || skip "tracing needs root"
for c in "$tool" readelf timeout mkfifo od dd flock; do
	command -v "$c" >/dev/null || skip "$c not found"
done
[ -d /sys/bus/event_source/devices/uprobe ] || [ -e "$tracefs/uprobe_events" ] ||
	skip "the kernel has no uprobes"
if [ "$tool" = bpftrace ]; then
	timeout 30 bpftrace -e 'BEGIN { exit(); }' >"$tmp/try" 2>&1 ||
		skip "bpftrace may not trace here: $(grep ERROR "$tmp/try" | tail -n 1)"
else
	[ -e "$tracefs/uprobe_events" ] ||
		skip "tracefs is not mounted at $tracefs, where the recipes look (mount -t tracefs nodev $tracefs)"
	export PERF_BUILDID_DIR="$tmp/buildid"
fi

lib=../src/.libs/$(readelf -d ../src/.libs/liblfpool.so |
	sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ -f "$lib" ] || { echo "FAIL: $lib not found"; exit 1; }
lib=$(cd "${lib%/*}" && pwd)/${lib##*/}
shared=$(pwd)/probes_events
static=$(pwd)/probes_static
for p in "$shared" "$static"; do
	readelf -h "$p" >/dev/null 2>&1 || { echo "FAIL: $p is no program"; exit 1; }
done
readelf -n "$static" | grep -q 'Provider: lfpool' ||
	{ echo "FAIL: $static carries no probe"; exit 1; }

# One tracing test of this build at a time (probes_trace.test too): a
# tracer attached to the library for every process puts its uprobes on
# the sites the others wait for.
exec 7>probes-trace.lock
timeout 300 flock 7 || skip "another probes test of this build holds probes-trace.lock"

# ---------------------------------------------------------------------
# Running a recipe.

# The recipe $1 with LIB, PROG, PID and "engine" replaced by $2 .. $5.
subst() {
	awk -v lib="$2" -v prog="$3" -v pid="$4" -v comm="\"$5\"" '{
		out = ""
		while (match($0, /LIB|PROG|PID|"engine"/)) {
			w = substr($0, RSTART, RLENGTH)
			out = out substr($0, 1, RSTART - 1) \
			      (w == "LIB" ? lib : w == "PROG" ? prog : w == "PID" ? pid : comm)
			$0 = substr($0, RSTART + RLENGTH)
		}
		print out $0
	}' "$1"
}

# The probes a recipe names: lfpool:NAME (not sdt_lfpool), or "*".
events_of() {
	grep -oE '(^|[^_a-z])lfpool:[a-z_*]+' "$1" | sed 's/.*lfpool://' |
		sort -u | tr '\n' ' '
}

# The file offsets in $1 of the sites of the probes $2 names ("*": all).
site_offsets() {
	readelf -lW "$1" | awk '$1 == "LOAD" { print $2, $3, $5 }' >"$tmp/loads"
	readelf -n "$1" | awk -v want=" $2 " '
	/^ *Provider:/ { prov = $2 }
	/^ *Name:/ { probe = $2 }
	/^ *Location:/ && prov == "lfpool" &&
	    (index(want, " * ") || index(want, " " probe " ")) {
		sub(/,$/, "", $2); print $2 }' |
	while read -r loc; do
		while read -r off va size; do
			if [ $((loc)) -ge $((va)) ] && [ $((loc)) -lt $((va + size)) ]; then
				echo $((loc - va + off))
				break
			fi
		done <"$tmp/loads"
	done
}

# Whether process $1 has a uprobe on each site (file offsets $3 ...) of
# file $2: its byte in memory is no longer the file's.
probes_in() {
	pid=$1
	file=$2
	real=$(readlink -f "$2")
	shift 2
	for off in "$@"; do
		addr=$(awk -v f="$real" '$6 == f { split($1, r, "-"); print r[1], r[2], $3 }' \
			"/proc/$pid/maps" 2>/dev/null |
			while read -r start end moff; do
				s=$((0x$start)) e=$((0x$end)) m=$((0x$moff))
				if [ "$off" -ge $m ] && [ "$off" -lt $((m + e - s)) ]; then
					echo $((s + off - m))
					break
				fi
			done)
		[ -n "$addr" ] || return 1
		mem=$(dd if="/proc/$pid/mem" bs=1 skip="$addr" count=1 2>/dev/null | od -An -tx1)
		disk=$(od -An -tx1 -j "$off" -N1 "$file")
		[ -n "$mem" ] && [ "$mem" != "$disk" ] || return 1
	done
}

# Wait (up to 30 s) until process $1 has uprobes at every site of the
# probes $3 in file $2, while the tracer lives.
wait_probes() {
	offs=$(site_offsets "$2" "$3")
	[ -n "$offs" ] || { echo "no site of the probes '$3' in $2"; return 1; }
	i=0
	# shellcheck disable=SC2086
	until probes_in "$1" "$2" $offs; do
		kill -0 "$bg_pid" 2>/dev/null || { echo "the tracer ended first"; return 1; }
		i=$((i + 1))
		[ $i -lt 300 ] || { echo "no uprobe on the sites after 30 s"; return 1; }
		sleep 0.1
	done
}

# The processes below process $1 that have none below them: the tracer,
# under the shell that runs its recipe.
tracer_leaves() {
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v top="$1" '
	{ s = $0; sub(/^.*\) /, "", s); split(s, f, " "); parent[$1] = f[2]; has[f[2]] = 1 }
	END {
		for (p in parent) {
			if (p in has) continue
			for (q = p; q in parent && q != top; q = parent[q]) ;
			if (q == top) print p
		}
	}'
}

# Wait (up to 30 s) until the tracer under process $1 waits for events:
# each of its processes asleep in poll, select or epoll, where perf and
# bpftrace sleep once their events are enabled. A uprobe is in the
# program's memory once the tracer opened its event, and perf enables
# the events it opened only later (after it wrote what it knows of the
# processes): what fires in between is lost.
wait_enabled() {
	i=0
	while :; do
		leaves=$(tracer_leaves "$1")
		waiting=${leaves:+yes}
		for p in $leaves; do
			case $(cat "/proc/$p/wchan" 2>/dev/null) in
			poll_schedule_timeout* | do_epoll_wait* | ep_poll*) ;;
			*) waiting= ;;
			esac
		done
		[ -n "$waiting" ] && return 0
		kill -0 "$1" 2>/dev/null || { echo "the tracer ended first"; return 1; }
		i=$((i + 1))
		[ $i -lt 300 ] || { echo "the tracer did not wait for events after 30 s"; return 1; }
		sleep 0.1
	done
}

# Start program $1, waiting for a line on a pipe: prog_pid, $tmp/prog.out.
start_prog() {
	rm -f "$tmp/go"
	mkfifo "$tmp/go" || return 1
	"$1" "$name" "$EXTRA" wait <"$tmp/go" >"$tmp/prog.out" 2>&1 &
	prog_pid=$!
	exec 8>"$tmp/go"
	i=0
	until grep -q '^ready' "$tmp/prog.out"; do
		i=$((i + 1))
		kill -0 "$prog_pid" 2>/dev/null && [ $i -lt 300 ] ||
			{ echo "the program did not start"; return 1; }
		sleep 0.1
	done
}

# Let the program run, and wait for its end.
run_prog() {
	echo go >&8
	exec 8>&-
	wait "$prog_pid"
	st=$?
	prog_pid=
	[ $st = 0 ] || { echo "the program failed ($st)"; return 1; }
}

# Wait (up to 30 s) for the tracer's end.
wait_tracer() {
	i=0
	while kill -0 "$bg_pid" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 300 ] || { echo "the tracer did not end"; return 1; }
		sleep 0.1
	done
	wait "$bg_pid"
	st=$?
	bg_pid=
	[ $st = 0 ] || { echo "the tracer failed ($st)"; return 1; }
}

# Ctrl-C for the tracer, as a user would: once it printed the pool's
# name (or 10 s passed), and again every 2 s until it ends, then
# wait_tracer. bpftrace 0.17 misses a SIGINT that comes as it attaches its
# probes, and one that comes before it reads what they sent is the end,
# without what they sent.
interrupt() {
	i=0
	until grep -qF -- "$name" "$tmp/out" || [ $i -ge 100 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	i=0
	while kill -0 "$bg_pid" 2>/dev/null; do
		[ $i -lt 200 ] || { echo "the tracer did not end on SIGINT"; return 1; }
		[ $((i % 20)) = 0 ] && kill -INT "$bg_pid" 2>/dev/null
		i=$((i + 1))
		sleep 0.1
	done
	wait_tracer
}

# Run recipe TOOL-$1 on program $2 whose probes are in $3: its output in
# $tmp/out, the program's in $tmp/prog.out. How depends on the recipe:
# -c PROG starts the program; -p PID attaches to it, running; a filter
# on its name starts first, and ends on SIGINT (Ctrl-C) once it ran.
run_recipe() {
	recipe=$tmp/recipe.$tool-$1
	comm=$(basename "$2" | cut -c 1-15)
	: >"$tmp/out"
	: >"$tmp/prog.out"
	if grep -q -- '-c PROG' "$recipe"; then
		subst "$recipe" "$3" "$2" "" "$comm" >"$tmp/run.sh"
		(cd "$tmp" && export PROBES_NAME="$name" PROBES_EXTRA="$EXTRA" &&
			exec timeout 60 sh "$tmp/run.sh") >"$tmp/out" 2>&1 ||
			{ echo "exit $?"; return 1; }
		cp "$tmp/out" "$tmp/prog.out"
	elif grep -q -- '-p PID' "$recipe"; then
		start_prog "$2" || return 1
		subst "$recipe" "$3" "$2" "$prog_pid" "$comm" >"$tmp/run.sh"
		(cd "$tmp" && exec sh "$tmp/run.sh") >"$tmp/out" 2>&1 &
		bg_pid=$!
		wait_probes "$prog_pid" "$3" "$(events_of "$recipe")" || return 1
		wait_enabled "$bg_pid" || return 1
		run_prog || return 1
		wait_tracer || return 1
	elif grep -q '"engine"' "$recipe"; then
		[ "$(grep -c . "$recipe")" = 1 ] ||
			{ echo "a recipe ended by Ctrl-C must be one command"; return 1; }
		{ printf 'exec '; subst "$recipe" "$3" "$2" "" "$comm"; } >"$tmp/run.sh"
		(cd "$tmp" && exec sh "$tmp/run.sh") >"$tmp/out" 2>&1 &
		bg_pid=$!
		start_prog "$2" || return 1
		wait_probes "$prog_pid" "$3" "$(events_of "$recipe")" || return 1
		wait_enabled "$bg_pid" || return 1
		run_prog || return 1
		interrupt || return 1
	else
		subst "$recipe" "$3" "$2" "" "$comm" >"$tmp/run.sh"
		(cd "$tmp" && exec timeout 60 sh "$tmp/run.sh") >"$tmp/out" 2>&1 ||
			{ echo "exit $?"; return 1; }
	fi
}

# What the program counted: counted refill, counted grow ...
counted() {
	sed -n 's/^stats //p' "$tmp/prog.out" | awk -v k="$1" '
	{ for (i = 1; i < NF; i += 2) if ($i == k) print $(i + 1) }'
}

# ---------------------------------------------------------------------
# What each recipe must print. Each returns 0 or says what is wrong.

check_bpftrace_count() {
	want="@[$name]: $(counted exhausted)"
	grep -qxF "$want" "$tmp/out" || { echo "no '$want'"; return 1; }
	echo "$want"
}

check_bpftrace_hist() {
	n=$(awk -v h="@[$name]:" '{ sub(/ +$/, "") } $0 == h { on = 1; next }
	on && /^\[/ { s = $0; sub(/^\[[^]]*[])] */, "", s); split(s, a, " ")
		n += a[1]; next }
	{ on = 0 }
	END { print n + 0 }' "$tmp/out")
	[ "$n" = "$(counted refill)" ] ||
		{ echo "the histogram of @[$name] holds $n refills, not $(counted refill)"; return 1; }
	echo "@[$name]: a histogram of $n refills"
}

check_bpftrace_interval() {
	n=$(awk -v k="@steals[$name]:" '$1 == k { n += $2 } END { print n + 0 }' "$tmp/out")
	[ "$n" = "$(counted steal)" ] ||
		{ echo "@steals[$name] adds up to $n, not $(counted steal)"; return 1; }
	grep -q "^@slots\[$name\]: [0-9]" "$tmp/out" || { echo "no @slots[$name]"; return 1; }
	echo "@steals[$name] adds up to $n"
}

check_bpftrace_comm() {
	err=$(sed -n 's/^refused //p' "$tmp/prog.out")
	n=$(grep -cxF "$name $err" "$tmp/out")
	[ "$n" = "$(counted free_refused)" ] ||
		{ echo "$n lines '$name $err', not $(counted free_refused)"; return 1; }
	echo "$n line '$name $err'"
}

check_bpftrace_static() {
	got=$(grep "^$name [0-9]* -> [0-9]*$" "$tmp/out" | tr '\n' ';')
	want="$name 8 -> 16;$name 16 -> 32;$name 32 -> 64;"
	[ "$got" = "$want" ] || { echo "'$got', not '$want'"; return 1; }
	echo "$(counted grow) lines '$name 8 -> 16' ..."
}

# The events of group lfpool hold every site of file $1, the name as a
# string; perf's own are gone.
check_perf_define() {
	real=$(readlink -f "$1")
	sites=$(readelf -n "$1" | awk '/^ *Provider:/ { p = $2 } /^ *Location:/ && p == "lfpool"' | wc -l)
	defs=$(grep "^p:lfpool/[a-z_]* $real:" "$tracefs/uprobe_events")
	n=$(printf '%s\n' "$defs" | grep -c ' name=+0(.*):string')
	[ "$n" = "$sites" ] ||
		{ echo "$n events of $real read the name as a string, of $sites sites"; return 1; }
	for p in $(sed -n 's/^\.B lfpool:\([a-z_]*\)(.*/\1/p' "$page"); do
		grep -q "^p:lfpool/$p " "$tracefs/uprobe_events" ||
			{ echo "no event lfpool:$p"; return 1; }
	done
	! grep -q '^p:sdt_lfpool/' "$tracefs/uprobe_events" ||
		{ echo "perf's sdt_lfpool events are left"; return 1; }
	echo "$sites sites of $1, the name as a string"
}

check_perf_stat() {
	for p in refill flush steal exhausted grow trim free_refused; do
		n=$(awk -v e="lfpool:$p" '$2 == e { print $1 }' "$tmp/out")
		[ "$n" = "$(counted $p)" ] ||
			{ echo "lfpool:$p counted '$n', lfp_stats $(counted $p)"; return 1; }
	done
	echo "every count as lfp_stats'"
}

check_perf_trace() {
	for p in exhausted free_refused; do
		n=$(grep -cF "lfpool:$p(" "$tmp/out")
		k=$(grep -F "lfpool:$p(" "$tmp/out" | grep -cF "name: \"$name\"")
		[ "$n" = "$(counted $p)" ] && [ "$k" = "$n" ] ||
			{ echo "$k of $n lfpool:$p with name \"$name\", lfp_stats $(counted $p)"; return 1; }
	done
	echo "$(counted exhausted) + $(counted free_refused) events named \"$name\""
}

check_perf_record() {
	for p in grow steal; do
		n=$(grep -cF " lfpool:$p: " "$tmp/out")
		k=$(grep -F " lfpool:$p: " "$tmp/out" | grep -cF "name=\"$name\"")
		[ "$n" = "$(counted $p)" ] && [ "$k" = "$n" ] ||
			{ echo "$k of $n lfpool:$p with name=\"$name\", lfp_stats $(counted $p)"; return 1; }
	done
	echo "$(counted grow) + $(counted steal) events named \"$name\""
}

check_perf_delete() {
	! grep -qE '^p:(sdt_)?lfpool/' "$tracefs/uprobe_events" ||
		{ echo "events are left"; return 1; }
	added=
	echo "no event left"
}

# Run and check recipe $1 on program $2 (LIB $3), named for $4.
try() {
	if run_recipe "$1" "$2" "$3" >"$tmp/why" 2>&1 &&
		"check_${tool}_$1" "$3" >"$tmp/why" 2>&1; then
		echo "ok: $tool-$1, $4: $(cat "$tmp/why")"
	else
		bad "$tool-$1, $4: $(cat "$tmp/why")"
		echo "--- as run:"
		cat "$tmp/run.sh" 2>/dev/null
		echo "--- it printed:"
		cat "$tmp/out"
		echo "--- the program printed:"
		cat "$tmp/prog.out"
		[ -n "$bg_pid" ] && kill "$bg_pid" 2>/dev/null && wait "$bg_pid"
		[ -n "$prog_pid" ] && kill "$prog_pid" 2>/dev/null && wait "$prog_pid"
		bg_pid=
		prog_pid=
		exec 8>&-
	fi
	rm -f "$tmp/run.sh"
}

if [ "$tool" = bpftrace ]; then
	for t in count hist interval comm; do
		try $t "$shared" "$lib" "shared"
		try $t "$static" "$static" "static"
	done
	try static "$static" "$static" "static"
else
	# One run at a time owns the events of these groups, and never one
	# another run (or someone else) added.
	exec 9>"${TMPDIR:-/tmp}/lfpool-probes-perf.lock"
	timeout 120 flock 9 || skip "another run holds the perf probes' lock"
	grep -qE '^p:(sdt_)?lfpool/' "$tracefs/uprobe_events" &&
		skip "events of group lfpool or sdt_lfpool exist already (not this test's to delete)"
	added=1
	for link in shared static; do
		[ $link = shared ] && { prog=$shared; file=$lib; } ||
			{ prog=$static; file=$static; }
		try define "$prog" "$file" "$link"
		for t in stat trace record; do
			try $t "$prog" "$file" "$link"
		done
	done
	try delete "$shared" "$lib" "both"
fi
exit $fail
