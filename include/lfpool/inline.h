/* SPDX-License-Identifier: MIT */
/*
 * lfpool/inline.h: lfpool.h's inline fast paths: the bodies of
 * lfp_alloc, lfp_free, lfp_cache_alloc, lfp_cache_free and the family's,
 * over the structs of lfpool/hot.h, and the macros that make those calls
 * the inline functions.
 *
 * Part of lfpool.h, not of its API: lfpool.h includes it after
 * lfpool/hot.h, where its inline paths are on (not LFP_NO_INLINE).
 * Include lfpool.h, never this file. In C++ it closes the pragmas
 * lfpool/hot.h opens.
 */
#ifndef LFPOOL_H
#error "lfpool/inline.h is part of lfpool.h: include <lfpool.h>"
#elif !defined(LFPOOL_INLINE_H)
#define LFPOOL_INLINE_H

/*
 * Enter an operation on the cache's slots; returns its ctl, 0 when the
 * fast path may go on. One side of the handshake with a thread that
 * empties idle caches (src/cache/steal.c): we write active, then read ctl; it
 * writes ctl, then reads active, with membarrier(2) between, which puts
 * a full barrier into every running thread. So only the compiler must
 * keep our store and load in order. Where membarrier is missing, ctl is
 * never 0 and the out-of-line path enters again with seq_cst.
 */
LFPI_H_INLINE uint32_t lfpi_cache_enter_fast(struct lfpi_cache_hot *c)
{
	LFPI_H_STORE(&c->active, 1, relaxed);
	LFPI_H_SIGNAL_FENCE();
	/* Acquire: pairs with the release by which a thief lets go of the
	 * cache, so the count read after this is the one it left. */
	return LFPI_H_LOAD(&c->ctl, acquire);
}

/*
 * Take the slot on top of slots[] (n of them, top the word that counts
 * them), inside an operation the caller entered with ctl 0, and leave.
 */
LFPI_H_INLINE uint32_t lfpi_cache_pop_top(struct lfpi_cache_hot *c,
					  uint64_t top, uint32_t n)
{
	uint32_t idx = c->slots[n - 1];

	/* Release (a plain store on x86): pairs with the acquire load of
	 * top by a reader of the counts (src/cache/exchange.c,
	 * cache_counts), which must see the moves before this store with
	 * it, a fold among them: the one of a cache's previous owner is in
	 * no release sequence of ours (tests/relacy/cache.cc,
	 * fold_handover). */
	LFPI_H_STORE(&c->top, top - 1, release);
	/* Release: pairs with a thief's acquire load of active, so one that
	 * sees us out also sees the count we left. */
	LFPI_H_STORE(&c->active, 0, release);
	return idx;
}

LFPI_H_INLINE void *lfpi_cache_take_top(struct lfpi_cache_hot *c,
					uint64_t top, uint32_t n)
{
	LFPI_H_ATOMIC(uint32_t) *g;
	uint32_t idx = lfpi_cache_pop_top(c, top, n);

	/* The slot is ours: make its generation odd (live). Relaxed: the
	 * release that made it free reached us with the slot. */
	g = &c->gen[2 * (size_t)idx];
	LFPI_H_STORE(g, LFPI_H_LOAD(g, relaxed) + 1, relaxed);
	return c->objs + (size_t)idx * c->stride;
}

/* The same in an unchecked pool (ctl LFPI_CTL_BARE): no generation. */
LFPI_H_INLINE void *lfpi_cache_take_bare(struct lfpi_cache_hot *c,
					 uint64_t top, uint32_t n)
{
	uint32_t idx = lfpi_cache_pop_top(c, top, n);

	return c->objs + (size_t)idx * c->stride;
}

/* lfp_cache_alloc on a cache that is not NULL. */
LFPI_H_INLINE void *lfpi_cache_alloc_body(struct lfp_cache *cache)
{
	struct lfpi_cache_hot *c = (struct lfpi_cache_hot *)cache;
	uint32_t ctl, n;
	uint64_t top;

	ctl = lfpi_cache_enter_fast(c);
	top = LFPI_H_LOAD(&c->top, relaxed);
	n = (uint32_t)(top & LFPI_TOP_COUNT);
	if (LFPI_H_LIKELY(n != 0)) {
		if (LFPI_H_LIKELY(ctl == 0))
			return lfpi_cache_take_top(c, top, n);
		if (ctl == LFPI_CTL_BARE)
			return lfpi_cache_take_bare(c, top, n);
	}
	return lfpi_cache_alloc_slow(cache, ctl);
}

