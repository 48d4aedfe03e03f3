/* SPDX-License-Identifier: MIT */
/*
 * RCU readers (the deferred mode). Every life registers with liburcu's
 * memb flavour, as lfp_free_deferred requires of its callers and as read
 * sections require of readers, and unregisters when it ends, mid-run
 * too (exit).
 *
 * A read section takes a handle that some worker shows (handle.c) and,
 * if it resolves, reads the identity stamped in the object (thread,
 * slot, generation, sequence number, first pattern word) again and again,
 * now and then yielding so that its holder may release it meanwhile. An
 * object whose handle was shown goes back only through lfp_free_deferred,
 * so its slot may not be handed out again before the section ends: the
 * identity must be the one the handle names, and must not change
 * (SLAB_TYPESAFE_BY_RCU's guarantee).
 *
 * Showing a handle is the one edge the harness adds between threads (a
 * release store read with acquire): a reader must see the stamp it
 * checks. Should the pool forget to order a slot's holders, ThreadSanitizer
 * could then miss it only for what a holder wrote before showing the
 * handle, and only towards a reader that later holds the same slot.
 *
 * Calls only the leaf check.c. life.c registers and unregisters a life;
 * ops.c reads, and with handle.c keeps deferred releases to their share.
 */
#include <inttypes.h>
#include <sched.h>
#include <stddef.h>
#include <urcu/urcu-memb.h>

#include "check.h"
#include "internal.h"
#include "rcu.h"
#include "run.h"

#define RCU_LOOKS 8 /* reads of the identity per section */

/* What a reader sees of an object. */
struct rcu_id {
	uint32_t tid, slot, gen;
	uint64_t seq, fill; /* fill: the first pattern word, if any */
};

void stress_rcu_begin(struct stress_life *l)
{
	if (l->rcu)
		urcu_memb_register_thread();
}

void stress_rcu_end(struct stress_life *l)
{
	if (l->rcu)
		urcu_memb_unregister_thread();
}

/*
 * Relaxed atomic loads: the object is not ours, and under a broken pool
 * its next holder could be writing it now. Ordering is not their job:
 * the acquire load of the handle made the stamp visible.
 */
static uint32_t rcu_word(const void *obj, size_t off)
{
	const _Atomic uint32_t *p =
		(const _Atomic uint32_t *)((const char *)obj + off);

	return atomic_load_explicit(p, memory_order_relaxed);
}

static uint64_t rcu_dword(const void *obj, size_t off)
{
	const _Atomic uint64_t *p =
		(const _Atomic uint64_t *)((const char *)obj + off);

	return atomic_load_explicit(p, memory_order_relaxed);
}

static void rcu_look(const struct stress_run *r, const void *obj,
		     struct rcu_id *id)
{
	size_t hdr = sizeof(struct stress_hdr);

	id->tid = rcu_word(obj, offsetof(struct stress_hdr, tid));
	id->slot = rcu_word(obj, offsetof(struct stress_hdr, slot));
	id->gen = rcu_word(obj, offsetof(struct stress_hdr, gen));
	id->seq = rcu_dword(obj, offsetof(struct stress_hdr, seq));
	id->fill = r->o->obj_size > hdr ? rcu_dword(obj, hdr) : 0;
}

static bool rcu_same(const struct rcu_id *a, const struct rcu_id *b)
{
	return a->tid == b->tid && a->slot == b->slot && a->gen == b->gen &&
	       a->seq == b->seq && a->fill == b->fill;
}

/* Does the identity belong to the object of handle h, stamped whole? */
static bool rcu_names(const struct stress_run *r, const struct rcu_id *id,
		      lfp_handle h)
{
	struct stress_mark m = { id->tid, id->slot, id->gen, id->seq };

	return id->slot == lfp_handle_index(h) &&
	       id->gen == lfp_handle_gen(h) &&
	       (r->o->obj_size <= sizeof(struct stress_hdr) ||
		id->fill == stress_fill(&m, 0));
}

