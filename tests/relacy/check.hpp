/* SPDX-License-Identifier: MIT */
/*
 * The driver of a Relacy check: a program that includes this file, then
 * the library's units it checks (their .c files, compiled as C++ through
 * stdatomic.h here), then its Relacy tests, and calls lfpm_main with them.
 *
 * lfpm_main runs every test with the orders as written; each must pass,
 * and together they record the census of the orders they reach. Then, for
 * each order that is not relaxed and each order one step weaker, it runs
 * the tests again with only that order weakened, until one fails: the
 * variant is caught. A variant no test catches fails the check, unless
 * the program lists it among the orders kept without a check, with the
 * reason (and then it must still be uncaught: a listed order that a test
 * catches fails too, so the list cannot go stale).
 *
 * Every order that is not relaxed in the units the program names (their
 * calls found in the source tree at LFPM_SRCDIR) must be reached by a
 * test, or the check fails: a protocol added to a unit and left out of
 * the tests is not proven by them.
 *
 * Each test is searched twice: every execution with at most --bound B
 * preemptions (default 1), each load reading the latest store or the one
 * before it (Relacy's bounded search), then --iterations N random
 * executions (default the test's own), in which a load may read any of
 * the last three stores to its word.
 * --verbose prints Relacy's report of each caught variant.
 * --expect-fail turns on the faults the program built into its units
 * (LFPI_FAULT_*, each defined as a flag of its lfpm_fault list), each
 * alone (or only --fault NAME): with each, the tests as written must
 * fail; no variant runs. Without it, every fault stays off.
 */
#ifndef LFPM_CHECK_HPP
#define LFPM_CHECK_HPP

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "stdatomic.h"

/*
 * sched_yield(2), where a unit waits for another thread: a yield to
 * Relacy's scheduler, which may then run the thread waited for (else the
 * bounded search, out of preemptions, reports a livelock). After a
 * yield, Relacy lets a thread read no value it read before when a newer
 * one exists (so that a spin ends): a test that must see a load after a
 * wait read stale sets lfpm_yield_real false, and runs in the random
 * search only, whose scheduler switches threads at any step anyway.
 */
#include <sched.h>
inline bool lfpm_yield_real = true;
static inline int lfpm_sched_yield()
{
	if (lfpm_yield_real)
		rl::yield(1, $);
	return 0;
}
#define sched_yield lfpm_sched_yield

/* clock_gettime(2), for the units' bounded waits: lfpm_clock_step
 * nanoseconds pass at each reading (a check sets the step, and sets
 * lfpm_now_ns to 0 for each execution). */
#include <time.h>
inline uint64_t lfpm_now_ns, lfpm_clock_step = 1000;
static inline int lfpm_clock_gettime(struct timespec *ts)
{
	lfpm_now_ns += lfpm_clock_step;
	ts->tv_sec = (time_t)(lfpm_now_ns / 1000000000u);
	ts->tv_nsec = (long)(lfpm_now_ns % 1000000000u);
	return 0;
}
#define clock_gettime(clock, ts) lfpm_clock_gettime(ts)

/* An object of the pools the checks lay out, 256 bytes (so that the
 * exact division of the inline paths is a shift): what its owner writes,
 * and who owns it. */
struct alignas(256) lfpm_object {
	rl::var<int> payload;
	rl::atomic<int> owned;
};

/*
 * What a thread does with an object (or a node) it owns: claim it (a
 * second owner fails here, whatever the orders: the exchanges on one
 * word are totally ordered), read and write its payload (a race unless
 * the last owner's writes happen before), let it go.
 */
template <typename T> static inline void lfpm_own(T &o)
{
	RL_ASSERT(o.owned($).exchange(1, rl::mo_relaxed) == 0);
	int v = o.payload($);
	o.payload($) = v + 1;
	o.owned($).store(0, rl::mo_relaxed);
}

lfpm_site lfpm_sites[LFPM_SITES_MAX];
size_t lfpm_nsites;

/* The static atomics (struct lfpm_atomic), made anew for each execution. */
#define LFPM_STATICS_MAX 4096
static struct lfpm_static {
	void *atomic;
	lfpm_static_fn begin, end;
} lfpm_statics[LFPM_STATICS_MAX];
static size_t lfpm_nstatics;

void lfpm_static_add(void *atomic, lfpm_static_fn begin, lfpm_static_fn end)
{
	if (lfpm_nstatics == LFPM_STATICS_MAX) {
		fprintf(stderr, "more than %d static atomics: raise "
			"LFPM_STATICS_MAX\n", LFPM_STATICS_MAX);
		abort();
	}
	lfpm_statics[lfpm_nstatics++] = lfpm_static{atomic, begin, end};
}

void lfpm_statics_begin(void)
{
	for (size_t i = 0; i < lfpm_nstatics; i++)
		lfpm_statics[i].begin(lfpm_statics[i].atomic);
}

void lfpm_statics_end(void)
{
	for (size_t i = 0; i < lfpm_nstatics; i++)
		lfpm_statics[i].end(lfpm_statics[i].atomic);
}

