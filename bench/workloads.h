/* SPDX-License-Identifier: MIT */
/*
 * The workloads, written once and compiled into each contender's file so
 * that the contender's alloc and free are inlined into the loops (an
 * indirect call per operation would cost the fast contenders more than the
 * slow ones). A contender file defines two WL_INLINE functions and says
 * BENCH_WORKLOADS(prefix, alloc_fn, free_fn). One with bulk calls defines
 * two more and says BENCH_WORKLOADS_BULK(prefix, alloc_fn, free_fn,
 * alloc_bulk_fn, free_bulk_fn); where two rows share the single-object
 * loops and only one has bulk calls, the file puts the pieces together
 * itself (BENCH_WORKLOAD_LOOPS, BENCH_BULK_LOOPS, BENCH_WORKLOAD_FNS,
 * BENCH_BULK_FNS). Plain `static inline` is only a hint: gcc 12 -O2 kept
 * lfpool's wrappers out of line once they appeared in a dozen loops (a
 * call per operation, which the lean lists' wrappers, inlined, did not
 * pay).
 *
 * Every object is written in full (64 bytes) when it is allocated, as a
 * user would initialise it; the asm barrier keeps the compiler from
 * dropping the writes or the allocation.
 */
#ifndef LFP_BENCH_WORKLOADS_H
#define LFP_BENCH_WORKLOADS_H

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define WL_INLINE static inline __attribute__((always_inline))
#define WL_PUBLISH 64      /* operations between two updates of w->ops */
#define WL_BURST 1024
#define WL_PERMS 8         /* random release orders a burst cycles through */
#define WL_CHURN_LIVE 4096
#define WL_HANDOFF_RING 1024
#define WL_HANDOFF_SOLO 256 /* one thread: fill the ring this far, drain */
#define WL_SPAWN 256       /* particles spawned per frame */
#define WL_TTL 16          /* particles live 1 .. WL_TTL frames */
#define WL_MAILBOX 4096
#define WL_BULK_MAX 256    /* objects per call, at most */
#define WL_BULK_BATCH 32   /* bulk32-burst: objects per call */
_Static_assert(WL_BURST % WL_BULK_BATCH == 0, "whole batches in a burst");

typedef void *(*wl_alloc_fn)(void *ctx);
typedef void (*wl_free_fn)(void *ctx, void *obj);
/* Take up to n objects into objs; how many were taken. */
typedef size_t (*wl_alloc_bulk_fn)(void *ctx, void **objs, size_t n);
/* Release objs[0 .. n); a release refused is the contender's to record,
 * as a single one is. */
typedef void (*wl_free_bulk_fn)(void *ctx, void *const *objs, size_t n);

struct wl_particle {
	float pos[3];
	float vel[3];
	uint32_t ttl;
	uint32_t age;
	uint64_t id;
	uint64_t pad[3];
};
_Static_assert(sizeof(struct wl_particle) == BENCH_OBJ_SIZE,
	       "a particle is one object");

#define wl_escape(p) __asm__ volatile("" : : "r"(p) : "memory")

WL_INLINE void wl_fill(void *obj, uint64_t v)
{
	uint64_t *o = obj;

	for (unsigned i = 0; i < BENCH_OBJ_SIZE / sizeof(uint64_t); i++)
		o[i] = v + i;
	wl_escape(obj);
}

WL_INLINE bool wl_stopped(struct bench_worker *w)
{
	return atomic_load_explicit(&w->run->stop, memory_order_relaxed);
}

/* Relaxed: the driver only samples a count; nothing is ordered by it. */
WL_INLINE void wl_publish(struct bench_worker *w, uint64_t n)
{
	atomic_store_explicit(&w->ops, n, memory_order_relaxed);
}

/* Give up and make every thread stop: the contender ran out of objects. */
static inline void wl_fail(struct bench_worker *w)
{
	w->failed = 1;
	atomic_store_explicit(&w->run->stop, 1, memory_order_relaxed);
}

/* Waiting on a ring: spin briefly, then let the other thread run (there
 * are more threads than cores in the 4- and 8-thread runs). */
static inline void wl_backoff(unsigned *spins)
{
	if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	} else {
		*spins = 0;
		sched_yield();
	}
}

/* ring: single producer, single consumer */

