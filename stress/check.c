/* SPDX-License-Identifier: MIT */
/*
 * The invariants: one owner word per slot, a pattern in every live object,
 * and the final census.
 *
 * Every owner word is accessed with relaxed atomics, on purpose: the
 * harness must add no ordering of its own between the threads that hold a
 * slot one after the other, so that the objects' bytes are ordered by the
 * pool alone and ThreadSanitizer sees any release or acquire the pool
 * forgot. The words stay exact all the same: a compare-and-swap always
 * reads the latest value of its word.
 *
 * A leaf: calls nothing else in the harness, and every other file
 * reports its violations here.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "run.h"

#define CHECK_LIVE UINT32_C(0x4556494c) /* "LIVE" */
#define CHECK_DEAD UINT32_C(0x44414544) /* "DEAD" */
#define CHECK_CTOR UINT32_C(0x524f5443) /* "CTOR" */
#define CHECK_PRINTED 8                 /* violations printed at most */

bool stress_violation(struct stress_run *r, const char *fmt, ...)
{
	char buf[STRESS_MSG];
	unsigned n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* Relaxed: only counts; the message is published by have_msg. */
	n = atomic_fetch_add_explicit(&r->violations, 1, memory_order_relaxed);
	if (n < CHECK_PRINTED)
		fprintf(stderr, "lfpool-stress: VIOLATION: %s\n", buf);
	if (n == 0) {
		memcpy(r->violation, buf, sizeof(buf));
		/* Release: publishes violation[]; pairs with the acquire load
		 * in stress_report. */
		atomic_store_explicit(&r->have_msg, true, memory_order_release);
	}
	atomic_store_explicit(&r->stop, STRESS_ABORT, memory_order_relaxed);
	return false;
}

/* The word at position i (past the header) of a pattern. */
uint64_t stress_fill(const struct stress_mark *m, size_t i)
{
	uint64_t x = m->seq ^ (uint64_t)m->tid << 40 ^ (uint64_t)m->slot << 8;

	x += (i + 1) * UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ x >> 30) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ x >> 27) * UINT64_C(0x94d049bb133111eb);
	return x ^ x >> 31;
}

/* With --hooks, a slot's first handout carries the ctor's mark. */
static bool check_first(struct stress_run *r, uint32_t tid, void *obj,
			uint32_t idx, const char *op)
{
	uint32_t magic;

	/* Relaxed: the owner word already made this thread the only one. */
	if (!r->o->hooks || atomic_exchange_explicit(&r->touched[idx], 1,
						     memory_order_relaxed))
		return true;
	memcpy(&magic, obj, sizeof(magic));
	if (magic == CHECK_CTOR)
		return true;
	return stress_violation(r, "slot %u: its first handout, by %s to "
				"thread %u, does not carry the ctor's mark "
				"(%#" PRIx32 ")", idx, op, tid, magic);
}

bool stress_claim(struct stress_run *r, uint32_t tid, void *obj,
		  const char *op, uint32_t *slot)
{
	uint32_t idx = lfp_index_of(r->pool, obj), prev = 0;

	if (idx == LFP_NO_INDEX || lfp_at(r->pool, idx) != obj)
		return stress_violation(r, "%s gave thread %u the pointer %p, "
					"which is not an object of the pool",
					op, tid, obj);
	/* Relaxed: see the top of this file. */
	if (!atomic_compare_exchange_strong_explicit(&r->owner[idx], &prev, tid,
						     memory_order_relaxed,
						     memory_order_relaxed))
		return stress_violation(r, "slot %u live twice: %s gave it to "
					"thread %u while thread %u holds it",
					idx, op, tid, prev);
	*slot = idx;
	return check_first(r, tid, obj, idx, op);
}

bool stress_take_over(struct stress_run *r, const struct stress_parcel *p,
		      uint32_t tid)
{
	uint32_t prev = p->from;

	/* Relaxed: see the top of this file. */
	if (!atomic_compare_exchange_strong_explicit(
		    &r->owner[p->h.mark.slot], &prev, tid, memory_order_relaxed,
		    memory_order_relaxed))
		return stress_violation(r, "slot %u: thread %u received it from "
					"thread %u (handoff), but its owner "
					"word says thread %u",
					p->h.mark.slot, tid, p->from, prev);
	return stress_verify(r, &p->h, tid, "handoff");
}

void stress_stamp(struct stress_run *r, void *obj, const struct stress_mark *m)
{
	struct stress_hdr h = { CHECK_LIVE, m->tid, m->slot, m->gen, m->seq };
	char *p = obj;

	memcpy(p, &h, sizeof(h));
	for (size_t i = 0; sizeof(h) + 8 * i < r->o->obj_size; i++) {
		uint64_t w = stress_fill(m, i);

		memcpy(p + sizeof(h) + 8 * i, &w, 8);
	}
}

