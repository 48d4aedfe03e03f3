#!/bin/sh
# SPDX-License-Identifier: MIT
# Count the instructions of lfpool.h's inline fast paths, from a
# function's entry to its first return (the path of an allocation that
# finds a slot in the cache, of a release that finds room), with each C
# compiler at hand, at -O2, as position-independent code (as in a shared
# object: the thread's table is then one GOT load away, never a call to
# __tls_get_addr, which the script also checks). Fails when a count
# exceeds its budget.
#
# The implicit paths counted are those through the cache the thread found
# last (one pool in use); a thread going through several pools takes the
# table's path instead (t_*: the pool's number, its bare word, the entry,
# the check), 12 and 11 instructions more with gcc (37 and 50 before the
# bare word, 40 and 52 with it; clang 34 and 48, then 36 and 49).
# A bare pool (b_*: LFP_F_NO_CACHE | LFP_F_UNCHECKED, lfpi_bare_alloc)
# takes the table's path up to its bare word, then pops or pushes its
# free list with one CAS: counted through a pool whose list holds slots. The family's paths (family_*: lfp_family_alloc
# and lfp_family_free, through the thread's caches; fcache_*: through an
# explicit family cache) add the size map or the zone to a cache's path;
# they have budgets and no targets. lfp_family_alloc and lfp_family_free
# are counted through the thread's cache of the class (lfpi_cache_cls:
# one load from the thread's class array, no pool number, no table),
# 2 (clang) or 3 (gcc) instructions more than through `last`, two loads
# fewer: 13.6 -> 8.0 ns a pair on one size, 15.5 -> 10.3 on four.
#
# The budgets are the counts of the code as it is, so that a change that
# lengthens a fast path fails `make bench`; the targets beside them are
# where the fast path is meant to get to (a default pool without handles
# or checks: 12 and 14 instructions explicit, 16 and 18 implicit), and are
# reported, not enforced, until the code meets them.
#
# A C++ compiler among them (g++, clang++) compiles the same file as
# C++17, whose inline paths are the same code, under the same budgets.
#
# The paths of an LFP_F_UNCHECKED pool (u_*: explicit and implicit, a
# slot in the cache, room for a release) are the same functions taking
# other branches (ctl is LFPI_CTL_BARE, not 0; nslots is 0 and bslots is
# not), which no layout puts first, so they are counted as run: the
# object compiled above is linked with a small program (h.c below) that
# sets up a cache of an unchecked pool in its own memory (the library's
# out-of-line halves are stubs that abort: the counted paths never call
# them), calls each function once, and Valgrind's callgrind counts the
# instructions each function ran, from entry to its return. The same
# program run with a default pool's cache counts the default paths the
# same way, and must find the counts read from the disassembly, or the
# script fails: that is what shows the two methods count alike. The
# table's path (t_*: the thread's last cache is of no pool) and a bare
# pool's (b_*) are counted as run the same way. Without valgrind the
# u_*, t_* and b_* rows are skipped, with a note.
#
# Usage: fastpath-insns.sh SRCDIR [CC ...]   (default: gcc clang g++ clang++)
set -u
srcdir=${1:?usage: fastpath-insns.sh SRCDIR [CC ...]}
shift
[ $# -gt 0 ] || set -- gcc clang g++ clang++
command -v objdump >/dev/null || { echo "fastpath-insns: objdump not found" >&2; exit 1; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/fp.c" <<'EOF'
#include <lfpool.h>
#ifdef __cplusplus
extern "C" {
#endif
void *explicit_alloc(struct lfp_cache *c) { return lfp_cache_alloc(c); }
int explicit_free(struct lfp_cache *c, void *o) { return lfp_cache_free(c, o); }
void *implicit_alloc(struct lfp_pool *p) { return lfp_alloc(p); }
int implicit_free(struct lfp_pool *p, void *o) { return lfp_free(p, o); }
void *family_alloc(struct lfp_family *f, size_t n) { return lfp_family_alloc(f, n); }
int family_free(struct lfp_family *f, void *o) { return lfp_family_free(f, o); }
void *fcache_alloc(struct lfp_family_cache *f, size_t n) { return lfp_family_cache_alloc(f, n); }
int fcache_free(struct lfp_family_cache *f, void *o) { return lfp_family_cache_free(f, o); }
#ifdef __cplusplus
}
#endif
EOF

cat >"$tmp/h.c" <<'EOF'
/* Runs the fast paths of fp.c once each, on a cache set up here: a
 * default pool's (argument d) or an unchecked pool's (u). */
#include <lfpool.h>
#include <stdlib.h>

void *explicit_alloc(struct lfp_cache *c);
int explicit_free(struct lfp_cache *c, void *o);
void *implicit_alloc(struct lfp_pool *p);
int implicit_free(struct lfp_pool *p, void *o);

/* The library's side of the inline paths: never reached on a fast path. */
__thread struct lfpi_cache_tab lfpi_cache_tab;
__thread struct lfp_cache **lfpi_cache_cls;
void *lfpi_cache_alloc_slow(struct lfp_cache *c, uint32_t ctl) { (void)c; (void)ctl; abort(); }
int lfpi_cache_put_slow(struct lfp_cache *c, uint32_t i, uint32_t ctl) { (void)c; (void)i; (void)ctl; abort(); }
int lfpi_cache_free_slow(struct lfp_cache *c, void *o) { (void)c; (void)o; abort(); }
void *lfpi_alloc_slow(struct lfp_pool *p) { (void)p; abort(); }
int lfpi_free_slow(struct lfp_pool *p, void *o) { (void)p; (void)o; abort(); }
void *lfpi_family_alloc_slow(struct lfp_family *f, size_t n) { (void)f; (void)n; abort(); }
int lfpi_family_free_slow(struct lfp_family *f, void *o) { (void)f; (void)o; abort(); }
void *lfpi_family_cache_alloc_slow(struct lfp_family_cache *f, size_t n) { (void)f; (void)n; abort(); }
int lfpi_family_cache_free_slow(struct lfp_family_cache *f, void *o) { (void)f; (void)o; abort(); }

#define N 64
static _Alignas(64) char objs[N * 48];
static uint32_t slots[N];
static _Atomic uint32_t gen[2 * N];
static struct lfpi_cache_hot hot;
static struct lfpi_pool_hot pool;
static struct lfp_cache *tab[1];

/* Mode b: a bare pool's free list, slot i linked to i + 1. */
static _Atomic uint64_t bhead;
static _Atomic uint32_t meta[2 * N];
static _Atomic uint32_t blimit = N;
/* Modes t and b: the thread's last cache, of no pool. */
static struct lfpi_cache_hot other;

/* A bare pool (lfpi_pool_hot.bare): one pop, one push. */
static int run_bare(struct lfp_pool *p)
{
	void *o;

	pool.bare = 1;
	pool.head = &bhead;
	pool.meta = meta;
	pool.limit = &blimit;
	pool.objs = objs;
	pool.stride = 48;
	pool.shift = 4;
	pool.inv = 0xaaaaaaaaaaaaaaabu;
	for (uint32_t i = 0; i < N; i++)
		meta[2 * i] = i + 1 < N ? i + 1 : UINT32_MAX;
	o = implicit_alloc(p);
	return o != objs || implicit_free(p, o) != 0 ||
	       bhead != (UINT64_C(1) << 32 | 0) || meta[0] != 1;
}

int main(int argc, char **argv)
{
	char mode = argc > 1 ? argv[1][0] : 'd';
	int bare = mode == 'u';
	struct lfp_cache *c = (struct lfp_cache *)&hot;
	struct lfp_pool *p = (struct lfp_pool *)&pool;
	void *o;
	int bad = 0;

	/* stride 48 = 3 << 4; inv is 3's inverse modulo 2^64. */
	hot.stride = 48;
	hot.shift = 4;
	hot.inv = 0xaaaaaaaaaaaaaaabu;
	hot.objs = objs;
	hot.gen = gen;
	hot.slots = slots;
	hot.size = N;
	for (uint32_t i = 0; i < N / 2; i++)
		slots[i] = i;
	hot.top = N / 2;
	hot.ctl = bare ? LFPI_CTL_BARE : 0;
	hot.nslots = bare ? 0 : N;
	hot.bslots = bare ? N : 0;
	/* Both objects come from slots[] and go back: the count is where
	 * it was, each release counted in the high part. */
	hot.pool = p;
	tab[0] = c;
	lfpi_cache_tab.last = c;
	lfpi_cache_tab.v = tab;
	if (mode == 't' || mode == 'b')
		lfpi_cache_tab.last = (struct lfp_cache *)&other;
	if (mode == 'b')
		return run_bare(p);
	if (mode == 't') {
		/* The table's path: the pool's number, its entry. */
		o = implicit_alloc(p);
		bad |= !o || implicit_free(p, o) != 0;
		return bad | (hot.top != (N / 2 | (uint64_t)1 << LFPI_TOP_SHIFT));
	}
	o = explicit_alloc(c);
	bad |= !o || explicit_free(c, o) != 0;
	o = implicit_alloc(p);
	bad |= !o || implicit_free(p, o) != 0;
	bad |= hot.top != (N / 2 | (uint64_t)2 << LFPI_TOP_SHIFT);
	return bad;
}
EOF

# The instructions each of the four cache paths ran under callgrind, from
# its callgrind output: a cost line's second field is its Ir, except the
# line after calls=, which is a callee's inclusive cost.
ran_counts() {
	awk '
	/^fn=/ { fn = substr($0, 4); skip = 0; next }
	/^calls=/ { skip = 1; next }
	/^[0-9+-]/ { if (skip) { skip = 0; next } ir[fn] += $2 }
	END { for (f in ir) if (f ~ /^(explicit|implicit)_(alloc|free)$/) print f, ir[f] }' "$1"
}
# The C compiler that builds h.c: the same family's where there is one.
hcc_of() {
	case $1 in
	*clang*) for c in clang cc gcc; do command -v $c >/dev/null && { echo $c; return; }; done ;;
	*) for c in gcc cc clang; do command -v $c >/dev/null && { echo $c; return; }; done ;;
	esac
}
have_vg=0
command -v valgrind >/dev/null && have_vg=1
[ $have_vg -eq 1 ] || echo "fastpath-insns: valgrind not found: the u_* (LFP_F_UNCHECKED) paths are not counted"

