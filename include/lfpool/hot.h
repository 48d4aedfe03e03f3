/* SPDX-License-Identifier: MIT */
/*
 * lfpool/hot.h: what lfpool.h's inline fast paths stand on: the
 * portability macros (LFPI_H_*: C11 atomics, or the compiler's builtins
 * in C++), the words of caches, pools and families the fast paths read
 * (struct lfpi_cache_hot and the others), the declarations of the
 * out-of-line halves in the library, and the bits of ctl and top.
 *
 * Part of lfpool.h, not of its API: lfpool.h includes it, followed by
 * lfpool/inline.h, where its inline paths are on (not LFP_NO_INLINE).
 * Its layout changes only with the library's soname. Include lfpool.h,
 * never this file. In C++ it opens the pragmas lfpool/inline.h closes.
 */
#ifndef LFPOOL_H
#error "lfpool/hot.h is part of lfpool.h: include <lfpool.h>"
#elif !defined(LFPOOL_HOT_H)
#define LFPOOL_HOT_H

#include <errno.h>
#ifdef __cplusplus
/*
 * C++ compiles the same code, with the compiler's __atomic builtins for
 * C's atomic calls (LFPI_H_LOAD and the others) on plain fields aligned
 * as C aligns their _Atomic types: C's layout by construction, no
 * <atomic>, and no call at -O0. Its casts are C's, on
 * purpose, one text for both languages; the warnings C++ has for them
 * are silenced here, for this part of the header only.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wcast-qual"
#pragma GCC diagnostic ignored "-Wzero-as-null-pointer-constant"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuseless-cast"
#endif
#endif
/* LFPI_H_C11_ATOMICS takes C's way in C++ too: only for the memory-model
 * checks of tests/relacy, whose <stdatomic.h> is the checker's. */
#if defined(__cplusplus) && !defined(LFPI_H_C11_ATOMICS)
#define LFPI_H_ATOMIC(type) type
/* C aligns _Atomic(uint64_t) to 8 where uint64_t alone gets 4 (i386):
 * a type so aligned, so that a pointer to one is aligned as a pointer
 * (the attribute in a declaration would align the pointer field too). */
