#!/bin/sh
# SPDX-License-Identifier: MIT
# Run lfpbench with the peer allocators found on this system, then plot.
# usage: run-bench.sh LFPBENCH SRCDIR OUTDIR [lfpbench options]
#
# jemalloc and tcmalloc replace malloc when loaded, so lfpbench runs their
# rows in child processes with the library in LD_PRELOAD; this script finds
# the libraries through the Debian packages that ship them (dpkg -L), or
# through the dynamic linker's cache elsewhere.
set -e
bin=$1 srcdir=$2 out=$3
shift 3

# find_lib PACKAGE FILE: the path of FILE as installed by PACKAGE.
find_lib() {
	p=$(dpkg -L "$1" 2>/dev/null | grep "/$2\$" | head -n 1) || true
	if test -z "$p"; then
		p=$(/sbin/ldconfig -p 2>/dev/null |
		    awk -v f="$2" '$1 == f { print $NF; exit }') || true
	fi
	echo "$p"
}

je=$(find_lib libjemalloc2 libjemalloc.so.2)
tc=$(find_lib libtcmalloc-minimal4 libtcmalloc_minimal.so.4)
test -n "$tc" || tc=$(find_lib libgoogle-perftools4 libtcmalloc.so.4)
test -n "$je" || echo "run-bench: jemalloc not found, its row is skipped" >&2
test -n "$tc" || echo "run-bench: tcmalloc not found, its row is skipped" >&2

mkdir -p "$out"
"$bin" --jemalloc "$je" --tcmalloc "$tc" --out "$out" "$@"

{
	echo
	echo "## Build and versions"
	echo
	test -z "$BENCH_CC" ||
		echo "- compiler: $($BENCH_CC --version | head -n 1)"
	test -z "$BENCH_CFLAGS" || echo "- CFLAGS: $BENCH_CFLAGS"
	dpkg-query -W -f '- ${Package} ${Version}\n' libc6 libmimalloc2.0 \
		libjemalloc2 libtcmalloc-minimal4 libck0 liburcu8 \
		libtbbmalloc2 libboost-dev librte-mempool23 2>/dev/null ||
		true
} >>"$out/results.md"

if command -v gnuplot >/dev/null 2>&1; then
	gnuplot -e "dir='$out'" "$srcdir/plot.gp" &&
		echo "run-bench: plot in $out/results.png" >&2
else
	echo "run-bench: gnuplot not found, no plot" >&2
fi
echo "run-bench: results in $out/results.md" >&2