/* The thread-locals each simulated thread has its own copy of, and the
 * copies of each fiber seen in this execution, by its jmp_buf. */
#define LFPM_LOCALS_MAX 8
#define LFPM_LOCAL_SIZE 16
#define LFPM_FIBERS_MAX 16
static struct lfpm_local {
	unsigned char *word;
	size_t size;
} lfpm_locals[LFPM_LOCALS_MAX];
static size_t lfpm_nlocals;
static struct lfpm_fiber {
	const void *key;
	unsigned char copy[LFPM_LOCALS_MAX][LFPM_LOCAL_SIZE];
} lfpm_fibers[LFPM_FIBERS_MAX];
static size_t lfpm_nfibers;
static const void *lfpm_fiber_now; /* NULL: the program's own, at first */

void lfpm_fiber_local(void *word, size_t size)
{
	if (lfpm_nlocals == LFPM_LOCALS_MAX || size > LFPM_LOCAL_SIZE) {
		fprintf(stderr, "lfpm_fiber_local: raise LFPM_LOCALS_MAX or "
			"LFPM_LOCAL_SIZE\n");
		abort();
	}
	lfpm_locals[lfpm_nlocals++] =
		lfpm_local{static_cast<unsigned char *>(word), size};
}

/* Relacy calls a test's before() in the fiber of the execution's first
 * thread, whose words are live then: they start at zero too (else that
 * thread would start with what it left in an execution before, one that
 * failed or Relacy's replay of it). */
void lfpm_fiber_locals_begin(void)
{
	lfpm_nfibers = 0;
	for (size_t i = 0; i < lfpm_nlocals; i++)
		memset(lfpm_locals[i].word, 0, lfpm_locals[i].size);
}

static lfpm_fiber *lfpm_fiber_of(const void *key)
{
	for (size_t i = 0; i < lfpm_nfibers; i++)
		if (lfpm_fibers[i].key == key)
			return &lfpm_fibers[i];
	return nullptr;
}

void lfpm_longjmp(struct __jmp_buf_tag env[1], int val)
{
	lfpm_fiber *from = lfpm_fiber_of(lfpm_fiber_now), *to;

	if (!from) {
		if (lfpm_nfibers == LFPM_FIBERS_MAX) {
			fprintf(stderr, "lfpm_longjmp: raise LFPM_FIBERS_MAX\n");
			abort();
		}
		from = &lfpm_fibers[lfpm_nfibers++];
		from->key = lfpm_fiber_now;
	}
	for (size_t i = 0; i < lfpm_nlocals; i++)
		memcpy(from->copy[i], lfpm_locals[i].word, lfpm_locals[i].size);
	to = lfpm_fiber_of(env);
	for (size_t i = 0; i < lfpm_nlocals; i++) {
		if (to)
			memcpy(lfpm_locals[i].word, to->copy[i],
			       lfpm_locals[i].size);
		else
			memset(lfpm_locals[i].word, 0, lfpm_locals[i].size);
	}
	lfpm_fiber_now = env;
	(_longjmp)(env, val);
}

const char *lfpm_light_barrier;
bool lfpm_fresh_now;
int lfpm_weak_site = -1;
rl::memory_order lfpm_weak_order;
bool lfpm_census;

rl::memory_order lfpm_order(rl::memory_order mo, int kind, const char *file,
			    int line, const char *func, const char *what)
{
	for (size_t i = 0; i < lfpm_nsites; i++) {
		const lfpm_site &s = lfpm_sites[i];

		if (s.line == line && s.kind == kind && s.order == mo &&
		    !strcmp(s.file, file))
			return (int)i == lfpm_weak_site ? lfpm_weak_order : mo;
	}
	if (lfpm_census) {
		if (lfpm_nsites == LFPM_SITES_MAX) {
			fprintf(stderr, "more than %d orders: raise LFPM_SITES_MAX\n",
				LFPM_SITES_MAX);
			abort();
		}
		lfpm_sites[lfpm_nsites++] =
			lfpm_site{file, line, kind, mo, func, what};
	}
	return mo;
}

static const char *lfpm_order_name(rl::memory_order mo)
{
	switch (mo) {
	case rl::mo_relaxed: return "relaxed";
	case rl::mo_consume: return "consume";
	case rl::mo_acquire: return "acquire";
	case rl::mo_release: return "release";
	case rl::mo_acq_rel: return "acq_rel";
	case rl::mo_seq_cst: return "seq_cst";
	}
	return "?";
}

static const char *lfpm_kind_name(int kind)
{
	static const char *names[] = {"load", "store", "rmw", "fence",
				      "cas-success", "cas-failure"};
	return names[kind];
}

/* The orders one step weaker than mo, for an operation of this kind. */
static std::vector<rl::memory_order> lfpm_weaker(rl::memory_order mo, int kind)
{
	switch (mo) {
	case rl::mo_seq_cst:
		if (kind == LFPM_LOAD || kind == LFPM_CAS_FAIL)
			return {rl::mo_acquire};
		if (kind == LFPM_STORE)
			return {rl::mo_release};
		return {rl::mo_acq_rel};
	case rl::mo_acq_rel:
		return {rl::mo_acquire, rl::mo_release};
	case rl::mo_acquire:
	case rl::mo_consume:
	case rl::mo_release:
		return {rl::mo_relaxed};
	case rl::mo_relaxed:
		break;
	}
	return {};
}

