# SPDX-License-Identifier: MIT
# The pkg-config build line of an example, from its header comment: the
# indented line that starts with cc or c++, and the lines it continues
# onto (a trailing backslash), joined by one space. The tests build each
# example with it, so that the line a reader copies is the line tested.
/^ \*\/$/ { exit }
!on && /^ \*   (cc|c\+\+) / { on = 1 }
on {
	line = $0
	sub(/^ \*[ \t]*/, "", line)
	more = sub(/[ \t]*\\$/, "", line)
	out = out == "" ? line : out " " line
	if (!more) {
		print out
		exit
	}
}