# budget and target of a path, by compiler family.
budget() {
	case $1:$2 in
	gcc:explicit_alloc) echo 24 ;; gcc:explicit_free) echo 36 ;;
	gcc:implicit_alloc) echo 28 ;; gcc:implicit_free) echo 40 ;;
	clang:explicit_alloc) echo 21 ;; clang:explicit_free) echo 34 ;;
	clang:implicit_alloc) echo 25 ;; clang:implicit_free) echo 38 ;;
	gcc:family_alloc) echo 46 ;; gcc:family_free) echo 54 ;;
	gcc:fcache_alloc) echo 38 ;; gcc:fcache_free) echo 46 ;;
	clang:family_alloc) echo 42 ;; clang:family_free) echo 54 ;;
	clang:fcache_alloc) echo 37 ;; clang:fcache_free) echo 47 ;;
	gcc:u_explicit_alloc) echo 21 ;; gcc:u_explicit_free) echo 32 ;;
	gcc:u_implicit_alloc) echo 25 ;; gcc:u_implicit_free) echo 36 ;;
	clang:u_explicit_alloc) echo 22 ;; clang:u_explicit_free) echo 30 ;;
	clang:u_implicit_alloc) echo 26 ;; clang:u_implicit_free) echo 34 ;;
	gcc:t_implicit_alloc) echo 40 ;; gcc:t_implicit_free) echo 52 ;;
	clang:t_implicit_alloc) echo 36 ;; clang:t_implicit_free) echo 49 ;;
	gcc:b_implicit_alloc) echo 29 ;; gcc:b_implicit_free) echo 33 ;;
	clang:b_implicit_alloc) echo 27 ;; clang:b_implicit_free) echo 31 ;;
	esac
}
target() {
	case $1 in
	explicit_alloc|u_explicit_alloc) echo 12 ;;
	explicit_free|u_explicit_free) echo 14 ;;
	implicit_alloc|u_implicit_alloc) echo 16 ;;
	implicit_free|u_implicit_free) echo 18 ;;
	*) echo - ;;
	esac
}