/* One Relacy test of the program. */
struct lfpm_test {
	const char *name;
	unsigned long iterations;
	/* Runs the test with params; returns Relacy's verdict. */
	bool (*run)(rl::test_params &params);
	/* Only the random search: the bounded one takes minutes. */
	bool random_only;
};

/* Test T with the static atomics made anew around each execution. */
template <typename T> struct lfpm_with_statics : T {
	void before()
	{
		lfpm_statics_begin();
		lfpm_fiber_locals_begin();
		lfpm_yield_real = true;
		T::before();
	}
	void after()
	{
		T::after();
		lfpm_statics_end();
	}
};

template <typename T> static bool lfpm_run(rl::test_params &params)
{
	return rl::simulate<lfpm_with_statics<T>>(params);
}

/*
 * An order kept though no test here needs it, and why; or (later) one in
 * the check's units whose protocol no test here models yet, whose
 * variant is not run: the check reports it as not checked, with what is
 * missing.
 */
struct lfpm_kept {
	const char *func;
	int kind;
	const char *from; /* the order as written */
	const char *to;   /* the weaker one no test catches */
	const char *why;
	bool later;
	const char *word; /* NULL, or in the atomic as the call spells it */
};

static const lfpm_kept *lfpm_find_kept(const lfpm_kept *kept, size_t nkept,
				       const lfpm_site &s, rl::memory_order to)
{
	for (size_t i = 0; i < nkept; i++)
		if (!strcmp(kept[i].func, s.func) && kept[i].kind == s.kind &&
		    !strcmp(kept[i].from, lfpm_order_name(s.order)) &&
		    !strcmp(kept[i].to, lfpm_order_name(to)) &&
		    (!kept[i].word || strstr(s.what, kept[i].word)))
			return &kept[i];
	return nullptr;
}

static double lfpm_seconds_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() -
					     t0)
		.count();
}

/*
 * How a test is run: every execution with at most `bound` preemptions
 * (and every choice of the value each load reads), then `iterations`
 * random ones.
 */
struct lfpm_search {
	unsigned bound;
	unsigned long iterations;
};

/* Runs one test quietly, in one of the two searches (bound: true for
 * the bounded one); true if Relacy found nothing. Relacy's report goes
 * to out. */
static bool lfpm_simulate(const lfpm_test &t, const lfpm_search &search,
			  bool bound, rl::ostringstream &out,
			  rl::test_result_e *result,
			  unsigned long *executions = nullptr)
{
	rl::test_params p;

	if (bound) {
		p.search_type = rl::sched_bound;
		p.context_bound = search.bound;
		p.iteration_count = ~(rl::iteration_t)0;
	} else {
		p.search_type = rl::sched_random;
		p.iteration_count = search.iterations ? search.iterations
						      : t.iterations;
	}
	p.output_stream = &out;
	p.progress_stream = &out;
	bool ok = t.run(p);
	*result = p.test_result;
	if (executions)
		*executions = (unsigned long)p.stop_iteration;
	return ok;
}

/* The source text of file with its comments blanked (newlines kept). */
static std::string lfpm_source(const std::string &path)
{
	std::ifstream in(path);
	std::stringstream ss;

	if (!in) {
		fprintf(stderr, "cannot read %s\n", path.c_str());
		exit(1);
	}
	ss << in.rdbuf();
	std::string t = ss.str();
	for (size_t i = 0; i + 1 < t.size(); i++) {
		if (t[i] == '/' && t[i + 1] == '*') {
			size_t e = t.find("*/", i + 2);
			e = e == std::string::npos ? t.size() : e + 2;
			for (; i < e; i++)
				if (t[i] != '\n')
					t[i] = ' ';
			i--;
		} else if (t[i] == '/' && t[i + 1] == '/') {
			for (; i < t.size() && t[i] != '\n'; i++)
				t[i] = ' ';
		}
	}
	return t;
}

/* The body of function func in text t, as [begin, end) (whole t if func
 * is empty). */
static void lfpm_body(const std::string &t, const std::string &func,
		      size_t *begin, size_t *end)
{
	*begin = 0;
	*end = t.size();
	if (func.empty())
		return;
	for (size_t i = t.find(func + "("); i != std::string::npos;
	     i = t.find(func + "(", i + 1)) {
		if (i && (isalnum((unsigned char)t[i - 1]) || t[i - 1] == '_'))
			continue;
		/* The parameters, then a body (not a ';' of a declaration
		 * or a call). */
		size_t p = i + func.size();
		for (int depth = 0; p < t.size(); p++) {
			if (t[p] == '(')
				depth++;
			else if (t[p] == ')' && --depth == 0)
				break;
		}
		size_t b = t.find_first_not_of(" \t\n", p + 1);
		if (b == std::string::npos || t[b] != '{')
			continue;
		size_t e = b;
		for (int depth = 0; e < t.size(); e++) {
			if (t[e] == '{')
				depth++;
			else if (t[e] == '}' && --depth == 0)
				break;
		}
		*begin = b;
		*end = e;
		return;
	}
	fprintf(stderr, "no function %s in the source\n", func.c_str());
	exit(1);
}

