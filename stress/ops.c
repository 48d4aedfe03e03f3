/* SPDX-License-Identifier: MIT */
/*
 * One operation of a worker's life: allocate or release an object, in the
 * way the mix picks (pool, cache, explicit, bulk, by handle, deferred),
 * hand it to another worker or take over what others sent, release a bad
 * pointer, probe with handles or read under RCU; and, between two of
 * them, park for an idle round. Every object goes through check.c's
 * checks on the way.
 *
 * Calls down only: idle.c (the step of idle rounds), handle.c, rcu.c,
 * exhaust.c (the call marks, running dry), life.c (the explicit cache,
 * the progress figures), and the leaves check.c and mode.c. The worker's
 * loop (worker.c) calls the stress_op_* functions.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "exhaust.h"
#include "handle.h"
#include "idle.h"
#include "life.h"
#include "mode.h"
#include "ops.h"
#include "rcu.h"
#include "run.h"

static enum stress_mode op_pick(struct stress_life *l, const unsigned *cum,
				unsigned total)
{
	unsigned x = stress_below(l, total);
	int m = 0;

	while (x >= cum[m])
		m++;
	return (enum stress_mode)m;
}

/* Make obj ours: claim its slot, take its handle, stamp it, keep it. */
static void op_hold(struct stress_life *l, void *obj, const char *op)
{
	struct stress_held *h = &l->w->held[l->n];
	uint32_t slot;

	if (!stress_claim(l->run, l->tid, obj, op, &slot))
		return;
	*h = (struct stress_held){ obj, { l->tid, slot, 0, ++l->seq },
				   LFP_NULL_HANDLE, false };
	if (l->handles && !stress_handle_take(l, h, op))
		return;
	stress_stamp(l->run, obj, &h->mark);
	if (l->handles)
		stress_handle_show(l, h);
	l->n++;
	l->t.allocs++;
}

/* The pool had nothing (or less than asked) for us: allowed, unless it
 * cannot run dry. */
static void op_empty(struct stress_life *l, const char *op, uint32_t want,
		     uint32_t got)
{
	stress_dry(l, op, want, got);
	l->t.exhausted++;
	l->target = l->n / 2; /* give some back before trying again */
	if (l->n)
		return;
	if (!l->rcu || !stress_rcu_wait(l))
		sched_yield(); /* let the threads that hold it all run */
}

static void op_alloc_bulk(struct stress_life *l)
{
#if STRESS_HAVE_CACHES
	void *objs[STRESS_MAX_BULK];
	uint32_t room = l->o->hold - l->n, want;
	size_t got;

	want = 1 + stress_below(l, room < STRESS_MAX_BULK ? room
							: STRESS_MAX_BULK);
	/* Through the thread's explicit cache half the time, where the
	 * mix has one. */
	if (stress_mode_enabled(l->o, STRESS_EXPLICIT) && stress_below(l, 2)) {
		struct lfp_cache *c = stress_life_cache(l);

		stress_call_enter("lfp_cache_alloc_bulk", true);
		got = c ? lfp_cache_alloc_bulk(c, objs, want) : 0;
	} else {
		stress_call_enter("lfp_alloc_bulk", true);
		got = lfp_alloc_bulk(l->run->pool, objs, want);
	}
	stress_call_leave();
	if (got > want) {
		stress_violation(l->run, "lfp_alloc_bulk in thread %u returned "
				 "%zu for %u objects", l->tid, got, want);
		return;
	}
	for (size_t i = 0; i < got; i++)
		op_hold(l, objs[i], "lfp_alloc_bulk");
	if (got < want)
		op_empty(l, "lfp_alloc_bulk", want, (uint32_t)got);
#else
	(void)l;
#endif
}

static void op_alloc(struct stress_life *l)
{
	struct stress_run *r = l->run;
	enum stress_mode m = op_pick(l, r->alloc_cum, r->alloc_total);
	const char *op = "lfp_alloc";
	void *obj;

	l->t.by_mode[m]++;
	if (m == STRESS_BULK)
		return op_alloc_bulk(l);
#if STRESS_HAVE_CACHES
	if (m == STRESS_EXPLICIT) {
		struct lfp_cache *c = stress_life_cache(l);

		op = "lfp_cache_alloc";
		stress_call_enter(op, true);
		obj = c ? lfp_cache_alloc(c) : NULL;
	} else
#endif
	{
		stress_call_enter(op, true);
		obj = lfp_alloc(r->pool);
	}
	stress_call_leave();
	if (obj)
		op_hold(l, obj, op);
	else
		op_empty(l, op, 1, 0);
}

