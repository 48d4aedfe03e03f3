/* SPDX-License-Identifier: MIT */
/*
 * Giving idle memory back to the system: lfp_trim.
 *
 * A trim takes the whole shared free list aside with one pop_all, marks
 * its slots, gives back the pages that hold nothing but those slots, and
 * pushes the chains back. Slots in thread caches count as in use. An
 * allocation that finds the list empty while a trim has it aside must not
 * fail for it: trim_seq is odd while the list is aside and changes with
 * every trim, and the allocation path (lfpi_exhausted in grow.c) looks
 * again if it changed since the allocation began.
 *
 * Only resident pages are given back (mincore), so a trim of a pool that
 * is already trimmed costs little and counts nothing twice. A pool with a
 * constructor keeps its promise that constructed state survives release:
 * each slot on a page given back is marked in the pool's ctor_due table,
 * and its next handout runs the constructor again (lfpi_trim_reborn).
 *
 * Scratch memory comes from mmap, never from malloc. Calls the lists and
 * the slab.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "base/probes.h"
#include "memory/slab.h"
#include "pool/trim.h"

/* Pages asked about with one mincore call. */
#define TRIM_CHUNK 256

static void *trim_map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static size_t trim_table_bytes(const struct lfp_pool *pool)
{
	return ((size_t)pool->capacity / 64 + 1) * sizeof(uint64_t);
}

/* The ctor_due table, mapped on the first trim of a pool with a
 * constructor; NULL without memory. Caller holds grow_lock. */
static _Atomic(uint64_t) *trim_ctor_table(struct lfp_pool *pool)
{
	_Atomic(uint64_t) *t =
		atomic_load_explicit(&pool->ctor_due, memory_order_relaxed);

	if (t || !pool->ctor)
		return t;
	/* Anonymous memory reads as zeroes: every word starts at 0. */
	t = (_Atomic(uint64_t) *)trim_map(trim_table_bytes(pool));
	/* Release: pairs with the acquire load in lfpi_trim_reborn. */
	if (t)
		atomic_store_explicit(&pool->ctor_due, t, memory_order_release);
	return t;
}

bool lfpi_trim_reborn(struct lfp_pool *pool, uint32_t idx)
{
	/* Acquire: pairs with the release store in trim_ctor_table. */
	_Atomic(uint64_t) *t =
		atomic_load_explicit(&pool->ctor_due, memory_order_acquire);
	uint64_t bit = UINT64_C(1) << (idx % 64);

	/*
	 * Relaxed: the trim set our bit before it pushed the slot back, and
	 * the stack's release/acquire brought the slot (and the bit) to us.
	 * The word is shared with other slots, hence the read-modify-write.
	 */
	if (!t || !(atomic_load_explicit(&t[idx / 64], memory_order_relaxed) & bit))
		return false;
	atomic_fetch_and_explicit(&t[idx / 64], ~bit, memory_order_relaxed);
	return true;
}

void lfpi_trim_destroy(struct lfp_pool *pool)
{
	_Atomic(uint64_t) *t =
		atomic_load_explicit(&pool->ctor_due, memory_order_relaxed);

	if (t)
		munmap((void *)t, trim_table_bytes(pool));
}

static bool trim_bit(const uint64_t *bits, uint32_t i)
{
	return bits[i / 64] >> (i % 64) & 1;
}

static int trim_mark(uint32_t i, void *bits)
{
	((uint64_t *)bits)[i / 64] |= UINT64_C(1) << (i % 64);
	return 0;
}

/* Mark every slot of the chain from `first` (linked by next) in bits;
 * returns its last slot. */
static uint32_t trim_mark_chain(struct lfp_pool *pool, uint32_t first,
				uint64_t *bits)
{
	uint32_t i = first, last = LFPI_NIL;

	/* Relaxed: the chain is ours since lfpi_stack_pop_all. */
	for (; i != LFPI_NIL;
	     last = i, i = atomic_load_explicit(lfpi_slot_next(pool, i),
						memory_order_relaxed))
		trim_mark(i, bits);
	return last;
}

/* The slots that share a byte with [from, to) will need their ctor again. */
static void trim_mark_due(struct lfp_pool *pool, _Atomic(uint64_t) *due,
			  uintptr_t from, uintptr_t to)
{
	uint32_t i = (uint32_t)((from - (uintptr_t)pool->objs) / pool->stride);
	uint32_t last = (uint32_t)((to - 1 - (uintptr_t)pool->objs) / pool->stride);

	for (; i <= last; i++)
		/* Relaxed: published with the slot by the push that ends
		 * the trim (see lfpi_trim_reborn). */
		atomic_fetch_or_explicit(&due[i / 64], UINT64_C(1) << (i % 64),
					 memory_order_relaxed);
}

/* Give back the resident pages of [from, to), page-aligned and holding
 * idle slots only. Returns the bytes given back. */