/*
 * Each atomic call in t[from, to) that names its order: C11's
 * (atomic_*_explicit, atomic_thread_fence) and lfpool/hot.h's
 * (LFPI_H_LOAD, _STORE, _CAS, whose orders are bare words). fn gets the
 * call's first and last lines, its name, and for each of its orders (a
 * CAS has two) its
 * kind, whether the scan could read it, and the order (relaxed where it
 * could not); a call whose orders the scan cannot find gets kind -1.
 */
template <typename F>
static void lfpm_scan(const std::string &t, size_t from, size_t to, F fn)
{
	for (size_t i = from; i < to; i++) {
		if (i && (isalnum((unsigned char)t[i - 1]) || t[i - 1] == '_'))
			continue;
		if (t.compare(i, 7, "atomic_") && t.compare(i, 7, "LFPI_H_"))
			continue;
		size_t p = i;
		while (p < t.size() && (isalnum((unsigned char)t[p]) || t[p] == '_'))
			p++;
		std::string name = t.substr(i, p - i);
		bool c11 = name.compare(0, 7, "atomic_") == 0;
		if ((c11 && name.find("_explicit") == std::string::npos &&
		     name != "atomic_thread_fence") ||
		    (!c11 && name != "LFPI_H_LOAD" && name != "LFPI_H_STORE" &&
		     name != "LFPI_H_CAS"))
			continue;
		while (p < t.size() && isspace((unsigned char)t[p]))
			p++;
		if (p >= t.size() || t[p] != '(')
			continue;
		/* A macro's definition, not a call: its uses are scanned. */
		size_t bol = t.rfind('\n', i);
		std::string pre = t.substr(bol == std::string::npos ? 0 : bol + 1,
					   bol == std::string::npos ? i : i - bol - 1);
		pre.erase(std::remove_if(pre.begin(), pre.end(),
					 [](char ch) { return isspace((unsigned char)ch); }),
			  pre.end());
		if (pre == "#define")
			continue;
		/* The call's arguments, split at its own commas. */
		std::vector<std::string> args(1);
		size_t e = p + 1;
		for (int depth = 1; e < t.size(); e++) {
			char ch = t[e];

			if (ch == '(')
				depth++;
			else if (ch == ')' && --depth == 0)
				break;
			if (ch == ',' && depth == 1)
				args.emplace_back();
			else if (!isspace((unsigned char)ch) && ch != '\\')
				args.back() += ch; /* a macro's line ends too */
		}
		/* Its orders: the last argument, or a CAS's last two. */
		bool cas = name.find("compare_exchange") != std::string::npos ||
			   name == "LFPI_H_CAS";
		int kinds[2];
		size_t norders = cas ? 2 : 1;
		if (cas) {
			kinds[0] = LFPM_CAS_SUCCESS;
			kinds[1] = LFPM_CAS_FAIL;
		} else if (name.find("load") != std::string::npos ||
			   name == "LFPI_H_LOAD") {
			kinds[0] = LFPM_LOAD;
		} else if (name.find("store") != std::string::npos ||
			   name == "LFPI_H_STORE") {
			kinds[0] = LFPM_STORE;
		} else if (name == "atomic_thread_fence") {
			kinds[0] = LFPM_FENCE;
		} else {
			kinds[0] = LFPM_RMW;
		}
		int line = 1 + (int)std::count(t.begin(), t.begin() + (long)i, '\n');
		int last = line + (int)std::count(t.begin() + (long)i,
						  t.begin() + (long)e, '\n');
		if (args.size() < norders) {
			fn(line, last, name, -1, false, rl::mo_relaxed,
			   std::string());
			continue;
		}
		for (size_t k = 0; k < norders; k++) {
			std::string written = args[args.size() - norders + k];
			std::string o = written;
			rl::memory_order mo = rl::mo_relaxed;
			bool known = false;

			if (c11 && o.compare(0, 13, "memory_order_") == 0)
				o = o.substr(13);
			else if (c11)
				o = "?";
			for (rl::memory_order m : {rl::mo_relaxed, rl::mo_consume,
						   rl::mo_acquire, rl::mo_release,
						   rl::mo_acq_rel, rl::mo_seq_cst})
				if (o == lfpm_order_name(m)) {
					mo = m;
					known = true;
				}
			fn(line, last, name, kinds[k], known, mo, written);
		}
	}
}

/*
 * The lines of unit ("path" under the source tree, or "path:function")
 * where an atomic call names an order that is not relaxed: the census
 * must have reached each.
 */
