/* SPDX-License-Identifier: MIT */
/*
 * Handles. In runs with the handle or deferred mode every object gets its
 * handle checked when it arrives and whenever it changes hands; the handle
 * mode also releases objects by handle, and between operations probes the
 * pool with handles that must not work:
 * - stale ones: handles of objects this thread released, whose slots any
 *   thread may have been handed again since; they must resolve to NULL,
 *   and releasing them must fail with -ESTALE and leave the slot's new
 *   owner alone;
 * - forged ones: another generation of a slot this thread holds, which
 *   must neither resolve nor release;
 * - impossible ones: null, even generations, slots beyond the pool, and
 *   random bits, which must never crash nor name anything but a slot;
 * - other threads' handles, shown in their workers' tables, which may go
 *   stale at any moment: they must resolve to their slot's object or NULL.
 *
 * Every assertion rests on what this thread knows by itself: it tests as
 * stale only handles of releases it made (it has seen those generations
 * end), and forges generations only for slots it holds (nobody else may
 * end those). Other threads' handles are only resolved, never released.
 * Nothing here orders memory between threads but stress_handle_show,
 * whose readers need it (rcu.c).
 *
 * Calls down only: life.c (the explicit cache, to release by handle
 * through it), rcu.c (the room deferred releases may take), and the
 * leaves check.c and mode.c. ops.c calls the stress_handle_* functions.
 */
#include <errno.h>
#include <inttypes.h>

#include "check.h"
#include "handle.h"
#include "life.h"
#include "mode.h"
#include "rcu.h"
#include "run.h"

static lfp_handle handle_make(uint32_t gen, uint32_t slot)
{
	return (lfp_handle){ (uint64_t)gen << 32 | slot };
}

static uint32_t handle_owner(const struct stress_run *r, uint32_t slot)
{
	/* Relaxed: see check.c; a thread learns only its own id here. */
	return atomic_load_explicit(&r->owner[slot], memory_order_relaxed);
}

/* Release by handle through the explicit cache, half the time, if the
 * mix has explicit caches. */
static bool handle_cached(struct stress_life *l)
{
	return stress_mode_enabled(l->o, STRESS_EXPLICIT) && stress_below(l, 2);
}

static const char *handle_call(bool cached)
{
	return cached ? "lfp_cache_free_handle" : "lfp_free_handle";
}

int stress_handle_free(struct stress_life *l, lfp_handle h, bool cached)
{
#if STRESS_HAVE_CACHES
	struct lfp_cache *c;

	if (cached)
		return (c = stress_life_cache(l)) ? lfp_cache_free_handle(c, h)
						  : -ENOMEM;
#endif
	(void)cached;
	return lfp_free_handle(l->run->pool, h);
}

/* A new generation of a slot must differ from those we saw end. */
static bool handle_fresh(struct stress_life *l, const struct stress_held *h,
			 const char *op)
{
	uint32_t n = l->graves < STRESS_GRAVE ? l->graves : STRESS_GRAVE;

	for (uint32_t i = 0; i < n; i++)
		if (l->grave[i].bits == h->handle.bits)
			return stress_violation(
				l->run, "slot %u: %s gave thread %u an object "
				"of generation %u, which thread %u released "
				"before: the generation did not change",
				h->mark.slot, op, l->tid, h->mark.gen, l->tid);
	return true;
}

bool stress_handle_take(struct stress_life *l, struct stress_held *h,
			const char *op)
{
	struct stress_run *r = l->run;
	lfp_handle hd = lfp_handle_of(r->pool, h->obj);
	void *obj;

	if (lfp_handle_index(hd) != h->mark.slot ||
	    !(lfp_handle_gen(hd) & 1))
		return stress_violation(r, "slot %u: %s gave thread %u an "
					"object whose handle is %#" PRIx64
					", not a live handle of that slot",
					h->mark.slot, op, l->tid, hd.bits);
	if ((obj = lfp_resolve(r->pool, hd)) != h->obj)
		return stress_violation(r, "slot %u: the handle %#" PRIx64
					" of the object %s gave thread %u "
					"resolves to %p, not to %p",
					h->mark.slot, hd.bits, op, l->tid, obj,
					h->obj);
	h->handle = hd;
	h->mark.gen = lfp_handle_gen(hd);
	return handle_fresh(l, h, op);
}

