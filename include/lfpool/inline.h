/* SPDX-License-Identifier: MIT */
/*
 * lfpool/inline.h: lfpool.h's inline fast paths: the bodies of
 * lfp_alloc, lfp_free, lfp_cache_alloc, lfp_cache_free, the family's and
 * the bulk calls (lfp_cache_alloc_bulk, lfp_cache_free_bulk,
 * lfp_alloc_bulk, lfp_free_bulk), over the structs of lfpool/hot.h, and
 * the macros that make those calls the inline functions.
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
	/* Release: as in lfpi_cache_pop_top. */
	LFPI_H_STORE(&c->active, 0, release);
	return (void *)0;
}

/*
 * The slot of obj in a pool whose first object is at objs, by exact
 * division: with stride = odd << shift, the product by the odd part's
 * inverse inv, rotated right by shift, is the quotient when obj is an
 * object's start, and is beyond any slot (>= nslots) for every other
 * address (NULL, foreign, interior): those, and releases that need
 * checks, go out of line.
 */
LFPI_H_INLINE uint64_t lfpi_slot_by_div(uintptr_t objs, uint64_t inv,
				    uint64_t shift, const void *obj)
{
	uint64_t q = (uint64_t)((uintptr_t)obj - objs) * inv;

	/* 64 bits until compared: a 32-bit size_t would cut the high bits
	 * that make every other address fail. */
	return q >> shift | q << ((64 - shift) & 63);
}

