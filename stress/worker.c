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
static struct lfp_cache *life_cache(struct stress_life *l)
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

/* Make obj ours: claim its slot, stamp it, keep it. */
static void life_hold(struct stress_life *l, void *obj, const char *op)
{
	struct stress_held *h = &l->w->held[l->n];
	uint32_t slot;

	if (!stress_claim(l->run, l->tid, obj, op, &slot))
		return;
	h->obj = obj;
	h->mark = (struct stress_mark){ l->tid, slot, ++l->seq };
	stress_stamp(l->run, obj, &h->mark);
	l->n++;
	l->t.allocs++;
}

/* The pool had nothing (or less than asked) for us. */
static void life_empty(struct stress_life *l)
{
	l->t.exhausted++;
	l->target = l->n / 2; /* give some back before trying again */
	if (!l->n)
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
	got = lfp_alloc_bulk(l->run->pool, objs, want);
	if (got > want) {
		stress_violation(l->run, "lfp_alloc_bulk in thread %u returned "
				 "%zu for %u objects", l->tid, got, want);
		return;
	}
	for (size_t i = 0; i < got; i++)
		life_hold(l, objs[i], "lfp_alloc_bulk");
	if (got < want)
		life_empty(l);
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
		struct lfp_cache *c = life_cache(l);

		obj = c ? lfp_cache_alloc(c) : NULL;
		op = "lfp_cache_alloc";
	} else
#endif
		obj = lfp_alloc(r->pool);
	if (obj)
		life_hold(l, obj, op);
	else
		life_empty(l);
}

/* Take a random held object out of the array. */
static struct stress_held life_take(struct stress_life *l)
{
	struct stress_held *held = l->w->held;
	uint32_t i = stress_below(l, l->n);
	struct stress_held h = held[i];

	held[i] = held[--l->n];
	return h;
}

/* The library call that releases one object in mode m. */
static int life_release_call(struct stress_life *l, enum stress_mode m, void *obj,
			     const char **op)
{
#if STRESS_HAVE_CACHES
	struct lfp_cache *c;

	if (m == STRESS_EXPLICIT && (c = life_cache(l))) {
		*op = "lfp_cache_free";
		return lfp_cache_free(c, obj);
	}
	if (m == STRESS_BULK) {
		*op = "lfp_free_bulk";
		return lfp_free_bulk(l->run->pool, &obj, 1) == 1 ? 0 : -1;
	}
#endif
	(void)l;
	(void)m;
	*op = "lfp_free";
	return lfp_free(l->run->pool, obj);
}

/* Release one held object here, in mode m. */
static void life_free_one(struct stress_life *l, const struct stress_held *h,
			  enum stress_mode m)
{
	const char *op = m == STRESS_EXPLICIT ? "lfp_cache_free"
			 : m == STRESS_BULK   ? "lfp_free_bulk"
					      : "lfp_free";
	int err;

	if (!stress_unclaim(l->run, h, l->tid, op))
		return;
	err = life_release_call(l, m, h->obj, &op);
	if (err)
		stress_violation(l->run, "slot %u: %s by thread %u, which "
				 "held it, failed (%d)",
				 h->mark.slot, op, l->tid, err);
	else
		l->t.frees++;
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

static void life_free_bulk(struct stress_life *l)
{
#if STRESS_HAVE_CACHES
	struct stress_held hs[STRESS_MAX_BULK];
	void *objs[STRESS_MAX_BULK];
	uint32_t k = 1 + stress_below(l, l->n < STRESS_MAX_BULK ? l->n
							     : STRESS_MAX_BULK);
	size_t done;

	for (uint32_t i = 0; i < k; i++) {
		hs[i] = life_take(l);
		objs[i] = hs[i].obj;
		if (!stress_unclaim(l->run, &hs[i], l->tid, "lfp_free_bulk"))
			return;
	}
	done = lfp_free_bulk(l->run->pool, objs, k);
	if (done != k)
		life_bulk_short(l, hs, k, done);
	l->t.frees += done;
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
		if (!stress_take_over(l->run, &got[i], l->tid))
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
	const char *op = "lfp_free";

	l->t.by_mode[STRESS_BAD]++;
	if (stress_mode_enabled(l->o, STRESS_EXPLICIT) && stress_below(l, 2))
		err = life_release_call(l, STRESS_EXPLICIT, p, &op);
	else
		err = lfp_free(l->run->pool, p);
	if (err != want)
		stress_violation(l->run, "thread %u released the %s pointer %p "
				 "with %s: expected %d, got %d", l->tid,
				 inside ? "misaligned" : "foreign", p, op,
				 want, err);
	else
		l->t.refused++;
}

static void life_step(struct stress_life *l)
{
	uint32_t hold = l->o->hold;

	if (l->handoff && !(l->ops & 7) && life_has_mail(l))
		life_receive(l);
	if (l->bad && stress_below(l, 64) < l->bad)
		life_bad(l);
	else if (l->n < hold && (l->n < l->target || !l->n))
		life_alloc(l);
	else
		life_release(l);
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
	l->handoff = w->run->release_cum[STRESS_HANDOFF] !=
		     w->run->release_cum[STRESS_BULK];
	l->t.lives = 1;
	stress_hooks_bind(&l->t);
}

static void life_end(struct stress_life *l, uint64_t ops0)
{
	struct stress_tally *t = &l->w->tally;

	l->t.ops = l->ops - ops0;
	l->t.checks += l->t.frees; /* every release verified the pattern */
	t->ops += l->t.ops;
	t->allocs += l->t.allocs;
	t->frees += l->t.frees;
	t->exhausted += l->t.exhausted;
	t->checks += l->t.checks;
	t->handoffs += l->t.handoffs;
	t->refused += l->t.refused;
	t->lives += l->t.lives;
	t->hook_allocs += l->t.hook_allocs;
	t->hook_frees += l->t.hook_frees;
	stress_hooks_bind(NULL);
	for (int m = 0; m < STRESS_NMODES; m++)
		t->by_mode[m] += l->t.by_mode[m];
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