bool stress_handle_check(struct stress_life *l, const struct stress_held *h,
			 const char *op)
{
	struct lfp_pool *pool = l->run->pool;
	lfp_handle now = lfp_handle_of(pool, h->obj);
	void *obj = lfp_resolve(pool, h->handle);

	if (now.bits == h->handle.bits && obj == h->obj)
		return true;
	return stress_violation(l->run, "slot %u: thread %u took it over (%s) "
				"with the handle %#" PRIx64 ", but the pool "
				"says its handle is %#" PRIx64 " and resolves "
				"that one to %p",
				h->mark.slot, l->tid, op, h->handle.bits,
				now.bits, obj);
}

void stress_handle_bury(struct stress_life *l, const struct stress_held *h)
{
	l->grave[l->graves++ % STRESS_GRAVE] = h->handle;
}

/*
 * Show the handle of one object in eight in our worker's table, over an
 * older one. With RCU readers about, it may be read at once, so from now
 * on the object goes back only through lfp_free_deferred (h->rcu).
 */
void stress_handle_show(struct stress_life *l, struct stress_held *h)
{
	_Atomic uint64_t *entry;

	if (stress_below(l, 8) || (l->rcu && !stress_rcu_room(l, 2)))
		return;
	entry = &l->w->shown[stress_below(l, STRESS_SHOWN)];
	if ((h->rcu = l->rcu))
		stress_rcu_spend(l);
	/* Release: the object's stamp before its handle; pairs with the
	 * acquire load in stress_rcu_read. */
	atomic_store_explicit(entry, h->handle.bits, memory_order_release);
}

/* The entry of held[] for slot, or NULL if we do not hold it. */
static struct stress_held *handle_mine(struct stress_life *l, uint32_t slot)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (l->w->held[i].mark.slot == slot)
			return &l->w->held[i];
	return NULL;
}

/*
 * After a release by a wrong handle was refused: if the slot is ours, the
 * object must be as we left it, its owner word ours, and its own handle
 * still current. (Another owner finds out at its next check of the slot:
 * its pattern, and a release that must succeed.)
 */
static void handle_intact(struct stress_life *l, uint32_t slot,
			  const char *op)
{
	struct stress_run *r = l->run;
	struct stress_held *h = handle_mine(l, slot);
	uint32_t owner;
	void *obj;

	if (!h)
		return;
	if ((owner = handle_owner(r, slot)) != l->tid)
		return (void)stress_violation(r, "slot %u: thread %u holds "
					      "it, yet after a refused %s of "
					      "a wrong handle its owner word "
					      "says thread %u",
					      slot, l->tid, op, owner);
	if (!stress_verify(r, h, l->tid, op))
		return;
	if ((obj = lfp_resolve(r->pool, h->handle)) != h->obj)
		return (void)stress_violation(r, "slot %u: thread %u holds "
					      "it, yet after a refused %s of "
					      "a wrong handle its own handle "
					      "(generation %u) resolves to %p",
					      slot, l->tid, op, h->mark.gen,
					      obj);
	l->t.checks++;
}

/* A handle of an object we released: dead for good. */
static void handle_stale(struct stress_life *l)
{
	struct stress_run *r = l->run;
	uint32_t n = l->graves < STRESS_GRAVE ? l->graves : STRESS_GRAVE;
	lfp_handle h = l->grave[stress_below(l, n)];
	uint32_t slot = lfp_handle_index(h), gen = lfp_handle_gen(h);
	bool cached = handle_cached(l);
	void *obj;
	int err;

	l->t.stale++;
	if ((obj = lfp_resolve(r->pool, h)))
		return (void)stress_violation(
			r, "slot %u: thread %u released its object of "
			"generation %u, yet lfp_resolve of that stale handle "
			"gives %p; the owner word says thread %u",
			slot, l->tid, gen, obj, handle_owner(r, slot));
	if ((err = stress_handle_free(l, h, cached)) != -ESTALE)
		return (void)stress_violation(
			r, "slot %u: %s of a stale handle (generation %u, "
			"released by thread %u, which tried it) returned %d, "
			"not -ESTALE; the owner word says thread %u",
			slot, handle_call(cached), gen, l->tid, err,
			handle_owner(r, slot));
	l->t.refused++;
	handle_intact(l, slot, handle_call(cached));
}

/* Another generation than the one of a slot we hold: a near one, half the
 * time (the last or the next lives of the slot), else any. */
static uint32_t handle_other_gen(struct stress_life *l, uint32_t gen)
{
	uint32_t d = 2 * (1 + stress_below(l, 4)), g;

	switch (stress_below(l, 4)) {
	case 0:
		return gen + d;
	case 1:
		return gen - d;
	}
	g = (uint32_t)(stress_rand(l) >> 32) | 1;
	return g == gen ? g + 2 : g;
}