static int lfpm_unreached(const char *unit)
{
	std::string u = unit, func;
	size_t colon = u.find(':');

	if (colon != std::string::npos) {
		func = u.substr(colon + 1);
		u = u.substr(0, colon);
	}
	std::string t = lfpm_source(std::string(LFPM_SRCDIR) + "/" + u);
	size_t from, to;
	int missing = 0;

	lfpm_body(t, func, &from, &to);
	lfpm_scan(t, from, to, [&](int line, int, const std::string &name,
				   int kind, bool known, rl::memory_order mo,
				   const std::string &written) {
		if (kind < 0) {
			printf("%s:%d: %s: a call the check cannot read\n",
			       u.c_str(), line, name.c_str());
			missing++;
			return;
		}
		if (!known) {
			/* An order through a macro or a variable: the scan
			 * cannot tell whether it is relaxed. */
			printf("%s:%d: %s: an order the check cannot read "
			       "(%s)\n", u.c_str(), line, name.c_str(),
			       written.c_str());
			missing++;
			return;
		}
		if (mo == rl::mo_relaxed)
			return;
		bool found = false;
		for (size_t n = 0; n < lfpm_nsites && !found; n++) {
			const lfpm_site &st = lfpm_sites[n];
			const std::string f = st.file;
			found = st.line == line && st.kind == kind &&
				st.order == mo && f.size() >= u.size() &&
				f.compare(f.size() - u.size(), u.size(), u) == 0;
		}
		if (!found) {
			printf("%s:%d: %s: an order no test reaches\n",
			       u.c_str(), line, name.c_str());
			missing++;
		}
	});
	return missing;
}

/*
 * The census of the whole tree (--tree, given every check's units): each
 * order that is not relaxed in src/ and include/ must be in a unit of
 * some check, which weakens it, or carry the words LFPM_UNCHECKED and
 * why in the comment just above its statement. Counted too, as orders
 * the scan cannot read: C11's calls without _explicit (seq_cst), the
 * compiler's __atomic_ and __sync_ builtins and __ATOMIC_ orders (but
 * lfpool/hot.h's definitions of its LFPI_H_ calls, which the scan reads
 * where they are used), a macro that takes an order as a word (but
 * LFPI_H_LOAD, _STORE and _CAS), and C++'s orders (std::atomic in the
 * C++ headers). atomic_signal_fence orders a thread only against its
 * own signal handler, not against another thread: none of its orders
 * count. Operators on an _Atomic object (++, =) are seq_cst accesses the
 * census does not see: the style has every access spelled _explicit.
 * Returns the orders that are neither checked nor said unchecked.
 */
#define LFPM_UNCHECKED "Unchecked on the C11 model:"

/* The comment just above line (1-based) of raw, its lines joined: above
 * the statement the line belongs to (up to three lines of it above). */
static std::string lfpm_comment_above(const std::vector<std::string> &raw,
				      int line)
{
	auto trim = [](const std::string &l) {
		size_t b = l.find_first_not_of(" \t");
		size_t e = l.find_last_not_of(" \t");
		return b == std::string::npos ? std::string()
					       : l.substr(b, e - b + 1);
	};
	auto in_comment = [&](const std::string &t) {
		return !t.compare(0, 2, "/*") || !t.compare(0, 1, "*") ||
		       !t.compare(0, 2, "//") ||
		       (t.size() >= 2 && !t.compare(t.size() - 2, 2, "*/"));
	};
	int l = line - 1;
	for (int k = 0; k < 3 && l >= 1; k++, l--) {
		std::string t = trim(raw[(size_t)l - 1]);
		if (t.empty() || in_comment(t) || t.back() == ';' ||
		    t.back() == '{' || t.back() == '}')
			break;
	}
	std::string text;
	for (; l >= 1; l--) {
		std::string t = trim(raw[(size_t)l - 1]);
		if (t.empty() || !in_comment(t))
			break;
		text = t + " " + text;
	}
	/* The comment's own marks out, its words one space apart. */
	std::string words;
	for (size_t k = 0; k < text.size(); k++) {
		char ch = text[k];
		if ((ch == '/' && k + 1 < text.size() &&
		     (text[k + 1] == '*' || text[k + 1] == '/')) ||
		    (ch == '*' && k + 1 < text.size() && text[k + 1] == '/')) {
			k++;
			ch = ' ';
		} else if (ch == '*' && (k == 0 || text[k - 1] == ' ')) {
			ch = ' ';
		}
		if (isspace((unsigned char)ch)) {
			if (!words.empty() && words.back() != ' ')
				words += ' ';
		} else {
			words += ch;
		}
	}
	return words;
}

