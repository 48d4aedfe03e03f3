# SPDX-License-Identifier: MIT
# hpp2man.awk: lfpool.hpp(3), the manual of the C++ interface, made from
# lfpool.hpp and its pieces as header2man.awk makes section 3 from lfpool.h.
#
#   awk -v version=0.1.0 [-v pages="lfpool.3 lfp_alloc.3 ..."] \
#       -f roff.awk -f hpp2man.awk include/lfpool.hpp \
#       include/lfpool/common.hpp include/lfpool/handle.hpp ... >lfpool.hpp.3
#
# The files are read as one header, in the order given (lfpool.hpp's
# order of inclusion), and the types are presented in that order.
# The headers' comments are the contract, so the page says what they say:
# - The first comment of the first file describes the interface (NAME and
#   DESCRIPTION).
# - Each comment at namespace level in namespace lfp (not lfp::detail)
#   documents the declaration below it, and those right after it: a
#   class, a struct, an alias, a template. A class or struct gets a subsection: a synopsis of its
#   public members (bodies left out), the comment, then each public member
#   that has a comment of its own, with the members that follow it
#   without one. The comment above namespace std is the page's NOTES.
# - lfp::detail is no API, but what a class takes from a base there is: a
#   class whose base is a class of lfp::detail lists that base's public
#   members, with their comments, after its own, and names the base's own
#   base in its place (class pool_resource : public
#   std::pmr::memory_resource), so that members written once for two
#   classes are documented in both.
# - A defaulted member is shown as declared (~pool();): how the header
#   defines it is not the interface.
# - lfp_ names with a page of their own (-v pages) are set in bold, and
#   listed in SEE ALSO.
# A declaration at namespace level without a comment fails the run.
# Plain POSIX awk (mawk, busybox): no gawk extensions.

BEGIN {
	ndecl = 0     # documented declarations: dhead, dtext, dsyn, nmem
	depth = 0     # braces open
	inclass = 0   # depth of the class body being read, 0 if none
	indetail = 0  # depth of lfp::detail's body, 0 outside it
	cur = ""      # the class members go to: ndecl, or detail::name
	state = "code"
	failed = 0
	n = split(pages, P, " ")
	for (i = 1; i <= n; i++)
		haspage[P[i]] = 1
}

function fail(msg) {
	print "hpp2man.awk: " FILENAME ":" FNR ": " msg > "/dev/stderr"
	failed = 1
}


# Braces opened less closed on a line (the header balances those of
# initialisers such as st{} on their line).
function braces(s,   t) {
	t = s
	return gsub(/\{/, "{", t) - gsub(/\}/, "}", t)
}

# ---------------------------------------------------------------------
# Reading the header
# ---------------------------------------------------------------------
#
# Lines are told apart by the depth of braces before them: 0 is the
# file, 1 namespace level, inclass the body of a class at namespace
# level; anything deeper (function bodies, lfp::detail) is only counted.

function comment_line(line) {
	sub(/^[ \t]*\/\*/, "", line)
	sub(/[ \t]*\*\/[ \t]*$/, "", line)
	if (!sub(/^[ \t]*\* /, "", line))
		sub(/^[ \t]*\*$/, "", line)
	return line
}

function interesting() {
	return depth == 0 || depth == 1 || (inclass && depth == inclass) ||
	    (indetail && depth == indetail)
}

function end_comment() {
	state = "code"
	sub(/^\n+/, "", ctext)
	sub(/\n+$/, "", ctext)
	if (!have_top) {
		have_top = 1
		top = ctext
	} else if (interesting()) {
		pending = 1
	}
}

# A declaration at the top of a file does not follow the last one read.
FNR == 1 {
	lastend = -1
}