/* Take a random held object out of the array. */
static struct stress_held op_take(struct stress_life *l)
{
	struct stress_held *held = l->w->held;
	uint32_t i = stress_below(l, l->n);
	struct stress_held h = held[i];

	/* While deferred releases fill their share of the pool, keep the
	 * objects RCU readers may see: they find them live, and the pool
	 * does not run dry. */
	for (int k = 0; k < 4 && h.rcu && !stress_rcu_room(l, 2); k++)
		h = held[i = stress_below(l, l->n)];
	held[i] = held[--l->n];
	return h;
}

/* The library calls that release one object. */
enum op_call {
	CALL_FREE,
	CALL_CACHE_FREE,
	CALL_BULK,
	CALL_HANDLE,
	CALL_CACHE_HANDLE,
	CALL_DEFERRED,
};

static const char *const op_call_name[] = {
	[CALL_FREE] = "lfp_free",
	[CALL_CACHE_FREE] = "lfp_cache_free",
	[CALL_BULK] = "lfp_free_bulk",
	[CALL_HANDLE] = "lfp_free_handle",
	[CALL_CACHE_HANDLE] = "lfp_cache_free_handle",
	[CALL_DEFERRED] = "lfp_free_deferred",
};

/*
 * The call that releases h in mode m. An object whose handle RCU readers
 * may have seen goes back only after a grace period, whatever m says:
 * a reader may be looking at it right now.
 */
static enum op_call op_call_for(struct stress_life *l, enum stress_mode m,
				const struct stress_held *h)
{
	if (h->rcu)
		return CALL_DEFERRED;
	switch (m) {
	case STRESS_EXPLICIT:
		return CALL_CACHE_FREE;
	case STRESS_BULK:
		return CALL_BULK;
	case STRESS_HANDLE:
		return stress_mode_enabled(l->o, STRESS_EXPLICIT) &&
				       stress_below(l, 2)
			       ? CALL_CACHE_HANDLE
			       : CALL_HANDLE;
	case STRESS_DEFERRED:
		if (!stress_rcu_room(l, 1))
			return CALL_FREE;
		stress_rcu_spend(l);
		return CALL_DEFERRED;
	default:
		return CALL_FREE;
	}
}

/* Make call c on h (whose handle is null, for a bad pointer). */
static int op_call_raw(struct stress_life *l, enum op_call c,
		       const struct stress_held *h)
{
	struct lfp_pool *pool = l->run->pool;
#if STRESS_HAVE_CACHES
	struct lfp_cache *cache;
#endif

	switch (c) {
#if STRESS_HAVE_CACHES
	case CALL_CACHE_FREE:
		cache = stress_life_cache(l);
		return cache ? lfp_cache_free(cache, h->obj) : -ENOMEM;
	case CALL_BULK:
		return lfp_free_bulk(pool, &h->obj, 1) == 1 ? 0 : -1;
#endif
	case CALL_HANDLE:
	case CALL_CACHE_HANDLE:
		return stress_handle_free(l, h->handle, c == CALL_CACHE_HANDLE);
	case CALL_DEFERRED:
		return lfp_free_deferred(pool, h->obj);
	default:
		return lfp_free(pool, h->obj);
	}
}

static int op_call(struct stress_life *l, enum op_call c,
		   const struct stress_held *h)
{
	int err;

	stress_call_enter(op_call_name[c], false);
	err = op_call_raw(l, c, h);
	stress_call_leave();
	return err;
}

/* Release one held object here, in mode m. */
static void op_free_one(struct stress_life *l, const struct stress_held *h,
			enum stress_mode m)
{
	enum op_call c = op_call_for(l, m, h);
	int err;

	if (!stress_unclaim(l->run, h, l->tid, op_call_name[c]))
		return;
	err = op_call(l, c, h);
	if (err) {
		stress_violation(l->run, "slot %u: %s by thread %u, which "
				 "held it, failed (%d)",
				 h->mark.slot, op_call_name[c], l->tid, err);
		return;
	}
	l->t.frees++;
	l->t.deferred += c == CALL_DEFERRED;
	if (l->handles)
		stress_handle_bury(l, h);
}