static inline bool wl_ring_put(struct bench_ring *r, uint32_t *tail,
			       uint32_t *head_seen, void *p)
{
	if (*tail - *head_seen > r->mask) {
		/* Acquire: pairs with the release store in wl_ring_get, so
		 * the consumer is done with the slot we are about to reuse. */
		*head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
		if (*tail - *head_seen > r->mask)
			return false;
	}
	atomic_store_explicit(&r->slot[*tail & r->mask], p,
			      memory_order_relaxed);
	++*tail;
	/* Release: publishes the slot and the object's contents; pairs
	 * with the acquire load in wl_ring_get. */
	atomic_store_explicit(&r->tail, *tail, memory_order_release);
	return true;
}

static inline void *wl_ring_get(struct bench_ring *r, uint32_t *head,
				uint32_t *tail_seen)
{
	void *p;

	if (*head == *tail_seen) {
		/* Acquire: pairs with the release store in wl_ring_put. */
		*tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
		if (*head == *tail_seen)
			return NULL;
	}
	p = atomic_load_explicit(&r->slot[*head & r->mask], memory_order_relaxed);
	++*head;
	/* Release: our read of the slot is done before the producer reuses
	 * it; pairs with the acquire load in wl_ring_put. */
	atomic_store_explicit(&r->head, *head, memory_order_release);
	return p;
}

/* pair: allocate, write, release */

WL_INLINE void wl_pair(struct bench_worker *w, wl_alloc_fn alloc,
		       wl_free_fn release)
{
	void *ctx = w->ctx;
	uint64_t n = 0;

	while (!wl_stopped(w)) {
		for (unsigned i = 0; i < WL_PUBLISH; i++) {
			void *p = alloc(ctx);

			if (!p) {
				wl_fail(w);
				return;
			}
			wl_fill(p, n + i);
			release(ctx, p);
		}
		n += WL_PUBLISH;
		wl_publish(w, n);
	}
}

/* burst: WL_BURST allocations, then release them all */

static inline uint16_t *wl_perms(struct bench_worker *w)
{
	uint16_t *perm = malloc(sizeof(*perm) * WL_BURST * WL_PERMS);

	for (unsigned k = 0; perm && k < WL_PERMS; k++) {
		uint16_t *p = perm + k * WL_BURST;

		for (unsigned i = 0; i < WL_BURST; i++)
			p[i] = (uint16_t)i;
		for (unsigned i = WL_BURST - 1; i > 0; i--) {
			unsigned j = (unsigned)(bench_rand(&w->rng) % (i + 1));
			uint16_t t = p[i];

			p[i] = p[j];
			p[j] = t;
		}
	}
	return perm;
}

WL_INLINE void wl_burst(struct bench_worker *w, wl_alloc_fn alloc,
			wl_free_fn release, bool shuffled)
{
	void *ctx = w->ctx;
	void *objs[WL_BURST];
	uint16_t *perm = shuffled ? wl_perms(w) : NULL;
	uint64_t n = 0;
	unsigned k = 0;

	if (shuffled && !perm) {
		wl_fail(w);
		return;
	}
	while (!wl_stopped(w)) {
		unsigned got;

		for (got = 0; got < WL_BURST; got++) {
			if (!(objs[got] = alloc(ctx)))
				break;
			wl_fill(objs[got], n + got);
		}
		if (got < WL_BURST) {
			while (got)
				release(ctx, objs[--got]);
			wl_fail(w);
			break;
		}
		if (shuffled) {
			const uint16_t *p = perm + (k++ % WL_PERMS) * WL_BURST;

			for (unsigned i = 0; i < WL_BURST; i++)
				release(ctx, objs[p[i]]);
		} else {
			for (unsigned i = WL_BURST; i > 0; i--)
				release(ctx, objs[i - 1]);
		}
		n += WL_BURST;
		wl_publish(w, n);
	}
	free(perm);
}

/* churn: WL_CHURN_LIVE live; release a random one and allocate a replacement */