static int lfpm_tree(int nunits, char **units)
{
	namespace fs = std::filesystem;
	std::vector<std::string> files;
	int total = 0, checked = 0, unchecked = 0, bare = 0;

	for (const auto &e : fs::recursive_directory_iterator(
		     fs::path(LFPM_SRCDIR) / "src"))
		files.push_back(
			fs::relative(e.path(), LFPM_SRCDIR).generic_string());
	for (const auto &e : fs::recursive_directory_iterator(
		     fs::path(LFPM_SRCDIR) / "include"))
		files.push_back(
			fs::relative(e.path(), LFPM_SRCDIR).generic_string());
	files.erase(std::remove_if(files.begin(), files.end(),
				   [](const std::string &f) {
					   std::string x =
						   fs::path(f).extension().string();
					   return x != ".c" && x != ".h" &&
						  x != ".hpp";
				   }),
		    files.end());
	std::sort(files.begin(), files.end());
	for (const std::string &f : files) {
		std::string path = std::string(LFPM_SRCDIR) + "/" + f;
		std::string t = lfpm_source(path);
		std::ifstream in(path);
		std::vector<std::string> raw;
		std::vector<std::pair<int, int>> bodies; /* lines, inclusive */
		std::vector<int> lines; /* the lines of the scan's calls */
		bool whole = false;

		for (std::string l; std::getline(in, l);)
			raw.push_back(l);
		for (int u = 0; u < nunits; u++) {
			std::string unit = units[u], func;
			size_t colon = unit.find(':');

			if (colon != std::string::npos) {
				func = unit.substr(colon + 1);
				unit = unit.substr(0, colon);
			}
			if (unit != f)
				continue;
			if (func.empty()) {
				whole = true;
				continue;
			}
			size_t b, e;
			lfpm_body(t, func, &b, &e);
			bodies.emplace_back(
				1 + (int)std::count(t.begin(), t.begin() + (long)b,
						    '\n'),
				1 + (int)std::count(t.begin(), t.begin() + (long)e,
						    '\n'));
		}
		auto line_of = [&](size_t i) {
			return 1 + (int)std::count(t.begin(), t.begin() + (long)i,
						   '\n');
		};
		/* The text of the logical line (a macro's continued lines
		 * joined) that holds offset i. */
		auto logical = [&](size_t i) {
			size_t b = i, e = i;
			while (b > 0 && !(t[b - 1] == '\n' &&
					  (b < 2 || t[b - 2] != '\\')))
				b--;
			while (e < t.size() &&
			       !(t[e] == '\n' && (e == 0 || t[e - 1] != '\\')))
				e++;
			return t.substr(b, e - b);
		};
		auto place = [&](int line, const std::string &what) {
			bool in = whole;

			for (const auto &b : bodies)
				in |= line >= b.first && line <= b.second;
			total++;
			if (in) {
				checked++;
				return;
			}
			if (lfpm_comment_above(raw, line).find(LFPM_UNCHECKED) !=
			    std::string::npos) {
				printf("tree: %s:%d: %s: unchecked, and says "
				       "why\n", f.c_str(), line, what.c_str());
				unchecked++;
				return;
			}
			printf("tree: %s:%d: %s: IN NO CHECK'S UNITS, and no "
			       "comment just above says why (\"%s\")\n",
			       f.c_str(), line, what.c_str(), LFPM_UNCHECKED);
			bare++;
		};
		lfpm_scan(t, 0, t.size(), [&](int line, int last,
					      const std::string &name,
					      int kind, bool known,
					      rl::memory_order mo,
					      const std::string &written) {
			for (int l = line; l <= last; l++)
				lines.push_back(l);
			/* A macro's parameter: its uses are scanned. */
			if (written.find("##") != std::string::npos)
				return;
			if (kind >= 0 && known && mo == rl::mo_relaxed)
				return;
			place(line, name + " " +
					    (known ? lfpm_order_name(mo)
						   : "(an order the scan "
						     "cannot read)"));
		});
		/* What the scan does not read, token by token. */
		for (size_t i = 0; i < t.size(); i++) {
			if (i && (isalnum((unsigned char)t[i - 1]) ||
				  t[i - 1] == '_'))
				continue;
			size_t e = i;
			while (e < t.size() &&
			       (isalnum((unsigned char)t[e]) || t[e] == '_'))
				e++;
			if (e == i)
				continue;
			std::string w = t.substr(i, e - i);
			int line = line_of(i);
			std::string ll = logical(i);
			bool hot_call = ll.find("#define LFPI_H_LOAD") !=
						std::string::npos ||
					ll.find("#define LFPI_H_STORE") !=
						std::string::npos ||
					ll.find("#define LFPI_H_CAS") !=
						std::string::npos ||
					ll.find("#define LFPI_H_MO_") !=
						std::string::npos;
			bool signal = ll.find("signal_fence") != std::string::npos;
			std::string what;

			if (!w.compare(0, 13, "memory_order_")) {
				std::string o = w.substr(13);
				if (t.compare(e, 2, "##") == 0)
					what = hot_call ? "" : "a macro that takes "
							       "an order";
				else if (!o.empty() && o != "relaxed" && !signal &&
					 !std::count(lines.begin(), lines.end(),
						     line))
					what = w;
			} else if (!w.compare(0, 7, "atomic_") &&
				   w.find("_explicit") == std::string::npos &&
				   w != "atomic_init" && w != "atomic_thread_fence" &&
				   w != "atomic_signal_fence" &&
				   w != "atomic_is_lock_free" &&
				   t.find_first_not_of(" \t\n", e) != std::string::npos &&
				   t[t.find_first_not_of(" \t\n", e)] == '(' &&
				   (w.find("load") != std::string::npos ||
				    w.find("store") != std::string::npos ||
				    w.find("exchange") != std::string::npos ||
				    w.find("fetch_") != std::string::npos ||
				    w.find("flag_") != std::string::npos)) {
				what = w + " (seq_cst, no order written)";
			} else if ((!w.compare(0, 9, "__atomic_") ||
				    !w.compare(0, 9, "__ATOMIC_")) &&
				   !hot_call && !signal && w != "__ATOMIC_RELAXED") {
				what = w;
			} else if (!w.compare(0, 7, "__sync_")) {
				what = w;
			} else if (w == "memory_order" &&
				   t.compare(e, 2, "::") == 0) {
				what = "memory_order::";
			}
			if (!what.empty())
				place(line, what);
			i = e - 1;
		}
	}
	printf("tree: %d orders not relaxed in src/ and include/: %d in the "
	       "checks' units, %d unchecked with the reason said, %d "
	       "neither\n", total, checked, unchecked, bare);
	return bare ? 1 : 0;
}