state == "comment" {
	ctext = ctext "\n" comment_line($0)
	if ($0 ~ /\*\//)
		end_comment()
	next
}

# The license line atop each file documents nothing.
/^\/\* SPDX-License-Identifier: [^*]*\*\/[ \t]*$/ {
	next
}

/^[ \t]*\/\*/ && state == "code" {
	ctext = comment_line($0)
	state = "comment"
	if ($0 ~ /\*\//)
		end_comment()
	next
}

/^[ \t]*$|^#|^[ \t]*\/\// {
	next
}

state == "head" {
	head = head " " trim($0)
	depth += braces($0)
	if ($0 ~ /[{;]/)
		end_head()
	next
}

{
	if (!interesting() || $0 ~ /^[ \t]*[{}]/) {
		depth += braces($0)
		if (inclass && depth < inclass)
			inclass = 0
		if (indetail && depth < indetail)
			indetail = 0
		next
	}
	if (inclass && $0 ~ /^[ \t]*(public|private|protected):/) {
		access = trim($0)
		next
	}
	hdepth = depth
	hstart = FNR
	head = trim($0)
	depth += braces($0)
	if ($0 ~ /[{;]/)
		end_head()
	else
		state = "head"
}

# A declaration read up to its body or its semicolon, at depth hdepth.
function end_head(   h) {
	state = "code"
	h = head
	sub(/[ \t]*\{.*$/, "", h)
	sub(/ : [a-z_]+[({].*$/, "", h) # mem-initialisers
	h = trim(h)
	if (hdepth == 0) {
		# namespace lfp, or namespace std and its comment
		ns = h
		if (ns ~ /std/ && pending)
			notes = ctext
		pending = 0
		return
	}
	if (indetail && hdepth == indetail) {
		detail_decl(h)
		return
	}
	if (hdepth > 1) {
		member(h)
		return
	}
	if (h == "namespace detail") {
		indetail = depth
		pending = 0
		return
	}
	# Forward declarations, namespaces and what is not lfp's.
	if (ns !~ /lfp/ || h ~ /^namespace |^template <[^>]*> (class|struct) [a-z_]+;$/) {
		pending = 0
		return
	}
	# Declarations in a row after one comment belong to it.
	if (!pending && ndecl && hstart == lastend + 1 && h ~ /;$/) {
		dhead[ndecl] = dhead[ndecl] "\n" h
		lastend = FNR
		return
	}
	if (!pending)
		fail("no comment above " h)
	lastend = FNR
	ndecl++
	cur = ndecl
	dhead[ndecl] = h
	dtext[ndecl] = ctext
	dsyn[ndecl] = ""
	nmem[ndecl] = 0
	pending = 0
	if (depth > 1 && h ~ /(^|> )(class|struct) [A-Za-z_]+( |$)/) {
		inclass = depth
		access = h ~ /(^|> )struct/ ? "public:" : "private:"
		if (match(h, /detail::[A-Za-z_]+/))
			dbase[ndecl] = substr(h, RSTART, RLENGTH)
	} else if (h !~ /;$/ && depth == 1) {
		dhead[ndecl] = h ";"
	}
}

# A declaration at the level of lfp::detail: only its classes are read,
# their members kept under detail::name for a class of lfp based on one.
function detail_decl(h,   name) {
	pending = 0
	if (depth <= hdepth ||
	    !match(h, /(^|> )(class|struct) [A-Za-z_]+/))
		return
	name = substr(h, RSTART, RLENGTH)
	sub(/^.*(class|struct) /, "", name)
	cur = "detail::" name
	dsyn[cur] = ""
	nmem[cur] = 0
	dbases[cur] = ""
	if (match(h, / : .*$/))
		dbases[cur] = substr(h, RSTART + 3)
	inclass = depth
	access = h ~ /(^|> )struct/ ? "public:" : "private:"
}

# A member of the class being read: in its synopsis if public, and with
# its comment (or the last one's) if it has one.
function member(h,   m, sig) {
	if (access != "public:") {
		pending = 0
		return
	}
	if (h ~ /^(using|friend) / && h !~ /operator/) {
		dsyn[ndecl] = dsyn[ndecl] "    " h "\n"
		pending = 0
		return
	}
	sig = h
	gsub(/\( /, "(", sig)
	sub(/ = default;?$/, "", sig)
	if (sig !~ /;$/ && sig !~ /\*\/$/)
		sig = sig ";"
	dsyn[cur] = dsyn[cur] "    " sig "\n"
	if (pending) {
		m = ++nmem[cur]
		msig[cur, m] = sig
		mtext[cur, m] = ctext
		pending = 0
	} else if (nmem[cur] && sig !~ /= delete|&&/) {
		m = nmem[cur]
		msig[cur, m] = msig[cur, m] "\n" sig
	}
}

# The documented members of class key (ndecl, or detail::name) in roff.
function members(key,   out, m, j, k, S, line) {
	out = ""
	for (m = 1; m <= nmem[key]; m++) {
		out = out ".PP\n.nf\n"
		k = split(msig[key, m], S, "\n")
		for (j = 1; j <= k; j++) {
			line = codeline(S[j])
			sub(/\n$/, "", line)
			out = out "\\fB" line "\\fR\n"
		}
		out = out ".fi\n.RS\n" prose(mtext[key, m]) ".RE\n"
	}
	return out
}

# ---------------------------------------------------------------------
# Writing roff
# ---------------------------------------------------------------------

function inline(s,   out, m) {
	gsub(/\\/, "\\e", s)
	gsub(/-/, "\\-", s)
	out = ""
	while (match(s, /lfp_[a-z_]+/)) {
		m = substr(s, RSTART, RLENGTH)
		if ((m ".3") in haspage) {
			if (!(m in seen))
				refs[++nrefs] = m
			seen[m] = 1
			m = "\\fB" m "\\fR"
		}
		out = out substr(s, 1, RSTART - 1) m
		s = substr(s, RSTART + RLENGTH)
	}
	s = out s
	if (s ~ /^[.']/)
		s = "\\&" s
	return s
}


function codeblock(s,   L, n, i, out) {
	sub(/\n$/, "", s)
	n = split(s, L, "\n")
	out = ".PP\n.nf\n"
	for (i = 1; i <= n; i++)
		out = out codeline(L[i])
	return out ".fi\n"
}

# Comment text as paragraphs: "- " lines are bullets, lines indented by
# two spaces or more outside a bullet are kept as they are.
function prose(s,   L, n, i, line, out, inlist, needpp, nofill) {
	n = split(s, L, "\n")
	out = ""
	inlist = needpp = nofill = 0
	for (i = 1; i <= n; i++) {
		line = L[i]
		if (nofill && line !~ /^  /) {
			out = out ".fi\n"
			nofill = 0
		}
		if (line ~ /^[ \t]*$/) {
			needpp = out != ""
			inlist = 0
		} else if (line ~ /^- /) {
			out = out ".IP \\(bu 2\n" inline(substr(line, 3)) "\n"
			inlist = 1
		} else if (inlist && line ~ /^ /) {
			out = out inline(trim(line)) "\n"
		} else if (line ~ /^  /) {
			if (!nofill)
				out = out ".PP\n.nf\n"
			nofill = 1
			out = out codeline(line)
		} else {
			if (inlist || needpp)
				out = out ".PP\n"
			inlist = needpp = 0
			out = out inline(trim(line)) "\n"
		}
	}
	if (nofill)
		out = out ".fi\n"
	return out
}

# Each name a declaration defines, as lfp::name<T>.
function titles(h,   L, n, i, out) {
	n = split(h, L, "\n")
	out = title(L[1])
	for (i = 2; i <= n; i++)
		out = out ", " title(L[i])
	return out
}

# "template <class T> class pool" -> "lfp::pool<T>"
function title(h,   t, targs) {
	t = h
	targs = ""
	if (t ~ /^template </) {
		targs = t
		sub(/^template </, "", targs)
		sub(/>.*/, "", targs)
		gsub(/class |typename |\.\.\./, "", targs)
		targs = "<" targs ">"
		sub(/^template <[^>]*> */, "", t)
	}
	sub(/^(class|struct|using) /, "", t)
	sub(/[ ;:=].*/, "", t)
	return "lfp::" t targs
}

END {
	if (failed)
		exit 1
	out = ".TH LFPOOL.HPP 3 \"\" \"lfpool " version "\" \"lfpool\"\n.ad l\n.nh\n"
	n = split(top, L, "\n")
	desc = ""
	for (i = 2; i <= n; i++)
		desc = desc L[i] "\n"
	t = L[1]
	sub(/^lfpool.hpp: */, "", t)
	sub(/\.$/, "", t)
	out = out ".SH NAME\nlfpool.hpp \\- " inline(t) "\n"
	out = out ".SH SYNOPSIS\n.nf\n.B #include <lfpool.hpp>\n.fi\n"
	out = out link_hint("Compile and link with \\fBc++ \\-std=c++17 " \
	    "app.cc $(pkg\\-config \\-\\-cflags \\-\\-libs lfpool)\\fR.")
	out = out ".SH DESCRIPTION\n" prose(desc)
	out = out ".SH TYPES\n"
	for (d = 1; d <= ndecl; d++) {
		out = out ".SS " titles(dhead[d]) "\n"
		syn = dhead[d]
		body = dsyn[d]
		base = (d in dbase) ? dbase[d] : ""
		if (base != "") {
			if (!(base in dbases)) {
				print "hpp2man.awk: " title(dhead[d]) \
				    "'s base " base " is not in the headers" \
				    > "/dev/stderr"
				exit 1
			}
			# "public detail::name<...>" -> the base's own bases
			sub("(public |protected |private )?" base "(<[^>]*>)?",
			    dbases[base], syn)
			sub(/ : $/, "", syn)
			body = body dsyn[base]
		}
		if (body != "")
			syn = syn " {\n" body "};"
		out = out codeblock(syn) ".PP\n" prose(dtext[d]) members(d)
		if (base != "")
			out = out members(base)
	}
	if (notes != "")
		out = out ".SH NOTES\n" prose(notes)
	out = out ".SH SEE ALSO\n.BR lfpool (3),\n.BR lfpool (7)"
	for (i = 1; i <= nrefs; i++)
		out = out ",\n.BR " refs[i] " (3)"
	printf "%s\n", out
}
