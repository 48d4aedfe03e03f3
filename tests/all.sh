#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the whole test suite: make check in three builds of the same tree,
#   build-check  the default compiler, -Werror
#   build-tsan   clang with ThreadSanitizer (halt_on_error=1)
#   build-asan   clang with AddressSanitizer and UBSan
# The normal and the address builds are installed, and programs built
# against them with pkg-config (ASan programs against both).
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
	# lfpool.pc names it from its own place (<libdir>/pkgconfig/../..):
	# one -I, of the install's include directory.
	cflags=$(pkg-config --cflags lfpool | sed 's/[[:space:]]*$//')
	case $cflags in
	-I*' '* | *' '-I*) incdir= ;;
	-I?*) incdir=$(cd "${cflags#-I}" 2>/dev/null && pwd -P) || incdir= ;;
	*) incdir= ;;
	esac
	if [ -z "$incdir" ] || [ "$incdir" != "$(cd "$prefix/include" && pwd -P)" ]; then
		echo "pkg-config --cflags lfpool gives '$cflags'," \
		     "not only -I of $prefix/include (liburcu's flags leak)" >&2
		exit 1
	fi
	# shellcheck disable=SC2046
	cc -std=c11 -Wall -Werror -o "$dir/installed" tests/installed.c \
		$(pkg-config --cflags --libs lfpool)
	LD_LIBRARY_PATH=$prefix/lib "$dir/installed"
	# What the manual tells a program of a prefix the dynamic linker
	# does not search: linked with -Wl,-rpath,<prefix>/lib, it starts
	# with no LD_LIBRARY_PATH.
	# shellcheck disable=SC2046
	cc -std=c11 -Wall -Werror -o "$dir/installed-rpath" tests/installed.c \
		$(pkg-config --cflags --libs lfpool) -Wl,-rpath,"$prefix/lib"
	env -u LD_LIBRARY_PATH "$dir/installed-rpath"
	# In C11 the fast paths are inline: the program calls only their
	# out-of-line halves.
	if ! nm "$dir/installed" | grep -q lfpi_alloc_slow; then
		echo "lfp_alloc was not inlined into the C11 program" >&2
		exit 1
	fi
	# The same program on the exported functions alone (LFP_NO_INLINE),
	# and in C99, where the header has no inline paths either.
	# shellcheck disable=SC2046
	cc -std=c11 -DLFP_NO_INLINE -Wall -Werror -o "$dir/installed-noinline" \
		tests/installed.c $(pkg-config --cflags --libs lfpool)
	LD_LIBRARY_PATH=$prefix/lib "$dir/installed-noinline"
	if nm "$dir/installed-noinline" | grep -q lfpi_cache_alloc_slow; then
		echo "LFP_NO_INLINE still reaches the inline paths' helpers" >&2
		exit 1
	fi
	# shellcheck disable=SC2046
	cc -std=c99 -Wall -Werror -o "$dir/installed-c99" tests/installed.c \
		$(pkg-config --cflags --libs lfpool)
	LD_LIBRARY_PATH=$prefix/lib "$dir/installed-c99"
	# A static link must find everything liblfpool.a needs in --static.
	# shellcheck disable=SC2046
	cc -std=c11 -Wall -Werror -static -o "$dir/installed-static" \
		tests/installed.c $(pkg-config --cflags --static --libs lfpool)
	"$dir/installed-static"
	# The installed library carries every probe lfpool-probes(7) lists
	# (or none, in a build configured with --disable-probes).
	probes=no
	grep -q '^#define LFPI_PROBES 1' "$dir/config.h" && probes=yes
	(cd "$dir/tests" && srcdir=$top/tests HAVE_PROBES=$probes \
		PROBES_LIBS=$prefix/lib/liblfpool.so sh "$top/tests/probes.test")
	# lfpool.hpp, installed beside lfpool.h, with the same flags.
	# shellcheck disable=SC2046
	c++ -std=c++17 -pthread -Wall -Wextra -pedantic -Werror \
		-o "$dir/installed-cxx" tests/installed.cc \
		$(pkg-config --cflags --libs lfpool)
	LD_LIBRARY_PATH=$prefix/lib "$dir/installed-cxx"
	check_installed_cmake "$dir"
	check_installed_asan "$dir"
	check_installed_docs "$prefix"
}