/* Claim and stamp an object for a thread that is not a worker (the
 * drainer, the first touch of trim): h then holds what to verify. */
bool stress_own(struct stress_run *r, uint32_t tid, void *obj, uint64_t seq,
		const char *op, struct stress_held *h)
{
	uint32_t slot;

	if (!stress_claim(r, tid, obj, op, &slot))
		return false;
	*h = (struct stress_held){ obj, { tid, slot, 0, seq }, LFP_NULL_HANDLE,
				   false };
	stress_stamp(r, obj, &h->mark);
	return true;
}

/* Name the first difference between an object and its expected pattern. */
static bool check_differs(struct stress_run *r, const struct stress_held *e,
			  uint32_t holder, const char *op, size_t off)
{
	struct stress_hdr h;

	memcpy(&h, e->obj, sizeof(h));
	return stress_violation(
		r, "slot %u: bytes changed while thread %u held it, found at "
		"%s: first difference at byte %zu; the header says magic "
		"%#" PRIx32 ", thread %u, slot %u, generation %u, seq %" PRIu64
		"; expected thread %u, slot %u, generation %u, seq %" PRIu64,
		e->mark.slot, holder, op, off, h.magic, h.tid, h.slot, h.gen,
		h.seq, e->mark.tid, e->mark.slot, e->mark.gen, e->mark.seq);
}

bool stress_verify(struct stress_run *r, const struct stress_held *e,
		   uint32_t holder, const char *op)
{
	const struct stress_mark *m = &e->mark;
	struct stress_hdr h, want = { CHECK_LIVE, m->tid, m->slot, m->gen,
				     m->seq };
	const char *p = e->obj;

	memcpy(&h, p, sizeof(h));
	if (memcmp(&h, &want, sizeof(h)))
		return check_differs(r, e, holder, op, 0);
	for (size_t i = 0; sizeof(h) + 8 * i < r->o->obj_size; i++) {
		uint64_t w;

		memcpy(&w, p + sizeof(h) + 8 * i, 8);
		if (w != stress_fill(m, i))
			return check_differs(r, e, holder, op,
					     sizeof(h) + 8 * i);
	}
	return true;
}

bool stress_unclaim(struct stress_run *r, const struct stress_held *e,
		    uint32_t holder, const char *op)
{
	uint32_t prev = holder, dead = CHECK_DEAD;

	if (!stress_verify(r, e, holder, op))
		return false;
	/* Spoil the pattern while we still own the object. */
	memcpy(e->obj, &dead, sizeof(dead));
	/* Relaxed: see the top of this file. */
	if (!atomic_compare_exchange_strong_explicit(
		    &r->owner[e->mark.slot], &prev, 0, memory_order_relaxed,
		    memory_order_relaxed))
		return stress_violation(r, "slot %u: thread %u is about to "
					"release it with %s, but its owner "
					"word says thread %u",
					e->mark.slot, holder, op, prev);
	return true;
}

/* After the run: every owner word is back to 0. */
static int check_owners(struct stress_run *r)
{
	for (uint32_t i = 0; i < r->slots; i++) {
		uint32_t tid = atomic_load_explicit(&r->owner[i],
						    memory_order_relaxed);

		if (tid) {
			stress_violation(r, "slot %u is still held by thread "
					 "%u after every thread released "
					 "everything", i, tid);
			return -1;
		}
	}
	return 0;
}

/* The pool's counters against each other and against the harness's. */
static int check_stats(struct stress_run *r, const struct stress_tally *t)
{
	/* A bare pool's inline lfp_alloc and lfp_free count nothing: its
	 * allocs and frees are those that went out of line or through a
	 * cache, and its live is the slots on no list (lfpool.h). */
	bool bare = r->pool->hot.bare;
	struct lfp_stats s;

	lfp_stats(r->pool, &s);
	if (s.free + s.cached + s.live + s.deferred != s.capacity ||
	    s.capacity < r->o->capacity || s.capacity > r->slots ||
	    (!bare && s.allocs != s.frees + s.live))
		goto bad;
	if (s.live || s.cached || s.deferred ||
	    s.rejected_frees != t->refused)
		goto bad;
	if (bare ? s.allocs > t->allocs || s.frees > t->frees :
		   s.allocs != t->allocs || s.frees != t->frees)
		goto bad;
	return 0;
bad:
	stress_violation(
		r, "at the end, with every thread joined and every cache "
		"gone, the pool's stats disagree: capacity %" PRIu64
		", free %" PRIu64 ", cached %" PRIu64 ", live %" PRIu64
		", deferred %" PRIu64 ", allocs %" PRIu64 " (harness %" PRIu64
		"), frees %" PRIu64 " (harness %" PRIu64 "), rejected frees %"
		PRIu64 " (harness %" PRIu64 ")",
		s.capacity, s.free, s.cached, s.live, s.deferred, s.allocs,
		t->allocs,
		s.frees, t->frees, s.rejected_frees, t->refused);
	return -1;
}