static size_t trim_give_back(struct lfp_pool *pool, _Atomic(uint64_t) *due,
			     uintptr_t from, uintptr_t to)
{
	size_t page = lfpi_page_size(), bytes = 0, n, i, j;
	unsigned char vec[TRIM_CHUNK];
	uintptr_t a, b;

	for (; from < to; from += n * page) {
		n = (to - from) / page < TRIM_CHUNK ? (to - from) / page
						    : TRIM_CHUNK;
		if (mincore((void *)from, n * page, vec))
			memset(vec, 1, n); /* cannot tell: treat as resident */
		for (i = 0; i < n; i = j) {
			for (j = i; j < n && (vec[j] & 1); j++)
				;
			if (j == i) {
				j++;
				continue;
			}
			a = from + i * page;
			b = from + j * page;
			if (madvise((void *)a, b - a, MADV_DONTNEED))
				continue;
			bytes += b - a;
			if (due)
				trim_mark_due(pool, due, a, b);
		}
	}
	return bytes;
}

/*
 * Give back the whole pages inside each run of idle slots marked in bits.
 * Nothing at or past the bump index is given back: those pages were never
 * touched, and another thread may be taking a fresh slot there and
 * writing it right now (on the page that holds the boundary, too).
 */
static size_t trim_idle(struct lfp_pool *pool, const uint64_t *bits,
			uint32_t bump, _Atomic(uint64_t) *due)
{
	size_t page = lfpi_page_size(), bytes = 0;
	uintptr_t from, to;
	uint32_t a, b;

	for (a = 0;; a = b + 1) {
		while (a < bump && !trim_bit(bits, a))
			a++;
		if (a >= bump)
			break;
		for (b = a; b < bump && trim_bit(bits, b); b++)
			;
		from = ((uintptr_t)lfpi_obj(pool, a) + page - 1) & ~(page - 1);
		to = (uintptr_t)lfpi_obj(pool, b) & ~(page - 1);
		if (to > from)
			bytes += trim_give_back(pool, due, from, to);
	}
	return bytes;
}

/* With grow_lock held and the free list not empty a moment ago. */
static size_t trim_locked(struct lfp_pool *pool)
{
	uint32_t limit = atomic_load_explicit(&pool->limit, memory_order_relaxed);
	uint32_t seq = atomic_load_explicit(&pool->trim_seq, memory_order_relaxed);
	size_t bits_size = ((size_t)limit / 64 + 1) * sizeof(uint64_t), bytes;
	_Atomic(uint64_t) *due = trim_ctor_table(pool);
	uint32_t chain, last, mags, bump;
	uint64_t *bits;

	if ((pool->ctor && !due) || !(bits = (uint64_t *)trim_map(bits_size)))
		return 0;
	/* Relaxed: published by the release in lfpi_stack_pop_all. Only
	 * trims write it, and they hold grow_lock. */
	atomic_store_explicit(&pool->trim_seq, seq + 1, memory_order_relaxed);
	mags = lfpi_depot_take_all(&pool->depot);
	chain = lfpi_stack_pop_all(&pool->free);
	lfpi_depot_walk_from(&pool->depot, mags, trim_mark, bits);
	last = trim_mark_chain(pool, chain, bits);
	bump = atomic_load_explicit(&pool->bump, memory_order_relaxed);
	bytes = trim_idle(pool, bits, bump, due);
	if (bytes) /* Relaxed: read by the debug fill check, which runs
		    * after the slot came back through the stack. */
		atomic_store_explicit(&pool->trimmed, 1, memory_order_relaxed);
	lfpi_depot_put_back(&pool->depot, mags);
	if (chain != LFPI_NIL)
		lfpi_stack_push(&pool->free, chain, last);
	/* Release: pairs with the acquire loads in lfpi_want_init and
	 * lfpi_exhausted (grow.c), and in bare.c's count of live slots; the
	 * chains are back before a waiter looks (tests/relacy/pool.cc). */
	atomic_store_explicit(&pool->trim_seq, seq + 2, memory_order_release);
	munmap(bits, bits_size);
	return bytes;
}

size_t lfp_trim(struct lfp_pool *pool)
{
	size_t bytes = 0;

	if (!pool || !pool->map)
		return 0;
	lfpi_lock(&pool->grow_lock);
	/* An empty list has nothing to give back; leaving trim_seq alone
	 * then spares allocations on an exhausted pool a second look. */
	if (!lfpi_stack_is_empty(&pool->free) ||
	    !lfpi_depot_is_empty(&pool->depot))
		bytes = trim_locked(pool);
	lfpi_unlock(&pool->grow_lock);
	atomic_fetch_add_explicit(&lfpi_my_shard(pool)->trimmed_bytes, bytes,
				  memory_order_relaxed);
	LFPI_PROBE(trim, pool, bytes);
	return bytes;
}