WL_INLINE void wl_churn(struct bench_worker *w, wl_alloc_fn alloc,
			wl_free_fn release)
{
	void *ctx = w->ctx;
	void **live = malloc(sizeof(*live) * WL_CHURN_LIVE);
	unsigned have = 0;
	uint64_t n = 0;

	if (!live) {
		wl_fail(w);
		return;
	}
	for (; have < WL_CHURN_LIVE; have++) {
		if (!(live[have] = alloc(ctx)))
			break;
		wl_fill(live[have], have);
	}
	if (have < WL_CHURN_LIVE)
		wl_fail(w);
	while (!wl_stopped(w)) {
		for (unsigned i = 0; i < WL_PUBLISH; i++) {
			unsigned r = (unsigned)bench_rand(&w->rng) % WL_CHURN_LIVE;

			release(ctx, live[r]);
			if (!(live[r] = alloc(ctx))) {
				live[r] = live[--have];
				wl_fail(w);
				break;
			}
			wl_fill(live[r], n + i);
		}
		n += WL_PUBLISH;
		wl_publish(w, n);
	}
	while (have)
		release(ctx, live[--have]);
	free(live);
}

/* handoff: producers allocate, consumers release */

static inline void wl_consume(struct bench_worker *w, void *ctx,
			      wl_free_fn release, void *p)
{
	w->sink += *(const uint64_t *)p;
	release(ctx, p);
}

WL_INLINE void wl_producer(struct bench_worker *w, struct bench_ring *r,
			   wl_alloc_fn alloc)
{
	uint32_t tail = 0, head_seen = 0;
	unsigned spins = 0;
	uint64_t n = 0;

	while (!wl_stopped(w)) {
		void *p = alloc(w->ctx);

		if (!p) {
			wl_fail(w);
			break;
		}
		wl_fill(p, n++);
		while (!wl_ring_put(r, &tail, &head_seen, p))
			wl_backoff(&spins);
	}
	/* Release: the consumer that sees done also sees our last tail. */
	atomic_store_explicit(&r->done, 1, memory_order_release);
}

WL_INLINE void wl_consumer(struct bench_worker *w, struct bench_ring *r,
			   wl_free_fn release)
{
	uint32_t head = 0, tail_seen = 0;
	unsigned spins = 0;
	uint64_t n = 0;
	void *p;

	for (;;) {
		if ((p = wl_ring_get(r, &head, &tail_seen))) {
			wl_consume(w, w->ctx, release, p);
			if (!(++n % WL_PUBLISH))
				wl_publish(w, n);
			continue;
		}
		/* Acquire: pairs with the release store of done in
		 * wl_producer; one more look at the ring then finds all. */
		if (atomic_load_explicit(&r->done, memory_order_acquire)) {
			while ((p = wl_ring_get(r, &head, &tail_seen)))
				wl_consume(w, w->ctx, release, p);
			break;
		}
		wl_backoff(&spins);
	}
}

WL_INLINE void wl_handoff_solo(struct bench_worker *w, struct bench_ring *r,
			       wl_alloc_fn alloc, wl_free_fn release)
{
	uint32_t head = 0, tail = 0, seen_h = 0, seen_t = 0;
	uint64_t n = 0;
	unsigned got;
	void *p;

	while (!wl_stopped(w)) {
		for (got = 0; got < WL_HANDOFF_SOLO; got++) {
			if (!(p = alloc(w->ctx)))
				break;
			wl_fill(p, n + got);
			wl_ring_put(r, &tail, &seen_h, p);
		}
		while ((p = wl_ring_get(r, &head, &seen_t)))
			wl_consume(w, w->ctx, release, p);
		if (got < WL_HANDOFF_SOLO) {
			wl_fail(w);
			break;
		}
		n += got;
		wl_publish(w, n);
	}
}

WL_INLINE void wl_handoff(struct bench_worker *w, wl_alloc_fn alloc,
			  wl_free_fn release)
{
	struct bench_ring *r = &w->run->ring[w->tid / 2];

	if (w->run->nthreads == 1)
		wl_handoff_solo(w, r, alloc, release);
	else if (w->tid % 2 == 0)
		wl_producer(w, r, alloc);
	else
		wl_consumer(w, r, release);
}

/* particle frames: spawn, age, expire; a quarter freed by the next worker */

WL_INLINE bool wl_spawn(struct bench_worker *w, wl_alloc_fn alloc,
			void **live, unsigned *have, uint64_t frame)
{
	for (unsigned i = 0; i < WL_SPAWN; i++) {
		struct wl_particle *p = alloc(w->ctx);

		if (!p)
			return false;
		*p = (struct wl_particle){
			.pos = { 0, 0, 0 },
			.vel = { 1.0f, 0.5f, -0.25f },
			.ttl = 1 + (uint32_t)(bench_rand(&w->rng) % WL_TTL),
			.id = frame * WL_SPAWN + i,
		};
		wl_escape(p);
		live[(*have)++] = p;
	}
	return true;
}