/* Whether site s is in one of the units (a file, or a file's function):
 * only those are weakened; the others belong to other checks. */
static bool lfpm_in_units(const lfpm_site &s, const char *const *units,
			  size_t nunits)
{
	std::string f = s.file;

	for (size_t i = 0; i < nunits; i++) {
		std::string u = units[i], func;
		size_t colon = u.find(':');

		if (colon != std::string::npos) {
			func = u.substr(colon + 1);
			u = u.substr(0, colon);
		}
		if (f.size() >= u.size() &&
		    f.compare(f.size() - u.size(), u.size(), u) == 0 &&
		    (f.size() == u.size() || f[f.size() - u.size() - 1] == '/') &&
		    (func.empty() || func == s.func))
			return true;
	}
	return false;
}

static const char *lfpm_search_name(bool bound)
{
	return bound ? "bounded" : "random";
}

// A fault built into the check, off unless --expect-fail turns it on:
// the unit's LFPI_FAULT_* macro is defined as *on.
struct lfpm_fault {
	const char *name;
	bool *on;
};

// The tests as written, in both searches, recording the census; the
// number that fail (up to the first, with stop_at_fail).
static int lfpm_as_written(const char *unit, const lfpm_test *tests,
			   size_t ntests, const lfpm_search &search,
			   bool print_failure, bool stop_at_fail)
{
	int failed = 0;

	lfpm_census = true;
	for (size_t i = 0; i < ntests && !(stop_at_fail && failed); i++) {
		for (bool bound : {true, false}) {
			const lfpm_test &t = tests[i];

			if (bound && t.random_only)
				continue;
			auto t0 = std::chrono::steady_clock::now();
			rl::ostringstream out;
			rl::test_result_e r;
			unsigned long done = 0;
			bool ok = lfpm_simulate(t, search, bound, out, &r, &done);

			printf("%s: %s as written, %s search: %s, %lu "
			       "executions, %.2f s\n", unit, t.name,
			       lfpm_search_name(bound),
			       ok ? "passed" : rl::test_result_str(r), done,
			       lfpm_seconds_since(t0));
			if (!ok) {
				if (print_failure)
					fputs(out.str().c_str(), stdout);
				failed++;
				if (stop_at_fail)
					break;
			}
		}
	}
	lfpm_census = false;
	return failed;
}

