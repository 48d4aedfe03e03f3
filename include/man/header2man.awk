# SPDX-License-Identifier: MIT
# header2man.awk: the section 3 manual of lfpool, made from lfpool.h.
#
#   awk -v version=0.1.0 [-v pages="lfpool.3 lfp_alloc.3 ..."] \
#       -f roff.awk -f header2man.awk include/lfpool.h
#
# The header's comments are the contract, so the pages are written from
# them and from nothing else: one page per function (LFP_API prototypes
# and the prototypes of static inline helpers, whose bodies are under
# include/lfpool/) and lfpool.3, the overview. The header is read as it
# is written:
# - The first comment describes the library (DESCRIPTION of lfpool.3).
# - A comment right above a function is its documentation. Its first
#   sentence names it; "Returns ..." starts its RETURN VALUE, "Thread
#   safety:" and "Progress:" start the sections of those names.
# - A comment whose first line is a title followed by an empty line opens
#   a section ("Explicit caches"): its text is the NOTES of every function
#   after it, up to the next such title.
# - Any other comment documents the declaration below it (a macro, a
#   type), listed in lfpool.3 and shown in the SYNOPSIS of the functions
#   whose prototypes use that type.
# - The inline fast paths at the end (#if !defined(LFP_NO_INLINE) ... up
#   to "#endif /* the inline fast paths */") are not API: their comment
#   becomes the NOTES of lfpool.3, their code is left out.
# - "lfpool(7)", the concepts page (written by hand), is set in bold, and
#   listed in SEE ALSO of the pages whose text names it and of lfpool.3.
# A function without a comment, or one whose comment lacks "Thread
# safety" or "Progress" (or "Returns", unless it returns void), fails
# the run, and so does a page set that is not exactly the list in
# -v pages (the Makefile's, which installs them).
# Plain POSIX awk (mawk, busybox): no gawk extensions.

BEGIN {
	nitem = 0     # items in header order: kind, name, text, raw, code
	nsect = 0     # sections: stitle, sbody
	cursect = 0   # the section items belong to
	state = "code"
	pending = 0   # a comment read and not yet attached
	gap = 0       # an empty line since that comment ended
	lastdecl = -1 # the last line of the last declaration kept
	failed = 0
}

function fail(msg) {
	if (!ended)
		msg = FILENAME ":" FNR ": " msg
	print "header2man.awk: " msg > "/dev/stderr"
	failed = 1
}


# ---------------------------------------------------------------------
# Reading the header
# ---------------------------------------------------------------------

# One line of a comment, without its "/*", " * " and "*/".
function comment_line(line) {
	sub(/^[ \t]*\/\*/, "", line)
	sub(/[ \t]*\*\/[ \t]*$/, "", line)
	if (!sub(/^ \* /, "", line))
		sub(/^ \*$/, "", line)
	return line
}

# Without the empty lines of "/*" and " */".
function end_comment() {
	sub(/^\n+/, "", ctext)
	sub(/\n+$/, "", ctext)
	pending = 1
	gap = 0
}

function add_item(k, n) {
	nitem++
	kind[nitem] = k
	name[nitem] = n
	sect[nitem] = cursect
	return nitem
}

# A comment shaped "Title\n\nbody" opens a section.
function is_title(text,   L, n) {
	n = split(text, L, "\n")
	return n >= 3 && L[2] == "" && L[1] !~ /[.,:;)]$/ && length(L[1]) < 50
}

function open_section(text,   L, n, i, body) {
	n = split(text, L, "\n")
	body = ""
	for (i = 3; i <= n; i++)
		body = body L[i] "\n"
	nsect++
	stitle[nsect] = L[1]
	sbody[nsect] = body
	cursect = nsect
	add_item("section", L[1])
}

# A comment that nothing follows directly: the top one, or a section.
function flush_comment() {
	if (!pending)
		return
	pending = 0
	if (!have_top) {
		have_top = 1
		top = ctext
	} else if (is_title(ctext)) {
		open_section(ctext)
	} else {
		fail("a comment that opens a section needs a title line and an empty line")
	}
}