/* Age every particle; free the expired, every fourth through the mailbox. */
WL_INLINE void wl_age(struct bench_worker *w, wl_free_fn release,
		      void **live, unsigned *have, struct bench_ring *out,
		      uint32_t *tail, uint32_t *head_seen)
{
	unsigned expired = 0;

	for (unsigned i = 0; i < *have;) {
		struct wl_particle *p = live[i];

		for (unsigned k = 0; k < 3; k++)
			p->pos[k] += p->vel[k];
		p->age++;
		if (--p->ttl) {
			i++;
			continue;
		}
		live[i] = live[--*have];
		if (expired++ % 4 == 0) {
			if (wl_ring_put(out, tail, head_seen, p))
				continue;
			w->overflows++;
		}
		release(w->ctx, p);
	}
}

WL_INLINE void wl_particle(struct bench_worker *w, wl_alloc_fn alloc,
			   wl_free_fn release)
{
	struct bench_run *run = w->run;
	struct bench_ring *in = &run->ring[w->tid];
	struct bench_ring *out = &run->ring[(w->tid + 1) % run->nthreads];
	void **live = malloc(sizeof(*live) * WL_SPAWN * WL_TTL);
	uint32_t in_head = 0, in_seen = 0, out_tail = 0, out_seen = 0;
	unsigned have = 0;
	uint64_t frame = 0;
	void *p;

	if (!live)
		wl_fail(w);
	while (live && !wl_stopped(w)) {
		while ((p = wl_ring_get(in, &in_head, &in_seen)))
			wl_consume(w, w->ctx, release, p);
		if (!wl_spawn(w, alloc, live, &have, frame)) {
			wl_fail(w);
			break;
		}
		wl_age(w, release, live, &have, out, &out_tail, &out_seen);
		wl_publish(w, ++frame * WL_SPAWN);
	}
	/* Nobody sends after this barrier: the mailbox can be emptied. */
	pthread_barrier_wait(&run->end);
	while ((p = wl_ring_get(in, &in_head, &in_seen)))
		wl_consume(w, w->ctx, release, p);
	while (have)
		release(w->ctx, live[--have]);
	free(live);
}

/* bulk: n objects in one call, written, released in one call */

WL_INLINE void wl_bulk(struct bench_worker *w, wl_alloc_bulk_fn alloc_bulk,
		       wl_free_bulk_fn free_bulk, size_t batch)
{
	void *ctx = w->ctx;
	void *objs[WL_BULK_MAX];
	/* Calls between two updates of w->ops: WL_PUBLISH objects, or one. */
	const size_t rounds = batch < WL_PUBLISH ? WL_PUBLISH / batch : 1;
	uint64_t n = 0;

	while (!wl_stopped(w)) {
		for (size_t r = 0; r < rounds; r++) {
			size_t got = alloc_bulk(ctx, objs, batch);

			if (got < batch) {
				if (got)
					free_bulk(ctx, objs, got);
				wl_fail(w);
				return;
			}
			for (size_t i = 0; i < batch; i++)
				wl_fill(objs[i], n + i);
			free_bulk(ctx, objs, batch);
			n += batch;
		}
		wl_publish(w, n);
	}
}

/*
 * bulk32-burst: calls of WL_BULK_BATCH until WL_BURST objects are held,
 * then calls of WL_BULK_BATCH releasing the newest batch first. A cache
 * smaller than WL_BURST runs dry on the way up and overflows on the way
 * down, every round.
 */