status=0
ran=0
printf '%-8s %-16s %6s %6s %6s\n' compiler path insns budget target
for cc in "$@"; do
	command -v "$cc" >/dev/null || { echo "fastpath-insns: $cc not found, skipped"; continue; }
	case $($cc --version 2>/dev/null | head -n 1) in
	*clang*) family=clang ;;
	*) family=gcc ;;
	esac
	# A C++ compiler (g++, clang++) compiles the same file as C++17,
	# which has the same inline paths.
	case $cc in
	*++*) lang="-x c++ -std=c++17" name="$family++" ;;
	*) lang="-std=c11" name=$family ;;
	esac
	obj="$tmp/fp-$name.o"
	# shellcheck disable=SC2086
	$cc -O2 $lang -fPIC -I"$srcdir/include" -c "$tmp/fp.c" -o "$obj" ||
		{ echo "fastpath-insns: $cc could not compile the fast paths"; status=1; continue; }
	if objdump -dr "$obj" | grep -q __tls_get_addr; then
		echo "FAIL: $cc: the inline paths call __tls_get_addr"
		status=1
	fi
	counts=$(objdump -d --no-show-raw-insn "$obj" | awk '
		/^[0-9a-f]+ <[a-z_]+>:$/ { fn = $2; gsub(/[<>:]/, "", fn); n = 0; done = 0; next }
		fn && !done && /^ +[0-9a-f]+:\t/ {
			n++
			if ($0 ~ /\tretq?( |$)/) { print fn, n; done = 1 }
		}')
	ucounts=
	if [ $have_vg -eq 1 ]; then
		hcc=$(hcc_of "$cc")
		if ! $hcc -O1 -std=c11 -I"$srcdir/include" "$tmp/h.c" "$obj" -o "$tmp/h-$name"; then
			echo "FAIL: $cc: the program that runs the fast paths did not build"
			status=1
		else
			for mode in d u t b; do
				valgrind --tool=callgrind --compress-strings=no \
					--callgrind-out-file="$tmp/cg-$name-$mode" \
					"$tmp/h-$name" $mode >/dev/null 2>&1 ||
					{ echo "FAIL: $cc: the fast paths did not run as set up ($mode)"; status=1; }
			done
			# The default paths as run must be the counts read above.
			runs=$(ran_counts "$tmp/cg-$name-d" | sort)
			read_=$(printf '%s\n' "$counts" | awk '$1 ~ /^(explicit|implicit)_(alloc|free)$/' | sort)
			[ "$runs" = "$read_" ] || {
				echo "FAIL: $cc: the default paths ran other counts than read:"
				echo "$runs" | tr '\n' ' '; echo
				status=1
			}
			ucounts=$(ran_counts "$tmp/cg-$name-u" | sed 's/^/u_/'
				  ran_counts "$tmp/cg-$name-t" | sed 's/^/t_/'
				  ran_counts "$tmp/cg-$name-b" | sed 's/^/b_/')
		fi
	fi
	for path in explicit_alloc explicit_free implicit_alloc implicit_free \
		family_alloc family_free fcache_alloc fcache_free \
		u_explicit_alloc u_explicit_free u_implicit_alloc u_implicit_free \
		t_implicit_alloc t_implicit_free b_implicit_alloc b_implicit_free; do
		case $path in
		[utb]_*) [ $have_vg -eq 1 ] || continue
		     n=$(printf '%s\n' "$ucounts" | awk -v p="$path" '$1 == p { print $2 }') ;;
		*) n=$(printf '%s\n' "$counts" | awk -v p="$path" '$1 == p { print $2 }') ;;
		esac
		b=$(budget "$family" "$path")
		t=$(target "$path")
		if [ -z "$n" ]; then
			case $path in
			[utb]_*) echo "FAIL: $cc: $path did not run to its return" ;;
			*) echo "FAIL: $cc: no return found in $path" ;;
			esac
			status=1
			continue
		fi
		mark=
		[ "$n" -le "$b" ] || { mark="  FAIL: over budget"; status=1; }
		printf '%-8s %-16s %6d %6d %6s%s\n' "$name" "$path" "$n" "$b" "$t" "$mark"
		ran=1
	done
done
[ $ran -eq 1 ] || { echo "fastpath-insns: no compiler ran"; exit 1; }
exit $status
