/*
 * The worker threads. Each life of a worker runs operations until the run
 * stops, its worker has done --ops, or (with exit) the life retires; every
 * object it touches goes through the checks in check.c on the way.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "stress.h"

static uint64_t life_mix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ x >> 30) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ x >> 27) * UINT64_C(0x94d049bb133111eb);
	return x ^ x >> 31;
}

static enum stress_mode life_pick(struct stress_life *l, const unsigned *cum,
				  unsigned total)
{
	unsigned x = stress_below(l, total);
	int m = 0;

	while (x >= cum[m])
		m++;
	return (enum stress_mode)m;
}

/* Objects held by all threads or in transit: approximate while running. */
uint64_t stress_live(const struct stress_run *r)
{
	uint64_t live = 0;

	for (unsigned i = 0; i < r->o->threads; i++) {
		struct stress_worker *w = &r->w[i];

		/* Relaxed: a progress figure, not a check. */
		live += atomic_load_explicit(&w->holding, memory_order_relaxed);
		live += atomic_load_explicit(&w->inbox.seen,
					     memory_order_relaxed);
	}
	return live;
}

static void life_publish(struct stress_life *l)
{
	/* Relaxed: progress figures for the supervisor, not checks. */
	atomic_store_explicit(&l->w->ops, l->ops, memory_order_relaxed);
	atomic_store_explicit(&l->w->holding, l->n, memory_order_relaxed);
}

#if STRESS_HAVE_CACHES
/* The explicit cache: the predecessor's if it left one, else a new one. */
struct lfp_cache *stress_life_cache(struct stress_life *l)
{
	if (!l->cache && l->w->bequest) {
		l->cache = l->w->bequest;
		l->w->bequest = NULL;
	}
	if (!l->cache && !(l->cache = lfp_cache_create(l->run->pool)))
		stress_violation(l->run, "lfp_cache_create failed in thread %u",
				 l->tid);
	return l->cache;
}
#endif

