#!/bin/sh
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
# table's path instead, 9 instructions more with gcc (the pool's number,
# the entry, the check). The family's paths (family_*: lfp_family_alloc
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

# budget and target of a path, by compiler family.
budget() {
	case $1:$2 in
	gcc:explicit_alloc) echo 24 ;; gcc:explicit_free) echo 36 ;;
	gcc:implicit_alloc) echo 28 ;; gcc:implicit_free) echo 41 ;;
	clang:explicit_alloc) echo 21 ;; clang:explicit_free) echo 34 ;;
	clang:implicit_alloc) echo 25 ;; clang:implicit_free) echo 39 ;;
	gcc:family_alloc) echo 46 ;; gcc:family_free) echo 54 ;;
	gcc:fcache_alloc) echo 38 ;; gcc:fcache_free) echo 46 ;;
	clang:family_alloc) echo 42 ;; clang:family_free) echo 54 ;;
	clang:fcache_alloc) echo 37 ;; clang:fcache_free) echo 47 ;;
	esac
}
target() {
	case $1 in
	explicit_alloc) echo 12 ;; explicit_free) echo 14 ;;
	implicit_alloc) echo 16 ;; implicit_free) echo 18 ;;
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
	for path in explicit_alloc explicit_free implicit_alloc implicit_free \
		family_alloc family_free fcache_alloc fcache_free; do
		n=$(printf '%s\n' "$counts" | awk -v p="$path" '$1 == p { print $2 }')
		b=$(budget "$family" "$path")
		t=$(target "$path")
		if [ -z "$n" ]; then
			echo "FAIL: $cc: no return found in $path"
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
