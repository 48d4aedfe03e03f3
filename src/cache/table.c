/* SPDX-License-Identifier: MIT */
/*
 * The pools' numbers and each thread's table of its implicit caches,
 * indexed by them (lfpi_cache_tab, which lfpool.h's inline paths read):
 * numbers taken and given back, the table grown, an entry dropped, the
 * table freed at the thread's exit. registry.c decides when; this file
 * calls nothing of the cache layer.
 */
#include <sys/mman.h>

#include "cache/private.h"

/*
 * The entry of every table slot no cache fills: its pool word is its own
 * address, so it matches no pool (as an orphan's). The initial table is
 * cache_nil_tab, one entry, never written: a thread's first cache makes
 * it a table of its own (lfpi_cache_tab_put).
 */
static struct lfpi_cache_hot cache_nil = {
	.pool = (struct lfp_pool *)(void *)&cache_nil,
};
static struct lfp_cache *const cache_nil_tab[1] = {
	(struct lfp_cache *)(void *)&cache_nil,
};
LFPI_TLS struct lfpi_cache_tab lfpi_cache_tab = {
	(struct lfp_cache *)(void *)&cache_nil, (struct lfp_cache **)cache_nil_tab, 0
};

/* The initial lfpi_cache_cls, never written: every entry the nil cache.
 * A thread's first family call out of line makes one of its own. */
#define CACHE_NIL_1 (struct lfp_cache *)(void *)&cache_nil
#define CACHE_NIL_4 CACHE_NIL_1, CACHE_NIL_1, CACHE_NIL_1, CACHE_NIL_1
#define CACHE_NIL_16 CACHE_NIL_4, CACHE_NIL_4, CACHE_NIL_4, CACHE_NIL_4
static struct lfp_cache *const cache_nil_cls[LFP_FAMILY_MAX_CLASSES] = {
	CACHE_NIL_16, CACHE_NIL_16, CACHE_NIL_16, CACHE_NIL_16,
};
LFPI_TLS struct lfp_cache **lfpi_cache_cls = (struct lfp_cache **)cache_nil_cls;
/* Set while lfpi_cache_cls_put makes the thread's array. */
static LFPI_TLS bool cls_making;

/*
 * Pool numbers, one bit each, set while a pool has it: lfp_create takes
 * the lowest clear one, so the threads' tables stay as small as the
 * number of pools alive at once, and lfp_destroy clears it once no cache
 * of the pool matches it any more. Pools beyond LFPI_POOL_NUMS get
 * LFPI_NIL and are found through the thread's list (cache_mine); pools
 * without caches (LFP_F_NO_CACHE) get LFPI_NIL too.
 */
static _Atomic(uint64_t) cache_nums[LFPI_POOL_NUMS / 64];

void lfpi_cache_number(struct lfp_pool *pool)
{
	uint64_t w;
	int bit;

	pool->hot.num = LFPI_NIL;
	/* Never a cache, never an entry: its lookup reads the entry at the
	 * table's end and finds it is not its pool's. */
	if (pool->flags & LFP_F_NO_CACHE)
		return;
	for (unsigned i = 0; i < LFPI_POOL_NUMS / 64; i++) {
		w = atomic_load_explicit(&cache_nums[i], memory_order_relaxed);
		while (~w) {
			bit = __builtin_ctzll(~w);
			/* Acquire: pairs with the release in
			 * lfpi_cache_unnumber, so the caches of the
			 * number's last pool are orphans to us. */
			if (atomic_compare_exchange_weak_explicit(
				    &cache_nums[i], &w, w | UINT64_C(1) << bit,
				    memory_order_acquire, memory_order_relaxed)) {
				pool->hot.num = i * 64 + (uint32_t)bit;
				return;
			}
		}
	}
}

void lfpi_cache_unnumber(struct lfp_pool *pool)
{
	uint32_t num = pool->hot.num;

	if (num == LFPI_NIL)
		return;
	/* Release: pairs with the acquire CAS in lfpi_cache_number; the
	 * pool's caches were made orphans (lfpi_cache_destroy_all) before. */
	atomic_fetch_and_explicit(&cache_nums[num / 64],
				  ~(UINT64_C(1) << (num % 64)),
				  memory_order_release);
}

/*
 * A table's entries start TAB_SKEW bytes into its mapping, so that those
 * of the first 256 numbers (the pools a program makes first) lie in the
 * upper half of a page: every cache's first words, which the fast path stores
 * to, and every pool's number, which it loads, lie in the lower half of
 * theirs (registry.c, cache_map; a pool's mapping starts with it), so
 * the entry a lookup loads does not share its offset in a page with the
 * store the previous operation made to its cache's count: the processor
 * would take it for a dependence until it has both full addresses (4K
 * aliasing, the cost of a lookup doubled).
 */
#define TAB_SKEW 2048