/*
 * An object from the cache if the fast path has one, or NULL with
 * nothing done: the operation entered is left at once, as one that
 * touched nothing (a thief that waits for it sees it out), for the
 * caller's out-of-line path to enter again.
 */
LFPI_H_INLINE void *lfpi_cache_alloc_try(struct lfp_cache *cache)
{
	struct lfpi_cache_hot *c = (struct lfpi_cache_hot *)cache;
	uint32_t ctl, n;
	uint64_t top;

	ctl = lfpi_cache_enter_fast(c);
	top = LFPI_H_LOAD(&c->top, relaxed);
	n = (uint32_t)(top & LFPI_TOP_COUNT);
	if (LFPI_H_LIKELY(n != 0)) {
		if (LFPI_H_LIKELY(ctl == 0))
			return lfpi_cache_take_top(c, top, n);
		if (ctl == LFPI_CTL_BARE)
			return lfpi_cache_take_bare(c, top, n);
	}
	/* Release: as in lfpi_cache_take_top. */
	LFPI_H_STORE(&c->active, 0, release);
	return (void *)0;
}

/*
 * The slot of obj in the cache's pool, by exact division: with stride =
 * odd << shift, the product by the odd part's inverse, rotated right by
 * shift, is the quotient when obj is an object's start, and is beyond any
 * slot (>= nslots) for every other address (NULL, foreign, interior):
 * those, and releases that need checks, go out of line.
 */
LFPI_H_INLINE uint64_t lfpi_cache_slot_of(const struct lfpi_cache_hot *c,
					  const void *obj)
{
	uint64_t off = (uint64_t)((uintptr_t)obj - (uintptr_t)c->objs);
	uint64_t q = off * c->inv;

	/* 64 bits until compared: a 32-bit size_t would cut the high bits
	 * that make every other address fail. */
	return q >> c->shift | q << ((64 - c->shift) & 63);
}

/* The generation word of slot idx (< nslots). */
LFPI_H_INLINE LFPI_H_ATOMIC(uint32_t) *lfpi_cache_gen(const struct lfpi_cache_hot *c,
					       uint64_t idx)
{
	return &c->gen[2 * (size_t)idx];
}

/*
 * Put slot idx on top of slots[] (n of them, top the word that counts
 * them, n below size), inside an operation the caller entered with the
 * ctl its path wants, count the release, and leave.
 */
LFPI_H_INLINE void lfpi_cache_push_top(struct lfpi_cache_hot *c,
				       uint64_t top, uint32_t n, uint64_t idx)
{
	c->slots[n] = (uint32_t)idx;
	/* Release: as in lfpi_cache_alloc_inline. */
	LFPI_H_STORE(&c->top, top + 1 + LFPI_TOP_FREE, release);
	/* Owner only, inside the operation (a fork sees it with top), a
	 * load and a store. Release: pairs with the acquire load of frees
	 * in src/cache/exchange.c (cache_counts), so a reader that counts
	 * this release also sees the allocation it followed. Kept here
	 * rather than derived from top and counts kept by the exchanges
	 * (which would need a sequence on every exchange): without it an
	 * unchecked cache's pair was 0-2.5% faster, 3 instructions fewer
	 * with gcc and 1 with clang (a default pool's pair, 6-8%). */
	LFPI_H_STORE(&c->frees, LFPI_H_LOAD(&c->frees, relaxed) + 1, release);
	/* Release: as in lfpi_cache_alloc_inline. */
	LFPI_H_STORE(&c->active, 0, release);
}

/*
 * Put slot idx, released, into the cache: on its fast path if ctl is
 * want (0, or LFPI_CTL_BARE in an unchecked pool) and there is room.
 */