WL_INLINE void wl_bulk_burst(struct bench_worker *w,
			     wl_alloc_bulk_fn alloc_bulk,
			     wl_free_bulk_fn free_bulk)
{
	void *ctx = w->ctx;
	void *objs[WL_BURST];
	uint64_t n = 0;

	while (!wl_stopped(w)) {
		size_t held;

		for (held = 0; held < WL_BURST; held += WL_BULK_BATCH) {
			size_t got = alloc_bulk(ctx, objs + held, WL_BULK_BATCH);

			if (got < WL_BULK_BATCH) {
				held += got;
				break;
			}
			for (size_t i = 0; i < WL_BULK_BATCH; i++)
				wl_fill(objs[held + i], n + held + i);
		}
		if (held < WL_BURST) {
			if (held)
				free_bulk(ctx, objs, held);
			wl_fail(w);
			break;
		}
		for (size_t i = WL_BURST; i > 0; i -= WL_BULK_BATCH)
			free_bulk(ctx, objs + i - WL_BULK_BATCH, WL_BULK_BATCH);
		n += WL_BURST;
		wl_publish(w, n);
	}
}

#define BENCH_WORKLOAD_LOOPS(prefix, alloc, release)                          \
	static void prefix##_pair(struct bench_worker *w)                      \
	{                                                                      \
		wl_pair(w, alloc, release);                                    \
	}                                                                      \
	static void prefix##_lifo(struct bench_worker *w)                      \
	{                                                                      \
		wl_burst(w, alloc, release, false);                            \
	}                                                                      \
	static void prefix##_shuf(struct bench_worker *w)                      \
	{                                                                      \
		wl_burst(w, alloc, release, true);                             \
	}                                                                      \
	static void prefix##_churn(struct bench_worker *w)                     \
	{                                                                      \
		wl_churn(w, alloc, release);                                   \
	}                                                                      \
	static void prefix##_handoff(struct bench_worker *w)                   \
	{                                                                      \
		wl_handoff(w, alloc, release);                                 \
	}                                                                      \
	static void prefix##_particle(struct bench_worker *w)                  \
	{                                                                      \
		wl_particle(w, alloc, release);                                \
	}

#define BENCH_WORKLOAD_FNS(prefix)                                             \
	[WL_PAIR] = prefix##_pair,                                             \
	[WL_BURST_LIFO] = prefix##_lifo,                                       \
	[WL_BURST_SHUF] = prefix##_shuf,                                       \
	[WL_CHURN] = prefix##_churn,                                           \
	[WL_HANDOFF] = prefix##_handoff,                                       \
	[WL_PARTICLE] = prefix##_particle

#define BENCH_BULK_LOOPS(prefix, alloc_bulk, free_bulk)                       \
	static void prefix##_bulk8(struct bench_worker *w)                     \
	{                                                                      \
		wl_bulk(w, alloc_bulk, free_bulk, 8);                          \
	}                                                                      \
	static void prefix##_bulk32(struct bench_worker *w)                    \
	{                                                                      \
		wl_bulk(w, alloc_bulk, free_bulk, 32);                         \
	}                                                                      \
	static void prefix##_bulk256(struct bench_worker *w)                   \
	{                                                                      \
		wl_bulk(w, alloc_bulk, free_bulk, 256);                        \
	}                                                                      \
	static void prefix##_bulk_burst(struct bench_worker *w)                \
	{                                                                      \
		wl_bulk_burst(w, alloc_bulk, free_bulk);                       \
	}

#define BENCH_BULK_FNS(prefix)                                                 \
	[WL_BULK8] = prefix##_bulk8,                                           \
	[WL_BULK32] = prefix##_bulk32,                                         \
	[WL_BULK256] = prefix##_bulk256,                                       \
	[WL_BULK32_BURST] = prefix##_bulk_burst

/* The single-object workloads, in prefix##_fns. */
#define BENCH_WORKLOADS(prefix, alloc, release)                               \
	BENCH_WORKLOAD_LOOPS(prefix, alloc, release)                           \
	static const bench_fn prefix##_fns[WL_COUNT] = {                       \
		BENCH_WORKLOAD_FNS(prefix),                                    \
	}

/* Those and the bulk workloads, in prefix##_fns. */
#define BENCH_WORKLOADS_BULK(prefix, alloc, release, alloc_bulk, free_bulk)   \
	BENCH_WORKLOAD_LOOPS(prefix, alloc, release)                           \
	BENCH_BULK_LOOPS(prefix, alloc_bulk, free_bulk)                        \
	static const bench_fn prefix##_fns[WL_COUNT] = {                       \
		BENCH_WORKLOAD_FNS(prefix),                                    \
		BENCH_BULK_FNS(prefix),                                        \
	}

#endif /* LFP_BENCH_WORKLOADS_H */