static bool rcu_wrong(struct stress_life *l, lfp_handle h, const void *obj,
		      const struct rcu_id *id, const char *what)
{
	return stress_violation(
		l->run, "slot %u: in a read section, thread %u resolved the "
		"handle of generation %u to %p, which %s: it says slot %u, "
		"generation %u, thread %u, seq %" PRIu64 ", fill %#" PRIx64,
		lfp_handle_index(h), l->tid, lfp_handle_gen(h), obj, what,
		id->slot, id->gen, id->tid, id->seq, id->fill);
}

/* Inside a read section: obj, just resolved from h, must stay itself. */
static void rcu_check(struct stress_life *l, lfp_handle h, const void *obj)
{
	struct stress_run *r = l->run;
	struct rcu_id first, now;

	rcu_look(r, obj, &first);
	if (obj != lfp_at(r->pool, lfp_handle_index(h)) ||
	    !rcu_names(r, &first, h))
		return (void)rcu_wrong(l, h, obj, &first,
				       "is another object");
	for (int i = 0; i < RCU_LOOKS; i++) {
		/* Give its holder a chance to release it under us. */
		if (!stress_below(l, 16))
			sched_yield();
		rcu_look(r, obj, &now);
		if (!rcu_same(&now, &first))
			return (void)rcu_wrong(l, h, obj, &now,
					       "changed identity under it");
	}
	l->t.reads++;
	/* Released while we read it: the case that counts. */
	l->t.overlaps += !lfp_resolve(r->pool, h);
}

void stress_rcu_read(struct stress_life *l)
{
	struct stress_run *r = l->run;
	struct stress_worker *w = &r->w[stress_below(l, r->o->threads)];
	_Atomic uint64_t *shown = &w->shown[stress_below(l, STRESS_SHOWN)];
	lfp_handle h;
	void *obj;

	l->t.by_mode[STRESS_DEFERRED]++;
	urcu_memb_read_lock();
	/* Acquire: pairs with the release store in stress_handle_show, so
	 * the stamp of the object the handle names is visible here. */
	h.bits = atomic_load_explicit(shown, memory_order_acquire);
	obj = lfp_resolve(r->pool, h);
	if (obj) {
		rcu_check(l, h, obj);
		/* Our reads before the slot's reuse, for TSan: pairs with
		 * __tsan_acquire(obj) in the pool's reclaim callback. */
		lfpi_tsan_release(obj);
	}
	urcu_memb_read_unlock();
}

/*
 * Whether slots waiting for a grace period take at most sixteenths/16 of
 * the pool. They come back in batches of liburcu's call_rcu thread, some
 * 10 ms apart, while a thread releases millions of objects a second:
 * unchecked, deferred releases would keep the pool empty. So they may
 * take an eighth of it, the first half of which any release may use, the
 * second only objects shown to readers. lfp_stats is read every 64
 * operations.
 */
bool stress_rcu_room(struct stress_life *l, unsigned sixteenths)
{
	struct lfp_stats s;

	if (!l->room_at || l->ops - l->room_at >= 64) {
		lfp_stats(l->run->pool, &s);
		l->deferred = s.deferred;
		l->capacity = s.capacity;
		l->room_at = l->ops | 1;
	}
	return l->deferred * 16 <= l->capacity * sixteenths;
}

/*
 * One more slot will wait for a grace period (a deferred release now, or
 * an object shown to readers, later). Until the next reading of the
 * stats, count it as if every thread did the same, so that they do not
 * all spend the same room.
 */
void stress_rcu_spend(struct stress_life *l)
{
	l->deferred += l->o->threads;
}

/*
 * The pool ran dry, we hold nothing, and a quarter of it waits for grace
 * periods (more than their share: objects shown to readers are released
 * deferred whatever the share): wait for them, as a program would,
 * rather than spin on an empty pool for the 10 ms or so they take.
 * Outside any read section, as lfp_barrier requires. False if we did not
 * wait.
 */
bool stress_rcu_wait(struct stress_life *l)
{
	if (stress_rcu_room(l, 4))
		return false;
	lfp_barrier(l->run->pool);
	l->t.barriers++;
	l->room_at = 0;
	return true;
}