LFPI_H_INLINE int lfpi_cache_push(struct lfp_cache *cache, uint64_t idx,
				  uint32_t want)
{
	struct lfpi_cache_hot *c = (struct lfpi_cache_hot *)cache;
	uint64_t top;
	uint32_t ctl, n;

	ctl = lfpi_cache_enter_fast(c);
	top = LFPI_H_LOAD(&c->top, relaxed);
	n = (uint32_t)(top & LFPI_TOP_COUNT);
	if (!LFPI_H_LIKELY(ctl == want) || !LFPI_H_LIKELY(n != c->size))
		return lfpi_cache_put_slow(cache, (uint32_t)idx, ctl);
	lfpi_cache_push_top(c, top, n, idx);
	return 0;
}

/*
 * Release slot idx (< nslots) into the cache, its generation gen (odd,
 * live) read from g.
 */
LFPI_H_INLINE int lfpi_cache_free_live(struct lfp_cache *cache, uint64_t idx,
				       LFPI_H_ATOMIC(uint32_t) *g, uint32_t gen)
{
	/* Relaxed: see lfpi_mark_free in src/pool/pool.h. */
	LFPI_H_STORE(g, gen + 1, relaxed);
	return lfpi_cache_push(cache, idx, 0);
}

/* lfp_cache_free on a cache that is not NULL. */
LFPI_H_INLINE int lfpi_cache_free_body(struct lfp_cache *cache, void *obj)
{
	const struct lfpi_cache_hot *c = (const struct lfpi_cache_hot *)cache;
	uint64_t idx = lfpi_cache_slot_of(c, obj);
	LFPI_H_ATOMIC(uint32_t) *g;
	uint32_t gen;

	if (!LFPI_H_LIKELY(idx < c->nslots)) {
		/* An unchecked pool's object: no generation to look at. */
		if (idx < c->bslots)
			return lfpi_cache_push(cache, idx, LFPI_CTL_BARE);
		return lfpi_cache_free_slow(cache, obj);
	}
	g = lfpi_cache_gen(c, idx);
	gen = LFPI_H_LOAD(g, relaxed);
	/* Free already (even): out of line, to be refused. A live
	 * generation is odd, so a handle never names generation 0; here it
	 * may wrap to 0 after 2^31 uses of the slot, which only the ctor and
	 * the debug tools would read as "never used", and their pools
	 * release out of line (nslots is 0), where 0 is skipped. */
	if (!LFPI_H_LIKELY(gen & 1))
		return lfpi_cache_free_slow(cache, obj);
	return lfpi_cache_free_live(cache, idx, g, gen);
}

LFPI_H_INLINE void *lfpi_cache_alloc_inline(struct lfp_cache *cache)
{
	if (!LFPI_H_LIKELY(cache != (struct lfp_cache *)0))
		return (void *)0;
	return lfpi_cache_alloc_body(cache);
}

LFPI_H_INLINE int lfpi_cache_free_inline(struct lfp_cache *cache, void *obj)
{
	if (!LFPI_H_LIKELY(cache != (struct lfp_cache *)0))
		return -EINVAL;
	return lfpi_cache_free_body(cache, obj);
}

/*
 * The calling thread's table entry for pool (not NULL): its implicit
 * cache of pool if lfpi_cache_is_of says so; otherwise the out-of-line
 * path finds or makes one.
 */
LFPI_H_INLINE struct lfp_cache *lfpi_cache_entry_of(uint32_t num)
{
	return lfpi_cache_tab.v[num & lfpi_cache_tab.mask];
}

LFPI_H_INLINE struct lfp_cache *lfpi_cache_entry(const struct lfp_pool *pool)
{
	return lfpi_cache_entry_of(((const struct lfpi_pool_hot *)pool)->num);
}

LFPI_H_INLINE bool lfpi_cache_is_of(struct lfp_cache *c,
				    const struct lfp_pool *pool)
{
	/* Relaxed: a cache's pool word is written once, by the lfp_destroy
	 * that makes it an orphan (its own address, matching no pool),
	 * which happens before any call on a pool made later at the same
	 * address or with the same number (that number's release and
	 * acquire in src/cache/table.c order it). */
	return LFPI_H_LOAD(&((struct lfpi_cache_hot *)c)->pool, relaxed) == pool;
}

#define LFPI_H_TAG_ONE (UINT64_C(1) << 32) /* the head's tag, plus one */
#define LFPI_H_TAG_OF(head) ((head) & ~(uint64_t)UINT32_MAX)

/*
 * lfp_alloc in a bare pool (lfpi_pool_hot.bare): pop the free list's top
 * slot with one CAS, as lfpi_stack_pop does (src/lists/stack.c). An empty
 * list goes out of line, where fresh slots, growth and the exhaustion
 * policy are.
 */
