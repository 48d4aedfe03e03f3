# SPDX-License-Identifier: MIT
# roff.awk: what the two page makers share (header2man.awk for lfpool.h,
# hpp2man.awk for lfpool.hpp): loaded with -f before either.
# Plain POSIX awk.

function trim(s) {
	sub(/^[ \t]+/, "", s)
	sub(/[ \t]+$/, "", s)
	return s
}

# A line of code for a no-fill block: tabs expanded, nothing interpreted.
function codeline(s,   out, c, i, col) {
	out = ""
	col = 0
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c == "\t") {
			do {
				out = out " "
				col++
			} while (col % 8)
		} else {
			out = out c
			col++
		}
	}
	gsub(/\\/, "\\e", out)
	gsub(/-/, "\\-", out)
	gsub(/'/, "\\(aq", out)
	gsub(/`/, "\\(ga", out)
	if (out ~ /^\./)
		out = "\\&" out
	if (out == "")
		out = "\\&"
	return out "\n"
}