static void handle_forge_mine(struct stress_life *l)
{
	struct stress_run *r = l->run;
	const struct stress_held *h = &l->w->held[stress_below(l, l->n)];
	uint32_t gen = handle_other_gen(l, h->mark.gen), slot = h->mark.slot;
	lfp_handle f = handle_make(gen, slot);
	bool cached = handle_cached(l);
	void *obj;
	int err;

	if ((obj = lfp_resolve(r->pool, f)))
		return (void)stress_violation(
			r, "slot %u: thread %u holds its object of generation "
			"%u, yet a forged handle of generation %u resolves "
			"to %p", slot, l->tid, h->mark.gen, gen, obj);
	if ((err = stress_handle_free(l, f, cached)) != -ESTALE)
		return (void)stress_violation(
			r, "slot %u: thread %u holds its object of generation "
			"%u, yet %s of a forged handle of generation %u "
			"returned %d, not -ESTALE",
			slot, l->tid, h->mark.gen, handle_call(cached), gen,
			err);
	l->t.refused++;
	handle_intact(l, slot, handle_call(cached));
}

/* Random bits, resolved only (they might name a live object): whatever
 * comes back must be NULL or the object at the handle's slot. */
static void handle_random(struct stress_life *l, lfp_handle h)
{
	struct stress_run *r = l->run;
	uint32_t slot = lfp_handle_index(h);
	void *obj = lfp_resolve(r->pool, h);

	if (obj && (slot >= r->slots || obj != lfp_at(r->pool, slot)))
		stress_violation(r, "thread %u resolved the random handle %#"
				 PRIx64 " to %p, which is not the object at "
				 "slot %u", l->tid, h.bits, obj, slot);
}

/* A handle no object can have: null, an even generation, or a slot
 * beyond the pool's largest size; or random bits. */
static void handle_impossible(struct stress_life *l)
{
	struct stress_run *r = l->run;
	uint64_t x = stress_rand(l);
	uint32_t kind = stress_below(l, 4);
	lfp_handle h = LFP_NULL_HANDLE;
	bool cached = handle_cached(l);
	int want = -EINVAL, err;
	void *obj;

	if (kind == 1)
		h.bits = x & ~(UINT64_C(1) << 32);
	if (kind == 2) {
		h = handle_make((uint32_t)(x >> 32) | 1,
				r->slots + stress_below(l, UINT32_MAX -
							   r->slots));
		want = -EFAULT;
	}
	if (kind == 3)
		return handle_random(l, (lfp_handle){ x });
	if ((obj = lfp_resolve(r->pool, h)))
		return (void)stress_violation(
			r, "thread %u resolved the impossible handle %#" PRIx64
			" (slot %u, generation %u) to %p", l->tid, h.bits,
			lfp_handle_index(h), lfp_handle_gen(h), obj);
	if ((err = stress_handle_free(l, h, cached)) != want)
		return (void)stress_violation(
			r, "thread %u released the impossible handle %#" PRIx64
			" (slot %u, generation %u) with %s: expected %d, got "
			"%d", l->tid, h.bits, lfp_handle_index(h),
			lfp_handle_gen(h), handle_call(cached), want, err);
	l->t.refused++;
}

/* A handle another worker shows: stale at any moment, so only resolved. */
static void handle_theirs(struct stress_life *l)
{
	struct stress_run *r = l->run;
	unsigned from = stress_below(l, r->o->threads);
	_Atomic uint64_t *shown = &r->w[from].shown[stress_below(l,
								 STRESS_SHOWN)];
	/* Relaxed: resolving reads the pool's generation word, not the
	 * object, so nothing needs ordering. */
	lfp_handle h = { atomic_load_explicit(shown, memory_order_relaxed) };
	uint32_t slot = lfp_handle_index(h);
	void *obj;

	if (lfp_handle_is_null(h))
		return handle_impossible(l);
	obj = lfp_resolve(r->pool, h);
	if (obj && obj != lfp_at(r->pool, slot))
		stress_violation(r, "slot %u: thread %u resolved the handle "
				 "%#" PRIx64 " that worker %u shows to %p, "
				 "which is not the object at that slot",
				 slot, l->tid, h.bits, from, obj);
}

void stress_handle_probe(struct stress_life *l)
{
	l->t.by_mode[STRESS_HANDLE]++;
	l->t.probes++;
	switch (stress_below(l, 4)) {
	case 0:
		if (l->graves)
			return handle_stale(l);
		break;
	case 1:
		if (l->n)
			return handle_forge_mine(l);
		break;
	case 2:
		return handle_theirs(l);
	}
	handle_impossible(l);
}
