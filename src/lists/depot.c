/* SPDX-License-Identifier: MIT */
/*
 * The depot: loaded and empty magazines on two lock-free stacks. The
 * magazines live in the pool's block, laid out for the pool's largest
 * capacity plus some for the caches' spares; a magazine is first touched
 * when first used (the bump index), so an idle pool's magazines cost no
 * resident memory. When all are in use, callers fall back on the free
 * list of single slots: no slot ever depends on a magazine being there.
 * Calls only the stack.
 */
#include <string.h>

#include "lists/depot.h"

/* slab.c lays magazines out as two words and the indices. */
_Static_assert(sizeof(struct lfpi_mag) == 2 * sizeof(uint32_t),
	       "a magazine's header is two words");

size_t lfpi_depot_bytes(uint32_t nmags, uint32_t size)
{
	return (size_t)nmags * (sizeof(struct lfpi_mag) + size * sizeof(uint32_t));
}

void lfpi_depot_init(struct lfpi_depot *d, void *mem, uint32_t nmags,
		     uint32_t size)
{
	d->mags = (char *)mem;
	d->nmags = nmags;
	d->size = size;
	d->mag_bytes = sizeof(struct lfpi_mag) + size * sizeof(uint32_t);
	atomic_init(&d->bump, 0);
	lfpi_stack_init(&d->full, d->mags + offsetof(struct lfpi_mag, next),
			d->mag_bytes);
	lfpi_stack_init(&d->empty, d->mags + offsetof(struct lfpi_mag, next),
			d->mag_bytes);
}

/* An empty magazine: a recycled one, else one never used; LFPI_NIL. */
static uint32_t depot_get_empty(struct lfpi_depot *d, uint32_t *retries)
{
	uint32_t m = lfpi_stack_pop(&d->empty, retries);
	uint32_t b;

	if (m != LFPI_NIL)
		return m;
	/* Relaxed: the number only has to be handed out once; the
	 * magazine's memory is ours alone from here on. */
	b = atomic_load_explicit(&d->bump, memory_order_relaxed);
	do
		if (b >= d->nmags)
			return LFPI_NIL;
	while (!atomic_compare_exchange_weak_explicit(&d->bump, &b, b + 1,
						      memory_order_relaxed,
						      memory_order_relaxed));
	return b;
}

bool lfpi_depot_store(struct lfpi_depot *d, const uint32_t *idx, uint32_t n,
		      uint32_t *spare, uint32_t *retries)
{
	uint32_t m = *spare;
	struct lfpi_mag *mag;

	if (m != LFPI_NIL)
		*spare = LFPI_NIL;
	else if ((m = depot_get_empty(d, retries)) == LFPI_NIL)
		return false;
	mag = lfpi_depot_mag(d, m);
	/* Relaxed: ours; the push below publishes it. */
	atomic_store_explicit(&mag->count, n, memory_order_relaxed);
	/* The caller owns idx[] (a cache it is the owner or the thief of);
	 * the push below publishes the copy. */
	memcpy(mag->idx, idx, n * sizeof(*idx));
	*retries += lfpi_stack_push(&d->full, m, m);
	return true;
}

uint32_t lfpi_depot_load(struct lfpi_depot *d, uint32_t *out, uint32_t *spare,
			 uint32_t *retries)
{
	uint32_t m = lfpi_stack_pop(&d->full, retries), n;
	struct lfpi_mag *mag;

	if (m == LFPI_NIL)
		return 0;
	mag = lfpi_depot_mag(d, m);
	/* Relaxed: ours since the pop's acquire. */
	n = atomic_load_explicit(&mag->count, memory_order_relaxed);
	memcpy(out, mag->idx, n * sizeof(*out));
	if (*spare == LFPI_NIL)
		*spare = m;
	else
		*retries += lfpi_stack_push(&d->empty, m, m);
	return n;
}

uint32_t lfpi_depot_take_one(struct lfpi_depot *d, uint32_t *retries)
{
	uint32_t m = lfpi_stack_pop(&d->full, retries), idx, n;
	struct lfpi_mag *mag;

	if (m == LFPI_NIL)
		return LFPI_NIL;
	mag = lfpi_depot_mag(d, m);
	/* Relaxed: ours since the pop's acquire, until the push below. */
	n = atomic_load_explicit(&mag->count, memory_order_relaxed) - 1;
	idx = mag->idx[n];
	atomic_store_explicit(&mag->count, n, memory_order_relaxed);
	*retries += lfpi_stack_push(n ? &d->full : &d->empty, m, m);
	return idx;
}

void lfpi_depot_put_spare(struct lfpi_depot *d, uint32_t spare)
{
	if (spare != LFPI_NIL)
		lfpi_stack_push(&d->empty, spare, spare);
}

uint32_t lfpi_depot_take_all(struct lfpi_depot *d)
{
	return lfpi_stack_pop_all(&d->full);
}

void lfpi_depot_put_back(struct lfpi_depot *d, uint32_t first)
{
	uint32_t last = first, next;

	if (first == LFPI_NIL)
		return;
	/* Relaxed: the magazines are ours since lfpi_depot_take_all. */
	while ((next = atomic_load_explicit(lfpi_stack_next(&d->full, last),
					    memory_order_relaxed)) != LFPI_NIL)
		last = next;
	lfpi_stack_push(&d->full, first, last);
}

bool lfpi_depot_is_empty(struct lfpi_depot *d)
{
	return lfpi_stack_is_empty(&d->full);
}

int lfpi_depot_walk_from(struct lfpi_depot *d, uint32_t m,
			 int (*fn)(uint32_t idx, void *arg), void *arg)
{
	struct lfpi_mag *mag;
	uint32_t n;
	int r;

	/* Relaxed: the caller owns the magazines or the pool is quiescent. */
	for (; m != LFPI_NIL;
	     m = atomic_load_explicit(&mag->next, memory_order_relaxed)) {
		mag = lfpi_depot_mag(d, m);
		n = atomic_load_explicit(&mag->count, memory_order_relaxed);
		for (uint32_t i = 0; i < n; i++)
			if ((r = fn(mag->idx[i], arg)))
				return r;
	}
	return 0;
}

int lfpi_depot_walk(struct lfpi_depot *d, int (*fn)(uint32_t idx, void *arg),
		    void *arg)
{
	/* Acquire: pairs with the release CAS in lfpi_stack_push, so the
	 * magazines' contents are visible. */
	uint64_t head = atomic_load_explicit(&d->full.head, memory_order_acquire);

	return lfpi_depot_walk_from(d, (uint32_t)head, fn, arg);
}

uint64_t lfpi_depot_slots(struct lfpi_depot *d)
{
	/* Acquire: as in lfpi_depot_walk. */
	uint64_t head = atomic_load_explicit(&d->full.head, memory_order_acquire);
	uint32_t m = (uint32_t)head, n;
	uint64_t slots = 0;

	/*
	 * Owners pop, fill, empty and push magazines meanwhile: a link or a
	 * count read here may be stale, so a magazine may be counted twice
	 * or missed, or the walk stray onto the empty magazines' stack. It
	 * reads only the atomic words (never idx[]), takes each count as at
	 * most size and follows at most nmags links, so it stays inside the
	 * depot and ends.
	 */
	for (uint32_t k = 0; m < d->nmags && k < d->nmags; k++) {
		struct lfpi_mag *mag = lfpi_depot_mag(d, m);

		n = atomic_load_explicit(&mag->count, memory_order_relaxed);
		slots += n < d->size ? n : d->size;
		m = atomic_load_explicit(&mag->next, memory_order_relaxed);
	}
	return slots;
}
