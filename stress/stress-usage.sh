#!/bin/sh
# SPDX-License-Identifier: MIT
# The command line of lfpool-stress as a new user meets it: --help and
# --version exit 0; a mistake exits 2 and says what was wrong and where to
# look (an unknown option names --help; a bad value names the option);
# and its --help and --version are those its manual page is made from.
set -u
prog=./lfpool-stress
fail=0
check() { # expected-status stderr-pattern args...
	want=$1 pat=$2
	shift 2
	err=$(${LFP_EMULATOR-} "$prog" "$@" 2>&1 >/dev/null)
	got=$?
	if [ "$got" != "$want" ]; then
		echo "lfpool-stress $*: exit $got, not $want"
		fail=1
	elif [ -n "$pat" ] && ! printf '%s\n' "$err" | grep -q -- "$pat"; then
		echo "lfpool-stress $*: stderr lacks '$pat': $err"
		fail=1
	fi
}
check 0 "" --help
check 0 "" --version
check 2 "--help" --bogus
check 2 "--help" -Z
check 2 "thread count" --threads x
# What an unchecked pool cannot do is refused before the run.
check 2 "excludes handle" --unchecked --mix cache,handle --ops 10
check 2 "excludes deferred" --unchecked --mix cache,deferred --ops 10
check 2 "excludes --strict" --unchecked --strict --mix cache --ops 10
check 2 "excludes --hooks" --unchecked --hooks --mix cache --ops 10
# lfpool-stress.1 is made by help2man from lfpool-stress-help, a program
# of the build machine built from the same usage.c (so that a cross build
# never runs the harness to make its page): both must say the same.
help=../include/man/lfpool-stress-help
${MAKE:-make} -s -C ../include/man lfpool-stress-help >/dev/null || {
	echo "cannot build $help"
	fail=1
}
for a in --help --version; do
	if [ "$(${LFP_EMULATOR-} "$prog" $a)" != "$("$help" $a)" ]; then
		echo "lfpool-stress $a differs from $help $a, which makes the page"
		fail=1
	fi
done
exit $fail
