# SPDX-License-Identifier: MIT
# roff.awk: what the two page makers share (header2man.awk for lfpool.h,
# hpp2man.awk for lfpool.hpp): loaded with -f before either.
# Plain POSIX awk.

# How to build against the library, for a page's SYNOPSIS: how (the
# page's own sentence, roff), then CMake's target, and what a program
# needs when the library is installed where the dynamic linker does not
# look (lfpool(7), Linking, says it at length).
function link_hint(how) {
	return ".PP\n" how "\n" \
	    "In CMake, \\fBfind_package(lfpool)\\fR and the target " \
	    "\\fBlfpool::lfpool\\fR.\n" \
	    "Installed under a prefix the dynamic linker does not search, " \
	    "link with \\fB\\-Wl,\\-rpath,\\fIprefix\\fB/lib\\fR too, or " \
	    "run the program with " \
	    "\\fBLD_LIBRARY_PATH=\\fIprefix\\fB/lib\\fR; after installing " \
	    "to /usr/local, run \\fBldconfig\\fR once, as root.\n"
}

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