/* Release here, in a mode picked among those that do not hand off. */
static void op_free_here(struct stress_life *l, const struct stress_held *h)
{
	struct stress_run *r = l->run;

	op_free_one(l, h, op_pick(l, r->alloc_cum, r->alloc_total));
}

#if STRESS_HAVE_CACHES
/* lfp_free_bulk refused some of what we held: name them all, we cannot
 * tell which. */
static void op_bulk_short(struct stress_life *l, const struct stress_held *hs,
			  uint32_t k, size_t done)
{
	char slots[STRESS_MSG / 2];
	size_t len = 0;

	slots[0] = '\0';
	for (uint32_t i = 0; i < k && len < sizeof(slots) - 12; i++)
		len += (size_t)snprintf(slots + len, sizeof(slots) - len,
					" %u", hs[i].mark.slot);
	stress_violation(l->run, "lfp_free_bulk by thread %u released %zu "
			 "of %u objects it held, in slots%s", l->tid, done, k,
			 slots);
}
#endif

/* Release up to 16 held objects with one call (those RCU readers may
 * see, one by one after a grace period), through the thread's explicit
 * cache half the time where the mix has one; where the mix has bad
 * releases, now and then with a foreign or misaligned pointer among
 * them, which the call must skip and count. */
static void op_free_bulk(struct stress_life *l)
{
#if STRESS_HAVE_CACHES
	struct stress_held hs[STRESS_MAX_BULK];
	void *objs[STRESS_MAX_BULK + 1];
	uint32_t k = 1 + stress_below(l, l->n < STRESS_MAX_BULK ? l->n
							     : STRESS_MAX_BULK);
	uint32_t n = 0, at;
	char local; /* its address is not in any pool */
	bool bad = l->bad && !stress_below(l, 8);
	struct lfp_cache *c = NULL;
	size_t done;

	while (k--) {
		hs[n] = op_take(l);
		if (hs[n].rcu) {
			op_free_one(l, &hs[n], STRESS_BULK);
			continue;
		}
		objs[n] = hs[n].obj;
		if (!stress_unclaim(l->run, &hs[n++], l->tid, "lfp_free_bulk"))
			return;
	}
	if (bad) {
		/* At a random place; misaligned inside an object of the
		 * run, or on our stack. */
		at = stress_below(l, n + 1);
		memmove(objs + at + 1, objs + at, (n - at) * sizeof(*objs));
		if (n && stress_below(l, 2))
			objs[at] = (char *)objs[at ? 0 : 1] + 8;
		else
			objs[at] = &local;
	}
	if (stress_mode_enabled(l->o, STRESS_EXPLICIT) && stress_below(l, 2))
		c = stress_life_cache(l);
	if (c) {
		stress_call_enter("lfp_cache_free_bulk", false);
		done = lfp_cache_free_bulk(c, objs, n + bad);
	} else {
		stress_call_enter("lfp_free_bulk", false);
		done = lfp_free_bulk(l->run->pool, objs, n + bad);
	}
	stress_call_leave();
	if (done != n)
		return op_bulk_short(l, hs, n, done);
	l->t.refused += bad;
	l->t.frees += done;
	for (uint32_t i = 0; l->handles && i < n; i++)
		stress_handle_bury(l, &hs[i]);
#else
	(void)l;
#endif
}

/* Send h to another worker; false if its inbox is busy or full. */
static bool op_send(struct stress_life *l, const struct stress_held *h)
{
	struct stress_run *r = l->run;
	unsigned to = stress_below(l, r->o->threads - 1);
	struct stress_inbox *in;
	bool ok;

	to += to >= l->w->index;
	in = &r->w[to].inbox;
	if (pthread_mutex_trylock(&in->lock))
		return false;
	ok = in->count < STRESS_INBOX;
	if (ok) {
		in->ring[(in->head + in->count) % STRESS_INBOX] =
			(struct stress_parcel){ *h, l->tid };
		in->count++;
		atomic_store_explicit(&in->seen, in->count,
				      memory_order_relaxed);
	}
	pthread_mutex_unlock(&in->lock);
	l->t.handoffs += ok;
	return ok;
}

static void op_release(struct stress_life *l)
{
	struct stress_run *r = l->run;
	enum stress_mode m = op_pick(l, r->release_cum, r->release_total);
	struct stress_held h;

	l->t.by_mode[m]++;
	if (m == STRESS_BULK)
		return op_free_bulk(l);
	h = op_take(l);
	if (m == STRESS_HANDOFF) {
		if (!op_send(l, &h))
			op_free_here(l, &h);
		return;
	}
	op_free_one(l, &h, m);
}