static struct lfp_cache **tab_map(size_t bytes)
{
	char *p = mmap(NULL, bytes + lfpi_page_size(), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : (struct lfp_cache **)(void *)(p + TAB_SKEW);
}

static void tab_unmap(struct lfp_cache **v, size_t bytes)
{
	munmap((char *)v - TAB_SKEW, bytes + lfpi_page_size());
}

/*
 * Make c the thread's entry for its pool's number, growing the table to
 * hold it (a page of entries at first, then twice as many each time). A
 * signal handler of this thread may read the table at any point (an
 * lfp_alloc on a pool without caches reads an entry before it finds it
 * is not its pool's): the new table is filled before it is published,
 * its address is stored before its larger mask, and the old one is
 * unmapped after both, so a handler sees either table whole. Without
 * memory the entry is not made: the thread finds c through its list.
 */
void lfpi_cache_tab_put(struct lfp_cache *c)
{
	struct lfpi_cache_tab *t = &lfpi_cache_tab;
	bool none = t->v == (struct lfp_cache **)cache_nil_tab;
	uint32_t num = c->num, want;
	size_t page = lfpi_page_size(), bytes;
	struct lfp_cache **v;

	t->last = c;
	if (num == LFPI_NIL)
		return;
	if (none || num > t->mask) {
		bytes = none ? page : ((size_t)t->mask + 1) * sizeof(*v);
		while (bytes / sizeof(*v) <= num)
			bytes *= 2;
		if (bytes < page)
			bytes = page;
		v = tab_map(bytes);
		if (!v)
			return;
		want = (uint32_t)(bytes / sizeof(*v) - 1);
		for (uint32_t i = 0; i <= want; i++)
			v[i] = none || i > t->mask ? cache_nil_tab[0] : t->v[i];
		struct lfp_cache **old = t->v;
		size_t old_bytes = ((size_t)t->mask + 1) * sizeof(*v);

		/* Filled before published: the compiler may not sink the
		 * entries' stores past this one (another type). */
		atomic_signal_fence(memory_order_seq_cst);
		t->v = v;
		atomic_signal_fence(memory_order_seq_cst);
		t->mask = want;
		atomic_signal_fence(memory_order_seq_cst);
		if (!none)
			tab_unmap(old, old_bytes < page ? page : old_bytes);
	}
	t->v[num] = c;
}

/* c is about to be unmapped or handed on: its entry, if it has one, goes
 * back to the nil cache. */
void lfpi_cache_tab_drop(const struct lfp_cache *c)
{
	struct lfpi_cache_tab *t = &lfpi_cache_tab;

	if (t->last == c) {
		t->last = cache_nil_tab[0];
		atomic_signal_fence(memory_order_seq_cst);
	}
	if (c->num != LFPI_NIL && (c->num & t->mask) == c->num &&
	    t->v[c->num] == c) {
		t->v[c->num] = cache_nil_tab[0];
		atomic_signal_fence(memory_order_seq_cst);
	}
	if (lfpi_cache_cls != (struct lfp_cache **)cache_nil_cls)
		for (uint32_t i = 0; i < LFP_FAMILY_MAX_CLASSES; i++)
			if (lfpi_cache_cls[i] == c) {
				lfpi_cache_cls[i] = cache_nil_cls[0];
				atomic_signal_fence(memory_order_seq_cst);
			}
}

/*
 * Make c, the thread's implicit cache of a pool as the inline path finds
 * it (lfpi_cache_lookup), its entry for family class i; nothing if c is
 * NULL. Without memory for the thread's array the entry is not made (the
 * inline path then finds the cache through the table). As the table, a
 * signal handler of the thread may read the array at any point: it is
 * filled before it is published.
 */
void lfpi_cache_cls_put(struct lfp_cache *c, uint32_t i)
{
	struct lfp_cache **v = lfpi_cache_cls;

	if (cls_making || !c)
		return;
	if (v == (struct lfp_cache **)cache_nil_cls) {
		/* A handler that interrupts us from here on makes no array
		 * of its own, which ours would replace (a page lost). */
		cls_making = true;
		atomic_signal_fence(memory_order_seq_cst);
		v = mmap(NULL, sizeof(cache_nil_cls), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (v != MAP_FAILED) {
			for (uint32_t k = 0; k < LFP_FAMILY_MAX_CLASSES; k++)
				v[k] = cache_nil_cls[0];
			/* Filled before published. */
			atomic_signal_fence(memory_order_seq_cst);
			lfpi_cache_cls = v;
		}
		atomic_signal_fence(memory_order_seq_cst);
		cls_making = false;
		if (v == MAP_FAILED)
			return;
	}
	v[i] = c;
}

/*
 * The thread's table and class array, at its exit: back to the nil ones,
 * then unmapped. The table first: once it finds nothing, nothing makes a
 * class array again (lfpi_cache_lookup finds no cache to give
 * lfpi_cache_cls_put, and after exit
 * the out-of-line path makes no table: registry.c, cache_exited), so the
 * array unmapped here is the last one, even if a signal handler of the
 * thread made it a moment ago.
 */
void lfpi_cache_tab_free(void)
{
	struct lfpi_cache_tab *t = &lfpi_cache_tab;
	struct lfp_cache **old = t->v, **cls;
	size_t page = lfpi_page_size(), bytes = ((size_t)t->mask + 1) * sizeof(*old);

	t->last = cache_nil_tab[0];
	atomic_signal_fence(memory_order_seq_cst);
	if (old != (struct lfp_cache **)cache_nil_tab) {
		t->mask = 0;
		atomic_signal_fence(memory_order_seq_cst);
		t->v = (struct lfp_cache **)cache_nil_tab;
		atomic_signal_fence(memory_order_seq_cst);
		tab_unmap(old, bytes < page ? page : bytes);
	}
	cls = lfpi_cache_cls;
	if (cls != (struct lfp_cache **)cache_nil_cls) {
		lfpi_cache_cls = (struct lfp_cache **)cache_nil_cls;
		atomic_signal_fence(memory_order_seq_cst);
		munmap(cls, sizeof(cache_nil_cls));
	}
}
