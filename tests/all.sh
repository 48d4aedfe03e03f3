#!/bin/sh
# Run the whole test suite: make check in three builds of the same tree,
#   build-check  the default compiler, -Werror
#   build-tsan   clang with ThreadSanitizer (halt_on_error=1)
#   build-asan   clang with AddressSanitizer and UBSan
# Each build is made from scratch in its own directory beside the sources.
# Usage: tests/all.sh [normal] [thread] [address]   (default: all three)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc 2>/dev/null || echo 2)

if [ -f config.status ]; then
	echo "tests/all.sh: the source tree is configured in place;" \
	     "run 'make distclean' first (the suite builds out of tree)" >&2
	exit 1
fi
[ -x configure ] || autoreconf -fi

run_variant() {
	dir=$1
	shift
	echo "== $dir: configure $*"
	rm -rf "$dir"
	mkdir "$dir"
	(cd "$dir" && ../configure --enable-Werror "$@" >configure.out 2>&1) || {
		cat "$dir/configure.out" >&2
		exit 1
	}
	tail -n 12 "$dir/configure.out"
	make -C "$dir" -j"$jobs" >"$dir/make.out" 2>&1 || {
		cat "$dir/make.out" >&2
		exit 1
	}
	# Keep the logs of a failing suite on the console: they name the test.
	if ! make -C "$dir" -j"$jobs" check >"$dir/check.out" 2>&1; then
		cat "$dir/check.out"
		find "$dir" -name '*.log' ! -name config.log ! -name 'test-suite.log' \
			-exec grep -l -E '^(FAIL|ERROR)|WARNING: ThreadSanitizer|ERROR: AddressSanitizer|runtime error' {} + |
			while read -r log; do
				echo "---- $log"
				tail -n 60 "$log"
			done
		exit 1
	fi
	grep -E '^(PASS|FAIL|XFAIL|XPASS|SKIP|ERROR): ' "$dir/check.out"
	# grep -c exits 1 when it counts nothing
	n=$(grep -cE '^(PASS|XFAIL): ' "$dir/check.out" || true)
	passed=$((passed + n))
	n=$(grep -cE '^(FAIL|XPASS|ERROR): ' "$dir/check.out" || true)
	failed=$((failed + n))
}

# Install the normal build into its scratch prefix and build programs
# against it the way a user would, in C and in C++: through pkg-config.
check_install() {
	dir=$1
	prefix=$top/$dir/inst
	echo "== $dir: make install and build a program with pkg-config"
	make -C "$dir" install >"$dir/install.out" 2>&1 || {
		cat "$dir/install.out" >&2
		exit 1
	}
	PKG_CONFIG_PATH=$prefix/lib/pkgconfig
	export PKG_CONFIG_PATH
	# lfpool.h needs only its own directory: liburcu's flags stay private.
	cflags=$(pkg-config --cflags lfpool | sed 's/[[:space:]]*$//')
	if [ "$cflags" != "-I$prefix/include" ]; then
		echo "pkg-config --cflags lfpool gives '$cflags'," \
		     "not only -I$prefix/include (liburcu's flags leak)" >&2
		exit 1
	fi
	# shellcheck disable=SC2046
	cc -std=c11 -Wall -Werror -o "$dir/installed" tests/installed.c \
		$(pkg-config --cflags --libs lfpool)
	LD_LIBRARY_PATH=$prefix/lib "$dir/installed"
	# A static link must find everything liblfpool.a needs in --static.
	# shellcheck disable=SC2046
	cc -std=c11 -Wall -Werror -static -o "$dir/installed-static" \
		tests/installed.c $(pkg-config --cflags --static --libs lfpool)
	"$dir/installed-static"
	# lfpool.hpp, installed beside lfpool.h, with the same flags.
	# shellcheck disable=SC2046
	c++ -std=c++17 -pthread -Wall -Wextra -pedantic -Werror \
		-o "$dir/installed-cxx" tests/installed.cc \
		$(pkg-config --cflags --libs lfpool)
	LD_LIBRARY_PATH=$prefix/lib "$dir/installed-cxx"
}

passed=0
failed=0
variants=${*:-normal thread address}
for v in $variants; do
	case $v in
	normal)
		run_variant build-check --prefix="$top/build-check/inst"
		check_install build-check
		;;
	thread) run_variant build-tsan CC=clang CXX=clang++ --enable-sanitizer=thread ;;
	address) run_variant build-asan CC=clang CXX=clang++ --enable-sanitizer=address ;;
	*) echo "tests/all.sh: unknown variant '$v'" >&2; exit 2 ;;
	esac
done
echo "== all test builds passed: $variants"
echo "$passed passed, $failed failed"