/* Take over what other threads sent; keep what fits, release the rest. */
void stress_op_receive(struct stress_life *l)
{
	struct stress_inbox *in = &l->w->inbox;
	struct stress_parcel got[32];
	uint32_t n = 0;

	pthread_mutex_lock(&in->lock);
	for (; n < 32 && in->count; n++, in->count--) {
		got[n] = in->ring[in->head];
		in->head = (in->head + 1) % STRESS_INBOX;
	}
	atomic_store_explicit(&in->seen, in->count, memory_order_relaxed);
	pthread_mutex_unlock(&in->lock);
	for (uint32_t i = 0; i < n; i++) {
		if (!stress_take_over(l->run, &got[i], l->tid) ||
		    (l->handles &&
		     !stress_handle_check(l, &got[i].h, "handoff")))
			return;
		l->t.checks++;
		if (l->n < l->o->hold)
			l->w->held[l->n++] = got[i].h;
		else
			op_free_here(l, &got[i].h);
	}
}

/* Relaxed: a hint; stress_op_receive reads the count under the lock. */
bool stress_op_has_mail(struct stress_life *l)
{
	return atomic_load_explicit(&l->w->inbox.seen, memory_order_relaxed);
}

static void op_bad(struct stress_life *l)
{
	char local; /* its address is not in any pool */
	bool inside = l->n && stress_below(l, 2);
	void *p = inside ? (char *)l->w->held[stress_below(l, l->n)].obj + 8
			 : (void *)&local;
	int want = inside ? -EINVAL : -EFAULT, err;
	struct stress_held bad = { .obj = p };
	enum op_call c = CALL_FREE;

	l->t.by_mode[STRESS_BAD]++;
	if (stress_mode_enabled(l->o, STRESS_EXPLICIT) && stress_below(l, 2))
		c = CALL_CACHE_FREE;
	err = op_call(l, c, &bad);
	if (err != want)
		stress_violation(l->run, "thread %u released the %s pointer %p "
				 "with %s: expected %d, got %d", l->tid,
				 inside ? "misaligned" : "foreign", p,
				 op_call_name[c], want, err);
	else
		l->t.refused++;
}

/*
 * The operations that neither allocate nor release an object of ours:
 * bad releases, handle probes and RCU read sections, each taking its
 * share of 64. False if it is not their turn.
 */
static bool op_aside(struct stress_life *l)
{
	unsigned x;

	if (!l->bad && !l->probe && !l->read)
		return false;
	x = stress_below(l, 64);
	if (x < l->bad)
		op_bad(l);
	else if ((x -= l->bad) < l->probe)
		stress_handle_probe(l);
	else if (x - l->probe < l->read)
		stress_rcu_read(l);
	else
		return false;
	return true;
}

/* Allocate or release one object, whichever heads for the target. */
static void op_churn(struct stress_life *l)
{
	if (l->n < l->o->hold && (l->n < l->target || !l->n))
		op_alloc(l);
	else
		op_release(l);
}

/*
 * One step of a life: park if an idle round has begun, take in what
 * others sent (every eighth step), one operation; then the target and
 * the progress figures.
 */
void stress_op_step(struct stress_life *l)
{
	uint32_t hold = l->o->hold;

	if (l->idle)
		stress_idle_step(l);
	if (l->handoff && !(l->ops & 7) && stress_op_has_mail(l))
		stress_op_receive(l);
	if (!op_aside(l))
		op_churn(l);
	if (!--l->retarget) {
		l->target = stress_below(l, hold + 1);
		l->retarget = 1 + stress_below(l, 2 * hold);
	}
	l->ops++;
	l->left--;
	stress_life_publish(l);
}

/* Release every held object here. */
void stress_op_drop_all(struct stress_life *l)
{
	while (l->n && atomic_load_explicit(&l->run->stop,
					    memory_order_relaxed) != STRESS_ABORT) {
		struct stress_held h = op_take(l);

		op_free_here(l, &h);
	}
}

/* Let go of everything held: send it to another worker (give), or else
 * release it here. */
void stress_op_let_go(struct stress_life *l, bool give)
{
	while (l->n) {
		struct stress_held h = op_take(l);

		if (!(give && op_send(l, &h)))
			op_free_here(l, &h);
	}
}