LFPI_H_INLINE void *lfpi_bare_alloc(const struct lfpi_pool_hot *h,
				    struct lfp_pool *pool)
{
	/* Acquire: pairs with the release CAS of lfpi_bare_free and of
	 * lfpi_stack_push, so the link read below is the one the pusher of
	 * the top slot stored. */
	LFPI_H_ATOMIC_U64 *head = h->head;
	LFPI_H_ATOMIC(uint32_t) *meta = h->meta;
	uint64_t old = LFPI_H_LOAD(head, acquire), next;
	uint32_t top;

	/* head and meta in locals: read once, not again after each CAS. */
	do {
		top = (uint32_t)old;
		if (!LFPI_H_LIKELY(top != UINT32_MAX))
			return lfpi_alloc_slow(pool);
		/*
		 * Another thread may pop the top slot, and push it back with
		 * another link, while we read this one: harmless, since its
		 * pop bumped the tag and our CAS then fails.
		 */
		next = (LFPI_H_TAG_OF(old) + LFPI_H_TAG_ONE) |
		       LFPI_H_LOAD(&meta[top], relaxed);
		/* Acquire on failure: old is then read as by the first
		 * load. On success the object's last owner's writes come
		 * before ours through the acquire that read old; acquire
		 * on success for the reasons lfpi_stack_pop gives (C11,
		 * and a tag that wraps). */
	} while (!LFPI_H_CAS(head, &old, next, acquire, acquire));
	return h->objs + (size_t)top * h->stride;
}

/*
 * lfp_free in a bare pool: the slot by exact division, as
 * lfpi_cache_slot_of finds it; any address that is not the start of an
 * object the pool has grown into (NULL, foreign, interior) goes out of
 * line to be refused. Then push the slot with one CAS.
 */
LFPI_H_INLINE int lfpi_bare_free(const struct lfpi_pool_hot *h,
				 struct lfp_pool *pool, void *obj)
{
	uint64_t off = (uint64_t)((uintptr_t)obj - (uintptr_t)h->objs);
	uint64_t q = off * h->inv, idx, old;
	LFPI_H_ATOMIC_U64 *head = h->head;
	LFPI_H_ATOMIC(uint32_t) *link;

	idx = q >> h->shift | q << ((64 - h->shift) & 63);
	/* Relaxed: a thread that was handed an object of a segment grown
	 * later saw that limit (see lfpi_mark_free in src/pool/pool.h). */
	if (!LFPI_H_LIKELY(idx < LFPI_H_LOAD(h->limit, relaxed)))
		return lfpi_free_slow(pool, obj);
	link = &h->meta[idx];
	old = LFPI_H_LOAD(head, relaxed);
	do
		/* The slot is ours until the CAS publishes it. */
		LFPI_H_STORE(link, (uint32_t)old, relaxed);
	/* Release: publishes the link and the caller's writes to the
	 * object; pairs with the acquire load and CAS of lfpi_bare_alloc
	 * and lfpi_stack_pop. Pushes keep the tag: only removals need to
	 * change it. */
	while (!LFPI_H_CAS(head, &old, LFPI_H_TAG_OF(old) | idx, release,
			   relaxed));
	return 0;
}

LFPI_H_INLINE void *lfpi_alloc_inline(struct lfp_pool *pool)
{
	struct lfp_cache *c = lfpi_cache_tab.last;
	const struct lfpi_pool_hot *h = (const struct lfpi_pool_hot *)pool;

	if (LFPI_H_LIKELY(lfpi_cache_is_of(c, pool)))
		return lfpi_cache_alloc_body(c);
	if (LFPI_H_LIKELY(pool != (struct lfp_pool *)0)) {
		if (h->bare)
			return lfpi_bare_alloc(h, pool);
		if (LFPI_H_LIKELY(lfpi_cache_is_of(
			    c = lfpi_cache_entry_of(h->num), pool)))
			return lfpi_cache_alloc_body(c);
	}
	return lfpi_alloc_slow(pool);
}

