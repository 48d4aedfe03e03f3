/* SPDX-License-Identifier: MIT */
/*
 * When running out is allowed. Normally an allocation may come back empty
 * whenever the pool is busy: slots sit in other threads' caches, or in
 * the hands of a thread preempted inside a call, and the harness cannot
 * tell that from a pool that lost them. Some runs are sized so that it
 * can: if the threads can hold and park fewer slots than the pool has,
 * the shared free list is never empty but while lfp_trim has it aside,
 * and then an allocation must wait for it. In such runs (trim, and
 * LFP_EXHAUST_ABORT) every failed allocation, every growth and every
 * abort is a violation.
 *
 * Calls only leaves: bound.c, check.c and mode.c. The modes mark their
 * pool calls here (stress_call_enter) and report running dry.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bound.h"
#include "check.h"
#include "exhaust.h"
#include "mode.h"
#include "run.h"

/*
 * The pool call this thread is in, if any, for the signal handlers: the
 * abort handler below, and the nap of idle rounds (idle.c).
 */
static _Thread_local const char *exhaust_in;
static _Thread_local bool exhaust_in_alloc;

void stress_call_enter(const char *op, bool alloc)
{
	exhaust_in_alloc = alloc;
	/* Compiler-only: a handler in this thread sees the call marked
	 * before the call begins. */
	atomic_signal_fence(memory_order_seq_cst);
	exhaust_in = op;
	atomic_signal_fence(memory_order_seq_cst);
}

void stress_call_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	exhaust_in = NULL;
}

bool stress_in_call(void)
{
	return exhaust_in != NULL;
}

/*
 * LFP_EXHAUST_ABORT: the pool prints its stats and calls abort(). If that
 * happens inside one of our allocation calls, say so as a violation; any
 * other abort is left alone. Only async-signal-safe calls from here on.
 */
static struct stress_run *exhaust_run;
/* The drain under way in this thread, if it is the drainer's. */
static _Thread_local const struct stress_drain_note *exhaust_drain;

/*
 * The report is put together here and written with one write(): other
 * threads may abort at the same moment, and a report written piece by
 * piece would come out cut by theirs. A longer one is cut short.
 */
static _Thread_local char exhaust_line[1024];
static _Thread_local size_t exhaust_len;

static void exhaust_put(const char *s)
{
	size_t n = strlen(s), room = sizeof(exhaust_line) - exhaust_len;

	if (n > room)
		n = room;
	memcpy(exhaust_line + exhaust_len, s, n);
	exhaust_len += n;
}

static void exhaust_flush(void)
{
	ssize_t n = write(STDERR_FILENO, exhaust_line, exhaust_len);

	(void)n;
	exhaust_len = 0;
}

static void exhaust_put_u64(uint64_t v)
{
	char buf[24], *p = buf + sizeof(buf) - 1;

	*p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	exhaust_put(p);
}

void stress_alloc_drain(const struct stress_drain_note *n)
{
	exhaust_drain = n;
}

static void exhaust_put_drain(const struct stress_drain_note *n)
{
	exhaust_put("in idle round ");
	exhaust_put_u64(n->round);
	exhaust_put(" after the drainer took ");
	exhaust_put_u64(n->got);
	exhaust_put(" of the ");
	exhaust_put_u64(n->expect);
	exhaust_put(" slots that were free (capacity ");
	exhaust_put_u64(n->capacity);
	exhaust_put(", ");
	exhaust_put_u64(n->held);
	exhaust_put(" held by the parked workers)");
}

static void exhaust_on_abort(int sig)
{
	struct stress_run *r = exhaust_run;

	if (!exhaust_in || !exhaust_in_alloc || !r) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	exhaust_put("lfpool-stress: VIOLATION: ");
	exhaust_put(exhaust_in);
	exhaust_put(" aborted (LFP_EXHAUST_ABORT: the pool found itself "
		    "exhausted, unless it said otherwise above) ");
	if (exhaust_drain) {
		exhaust_put_drain(exhaust_drain);
	} else {
		exhaust_put("though it cannot run dry: its threads hold and "
			    "park at most ");
		exhaust_put_u64(r->bound);
		exhaust_put(" of its ");
		exhaust_put_u64(r->o->capacity);
		exhaust_put(" slots, so at least ");
		exhaust_put_u64(r->o->capacity - r->bound);
		exhaust_put(" were free");
	}
	exhaust_put("\nlfpool-stress: FAIL\n");
	exhaust_flush();
	_exit(1);
}

void stress_exhaust_setup(struct stress_run *r)
{
	struct sigaction sa;

	r->never_dry = stress_mode_enabled(r->o, STRESS_TRIM) ||
		       r->o->exhaust == LFP_EXHAUST_ABORT;
	r->bound = stress_bound(r->o);
	if (r->o->exhaust != LFP_EXHAUST_ABORT)
		return;
	exhaust_run = r;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = exhaust_on_abort;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGABRT, &sa, NULL);
}

/*
 * An allocation call of a worker came back with got of the want objects
 * it asked for. Allowed, unless the pool cannot run dry.
 */
void stress_dry(struct stress_life *l, const char *op, uint32_t want,
		uint32_t got)
{
	struct stress_run *r = l->run;
	struct lfp_stats s;

	if (!r->never_dry)
		return;
	lfp_stats(r->pool, &s);
	stress_violation(r, "%s gave thread %u %u of the %u objects it asked "
			 "for, though the pool cannot run dry: its threads "
			 "hold and park at most %" PRIu64 " of its %" PRIu32
			 " slots, so at least %" PRIu64 " were free, "
			 "expected %u, got %u (lfp_stats now: free %" PRIu64
			 ", cached %" PRIu64 ", live %" PRIu64 ", failed "
			 "allocs %" PRIu64 ")", op, l->tid, got, want, r->bound,
			 r->o->capacity, r->o->capacity - r->bound, want, got,
			 s.free, s.cached, s.live, s.failed_allocs);
}

/* With LFP_EXHAUST_GROW, a pool that cannot run dry must never grow. */
void stress_check_growth(struct stress_run *r, const char *when)
{
	struct lfp_stats s;

	if (!r->never_dry || r->o->exhaust != LFP_EXHAUST_GROW)
		return;
	lfp_stats(r->pool, &s);
	if (!s.grown && s.capacity == r->o->capacity)
		return;
	stress_violation(r, "the pool grew (LFP_EXHAUST_GROW) %s, from %" PRIu32
			 " to %" PRIu64 " slots in %" PRIu64 " steps, though "
			 "it cannot run dry: its threads hold and park at "
			 "most %" PRIu64 " slots, so at least %" PRIu64
			 " were free (lfp_stats now: free %" PRIu64
			 ", cached %" PRIu64 ", live %" PRIu64 ")", when,
			 r->o->capacity, s.capacity, s.grown, r->bound,
			 r->o->capacity - r->bound, s.free, s.cached, s.live);
}