/* Make obj ours: claim its slot, take its handle, stamp it, keep it. */
static void life_hold(struct stress_life *l, void *obj, const char *op)
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
static void life_empty(struct stress_life *l, const char *op, uint32_t want,
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

static void life_alloc_bulk(struct stress_life *l)
{
#if STRESS_HAVE_CACHES
	void *objs[STRESS_MAX_BULK];
	uint32_t room = l->o->hold - l->n, want;
	size_t got;

	want = 1 + stress_below(l, room < STRESS_MAX_BULK ? room
							: STRESS_MAX_BULK);
	stress_call_enter("lfp_alloc_bulk", true);
	got = lfp_alloc_bulk(l->run->pool, objs, want);
	stress_call_leave();
	if (got > want) {
		stress_violation(l->run, "lfp_alloc_bulk in thread %u returned "
				 "%zu for %u objects", l->tid, got, want);
		return;
	}
	for (size_t i = 0; i < got; i++)
		life_hold(l, objs[i], "lfp_alloc_bulk");
	if (got < want)
		life_empty(l, "lfp_alloc_bulk", want, (uint32_t)got);
#else
	(void)l;
#endif
}

static void life_alloc(struct stress_life *l)
{
	struct stress_run *r = l->run;
	enum stress_mode m = life_pick(l, r->alloc_cum, r->alloc_total);
	const char *op = "lfp_alloc";
	void *obj;

	l->t.by_mode[m]++;
	if (m == STRESS_BULK)
		return life_alloc_bulk(l);
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
		life_hold(l, obj, op);
	else
		life_empty(l, op, 1, 0);
}

/* Take a random held object out of the array. */
static struct stress_held life_take(struct stress_life *l)
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
enum life_call {
	CALL_FREE,
	CALL_CACHE_FREE,
	CALL_BULK,
	CALL_HANDLE,
	CALL_CACHE_HANDLE,
	CALL_DEFERRED,
};

static const char *const life_call_name[] = {
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
static enum life_call life_call_for(struct stress_life *l, enum stress_mode m,
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
static int life_call_raw(struct stress_life *l, enum life_call c,
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

static int life_call(struct stress_life *l, enum life_call c,
		     const struct stress_held *h)
{
	int err;

	stress_call_enter(life_call_name[c], false);
	err = life_call_raw(l, c, h);
	stress_call_leave();
	return err;
}

/* Release one held object here, in mode m. */
static void life_free_one(struct stress_life *l, const struct stress_held *h,
			  enum stress_mode m)
{
	enum life_call c = life_call_for(l, m, h);
	int err;

	if (!stress_unclaim(l->run, h, l->tid, life_call_name[c]))
		return;
	err = life_call(l, c, h);
	if (err) {
		stress_violation(l->run, "slot %u: %s by thread %u, which "
				 "held it, failed (%d)",
				 h->mark.slot, life_call_name[c], l->tid, err);
		return;
	}
	l->t.frees++;
	l->t.deferred += c == CALL_DEFERRED;
	if (l->handles)
		stress_handle_bury(l, h);
}

/* Release here, in a mode picked among those that do not hand off. */
static void life_free_here(struct stress_life *l, const struct stress_held *h)
{
	struct stress_run *r = l->run;

	life_free_one(l, h, life_pick(l, r->alloc_cum, r->alloc_total));
}

#if STRESS_HAVE_CACHES
/* lfp_free_bulk refused some of what we held: name them all, we cannot
 * tell which. */
static void life_bulk_short(struct stress_life *l, const struct stress_held *hs,
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
 * see, one by one after a grace period). */
static void life_free_bulk(struct stress_life *l)
{
#if STRESS_HAVE_CACHES
	struct stress_held hs[STRESS_MAX_BULK];
	void *objs[STRESS_MAX_BULK];
	uint32_t k = 1 + stress_below(l, l->n < STRESS_MAX_BULK ? l->n
							     : STRESS_MAX_BULK);
	uint32_t n = 0;
	size_t done;

	while (k--) {
		hs[n] = life_take(l);
		if (hs[n].rcu) {
			life_free_one(l, &hs[n], STRESS_BULK);
			continue;
		}
		objs[n] = hs[n].obj;
		if (!stress_unclaim(l->run, &hs[n++], l->tid, "lfp_free_bulk"))
			return;
	}
	stress_call_enter("lfp_free_bulk", false);
	done = lfp_free_bulk(l->run->pool, objs, n);
	stress_call_leave();
	if (done != n)
		return life_bulk_short(l, hs, n, done);
	l->t.frees += done;
	for (uint32_t i = 0; l->handles && i < n; i++)
		stress_handle_bury(l, &hs[i]);
#else
	(void)l;
#endif
}

/* Send h to another worker; false if its inbox is busy or full. */
static bool life_send(struct stress_life *l, const struct stress_held *h)
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

static void life_release(struct stress_life *l)
{
	struct stress_run *r = l->run;
	enum stress_mode m = life_pick(l, r->release_cum, r->release_total);
	struct stress_held h;

	l->t.by_mode[m]++;
	if (m == STRESS_BULK)
		return life_free_bulk(l);
	h = life_take(l);
	if (m == STRESS_HANDOFF) {
		if (!life_send(l, &h))
			life_free_here(l, &h);
		return;
	}
	life_free_one(l, &h, m);
}

/* Take over what other threads sent; keep what fits, release the rest. */
static void life_receive(struct stress_life *l)
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
			life_free_here(l, &got[i].h);
	}
}

/* Relaxed: a hint; life_receive reads the count under the lock. */
static bool life_has_mail(struct stress_life *l)
{
	return atomic_load_explicit(&l->w->inbox.seen, memory_order_relaxed);
}

static void life_bad(struct stress_life *l)
{
	char local; /* its address is not in any pool */
	bool inside = l->n && stress_below(l, 2);
	void *p = inside ? (char *)l->w->held[stress_below(l, l->n)].obj + 8
			 : (void *)&local;
	int want = inside ? -EINVAL : -EFAULT, err;
	struct stress_held bad = { .obj = p };
	enum life_call c = CALL_FREE;

	l->t.by_mode[STRESS_BAD]++;
	if (stress_mode_enabled(l->o, STRESS_EXPLICIT) && stress_below(l, 2))
		c = CALL_CACHE_FREE;
	err = life_call(l, c, &bad);
	if (err != want)
		stress_violation(l->run, "thread %u released the %s pointer %p "
				 "with %s: expected %d, got %d", l->tid,
				 inside ? "misaligned" : "foreign", p,
				 life_call_name[c], want, err);
	else
		l->t.refused++;
}

/*
 * The operations that neither allocate nor release an object of ours:
 * bad releases, handle probes and RCU read sections, each taking its
 * share of 64. False if it is not their turn.
 */
static bool life_aside(struct stress_life *l)
{
	unsigned x;

	if (!l->bad && !l->probe && !l->read)
		return false;
	x = stress_below(l, 64);
	if (x < l->bad)
		life_bad(l);
	else if ((x -= l->bad) < l->probe)
		stress_handle_probe(l);
	else if (x - l->probe < l->read)
		stress_rcu_read(l);
	else
		return false;
	return true;
}

/* Allocate or release one object, whichever heads for the target. */
static void life_churn(struct stress_life *l)
{
	if (l->n < l->o->hold && (l->n < l->target || !l->n))
		life_alloc(l);
	else
		life_release(l);
}

static void life_step(struct stress_life *l)
{
	uint32_t hold = l->o->hold;

	if (l->idle)
		stress_idle_step(l);
	if (l->handoff && !(l->ops & 7) && life_has_mail(l))
		life_receive(l);
	if (!life_aside(l))
		life_churn(l);
	if (!--l->retarget) {
		l->target = stress_below(l, hold + 1);
		l->retarget = 1 + stress_below(l, 2 * hold);
	}
	l->ops++;
	l->left--;
	life_publish(l);
}

static bool life_go(const struct stress_life *l)
{
	/* Relaxed: the flag only says when to stop; nothing rides on it. */
	if (atomic_load_explicit(&l->run->stop, memory_order_relaxed))
		return false;
	return l->left && !(l->o->ops && l->ops >= l->o->ops);
}

/* Release every held object here. */
static void life_drop_all(struct stress_life *l)
{
	while (l->n && atomic_load_explicit(&l->run->stop,
					    memory_order_relaxed) != STRESS_ABORT) {
		struct stress_held h = life_take(l);

		life_free_here(l, &h);
	}
}

/* Long enough not to crowd out the threads that have yet to stop. */
static void life_nap(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

/*
 * The last life of a worker: release everything, say that we will send
 * nothing more, and keep emptying the inbox until nobody will.
 */
static void life_finish(struct stress_life *l)
{
	struct stress_run *r = l->run;

	life_drop_all(l);
	if (!l->w->quiet) {
		l->w->quiet = true;
		/* Release: our last send happens before; pairs with the
		 * acquire loads below in every other worker. */
		atomic_fetch_add_explicit(&r->quiet, 1, memory_order_release);
	}
	/* Acquire: once all are quiet, every send to us happened before
	 * the lock we take in life_receive, so it finds them all. */
	while (atomic_load_explicit(&r->quiet, memory_order_acquire) <
		       r->o->threads &&
	       atomic_load_explicit(&r->stop, memory_order_relaxed) !=
		       STRESS_ABORT) {
		life_receive(l);
		life_drop_all(l);
		life_nap();
	}
	do {
		life_receive(l);
		life_drop_all(l);
	} while (life_has_mail(l));
#if STRESS_HAVE_CACHES
	lfp_cache_destroy(l->cache);
	lfp_cache_destroy(l->w->bequest);
	l->cache = l->w->bequest = NULL;
#endif
}

/*
 * Retire mid-run: give away or release what we hold, which fills our
 * caches; leave the implicit one to its destructor and the explicit one to
 * the successor or lfp_cache_destroy.
 */
static void life_retire(struct stress_life *l)
{
	bool give = l->handoff && stress_below(l, 2);

	l->t.by_mode[STRESS_EXIT]++;
	while (l->n) {
		struct stress_held h = life_take(l);

		if (!(give && life_send(l, &h)))
			life_free_here(l, &h);
	}
	if (l->handoff) {
		life_receive(l);
		life_drop_all(l);
	}
#if STRESS_HAVE_CACHES
	if (l->cache && stress_below(l, 2)) {
		l->w->bequest = l->cache;
	} else {
		lfp_cache_destroy(l->cache);
	}
	l->cache = NULL;
#endif
}

/* Operations in 64 that handle probes or read sections take: 4 per unit
 * of weight, a quarter at most, so that objects still come and go. */
static unsigned life_share(const struct stress_opts *o, enum stress_mode m)
{
	return o->weight[m] > 4 ? 16 : 4 * o->weight[m];
}

static void life_begin(struct stress_life *l, struct stress_worker *w)
{
	const struct stress_opts *o = w->run->o;

	memset(l, 0, sizeof(*l));
	l->run = w->run;
	l->o = o;
	l->w = w;
	/* Relaxed: ids only need to be distinct. */
	l->tid = atomic_fetch_add_explicit(&w->run->next_tid, 1,
					  memory_order_relaxed);
	/* Relaxed: the previous life was joined before this one began. */
	l->ops = atomic_load_explicit(&w->ops, memory_order_relaxed);
	l->rng = life_mix(o->seed ^ life_mix(w->index ^
					     life_mix(w->tally.lives))) | 1;
	l->left = stress_mode_enabled(o, STRESS_EXIT)
			  ? 1 + stress_below(l, 2 * o->life)
			  : UINT64_MAX;
	l->target = stress_below(l, o->hold + 1);
	l->retarget = 1 + stress_below(l, 2 * o->hold);
	l->bad = o->weight[STRESS_BAD] > 64 ? 64 : o->weight[STRESS_BAD];
	l->probe = life_share(o, STRESS_HANDLE);
	l->read = life_share(o, STRESS_DEFERRED);
	l->handoff = w->run->release_cum[STRESS_HANDOFF] !=
		     w->run->release_cum[STRESS_BULK];
	l->handles = stress_mode_enabled(o, STRESS_HANDLE) ||
		     stress_mode_enabled(o, STRESS_DEFERRED);
	l->rcu = stress_mode_enabled(o, STRESS_DEFERRED);
	l->idle = stress_mode_enabled(o, STRESS_IDLING);
	l->t.lives = 1;
	stress_hooks_bind(&l->t);
	stress_rcu_begin(l);
}

static void life_end(struct stress_life *l, uint64_t ops0)
{
	struct stress_tally *t = &l->w->tally;

	l->t.ops = l->ops - ops0;
	l->t.checks += l->t.frees; /* every release verified the pattern */
	stress_tally_add(t, &l->t);
	stress_hooks_bind(NULL);
	stress_rcu_end(l);
	life_publish(l);
}

static void *life_main(void *arg);

/* Start our successor in this seat; false if it could not start. */
static bool life_succeed(struct stress_life *l)
{
	struct stress_worker *w = l->w;
	pthread_t next;
	int err;

	w->pred = pthread_self();
	w->has_pred = true;
	err = pthread_create(&next, NULL, life_main, w);
	if (err) {
		stress_violation(l->run, "thread %u cannot start its "
				 "successor in worker %u: error %d",
				 l->tid, w->index, err);
		return false;
	}
	/* Relaxed: a count for the report. */
	atomic_fetch_add_explicit(&l->run->exits, 1, memory_order_relaxed);
	return true;
}

static void *life_main(void *arg)
{
	struct stress_worker *w = arg;
	struct stress_life l;
	uint64_t ops0;
	int stop;

	/* Our predecessor is gone, its implicit cache flushed, when this
	 * returns. */
	if (w->has_pred)
		pthread_join(w->pred, NULL);
	/* Relaxed: the gate only lines the first lives up, to make them
	 * overlap; pthread_create ordered everything they read. */
	while (!atomic_load_explicit(&w->run->gate, memory_order_relaxed))
		sched_yield();
	w->thread = pthread_self();
	life_begin(&l, w);
	ops0 = l.ops;
	while (life_go(&l))
		life_step(&l);
	if (l.idle)
		stress_idle_retire(&l);
	stop = atomic_load_explicit(&l.run->stop, memory_order_relaxed);
	if (stop == STRESS_GO && !l.left) {
		life_retire(&l);
		life_end(&l, ops0);
		/* From here on the seat is the successor's. */
		if (life_succeed(&l))
			return NULL;
	} else {
		if (stop != STRESS_ABORT)
			life_finish(&l);
		life_end(&l, ops0);
	}
	w->done_at = stress_now();
	/* Release: publishes thread, tally and done_at; pairs with the
	 * acquire load in the supervisor's run_done. */
	atomic_store_explicit(&w->state, STRESS_DONE, memory_order_release);
	return NULL;
}

int stress_spawn(struct stress_worker *w)
{
	pthread_t t;
	int err;

	atomic_store_explicit(&w->state, STRESS_RUNNING, memory_order_relaxed);
	err = pthread_create(&t, NULL, life_main, w);
	w->started = !err;
	return -err;
}