LFPI_H_INLINE int lfpi_free_inline(struct lfp_pool *pool, void *obj)
{
	struct lfp_cache *c = lfpi_cache_tab.last;
	const struct lfpi_pool_hot *h = (const struct lfpi_pool_hot *)pool;

	if (LFPI_H_LIKELY(lfpi_cache_is_of(c, pool)))
		return lfpi_cache_free_body(c, obj);
	if (LFPI_H_LIKELY(pool != (struct lfp_pool *)0)) {
		if (h->bare)
			return lfpi_bare_free(h, pool, obj);
		if (LFPI_H_LIKELY(lfpi_cache_is_of(
			    c = lfpi_cache_entry_of(h->num), pool)))
			return lfpi_cache_free_body(c, obj);
	}
	return lfpi_free_slow(pool, obj);
}

/* The class whose zone holds obj; >= classes if none does. */
LFPI_H_INLINE uint64_t lfpi_family_zone(const struct lfpi_family_hot *f,
					const void *obj)
{
	return (uint64_t)((uintptr_t)obj - f->base) >> f->zshift;
}

/* Whether the inline path finds the calling thread's implicit cache of
 * pool, whose number is num; if so, sets *out to it. */
LFPI_H_INLINE bool lfpi_cache_find(const struct lfp_pool *pool, uint32_t num,
				   struct lfp_cache **out)
{
	struct lfp_cache *c = lfpi_cache_tab.last;

	if (!LFPI_H_LIKELY(lfpi_cache_is_of(c, pool)) &&
	    !LFPI_H_LIKELY(lfpi_cache_is_of(c = lfpi_cache_entry_of(num), pool)))
		return false;
	*out = c;
	return true;
}

/* Whether the inline path finds the calling thread's implicit cache of
 * class c of f; if so, sets *out to it. */
LFPI_H_INLINE bool lfpi_family_find(const struct lfpi_family_hot *f,
				    uint32_t c, struct lfp_cache **out)
{
	struct lfp_cache *k = lfpi_cache_cls[c];

	if (LFPI_H_LIKELY(lfpi_cache_is_of(k, f->cls[c].pool))) {
		*out = k;
		return true;
	}
	return lfpi_cache_find(f->cls[c].pool, f->num[c], out);
}

/*
 * Put slot idx of an unchecked pool into the cache if its fast path can
 * (ctl is LFPI_CTL_BARE and there is room): 0; otherwise 1, with the
 * operation entered left at once as one that touched nothing, for the
 * caller's out-of-line path (which then has no second call site here
 * to share).
 */
LFPI_H_INLINE int lfpi_cache_push_try(struct lfp_cache *cache, uint64_t idx)
{
	struct lfpi_cache_hot *c = (struct lfpi_cache_hot *)cache;
	uint64_t top;
	uint32_t ctl, n;

	ctl = lfpi_cache_enter_fast(c);
	top = LFPI_H_LOAD(&c->top, relaxed);
	n = (uint32_t)(top & LFPI_TOP_COUNT);
	if (ctl == LFPI_CTL_BARE && n != c->size) {
		lfpi_cache_push_top(c, top, n, idx);
		return 0;
	}
	/* Release: as in lfpi_cache_take_top. */
	LFPI_H_STORE(&c->active, 0, release);
	return 1;
}

/*
 * Release obj into cache if the fast path can (obj is a live object's
 * start in the cache's pool): 0; otherwise 1, with nothing done.
 */
LFPI_H_INLINE int lfpi_cache_free_try(struct lfp_cache *cache, void *obj)
{
	const struct lfpi_cache_hot *c = (const struct lfpi_cache_hot *)cache;
	uint64_t idx = lfpi_cache_slot_of(c, obj);
	LFPI_H_ATOMIC(uint32_t) *g;
	uint32_t gen;

	if (!LFPI_H_LIKELY(idx < c->nslots))
		return idx < c->bslots ? lfpi_cache_push_try(cache, idx) : 1;
	g = lfpi_cache_gen(c, idx);
	gen = LFPI_H_LOAD(g, relaxed);
	if (!LFPI_H_LIKELY(gen & 1))
		return 1;
	/* It returns 0 always; the callers see the constant. */
	(void)lfpi_cache_free_live(cache, idx, g, gen);
	return 0;
}

/*
 * The class a family serves size from, if the size map answers it at
 * once, or UINT32_MAX: size 0 or beyond the map, or a size above the
 * step's first class (classes need not be multiples of 8), which the
 * out-of-line path decides.
 */