/*
 * The pool's hooks (--hooks): each must run exactly once per event, in the
 * thread of the call, on the right object. Counts go to the calling life's
 * tally; a hook outside any life (say, in a thread's exit) is a stray.
 */
static _Thread_local struct stress_tally *check_hook_tally;

void stress_hooks_bind(struct stress_tally *t)
{
	check_hook_tally = t;
}

static void check_hook_stray(struct stress_run *r)
{
	/* Relaxed: a count, read after every thread is joined. */
	atomic_fetch_add_explicit(&r->hook_strays, 1, memory_order_relaxed);
}

static void check_ctor(void *obj, void *arg)
{
	struct stress_run *r = arg;
	uint32_t magic = CHECK_CTOR;

	memcpy(obj, &magic, sizeof(magic));
	/* Relaxed: a count, read after every thread is joined. */
	atomic_fetch_add_explicit(&r->hook_ctors, 1, memory_order_relaxed);
}

static void check_on_alloc(void *obj, void *arg)
{
	(void)obj;
	if (check_hook_tally)
		check_hook_tally->hook_allocs++;
	else
		check_hook_stray(arg);
}

/* The object is still ours: it must carry the mark stress_unclaim left. */
static void check_on_free(void *obj, void *arg)
{
	struct stress_run *r = arg;
	uint32_t magic;

	memcpy(&magic, obj, sizeof(magic));
	if (magic != CHECK_DEAD)
		stress_violation(r, "on_free ran on slot %u, which does not "
				 "carry the mark of its release (%#" PRIx32
				 ")", lfp_index_of(r->pool, obj), magic);
	if (check_hook_tally)
		check_hook_tally->hook_frees++;
	else
		check_hook_stray(r);
}

void stress_hooks(struct stress_run *r, struct lfp_config *cfg)
{
	cfg->ctor = check_ctor;
	cfg->on_alloc = check_on_alloc;
	cfg->on_free = check_on_free;
	cfg->hook_arg = r;
}

static int check_hook_counts(struct stress_run *r, const struct stress_tally *t)
{
	/* Relaxed: every thread has been joined. */
	uint64_t ctors = atomic_load_explicit(&r->hook_ctors,
					      memory_order_relaxed);
	uint64_t strays = atomic_load_explicit(&r->hook_strays,
					       memory_order_relaxed);
	uint64_t used = 0;
	struct lfp_stats s;
	bool ctors_ok;

	if (!r->o->hooks)
		return 0;
	/* The ctor runs at a slot's first handout, and again after lfp_trim
	 * gave the slot's memory back. Relaxed: every thread is joined. */
	for (uint32_t i = 0; i < r->slots; i++)
		used += atomic_load_explicit(&r->touched[i], memory_order_relaxed);
	lfp_stats(r->pool, &s);
	ctors_ok = s.trimmed_bytes ? ctors >= used : ctors == used;
	if (t->hook_allocs == t->allocs && t->hook_frees == t->frees &&
	    !strays && ctors_ok)
		return 0;
	stress_violation(r, "hooks: on_alloc ran %" PRIu64 " times for %"
			 PRIu64 " allocations, on_free %" PRIu64 " times for %"
			 PRIu64 " releases, %" PRIu64 " ran outside any "
			 "call; ctor ran %" PRIu64 " times for %" PRIu64
			 " slots handed out (%" PRIu64 " bytes trimmed)",
			 t->hook_allocs, t->allocs, t->hook_frees, t->frees,
			 strays, ctors, used, s.trimmed_bytes);
	return -1;
}

int stress_final_checks(struct stress_run *r, const struct stress_tally *t)
{
	struct lfpi_census census;
	char msg[STRESS_MSG - 64] = "";
	int err;

	/* Every deferred release issued by the workers has come back. */
	lfp_barrier(r->pool);
	if (check_owners(r) || check_stats(r, t) || check_hook_counts(r, t))
		return -1;
	err = lfpi_audit(r->pool, &census, msg, sizeof(msg));
	if (err) {
		stress_violation(r, "audit of the pool at the end failed (%d): "
				 "%s", err, msg);
		return -1;
	}
	if (census.live || census.cached || census.deferred) {
		stress_violation(r, "audit: %" PRIu64 " slots live, %" PRIu64
				 " cached and %" PRIu64 " deferred at the end, "
				 "though every object was released and every "
				 "cache is gone",
				 census.live, census.cached, census.deferred);
		return -1;
	}
	return 0;
}