# The declaration just read, with the comment above it if any.
function end_decl(   i, typ, L, n) {
	state = "code"
	if (dkind == "func") {
		if (!pending) {
			fail(dname " has no doc comment")
			return
		}
		i = add_item("func", dname)
		text[i] = ctext
		code[i] = dcode
		isfunc[dname] = 1
		if (ctext !~ /Thread safety/ || ctext !~ /[Pp]rogress/)
			fail(dname ": the comment needs Thread safety and Progress")
		# What a function gives back, unless it gives nothing back.
		if (dcode !~ /^(LFP_API |static inline )?void [a-z_]+\(/ &&
		    ctext !~ /(^|[.:;] +|\n)Returns/)
			fail(dname ": the comment needs a Returns sentence")
		pending = 0
		return
	}
	if (!pending) {
		# Declarations in a row after one comment belong to it.
		if (dstart == lastdecl + 1 && kind[nitem] == "decl") {
			code[nitem] = code[nitem] "\n" dcode
			lastdecl = FNR
		}
		return # the include guard, LFP_API, extern "C"
	}
	pending = 0
	if (is_title(ctext)) {
		open_section(ctext)
		ctext = ""
		craw = ""
	}
	i = add_item("decl", "")
	text[i] = ctext
	raw[i] = craw
	code[i] = dcode
	lastdecl = FNR
	# The type it defines, if any, for the SYNOPSIS of its users.
	n = split(dcode, L, "\n")
	typ = ""
	if (L[1] ~ /^(struct|enum) [a-z_]+ \{/) {
		typ = L[1]
		sub(/^(struct|enum) /, "", typ)
		sub(/ .*/, "", typ)
	} else if (L[1] ~ /^typedef .*\(\*[a-z_]+\)/) {
		typ = L[1]
		sub(/^[^(]*\(\*/, "", typ)
		sub(/\).*/, "", typ)
	} else if (L[1] ~ /^typedef/) {
		typ = L[n]
		sub(/^\} */, "", typ)
		sub(/;.*/, "", typ)
	}
	if (typ != "")
		typedecl[typ] = i
}

function start_decl(line) {
	dcode = line
	dstart = FNR
	ddepth = 0
	if (line ~ /^LFP_API/) {
		dkind = "func"
	} else if (line ~ /^static inline/) {
		# A prototype, as LFP_API's: the bodies of the static inline
		# helpers are in include/lfpool/, which lfpool.h includes.
		dkind = "func"
	} else if (line ~ /^#if/) {
		dkind = "cpp"
	} else if (line ~ /^#/) {
		dkind = "define"
	} else {
		dkind = "c"
	}
	state = "decl"
	decl_line(line, 1)
}

# Whether the declaration ends with this line.
function decl_line(line, first,   t) {
	if (!first)
		dcode = dcode "\n" line
	if (dkind == "func") {
		if (line ~ /^\{/) {
			t = dcode
			sub(/\(.*/, "", t)
			sub(/.*[ *]/, "", t)
			fail(t ": an inline body in lfpool.h; it goes under " \
			    "include/lfpool/, and lfpool.h keeps the prototype")
		}
		if (line ~ /;/) {
			dname = dcode
			sub(/\(.*/, "", dname)
			sub(/.*[ *]/, "", dname)
			end_decl()
		}
	} else if (dkind == "cpp") {
		if (line ~ /^#if/)
			ddepth++
		else if (line ~ /^#endif/ && --ddepth == 0)
			end_decl()
	} else if (dkind == "define") {
		if (line !~ /\\$/)
			end_decl()
	} else {
		t = line
		ddepth += gsub(/\{/, "{", t) - gsub(/\}/, "}", t)
		if (ddepth == 0 && line ~ /;/)
			end_decl()
	}
}

state == "comment" {
	ctext = ctext "\n" comment_line($0)
	craw = craw "\n" $0
	if ($0 ~ /\*\//) {
		state = "code"
		end_comment()
	}
	next
}

state == "decl" {
	decl_line($0, 0)
	next
}

state == "internal" {
	if ($0 ~ /^#endif \/\* the inline fast paths/)
		state = "code"
	next
}

# The license line atop each file documents nothing.
/^\/\* SPDX-License-Identifier: [^*]*\*\/[ \t]*$/ {
	next
}

/^[ \t]*\/\*/ {
	flush_comment()
	ctext = comment_line($0)
	craw = $0
	if ($0 ~ /\*\//)
		end_comment()
	else
		state = "comment"
	next
}

/^[ \t]*$/ {
	if (pending)
		gap = 1
	next
}

/^#(ifndef|define) LFPOOL_H|^#endif \/\* LFPOOL_H|^#include/ {
	flush_comment()
	next
}

/^#if !defined\(LFP_NO_INLINE\)/ {
	if (pending)
		inline_note = ctext
	pending = 0
	state = "internal"
	next
}

{
	if (pending && gap)
		flush_comment()
	start_decl($0)
}

# ---------------------------------------------------------------------
# Writing roff
# ---------------------------------------------------------------------

# Text for a filled paragraph: roff's special characters escaped, the
# functions that have pages in bold, and lfpool(7).
function inline(s,   out, m) {
	gsub(/\\/, "\\e", s)
	gsub(/-/, "\\-", s)
	out = ""
	while (match(s, /lfp_[a-z_]+|lfpool\(7\)/)) {
		m = substr(s, RSTART, RLENGTH)
		if (m in isfunc)
			m = "\\fB" m "\\fR"
		else if (m == "lfpool(7)")
			m = "\\fBlfpool\\fR(7)"
		out = out substr(s, 1, RSTART - 1) m
		s = substr(s, RSTART + RLENGTH)
	}
	s = out s
	if (s ~ /^[.']/)
		s = "\\&" s
	return s
}


function codeblock(s,   L, n, i, out) {
	n = split(s, L, "\n")
	out = ""
	for (i = 1; i <= n; i++)
		out = out codeline(L[i])
	return out
}

# Comment text as paragraphs. Lines "  -EXXX  text" become tagged
# paragraphs, lines "- text" bullets; a list's continuation lines are
# indented.
function prose(s,   L, n, i, line, out, inlist, needpp, tag) {
	n = split(s, L, "\n")
	out = ""
	inlist = 0
	needpp = 0
	for (i = 1; i <= n; i++) {
		line = L[i]
		if (line ~ /^[ \t]*$/) {
			needpp = out != ""
			inlist = 0
		} else if (line ~ /^ +-E[A-Z0-9]+ /) {
			line = trim(line)
			tag = line
			sub(/ .*/, "", tag)
			sub(/^[^ ]+ +/, "", line)
			out = out ".TP\n.B " inline(tag) "\n" inline(line) "\n"
			inlist = 1
		} else if (line ~ /^- /) {
			out = out ".IP \\(bu 2\n" inline(substr(line, 3)) "\n"
			inlist = 1
		} else if (inlist && line ~ /^ /) {
			out = out inline(trim(line)) "\n"
		} else {
			if (inlist || needpp)
				out = out ".PP\n"
			inlist = needpp = 0
			out = out inline(trim(line)) "\n"
		}
	}
	return out
}

# The first sentence, without parentheses and what follows a colon or
# semicolon: the one-line summary of a function.
function summary(s,   t) {
	t = s
	gsub(/\n/, " ", t)
	while (match(t, / ?\([^()]*\)/))
		t = substr(t, 1, RSTART - 1) substr(t, RSTART + RLENGTH)
	if (match(t, /[^. ]\.( |$)/))
		t = substr(t, 1, RSTART)
	sub(/[:;].*/, "", t)
	return trim(t)
}

function lcfirst(s) {
	if (substr(s, 2, 1) ~ /[a-z ]/)
		return tolower(substr(s, 1, 1)) substr(s, 2)
	return s
}

function ucfirst(s) {
	return toupper(substr(s, 1, 1)) substr(s, 2)
}

# The prototype, one line or wrapped at its commas, with the parameter
# names in italics.
function prototype(p,   head, inner, tail, np, P, i, pname, ptype, out,
		   col, w, lp) {
	gsub(/[\t\n]/, " ", p)
	gsub(/  +/, " ", p)
	sub(/^LFP_API /, "", p)
	gsub(/\( /, "(", p)
	lp = index(p, "(")
	head = substr(p, 1, lp)
	inner = substr(p, lp + 1)
	tail = inner
	sub(/\)[^)]*$/, "", inner)
	sub(/.*\)/, ")", tail)
	np = split(inner, P, ",")
	out = "\\fB" codetext(head)
	col = length(head)
	for (i = 1; i <= np; i++) {
		P[i] = trim(P[i])
		w = length(P[i]) + (i < np ? 1 : length(tail))
		if (i > 1) {
			if (col + 1 + w > 72) {
				out = out "\n" spaces(length(head))
				col = length(head)
			} else {
				out = out " "
				col++
			}
		}
		if (P[i] == "void" || !match(P[i], /[A-Za-z_][A-Za-z0-9_]*$/)) {
			out = out codetext(P[i])
		} else {
			pname = substr(P[i], RSTART)
			ptype = substr(P[i], 1, RSTART - 1)
			out = out codetext(ptype) "\\fI" pname "\\fB"
		}
		if (i < np)
			out = out ","
		col += w
	}
	return out codetext(tail) "\\fR\n"
}

function codetext(s) {
	s = codeline(s)
	sub(/\n$/, "", s)
	sub(/^\\&/, "", s)
	return s
}

function spaces(n,   s) {
	s = ""
	while (n-- > 0)
		s = s " "
	return s
}

# The parts of a function's comment: desc, ret, safety, progress.
# "Returns", "Thread safety" and "Progress:" start a part wherever a
# sentence starts with them.
function split_doc(s,   L, n, i, line, p, out) {
	n = split(s, L, "\n")
	out = ""
	for (i = 1; i <= n; i++) {
		line = L[i]
		while (match(line, /[^. ]\. (Returns|Thread safety|Progress:)/)) {
			out = out substr(line, 1, RSTART + 1) "\n"
			line = substr(line, RSTART + 3)
		}
		out = out line "\n"
	}
	safety_title = "THREAD SAFETY"
	p = "desc"
	n = split(out, L, "\n")
	for (i = 1; i <= n; i++) {
		line = L[i]
		if (line ~ /^Returns/ && p == "desc") {
			p = "ret"
		} else if (line ~ /^Thread safety/) {
			p = "safety"
			if (line ~ /^Thread safety and progress:/)
				safety_title = "THREAD SAFETY AND PROGRESS"
			sub(/^Thread safety( and progress)?: */, "", line)
			line = ucfirst(line)
		} else if (line ~ /^Progress:/) {
			p = "progress"
			sub(/^Progress: */, "", line)
			line = ucfirst(line)
		}
		doc[p] = doc[p] line "\n"
	}
}

function see_also(s, self,   m, out) {
	while (match(s, /lfp_[a-z_]+/)) {
		m = substr(s, RSTART, RLENGTH)
		s = substr(s, RSTART + RLENGTH)
		if ((m in isfunc) && m != self && !(m in seen)) {
			seen[m] = 1
			refs[++nrefs] = m
		}
	}
}

# The page's header; ragged right and no hyphenation, which would split
# names at their underscores.
function th(title) {
	return ".TH " title " 3 \"\" \"lfpool " version "\" \"lfpool\"\n" \
	       ".ad l\n.nh\n"
}

function write_page(file, body) {
	printf "%s", body > (outdir "/" file)
	close(outdir "/" file)
	made[file] = 1
	nmade++
}

function func_page(i,   f, out, T, nt, j, t, s, shown) {
	f = name[i]
	doc["desc"] = doc["ret"] = doc["safety"] = doc["progress"] = ""
	split_doc(text[i])
	out = th(f)
	out = out ".SH NAME\n" f " \\- " inline(lcfirst(summary(text[i]))) "\n"
	out = out ".SH SYNOPSIS\n.nf\n.B #include <lfpool.h>\n.sp\n"
	# The header's definitions of the types the prototype names.
	nt = split(code[i], T, /[^A-Za-z0-9_]+/)
	for (j = 1; j <= nt; j++) {
		t = T[j]
		if ((t in typedecl) && !(t in shown)) {
			shown[t] = 1
			if (raw[typedecl[t]] != "")
				out = out codeblock(raw[typedecl[t]])
			out = out codeblock(code[typedecl[t]]) ".sp\n"
		}
	}
	out = out prototype(code[i]) ".fi\n"
	if (code[i] !~ /^static inline/)
		out = out link_hint("Link with \\fI\\-llfpool\\fR " \
		    "(\\fBpkg\\-config \\-\\-cflags \\-\\-libs lfpool\\fR " \
		    "gives the flags).")
	out = out ".SH DESCRIPTION\n" prose(doc["desc"])
	if (doc["ret"] != "")
		out = out ".SH RETURN VALUE\n" prose(doc["ret"])
	out = out ".SH " safety_title "\n" prose(doc["safety"])
	if (doc["progress"] != "")
		out = out ".SH PROGRESS\n" prose(doc["progress"])
	s = sect[i]
	if (s)
		out = out ".SH NOTES\n.SS " inline(stitle[s]) "\n" prose(sbody[s])
	nrefs = 0
	split("", seen)
	# The functions the comments name, and the neighbours in the header.
	see_also(text[i] (s ? sbody[s] : ""), f)
	for (j = i - 1; j > 0 && kind[j] != "func"; j--)
		;
	if (j > 0 && sect[j] == s)
		see_also(name[j], f)
	for (j = i + 1; j <= nitem && kind[j] != "func"; j++)
		;
	if (j <= nitem && sect[j] == s)
		see_also(name[j], f)
	out = out ".SH SEE ALSO\n.BR lfpool (3)"
	if ((text[i] (s ? sbody[s] : "")) ~ /lfpool\(7\)/)
		out = out ",\n.BR lfpool (7)"
	for (j = 1; j <= nrefs; j++)
		out = out ",\n.BR " refs[j] " (3)"
	write_page(f ".3", out "\n")
}

function overview(   out, L, n, i, body, s) {
	n = split(top, L, "\n")
	i = 1
	while (L[i] == "")
		i++
	title = L[i]
	sub(/^lfpool: */, "", title)
	sub(/\.$/, "", title)
	body = ""
	for (i++; i <= n; i++)
		body = body L[i] "\n"
	out = th("lfpool")
	out = out ".SH NAME\nlfpool \\- " inline(title) "\n"
	out = out ".SH SYNOPSIS\n.nf\n.B #include <lfpool.h>\n.fi\n"
	out = out link_hint("Compile and link with \\fBpkg\\-config " \
	    "\\-\\-cflags \\-\\-libs lfpool\\fR.")
	out = out ".SH DESCRIPTION\n" prose(body)
	out = out ".SH FUNCTIONS\n"
	s = 0
	for (i = 1; i <= nitem; i++) {
		if (kind[i] == "section") {
			s = sect[i]
			out = out ".SS " inline(stitle[s]) "\n" prose(sbody[s])
			fresh = 1
		} else if (kind[i] == "func") {
			# .TP's default indent, not that of a list above
			if (fresh)
				out = out ".PP\n"
			fresh = 0
			out = out ".TP\n.BR " name[i] " (3)\n" \
			      inline(summary(text[i])) "\n"
		}
	}
	out = out ".SH TYPES AND CONSTANTS\n"
	for (i = 1; i <= nitem; i++)
		if (kind[i] == "decl")
			out = out ".PP\n.nf\n" (raw[i] == "" ? "" : codeblock(raw[i])) \
			      codeblock(code[i]) ".fi\n"
	out = out ".SH NOTES\n" prose(inline_note)
	out = out ".SH SEE ALSO\n"
	for (i = 1; i <= nitem; i++)
		if (kind[i] == "func")
			out = out ".BR " name[i] " (3),\n"
	out = out ".BR lfpool.hpp (3),\n.BR lfpool (7),\n" \
	      ".BR lfpool\\-stress (1)\n"
	write_page("lfpool.3", out)
}

END {
	ended = 1
	if (state != "code")
		fail("the header ends inside a " state)
	if (!have_top)
		fail("no comment describes the library")
	if (inline_note == "")
		fail("no comment above the inline fast paths (#if !defined(LFP_NO_INLINE))")
	if (failed)
		exit 1
	if (outdir == "")
		outdir = "."
	overview()
	for (i = 1; i <= nitem; i++)
		if (kind[i] == "func")
			func_page(i)
	# The pages made must be the pages the Makefile installs.
	if (pages != "") {
		n = split(pages, want, " ")
		for (i = 1; i <= n; i++) {
			listed[want[i]] = 1
			if (!(want[i] in made))
				fail("lfpool.h documents no " want[i] \
				     ": take it out of LFP_MAN3 in man/Makefile.am")
		}
		for (f in made)
			if (!(f in listed))
				fail("lfpool.h documents " f \
				     ": add it to LFP_MAN3 in man/Makefile.am")
	}
	exit failed
}