# A program built with ASan, by each compiler at hand, against the
# installed library: a write after release is a use-after-poison whether
# or not the library was built with ASan, and a correct program is clean.
# It needs nothing but -fsanitize=address (not UBSan's runtime, which an
# --enable-sanitizer=address library built by clang would leave for g++
# to define), in C and in C++.
check_installed_asan() {
	dir=$1
	for cc in gcc clang; do
		command -v $cc >/dev/null || continue
		out=$dir/installed-asan-$cc
		# shellcheck disable=SC2046
		$cc -std=c11 -g -fsanitize=address -o "$out" tests/user_asan.c \
			$(pkg-config --cflags --libs lfpool)
		LD_LIBRARY_PATH=$prefix/lib "$out" ok
		if LD_LIBRARY_PATH=$prefix/lib "$out" write >"$out.err" 2>&1 ||
			! grep -q use-after-poison "$out.err"; then
			cat "$out.err" >&2
			echo "$cc: a write after release in the installed" \
			     "library went unreported" >&2
			exit 1
		fi
	done
	for cxx in g++ clang++; do
		command -v $cxx >/dev/null || continue
		# shellcheck disable=SC2046
		$cxx -std=c++17 -pthread -fsanitize=address \
			-o "$dir/installed-asan-$cxx" tests/installed.cc \
			$(pkg-config --cflags --libs lfpool)
		LD_LIBRARY_PATH=$prefix/lib "$dir/installed-asan-$cxx"
	done
	echo "installed: ASan programs (gcc, clang, g++, clang++) link it;" \
	     "a write after release is caught"
}

# The ASan build installed: programs built with -fsanitize=address alone
# link it and catch a write after release.
check_install_asan() {
	dir=$1
	prefix=$top/$dir/inst
	echo "== $dir: make install and build ASan programs with pkg-config"
	make -C "$dir" install >"$dir/install.out" 2>&1 || {
		cat "$dir/install.out" >&2
		exit 1
	}
	PKG_CONFIG_PATH=$prefix/lib/pkgconfig
	export PKG_CONFIG_PATH
	check_installed_asan "$dir"
	check_installed_cmake "$dir"
}

# The installed example of the CMake package, built where make install
# put it (make check builds it against a staged and a moved copy): its
# programs must run, under the ASan install too, whose targets bring
# -fsanitize=address to a program that asks for nothing of the kind.
check_installed_cmake() {
	dir=$1
	command -v cmake >/dev/null || {
		echo "tests/all.sh: cmake is missing: apt-get install cmake" >&2
		exit 1
	}
	build=$top/$dir/installed-cmake
	rm -rf "$build"
	# pkg-config's target carries no -fsanitize: only the normal build.
	progs="consumer consumer_static consumer_cxx consumer_pc"
	pc=ON
	if grep -q 'set(lfpool_SANITIZER "[a-z]' \
		"$prefix/lib/cmake/lfpool/lfpoolConfig.cmake"; then
		progs="consumer consumer_static consumer_cxx"
		pc=OFF
	fi
	if ! cmake -S "$prefix/share/doc/lfpool/examples/cmake" -B "$build" \
		-DCMAKE_PREFIX_PATH="$prefix" -DLFPOOL_EXAMPLE_PKGCONFIG=$pc \
		>"$build.out" 2>&1 ||
		! cmake --build "$build" >>"$build.out" 2>&1; then
		cat "$build.out" >&2
		exit 1
	fi
	for p in $progs; do
		"$build/$p"
	done
	# Every example, run as its own test runs it; tbb_particles where
	# find_package(TBB) finds oneTBB, and the project must say so if not.
	san=$(sed -n 's/^set(lfpool_SANITIZER "\([a-z]*\)")$/\1/p' \
		"$prefix/lib/cmake/lfpool/lfpoolConfig.cmake")
	for p in particles jobs iterate_cost tbb_particles; do
		if [ $p = tbb_particles ] && [ ! -x "$build/$p" ]; then
			grep -q 'tbb_particles is not built' "$build.out" || {
				echo "the CMake project neither built tbb_particles" \
				     "nor said why" >&2
				exit 1
			}
			echo "installed: tbb_particles not built (no oneTBB for CMake)"
			continue
		fi
		(cd "$build" && SANITIZER=${san:-no} sh "$top/examples/$p.test")
	done
	echo "installed: the CMake package's example builds and runs, and every example"
}