static int lfpm_main(int argc, char **argv, const char *unit,
		     const char *const *units, size_t nunits,
		     const lfpm_test *tests, size_t ntests,
		     const lfpm_kept *kept, size_t nkept,
		     const lfpm_fault *faults, size_t nfaults)
{
	lfpm_search search = {1, 0};
	bool verbose = false, expect_fail = false;
	const lfpm_fault *only = nullptr;
	int failed = 0;
	auto start = std::chrono::steady_clock::now();

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--units") && argc == 2) {
			for (size_t u = 0; u < nunits; u++)
				printf("%s\n", units[u]);
			return 0;
		}
		if (!strcmp(argv[i], "--tree") && i == 1)
			return lfpm_tree(argc - 2, argv + 2);
		if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
			search.iterations = strtoul(argv[++i], nullptr, 10);
		else if (!strcmp(argv[i], "--bound") && i + 1 < argc)
			search.bound = (unsigned)strtoul(argv[++i], nullptr, 10);
		else if (!strcmp(argv[i], "--verbose"))
			verbose = true;
		else if (!strcmp(argv[i], "--expect-fail"))
			expect_fail = true;
		else if (!strcmp(argv[i], "--fault") && i + 1 < argc) {
			const char *name = argv[++i];

			for (size_t f = 0; f < nfaults && !only; f++)
				if (!strcmp(faults[f].name, name))
					only = &faults[f];
			if (!only) {
				fprintf(stderr, "%s: no fault %s in this build\n",
					argv[0], name);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: %s [--bound B] [--iterations N] "
				"[--verbose] [--expect-fail] [--fault NAME]\n"
				"       %s --units\n"
				"       %s --tree UNIT...\n",
				argv[0], argv[0], argv[0]);
			return 2;
		}
	}
	if (only && !expect_fail) {
		fprintf(stderr, "%s: --fault turns a fault on only with "
			"--expect-fail\n", argv[0]);
		return 2;
	}
	if (expect_fail && !nfaults) {
		printf("%s: no faults built in, nothing to turn on\n", unit);
		return 0;
	}
	if (expect_fail) {
		// Each fault alone must make some test fail as written.
		for (size_t f = 0; f < nfaults; f++) {
			if (only && only != &faults[f])
				continue;
			*faults[f].on = true;
			int n = lfpm_as_written(unit, tests, ntests, search,
						verbose, true);
			*faults[f].on = false;
			printf("%s: with %s, %s\n", unit,
			       faults[f].name,
			       n ? "and the tests catch it" : "BUT NO TEST FAILS");
			failed += !n;
		}
		return failed ? 1 : 0;
	}

	/* The tests as written, in both searches, recording the census. */
	failed = lfpm_as_written(unit, tests, ntests, search, true, false);
	if (failed)
		return 1;
	for (size_t u = 0; u < nunits; u++)
		failed += lfpm_unreached(units[u]);

	/* Each order one step weaker, alone, until a test fails: a quarter of
	 * every test's random search first (the first executions of the
	 * random search proper: most variants fail there, where a bounded
	 * search of some tests takes seconds), then the bounded search of
	 * every test, then the random one. */
	const lfpm_site *sites = lfpm_sites;
	size_t variants = 0, caught = 0, later = 0;

	for (size_t s = 0; s < lfpm_nsites; s++) {
		if (!lfpm_in_units(sites[s], units, nunits))
			continue;
		for (rl::memory_order to : lfpm_weaker(sites[s].order,
						       sites[s].kind)) {
			const lfpm_site &site = sites[s];
			const lfpm_kept *k = lfpm_find_kept(kept, nkept, site, to);

			if (k && k->later) {
				printf("%s: %s %s %s %s:%d %s -> %s: not "
				       "checked yet: %s\n", unit, site.func,
				       lfpm_kind_name(site.kind), site.what,
				       site.file, site.line,
				       lfpm_order_name(site.order),
				       lfpm_order_name(to), k->why);
				later++;
				continue;
			}
			auto t0 = std::chrono::steady_clock::now();
			const char *by = nullptr;
			bool by_bound = false;
			rl::test_result_e r = rl::test_result_success;
			rl::ostringstream out;

			variants++;
			lfpm_weak_site = (int)s;
			lfpm_weak_order = to;
			for (int phase = 0; phase < 3; phase++)
				for (size_t i = 0; i < ntests && !by; i++) {
					rl::ostringstream o;
					bool bound = phase == 1;
					lfpm_search first = search;

					if (bound && tests[i].random_only)
						continue;
					if (phase == 0)
						first.iterations = std::max(
							1ul, (search.iterations
								      ? search.iterations
								      : tests[i].iterations) /
								     4);
					if (!lfpm_simulate(tests[i],
							   phase ? search : first,
							   bound, o, &r)) {
						by = tests[i].name;
						by_bound = bound;
						out << o.str();
					}
				}
			lfpm_weak_site = -1;
			printf("%s: %s %s %s %s:%d %s -> %s: ", unit,
			       site.func, lfpm_kind_name(site.kind), site.what,
			       site.file, site.line,
			       lfpm_order_name(site.order),
			       lfpm_order_name(to));
			if (by) {
				caught++;
				printf("caught by %s, %s search (%s), %.2f s%s\n",
				       by, lfpm_search_name(by_bound),
				       rl::test_result_str(r),
				       lfpm_seconds_since(t0),
				       k ? "; but it is listed as kept without a check" : "");
				if (verbose)
					fputs(out.str().c_str(), stdout);
				if (k)
					failed++;
			} else if (k) {
				printf("not caught, kept: %s\n", k->why);
			} else {
				printf("NOT CAUGHT (%.2f s)\n", lfpm_seconds_since(t0));
				failed++;
			}
		}
	}
	/* A kept order that matches no variant is a stale entry. */
	for (size_t i = 0; i < nkept; i++) {
		bool used = false;

		for (size_t s = 0; s < lfpm_nsites && !used; s++) {
			if (!lfpm_in_units(sites[s], units, nunits))
				continue;
			for (rl::memory_order to : lfpm_weaker(sites[s].order,
							       sites[s].kind))
				used |= lfpm_find_kept(&kept[i], 1, sites[s],
						       to) != nullptr;
		}
		if (!used) {
			printf("%s: kept order %s %s %s -> %s matches no order\n",
			       unit, kept[i].func, lfpm_kind_name(kept[i].kind),
			       kept[i].from, kept[i].to);
			failed++;
		}
	}
	printf("%s: %zu orders reached, %zu variants, %zu caught, %zu not "
	       "checked yet, %d failures, %.1f s\n", unit, lfpm_nsites,
	       variants, caught, later, failed, lfpm_seconds_since(start));
	return failed ? 1 : 0;
}

#endif /* LFPM_CHECK_HPP */