typedef uint64_t lfpi_h_u64_a8 __attribute__((aligned(8)));
#define LFPI_H_ATOMIC_U64 lfpi_h_u64_a8
#define LFPI_H_THREAD __thread
#define LFPI_H_MO_relaxed __ATOMIC_RELAXED
#define LFPI_H_MO_acquire __ATOMIC_ACQUIRE
#define LFPI_H_MO_release __ATOMIC_RELEASE
#define LFPI_H_MO_seq_cst __ATOMIC_SEQ_CST
#define LFPI_H_LOAD(p, order) __atomic_load_n(p, LFPI_H_MO_##order)
#define LFPI_H_STORE(p, v, order) __atomic_store_n(p, v, LFPI_H_MO_##order)
#define LFPI_H_SIGNAL_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#define LFPI_H_CAS(p, e, d, succ, fail)                                       \
	__atomic_compare_exchange_n(p, e, d, true, LFPI_H_MO_##succ,           \
				    LFPI_H_MO_##fail)
#else
#include <stdatomic.h>
#define LFPI_H_ATOMIC(type) _Atomic(type)
#define LFPI_H_ATOMIC_U64 _Atomic(uint64_t)
#define LFPI_H_THREAD _Thread_local
#define LFPI_H_LOAD(p, order) atomic_load_explicit(p, memory_order_##order)
#define LFPI_H_STORE(p, v, order)                                             \
	atomic_store_explicit(p, v, memory_order_##order)
#define LFPI_H_SIGNAL_FENCE() atomic_signal_fence(memory_order_seq_cst)
#define LFPI_H_CAS(p, e, d, succ, fail)                                       \
	atomic_compare_exchange_weak_explicit(p, e, d, memory_order_##succ,    \
					      memory_order_##fail)
#endif

#if defined(__GNUC__)
#define LFPI_H_LIKELY(x) __builtin_expect(!!(x), 1)
/* Inlined even where the compiler would judge the body too big: the
 * point is to have no call on the fast path. */
#define LFPI_H_INLINE static inline __attribute__((always_inline))
#else
#define LFPI_H_LIKELY(x) (x)
#define LFPI_H_INLINE static inline
#endif

/*
 * The words of a cache its owner's fast path uses, at the start of every
 * struct lfp_cache (src/cache/cache.h describes the rest and the protocol).
 * Not part of the API.
 */
struct lfpi_cache_hot {
	/*
	 * Bits 0-12 (LFPI_TOP_COUNT): how many of slots[] hold free slot
	 * indices (LFP_MAX_CACHE_SIZE fits). Bits 13-63: that count plus
	 * the allocations out of slots[] (a release adds one to both, an
	 * exchange moves both), so the allocations are this word's high
	 * part less its low part, and the allocation fast path counts for
	 * nothing (src/cache/exchange.c, cache_counts).
	 */
	LFPI_H_ATOMIC_U64 top;
	LFPI_H_ATOMIC(uint32_t) active; /* 1 while the owner is in an operation */
	LFPI_H_ATOMIC(uint32_t) ctl;    /* non-zero: take the out-of-line path */
	uint32_t size;           /* slots[] holds this many */
	/* An unchecked pool's nslots (its nslots is then 0, so the checked
	 * release never matches); 0 in every other pool. In the padding
	 * before slots, so the default pool's words stay where they were. */
	uint32_t bslots;
	/* Plain: only the owner touches them, or a thread that took the
	 * cache from it through the handshake (ownership moves with the
	 * release and acquire on active and ctl, as an object's bytes move
	 * with the free lists' CAS). */
	uint32_t *slots;
	char *objs;              /* the pool's first object */
	size_t stride;           /* bytes from one object to the next */
	LFPI_H_ATOMIC(uint32_t) *gen;   /* slot i's generation is gen[2 * i];
					   NULL in a bare pool */
	uint64_t inv;            /* stride >> shift is odd; inv is its
				    inverse modulo 2^64 */
	uint64_t shift;
	uint64_t nslots;         /* slots laid out; 0 if every release
				    takes the out-of-line path */
	LFPI_H_ATOMIC_U64 frees;  /* releases into slots[]; owner only */
	/* The cache's pool; once lfp_destroy made the cache an orphan, the
	 * cache's own address, which matches no pool (another pool may be
	 * made at the old one's address) and not NULL. */
	LFPI_H_ATOMIC(struct lfp_pool *) pool;
};

/*
 * The words of a pool the inline paths read, at the start of every
 * struct lfp_pool; read-only after lfp_create. Not part of the API.
 */
struct lfpi_pool_hot {
	/* The pool's entry in every thread's table of implicit caches
	 * (lfpi_cache_tab): a small number, reused after lfp_destroy. */
	uint32_t num;
	/*
	 * Non-zero in a pool with LFP_F_NO_CACHE and LFP_F_UNCHECKED that
	 * is not checked anyway and has no hooks: lfp_alloc and lfp_free
	 * pop and push its free list inline (lfpi_bare_alloc), with the
	 * words below, which serve no other pool. 0 in every other pool,
	 * whose inline paths then look for a cache.
	 */
	uint32_t bare;
	/* The free list's head, {tag:32 | index:32} (src/lists/stack.c). */
	LFPI_H_ATOMIC_U64 *head;
	/* Slot i's free-list link is meta[i]: a bare pool's metadata is the
	 * link alone, 4 bytes a slot. */
	LFPI_H_ATOMIC(uint32_t) *meta;
	/* Slots [0, *limit) are grown into; no other is accepted. */
	LFPI_H_ATOMIC(uint32_t) *limit;
	char *objs;              /* the pool's first object */
	size_t stride;           /* bytes from one object to the next */
	uint64_t inv;            /* as in struct lfpi_cache_hot */
	uint64_t shift;
};


/*
 * The calling thread's implicit caches, one entry per pool number (an
 * entry names the cache of pool num & mask, or a cache of no pool:
 * never NULL), and the one the out-of-line path found last, looked at
 * first (a thread on one pool then reads one word, not the pool's
 * number and an entry). Each is only a hint: it is the pool's cache if
 * that cache's pool word is the pool, checked on every use, and a
 * destroyed pool's caches match no pool. The table grows out of line, in
 * the thread's first call on a pool of a higher number. Not part of the
 * API.
 */
struct lfpi_cache_tab {
	struct lfp_cache *last; /* the cache the out-of-line path found last */
	struct lfp_cache **v;
	uint32_t mask;
};

/* Sizes a family's size map answers, in 8-byte steps. */
#define LFPI_FAMILY_MAP_MAX 4096u

/*
 * The words of a family the inline paths read, at the start of every
 * struct lfp_family; read-only after lfp_family_create. Not part of the
 * API.
 */
struct lfpi_family_hot {
	/* Class i's memory lies in [base + (i << zshift), base + (i + 1 <<
	 * zshift)): one reservation, a zone per class. */
	uintptr_t base;
	uint32_t zshift;
	uint32_t classes;
	size_t map_max;       /* the largest size map answers */
	struct {
		struct lfp_pool *pool;
		size_t size;
	} cls[LFP_FAMILY_MAX_CLASSES];
	/* Entry (size + 7) / 8: the first class that holds the step's
	 * smallest size. */
	uint8_t map[LFPI_FAMILY_MAP_MAX / 8 + 1];
	/* Class i's pool's number (struct lfpi_pool_hot), here so that a
	 * lookup of the thread's cache need not load it from the pool. */
	uint32_t num[LFP_FAMILY_MAX_CLASSES];
};

/* The start of every struct lfp_family_cache. Not part of the API. */
struct lfpi_family_cache_hot {
	const struct lfpi_family_hot *fam;
	struct lfp_cache *caches[LFP_FAMILY_MAX_CLASSES]; /* by class */
};

#if defined(__GNUC__)
/* Initial-exec: a caller in a shared object reads it with one load, no
 * __tls_get_addr (the library reserves its static TLS at load). */
#define LFPI_H_TLS __attribute__((tls_model("initial-exec")))
#else
#define LFPI_H_TLS
#endif

/*
 * The out-of-line halves, in the library (src/pool/slow.c and, for the
 * families, src/extras/family.c), and the two tables of the threads'
 * caches. Exported, because the inline paths call and read them from
 * the caller's code: with the names that lfpool.h declares, they are
 * all the library exports (tests/exports.test). Not part of the API:
 * they change only with the soname, and a program calls the lfp_ ones.
 */
LFP_API void *lfpi_cache_alloc_slow(struct lfp_cache *cache, uint32_t ctl);
/* Returns 0, so that the inline release ends in a tail call. */
LFP_API int lfpi_cache_put_slow(struct lfp_cache *cache, uint32_t idx,
				uint32_t ctl);
LFP_API int lfpi_cache_free_slow(struct lfp_cache *cache, void *obj);
LFP_API void *lfpi_alloc_slow(struct lfp_pool *pool);
LFP_API int lfpi_free_slow(struct lfp_pool *pool, void *obj);
LFP_API extern LFPI_H_THREAD struct lfpi_cache_tab lfpi_cache_tab LFPI_H_TLS;
/*
 * The calling thread's implicit caches by family class: entry i is the
 * cache the out-of-line path last found for class i of a family (any
 * family; never NULL). Only a hint, as the table's entries are: it is
 * the class's cache if its pool word is the class's pool. A thread on one
 * family reaches the class's cache with one load more than a family
 * cache's, not through the pool's number and the table.
 */
LFP_API extern LFPI_H_THREAD struct lfp_cache **lfpi_cache_cls LFPI_H_TLS;
LFP_API void *lfpi_family_alloc_slow(struct lfp_family *fam, size_t size);
LFP_API int lfpi_family_free_slow(struct lfp_family *fam, void *obj);
LFP_API void *lfpi_family_cache_alloc_slow(struct lfp_family_cache *fc,
					   size_t size);
LFP_API int lfpi_family_cache_free_slow(struct lfp_family_cache *fc,
					void *obj);

/*
 * A bit of ctl set for the cache's life in an unchecked pool that is not
 * checked anyway (LFP_F_UNCHECKED): ctl equal to it lets the fast path go
 * on without the generation word, as ctl 0 does with it. A thief's bits
 * added to it send the owner out of line as they do in any cache.
 */
#define LFPI_CTL_BARE 8u

#define LFPI_TOP_SHIFT 13
#define LFPI_TOP_COUNT ((UINT64_C(1) << LFPI_TOP_SHIFT) - 1)
#define LFPI_TOP_FREE (UINT64_C(1) << LFPI_TOP_SHIFT) /* high part + 1 */

#endif /* LFPOOL_HOT_H */
