#!/bin/sh
# SPDX-License-Identifier: MIT
# Build lfpool for another architecture with Debian's cross compilers and
# run its make check under qemu-user: every unit test, the examples and
# the stress harness's short runs, shortened for the emulator.
#   build-aarch64  --host=aarch64-linux-gnu, run by qemu-aarch64
#   build-i686     --host=i686-linux-gnu, run by qemu-i386
# Each build is made from scratch beside the sources, with -Werror, and
# its wall time printed.
# Usage: tests/cross.sh [aarch64] [i686]   (default: both)
# Needs (Debian 12, as root):
#   dpkg --add-architecture arm64 && dpkg --add-architecture i386
#   apt-get update && apt-get install gcc-aarch64-linux-gnu \
#     g++-aarch64-linux-gnu gcc-i686-linux-gnu g++-i686-linux-gnu \
#     qemu-user pkgconf:arm64 pkgconf:i386 liburcu-dev:arm64 check:arm64 \
#     liburcu-dev:i386 check:i386 libstdc++6:arm64 libstdc++6:i386
# (tests/cross.sh --packages prints that list.)
#
# Under emulation every instruction costs 5 to 20 times its native time
# and threads run on the build machine's cores as they please, so:
#   STRESS_OPS            operations per thread of each stress run
#                         (default here 10000; make check's is 60000)
#   CK_TIMEOUT_MULTIPLIER Check's timeout of each unit test case, times
#                         this (default here 4): the time bounds only,
#                         never what a test asserts
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc 2>/dev/null || echo 2)

packages() {
	echo "gcc-aarch64-linux-gnu g++-aarch64-linux-gnu gcc-i686-linux-gnu" \
	     "g++-i686-linux-gnu qemu-user pkgconf:arm64 pkgconf:i386" \
	     "liburcu-dev:arm64 check:arm64 liburcu-dev:i386 check:i386" \
	     "libstdc++6:arm64 libstdc++6:i386"
}
if [ "${1-}" = --packages ]; then
	packages
	exit 0
fi

if [ -f config.status ]; then
	echo "tests/cross.sh: the source tree is configured in place;" \
	     "run 'make distclean' first (the builds are out of tree)" >&2
	exit 1
fi
[ -x configure ] || autoreconf -fi

STRESS_OPS=${STRESS_OPS:-10000}
CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-4}
export STRESS_OPS CK_TIMEOUT_MULTIPLIER

passed=0
failed=0
cross() {
	arch=$1
	case $arch in
	aarch64) host=aarch64-linux-gnu deb=arm64 qemu=qemu-aarch64 ;;
	i686) host=i686-linux-gnu deb=i386 qemu=qemu-i386 ;;
	*) echo "tests/cross.sh: unknown architecture '$arch'" >&2; exit 2 ;;
	esac
	for tool in $host-gcc $host-g++ $host-pkg-config $qemu; do
		command -v "$tool" >/dev/null || {
			echo "tests/cross.sh: $tool is missing; apt-get install" \
			     "$(packages) (after dpkg --add-architecture $deb)" >&2
			exit 1
		}
	done
	dir=build-$arch
	start=$(date +%s)
	echo "== $dir: configure --host=$host"
	rm -rf "$dir"
	mkdir "$dir"
	(cd "$dir" && ../configure --host=$host --enable-Werror \
		>configure.out 2>&1) || {
		cat "$dir/configure.out" >&2
		exit 1
	}
	tail -n 14 "$dir/configure.out"
	# The whole suite or none: configure leaves the C++ tests out where
	# the emulator cannot run a C++ program (no libstdc++6 of the host).
	grep -q '^  C++ tests: *yes' "$dir/configure.out" || {
		echo "tests/cross.sh: configure leaves the C++ tests out of the" \
		     "$arch build (see $dir/configure.out): apt-get install" \
		     "$(packages)" >&2
		exit 1
	}
	make -C "$dir" -j"$jobs" >"$dir/make.out" 2>&1 || {
		cat "$dir/make.out" >&2
		exit 1
	}
	built=$(date +%s)
	if ! make -C "$dir" -j"$jobs" check >"$dir/check.out" 2>&1; then
		cat "$dir/check.out"
		find "$dir" -name '*.log' ! -name config.log ! -name 'test-suite.log' \
			-exec grep -l -E '^(FAIL|ERROR)' {} + |
			while read -r log; do
				echo "---- $log"
				tail -n 60 "$log"
			done
		exit 1
	fi
	end=$(date +%s)
	grep -E '^(PASS|FAIL|XFAIL|XPASS|SKIP|ERROR): ' "$dir/check.out"
	n=$(grep -cE '^(PASS|XFAIL): ' "$dir/check.out" || true)
	passed=$((passed + n))
	n=$(grep -cE '^(FAIL|XPASS|ERROR): ' "$dir/check.out" || true)
	failed=$((failed + n))
	echo "== $dir: $((built - start)) s to build, $((end - built)) s of" \
	     "make check under $qemu, $((end - start)) s in all"
}

for arch in ${*:-aarch64 i686}; do
	cross "$arch"
done
echo "== cross builds passed: ${*:-aarch64 i686}"
echo "$passed passed, $failed failed"