# What make install puts beside the library: the manual (section 3 made
# from lfpool.h and lfpool.hpp, section 1 for the harness, section 7's
# lfpool and lfpool-probes, written by hand), lfpool-stress running from
# the prefix, the examples' sources, which must build against the
# installed library by the lines of their header comments, and the TSan
# suppressions lfpool.pc points to.
check_installed_docs() {
	prefix=$1
	command -v man >/dev/null || {
		echo "tests/all.sh: man is missing: apt-get install man-db" >&2
		exit 1
	}
	for page in "3 lfpool" "3 lfp_alloc" "3 lfp_version" \
		"3 lfp_handle_is_null" "3 lfpool.hpp" "1 lfpool-stress" \
		"7 lfpool" "7 lfpool-probes"; do
		# shellcheck disable=SC2086
		man -M "$prefix/share/man" -w $page >/dev/null || {
			echo "man -M $prefix/share/man $page: no page" >&2
			exit 1
		}
	done
	# Rendered, with groff's warnings on: none may come out.
	for page in "3 lfp_alloc" "3 lfpool" "3 lfpool.hpp" "7 lfpool" \
		"7 lfpool-probes"; do
		# shellcheck disable=SC2086
		warnings=$(MANPAGER=cat MANWIDTH=80 man --warnings \
			-M "$prefix/share/man" $page 2>&1 >/dev/null)
		if [ -n "$warnings" ]; then
			echo "man $page: $warnings" >&2
			exit 1
		fi
	done
	MANPAGER=cat MANWIDTH=80 man -M "$prefix/share/man" 3 lfp_alloc |
		grep -q 'THREAD SAFETY' || {
		echo "man 3 lfp_alloc lacks its THREAD SAFETY section" >&2
		exit 1
	}
	"$prefix/bin/lfpool-stress" --help >/dev/null
	"$prefix/bin/lfpool-stress" --threads 2 --ops 2k --no-progress >/dev/null
	version=$("$prefix/bin/lfpool-stress" --version)
	if [ "$version" != "lfpool-stress (lfpool) $(pkg-config --modversion lfpool)" ]; then
		echo "lfpool-stress --version says '$version'," \
		     "lfpool.pc $(pkg-config --modversion lfpool)" >&2
		exit 1
	fi
	# Every example, built in a copy of the installed directory by the
	# pkg-config line of its header comment, and run as its own test runs
	# it; tbb_particles where oneTBB has its tbb.pc.
	examples=$prefix/share/doc/lfpool/examples
	rm -rf "$dir/installed-examples"
	cp -R "$examples" "$dir/installed-examples"
	for src in particles.c jobs.c iterate_cost.c tbb_particles.cc; do
		name=${src%.*}
		if [ "$name" = tbb_particles ] && ! pkg-config --exists tbb; then
			echo "installed: tbb_particles not built (no tbb.pc:" \
			     "apt-get install libtbb-dev)"
			continue
		fi
		line=$(awk -f "$top/examples/build-line.awk" "$examples/$src")
		case $line in
		*" -o $name $src "*) ;;
		*)
			echo "$examples/$src has no line that builds it: '$line'" >&2
			exit 1
			;;
		esac
		(cd "$dir/installed-examples" && sh -c "$line")
		(cd "$dir/installed-examples" && LD_LIBRARY_PATH=$prefix/lib \
			SANITIZER=no sh "$top/examples/$name.test")
	done
	cmp "$top/LICENSE" "$prefix/share/doc/lfpool/LICENSE" || {
		echo "the license is not installed in share/doc/lfpool" >&2
		exit 1
	}
	test -f "$(pkg-config --variable=tsan_suppressions lfpool)" || {
		echo "the TSan suppressions lfpool.pc names are not installed" >&2
		exit 1
	}
	echo "installed: man pages, $version, examples built by their lines, tsan.supp, LICENSE"
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
	address)
		run_variant build-asan CC=clang CXX=clang++ \
			--enable-sanitizer=address --prefix="$top/build-asan/inst"
		check_install_asan build-asan
		;;
	*) echo "tests/all.sh: unknown variant '$v'" >&2; exit 2 ;;
	esac
done
echo "== all test builds passed: $variants"
echo "$passed passed, $failed failed"