/* The slot of obj in the cache's pool. */
LFPI_H_INLINE uint64_t lfpi_cache_slot_of(const struct lfpi_cache_hot *c,
					  const void *obj)
{
	return lfpi_slot_by_div((uintptr_t)c->objs, c->inv, c->shift, obj);
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
	/* Release: as in lfpi_cache_pop_top (the count). */
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
	/* Release: as in lfpi_cache_pop_top (leaving). */
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
 * The bulk calls' fast paths: a run of slots moved in one operation, each
 * slot checked and turned into a pointer (or back) in the same pass, as
 * the single paths do one at a time. What they cannot do at once (a
 * cache that holds too few or has too little room, a thief's request, a
 * pool with quirks, an object that needs checking out of line) goes to
 * the out-of-line call of the same name, which does the rest; the
 * parentheses around its name keep lfpool.h's macros off it.
 */

/*
 * An unchecked pool's objects whose stride is a power of two (1 <<
 * shift): slots and pointers convert with a shift, two at a time in the
 * SSE2 registers of x86-64, which every such processor has.
 */
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define LFPI_H_SSE2 1
#endif

/* objs[i] = the object of slot s[-1 - i], for i < k. */
LFPI_H_INLINE void lfpi_cache_take_wide(const uint32_t *s, void **objs,
					uint32_t k, char *base, uint64_t shift)
{
	uint32_t i = 0;
#ifdef LFPI_H_SSE2
	const __m128i vbase = _mm_set1_epi64x((long long)(uintptr_t)base);
	const __m128i count = _mm_cvtsi32_si128((int)shift);
	const __m128i zero = _mm_setzero_si128();

	for (; i + 4 <= k; i += 4) {
		/* s[-4 - i .. -1 - i], reversed: the top slot first. */
		__m128i v = _mm_shuffle_epi32(
			_mm_loadu_si128(
				(const __m128i *)(const void *)(s - 4 - i)),
			0x1b);
		__m128i lo = _mm_unpacklo_epi32(v, zero);
		__m128i hi = _mm_unpackhi_epi32(v, zero);

		lo = _mm_add_epi64(_mm_sll_epi64(lo, count), vbase);
		hi = _mm_add_epi64(_mm_sll_epi64(hi, count), vbase);
		_mm_storeu_si128((__m128i *)(void *)(objs + i), lo);
		_mm_storeu_si128((__m128i *)(void *)(objs + i + 2), hi);
	}
#endif
	for (; i < k; i++)
		objs[i] = base + ((size_t)s[-1 - (ptrdiff_t)i] << shift);
}

/*
 * s[i] = the slot of objs[i], for i < n, as lfpi_slot_by_div finds it
 * with inv 1 (shift < 32), stopping at the first object that is not the
 * start of one of the first bslots slots. Returns how many were put.
 */
LFPI_H_INLINE uint32_t lfpi_cache_put_wide(uint32_t *s, void *const *objs,
					   uint32_t n, uintptr_t base,
					   uint64_t shift, uint32_t bslots)
{
	uint32_t i = 0;
	uint64_t idx;
#ifdef LFPI_H_SSE2
	const __m128i vbase = _mm_set1_epi64x((long long)base);
	const __m128i count = _mm_cvtsi32_si128((int)shift);
	const __m128i high = _mm_cvtsi32_si128((int)shift + 32);
	const __m128i low =
		_mm_set1_epi64x((long long)((UINT64_C(1) << shift) - 1));
	const __m128i flip = _mm_set1_epi32(INT32_MIN);
	const __m128i limit = _mm_xor_si128(_mm_set1_epi32((int)bslots), flip);
	__m128i bad = _mm_setzero_si128(), below;

	for (; i + 4 <= n; i += 4) {
		__m128i a = _mm_sub_epi64(
			_mm_loadu_si128(
				(const __m128i *)(const void *)(objs + i)),
			vbase);
		__m128i b = _mm_sub_epi64(
			_mm_loadu_si128(
				(const __m128i *)(const void *)(objs + i + 2)),
			vbase);
		__m128i ab = _mm_or_si128(a, b);
		__m128i v = _mm_castps_si128(_mm_shuffle_ps(
			_mm_castsi128_ps(_mm_srl_epi64(a, count)),
			_mm_castsi128_ps(_mm_srl_epi64(b, count)), 0x88));

		/* Not an object's start (low bits set), or beyond 2^32
		 * slots either way (high bits: an address below base
		 * wraps there too). */
		bad = _mm_or_si128(bad, _mm_or_si128(_mm_and_si128(ab, low),
						     _mm_srl_epi64(ab, high)));
		/* v >= bslots, unsigned: signed with the top bits flipped. */
		below = _mm_cmplt_epi32(_mm_xor_si128(v, flip), limit);
		bad = _mm_or_si128(bad, _mm_andnot_si128(below, flip));
		_mm_storeu_si128((__m128i *)(void *)(s + i), v);
	}
	/* Some object among them goes out of line: find the first one,
	 * one at a time from the start (what was stored above the count
	 * is the owner's until the count moves). */
	if (_mm_movemask_epi8(_mm_cmpeq_epi32(bad, _mm_setzero_si128())) !=
	    0xffff)
		i = 0;
#endif
	for (; i < n; i++) {
		idx = lfpi_slot_by_div(base, 1, shift, objs[i]);
		if (!LFPI_H_LIKELY(idx < bslots))
			break;
		s[i] = (uint32_t)idx;
	}
	return i;
}

/* A default pool's run this long or longer takes two passes, the
 * objects or slots first (four at a time where they can be), then the
 * generations; a shorter one, one pass. */
#define LFPI_H_RUN_WIDE 16

/*
 * Take k slots off the top of slots[] (cnt of them, top the word that
 * counts them, k <= cnt) into objs as objects, inside an operation the
 * caller entered with ctl 0 or LFPI_CTL_BARE, and leave. With ctl 0 each
 * generation is made odd (live), as lfpi_cache_take_top does; an
 * unchecked pool's (LFPI_CTL_BARE) has none.
 */
LFPI_H_INLINE void lfpi_cache_take_objs(struct lfpi_cache_hot *c, uint32_t ctl,
				       uint64_t top, uint32_t cnt, void **objs,
				       uint32_t k)
{
	/* In locals: the stores below could otherwise alias them. */
	const uint32_t *s = c->slots + cnt;
	char *base = c->objs;
	size_t stride = c->stride;
	LFPI_H_ATOMIC(uint32_t) *gen = c->gen;
	uint32_t i;

	if (ctl == 0 && k < LFPI_H_RUN_WIDE)
		/* A short run of a default pool: one pass. */
		for (i = 0; i < k; i++) {
			uint32_t idx = s[-1 - (ptrdiff_t)i];
			LFPI_H_ATOMIC(uint32_t) *g = &gen[2 * (size_t)idx];

			/* Relaxed: as in lfpi_cache_take_top. The slot is
			 * ours: no thief reaches slots[] while we are in. */
			LFPI_H_STORE(g, LFPI_H_LOAD(g, relaxed) + 1, relaxed);
			objs[i] = base + (size_t)idx * stride;
		}
	else {
		/* The objects first (four at a time where they can be),
		 * then, in a default pool, the generations. */
		if (c->inv == 1)
			lfpi_cache_take_wide(s, objs, k, base, c->shift);
		else
			for (i = 0; i < k; i++)
				objs[i] = base +
					  (size_t)s[-1 - (ptrdiff_t)i] * stride;
		if (ctl == 0)
			for (i = 0; i < k; i++) {
				LFPI_H_ATOMIC(uint32_t) *g =
					&gen[2 * (size_t)s[-1 - (ptrdiff_t)i]];

				/* Relaxed: as above. */
				LFPI_H_STORE(g, LFPI_H_LOAD(g, relaxed) + 1,
					     relaxed);
			}
	}
	/* Release: as in lfpi_cache_pop_top, for all k at once. */
	LFPI_H_STORE(&c->top, top - k, release);
	/* Release: as in lfpi_cache_pop_top (leaving). */
	LFPI_H_STORE(&c->active, 0, release);
}

/*
 * Check objs[0..n) as the fast release path checks one object, mark each
 * free and put its slot at slots[cnt + i] (n slots of room there),
 * inside an operation entered with ctl 0 or LFPI_CTL_BARE, stopping at
 * the first object that must go out of line. Returns how many were put:
 * counted by lfpi_cache_put_done.
 */
LFPI_H_INLINE uint32_t lfpi_cache_put_objs(struct lfpi_cache_hot *c,
					  uint32_t ctl, uint32_t cnt,
					  void *const *objs, uint32_t n)
{
	/* In locals: the stores below could otherwise alias them. */
	uint32_t *s = c->slots + cnt, i, k;
	uintptr_t base = (uintptr_t)c->objs;
	uint64_t inv = c->inv, shift = c->shift, idx;
	/* The slots there are: a default pool's, or an unchecked one's. */
	uint64_t bound = ctl == 0 ? c->nslots : c->bslots;
	LFPI_H_ATOMIC(uint32_t) *gen = c->gen;

	if (ctl == 0 && n < LFPI_H_RUN_WIDE) {
		/* A short run of a default pool: one pass. */
		for (i = 0; i < n; i++) {
			LFPI_H_ATOMIC(uint32_t) *g;
			uint32_t v;

			idx = lfpi_slot_by_div(base, inv, shift, objs[i]);
			if (!LFPI_H_LIKELY(idx < bound))
				break;
			g = &gen[2 * (size_t)idx];
			v = LFPI_H_LOAD(g, relaxed);
			/* Free already, earlier in this run too: out of
			 * line, to be refused. */
			if (!LFPI_H_LIKELY(v & 1))
				break;
			/* Relaxed: see lfpi_mark_free in src/pool/pool.h. */
			LFPI_H_STORE(g, v + 1, relaxed);
			s[i] = (uint32_t)idx;
		}
		return i;
	}
	/* First the slots, up to the first object that is no object's
	 * start in the pool. */
	if (inv == 1 && shift < 32) {
		k = lfpi_cache_put_wide(s, objs, n, base, shift,
					(uint32_t)bound);
	} else {
		for (k = 0; k < n; k++) {
			idx = lfpi_slot_by_div(base, inv, shift, objs[k]);
			if (!LFPI_H_LIKELY(idx < bound))
				break;
			s[k] = (uint32_t)idx;
		}
	}
	if (ctl != 0)
		return k;
	/* Then, in a default pool, each generation, up to the first object
	 * already free (earlier in this run too): out of line, to be
	 * refused. */
	for (i = 0; i < k; i++) {
		LFPI_H_ATOMIC(uint32_t) *g = &gen[2 * (size_t)s[i]];
		uint32_t v = LFPI_H_LOAD(g, relaxed);

		if (!LFPI_H_LIKELY(v & 1))
			break;
		/* Relaxed: see lfpi_mark_free in src/pool/pool.h. */
		LFPI_H_STORE(g, v + 1, relaxed);
	}
	return i;
}

/* Count the k slots lfpi_cache_put_objs put above the count top read,
 * as k releases, and leave. */
LFPI_H_INLINE void lfpi_cache_put_done(struct lfpi_cache_hot *c, uint64_t top,
				       uint32_t k)
{
	/* Release: as in lfpi_cache_push_top, for all k at once. */
	LFPI_H_STORE(&c->top, top + k * (1 + LFPI_TOP_FREE), release);
	/* Release: as in lfpi_cache_push_top (the releases' count). */
	LFPI_H_STORE(&c->frees, LFPI_H_LOAD(&c->frees, relaxed) + k, release);
	/* Release: as in lfpi_cache_pop_top (leaving). */
	LFPI_H_STORE(&c->active, 0, release);
}

/* lfp_cache_alloc_bulk on a cache that is not NULL. */
LFPI_H_INLINE size_t lfpi_cache_alloc_bulk_body(struct lfp_cache *cache,
						void **objs, size_t n)
{
	struct lfpi_cache_hot *c = (struct lfpi_cache_hot *)cache;
	uint32_t ctl, cnt;
	uint64_t top;

	ctl = lfpi_cache_enter_fast(c);
	top = LFPI_H_LOAD(&c->top, relaxed);
	cnt = (uint32_t)(top & LFPI_TOP_COUNT);
	if (LFPI_H_LIKELY((ctl & ~LFPI_CTL_BARE) == 0) &&
	    LFPI_H_LIKELY(n <= cnt) && LFPI_H_LIKELY(objs != (void **)0)) {
		lfpi_cache_take_objs(c, ctl, top, cnt, objs, (uint32_t)n);
		return n;
	}
	/* Release: as in lfpi_cache_pop_top (leaving). */
	LFPI_H_STORE(&c->active, 0, release);
	return (lfp_cache_alloc_bulk)(cache, objs, n);
}

/* lfp_cache_free_bulk on a cache that is not NULL. */
LFPI_H_INLINE size_t lfpi_cache_free_bulk_body(struct lfp_cache *cache,
					       void *const *objs, size_t n)
{
	struct lfpi_cache_hot *c = (struct lfpi_cache_hot *)cache;
	uint32_t ctl, cnt, k;
	uint64_t top;

	ctl = lfpi_cache_enter_fast(c);
	top = LFPI_H_LOAD(&c->top, relaxed);
	cnt = (uint32_t)(top & LFPI_TOP_COUNT);
	if (LFPI_H_LIKELY((ctl & ~LFPI_CTL_BARE) == 0) &&
	    LFPI_H_LIKELY(n <= c->size - cnt) &&
	    LFPI_H_LIKELY(objs != (void *const *)0)) {
		k = lfpi_cache_put_objs(c, ctl, cnt, objs, (uint32_t)n);
		lfpi_cache_put_done(c, top, k);
		if (LFPI_H_LIKELY(k == n))
			return n;
		/* The rest out of line, from the object that stopped us. */
		return k + (lfp_cache_free_bulk)(cache, objs + k, n - k);
	}
	/* Release: as in lfpi_cache_pop_top (leaving). */
	LFPI_H_STORE(&c->active, 0, release);
	return (lfp_cache_free_bulk)(cache, objs, n);
}

LFPI_H_INLINE size_t lfpi_cache_alloc_bulk_inline(struct lfp_cache *cache,
						  void **objs, size_t n)
{
	if (!LFPI_H_LIKELY(cache != (struct lfp_cache *)0))
		return 0;
	return lfpi_cache_alloc_bulk_body(cache, objs, n);
}

LFPI_H_INLINE size_t lfpi_cache_free_bulk_inline(struct lfp_cache *cache,
						 void *const *objs, size_t n)
{
	if (!LFPI_H_LIKELY(cache != (struct lfp_cache *)0))
		return 0;
	return lfpi_cache_free_bulk_body(cache, objs, n);
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
 * lfp_free in a bare pool: the slot by exact division (lfpi_slot_by_div);
 * any address that is not the start of an object the pool has grown into
 * (NULL, foreign, interior) goes out of line to be refused. Then push the
 * slot with one CAS.
 */
LFPI_H_INLINE int lfpi_bare_free(const struct lfpi_pool_hot *h,
				 struct lfp_pool *pool, void *obj)
{
	uint64_t idx, old;
	LFPI_H_ATOMIC_U64 *head = h->head;
	LFPI_H_ATOMIC(uint32_t) *link;

	idx = lfpi_slot_by_div((uintptr_t)h->objs, h->inv, h->shift, obj);
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

LFPI_H_INLINE size_t lfpi_alloc_bulk_inline(struct lfp_pool *pool,
					    void **objs, size_t n)
{
	struct lfp_cache *c;

	if (LFPI_H_LIKELY(pool != (struct lfp_pool *)0) &&
	    LFPI_H_LIKELY(lfpi_cache_find(
		    pool, ((const struct lfpi_pool_hot *)pool)->num, &c)))
		return lfpi_cache_alloc_bulk_body(c, objs, n);
	return (lfp_alloc_bulk)(pool, objs, n);
}

LFPI_H_INLINE size_t lfpi_free_bulk_inline(struct lfp_pool *pool,
					   void *const *objs, size_t n)
{
	struct lfp_cache *c;

	if (LFPI_H_LIKELY(pool != (struct lfp_pool *)0) &&
	    LFPI_H_LIKELY(lfpi_cache_find(
		    pool, ((const struct lfpi_pool_hot *)pool)->num, &c)))
		return lfpi_cache_free_bulk_body(c, objs, n);
	return (lfp_free_bulk)(pool, objs, n);
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
	/* Release: as in lfpi_cache_pop_top (leaving). */
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
/* Variadic: a C++ argument with a template's comma stays one argument. */
#define lfp_cache_alloc_bulk(...) lfpi_cache_alloc_bulk_inline(__VA_ARGS__)
#define lfp_cache_free_bulk(...) lfpi_cache_free_bulk_inline(__VA_ARGS__)
#define lfp_alloc_bulk(...) lfpi_alloc_bulk_inline(__VA_ARGS__)
#define lfp_free_bulk(...) lfpi_free_bulk_inline(__VA_ARGS__)
#define lfp_family_alloc(fam, size) lfpi_family_alloc_inline(fam, size)
#define lfp_family_free(fam, obj) lfpi_family_free_inline(fam, obj)
#define lfp_family_cache_alloc(fc, size)                                      \
	lfpi_family_cache_alloc_inline(fc, size)
#define lfp_family_cache_free(fc, obj)                                        \
	lfpi_family_cache_free_inline(fc, obj)
#endif

#endif /* LFPOOL_INLINE_H */