LFPI_H_INLINE uint32_t lfpi_family_class_fast(const struct lfpi_family_hot *f,
					      size_t size)
{
	uint32_t c;

	if (!LFPI_H_LIKELY(size - 1 < f->map_max))
		return UINT32_MAX;
	c = f->map[(size + 7) / 8];
	return LFPI_H_LIKELY(size <= f->cls[c].size) ? c : UINT32_MAX;
}

LFPI_H_INLINE void *lfpi_family_alloc_inline(struct lfp_family *fam,
					     size_t size)
{
	const struct lfpi_family_hot *f = (const struct lfpi_family_hot *)fam;
	struct lfp_cache *cache;
	uint32_t c;
	void *obj;

	if (LFPI_H_LIKELY(f != (const struct lfpi_family_hot *)0) &&
	    LFPI_H_LIKELY((c = lfpi_family_class_fast(f, size)) != UINT32_MAX) &&
	    LFPI_H_LIKELY(lfpi_family_find(f, c, &cache)) &&
	    LFPI_H_LIKELY((obj = lfpi_cache_alloc_try(cache)) != (void *)0))
		return obj;
	return lfpi_family_alloc_slow(fam, size);
}

LFPI_H_INLINE int lfpi_family_free_inline(struct lfp_family *fam, void *obj)
{
	const struct lfpi_family_hot *f = (const struct lfpi_family_hot *)fam;
	struct lfp_cache *cache;
	uint64_t z;

	if (LFPI_H_LIKELY(f != (const struct lfpi_family_hot *)0) &&
	    LFPI_H_LIKELY((z = lfpi_family_zone(f, obj)) < f->classes) &&
	    LFPI_H_LIKELY(lfpi_family_find(f, (uint32_t)z, &cache)) &&
	    LFPI_H_LIKELY(!lfpi_cache_free_try(cache, obj)))
		return 0;
	return lfpi_family_free_slow(fam, obj);
}

LFPI_H_INLINE void *lfpi_family_cache_alloc_inline(struct lfp_family_cache *fc,
						   size_t size)
{
	const struct lfpi_family_cache_hot *h =
		(const struct lfpi_family_cache_hot *)fc;
	uint32_t c;
	void *obj;

	if (LFPI_H_LIKELY(h != (const struct lfpi_family_cache_hot *)0) &&
	    LFPI_H_LIKELY((c = lfpi_family_class_fast(h->fam, size)) !=
			  UINT32_MAX) &&
	    LFPI_H_LIKELY((obj = lfpi_cache_alloc_try(h->caches[c])) !=
			  (void *)0))
		return obj;
	return lfpi_family_cache_alloc_slow(fc, size);
}

LFPI_H_INLINE int lfpi_family_cache_free_inline(struct lfp_family_cache *fc,
						void *obj)
{
	const struct lfpi_family_cache_hot *h =
		(const struct lfpi_family_cache_hot *)fc;
	uint64_t z;

	if (LFPI_H_LIKELY(h != (const struct lfpi_family_cache_hot *)0) &&
	    LFPI_H_LIKELY((z = lfpi_family_zone(h->fam, obj)) <
			  h->fam->classes) &&
	    LFPI_H_LIKELY(!lfpi_cache_free_try(h->caches[z], obj)))
		return 0;
	return lfpi_family_cache_free_slow(fc, obj);
}

#ifdef __cplusplus
#pragma GCC diagnostic pop
#endif

#ifndef LFPI_BUILDING
#define lfp_cache_alloc(cache) lfpi_cache_alloc_inline(cache)
#define lfp_cache_free(cache, obj) lfpi_cache_free_inline(cache, obj)
#define lfp_alloc(pool) lfpi_alloc_inline(pool)
#define lfp_free(pool, obj) lfpi_free_inline(pool, obj)
#define lfp_family_alloc(fam, size) lfpi_family_alloc_inline(fam, size)
#define lfp_family_free(fam, obj) lfpi_family_free_inline(fam, obj)
#define lfp_family_cache_alloc(fc, size)                                      \
	lfpi_family_cache_alloc_inline(fc, size)
#define lfp_family_cache_free(fc, obj)                                        \
	lfpi_family_cache_free_inline(fc, obj)
#endif

#endif /* LFPOOL_INLINE_H */
