/* SPDX-License-Identifier: MIT */
/*
 * The slab: how big a pool is, where its parts lie in one block of memory,
 * and where that block comes from.
 *
 * One block holds, in order: the pool header, the per-slot metadata, the
 * depot's magazines and the objects. The objects start on a boundary of max(LFP_MEMORY_ALIGN, align),
 * so every object is aligned and the hot header words keep their own lines.
 * Calls nothing of lfpool's; reads the lists' types to lay them out.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memory/slab.h"

/* Magazines beyond one per batch of slots. */
#define SLAB_SPARE_MAGS 32

static bool slab_is_pow2(size_t x)
{
	return x && !(x & (x - 1));
}

/* Round x up to a multiple of a (a power of two); false on overflow. */
static bool slab_round_up(size_t x, size_t a, size_t *out)
{
	size_t r;

	if (__builtin_add_overflow(x, a - 1, &r))
		return false;
	*out = r & ~(a - 1);
	return true;
}

/*
 * A magazine for every batch of slots, and some for the caches' spares
 * and part-filled ones; past that, slots wait on the free list (depot.c).
 * Counted in 64 bits: with a batch of one slot near LFP_MAX_CAPACITY the
 * spares would wrap a 32-bit count to a few magazines (and a size far too
 * small). Magazine numbers are 32-bit indices below LFPI_NIL, so the
 * count stops at LFP_MAX_CAPACITY, one a slot at least, which loses
 * nothing: a store that finds no magazine puts its slots on the free
 * list.
 */
static uint32_t slab_mags(uint32_t slots, uint32_t batch)
{
	uint64_t n = (uint64_t)slots / batch + (slots % batch != 0) +
		     SLAB_SPARE_MAGS;

	return n > LFP_MAX_CAPACITY ? LFP_MAX_CAPACITY : (uint32_t)n;
}

/*
 * The default cache: 1024 slots (two magazines of 512), fewer in pools
 * under 4096 slots (a quarter of the capacity, at least 2), so that a
 * pool sized for what is live, as engines size them, still serves a
 * burst of 1024 from the cache (with a sixty-fourth, a 7,168-slot pool
 * had 112 slots and a burst went through the depot 18 times each way);
 * idle caches holding many slots cause no false exhaustion, since a
 * starving thread takes them (steal.c). Measured (lfpbench, bursts of 1024 released in random
 * order, 64 B objects): with caches of 256 two threads' bursts spill
 * magazines into the depot, each other's slots come back, and the
 * generation words those slots share a cache line with ping-pong between
 * the cores: 11.6 ns an operation at 2 threads against 3.9 at one; with
 * 1024, 3.9 and 3.6.
 */
static uint32_t slab_cache_size(const struct lfp_config *cfg)
{
	uint32_t n = cfg->capacity / 4;

	return n < 2 ? 2 : n > 1024 ? 1024 : n;
}

/*
 * Refuse a configuration for a field of it: err, with *fault (if not
 * NULL) naming the field, for lfp_config_fault.
 */
static int slab_refuse(const char **fault, const char *field, int err)
{
	if (fault)
		*fault = field;
	return err;
}

/* The flags, the exhaust policy and what each needs: 0, or -EINVAL
 * naming the first field at fault. */
static int slab_check_policy(const struct lfp_config *cfg, const char **fault)
{
	if (cfg->flags & ~LFPI_KNOWN_FLAGS)
		return slab_refuse(fault, "flags", -EINVAL);
	if (cfg->max_capacity && cfg->max_capacity < cfg->capacity)
		return slab_refuse(fault, "max_capacity", -EINVAL);
	if (cfg->exhaust > LFP_EXHAUST_ABORT)
		return slab_refuse(fault, "exhaust", -EINVAL);
	if (cfg->exhaust == LFP_EXHAUST_RECLAIM && !cfg->reclaim)
		return slab_refuse(fault, "reclaim", -EINVAL);
	if (cfg->exhaust == LFP_EXHAUST_GROW && !cfg->max_capacity)
		return slab_refuse(fault, "max_capacity", -EINVAL);
	/* An unchecked pool has no generation to check atomically, nor to
	 * tell a slot's first handout by (lfpool.h, LFP_F_UNCHECKED). */
	if ((cfg->flags & LFP_F_UNCHECKED) && (cfg->flags & LFP_F_STRICT))
		return slab_refuse(fault, "flags", -EINVAL);
	if ((cfg->flags & LFP_F_UNCHECKED) && cfg->ctor)
		return slab_refuse(fault, "ctor", -EINVAL);
	return 0;
}

const char *lfpi_size_field(const struct lfp_config *cfg)
{
	/* Only an align the caller chose: a default one larger than the
	 * object (16 bytes for 8-byte objects) is not theirs to change. */
	return cfg->align > cfg->obj_size ? "align" : "obj_size";
}

int lfpi_layout(const struct lfp_config *cfg, bool bare,
		struct lfpi_layout *out, const char **fault)
{
	struct lfpi_layout l;
	size_t meta, objs, mags;
	const char *size_field;
	int err;

	if (!cfg)
		return -EINVAL;
	if (cfg->obj_size == 0)
		return slab_refuse(fault, "obj_size", -EINVAL);
	if (cfg->capacity == 0)
		return slab_refuse(fault, "capacity", -EINVAL);
	l.align = cfg->align ? cfg->align : alignof(max_align_t);
	if (!slab_is_pow2(l.align))
		return slab_refuse(fault, "align", -EINVAL);
	if (cfg->capacity > LFP_MAX_CAPACITY)
		return slab_refuse(fault, "capacity", -EOVERFLOW);
	if (cfg->max_capacity > LFP_MAX_CAPACITY)
		return slab_refuse(fault, "max_capacity", -EOVERFLOW);
	if ((err = slab_check_policy(cfg, fault)))
		return err;
	/* A bare pool's metadata is its free-list link alone. */
	l.bare = bare && (cfg->flags & LFP_F_UNCHECKED);
	l.meta = l.bare ? sizeof(_Atomic(uint32_t)) : sizeof(struct lfpi_slot);
	l.initial = cfg->capacity;
	l.slots = cfg->max_capacity ? cfg->max_capacity : cfg->capacity;
	l.base_align = l.align > LFP_MEMORY_ALIGN ? l.align : LFP_MEMORY_ALIGN;
	size_field = lfpi_size_field(cfg);
	if (!slab_round_up(cfg->obj_size, l.align, &l.stride))
		return slab_refuse(fault, size_field, -EOVERFLOW);
	if (__builtin_mul_overflow((size_t)l.slots, l.meta, &meta) ||
	    __builtin_mul_overflow((size_t)l.slots, l.stride, &objs))
		return slab_refuse(fault, size_field, -EOVERFLOW);
	if (cfg->cache_size > LFP_MAX_CACHE_SIZE)
		return slab_refuse(fault, "cache_size", -EINVAL);
	l.cache_size = cfg->cache_size ? cfg->cache_size : slab_cache_size(cfg);
	/* A batch larger than the cache, default size included, is refused
	 * rather than cut down: the caller asked for something else. */
	if (cfg->batch_size > l.cache_size)
		return slab_refuse(fault, "batch_size", -EINVAL);
	l.batch = cfg->batch_size ? cfg->batch_size
				  : (l.cache_size + 1) / 2;
	l.nmags = slab_mags(l.slots, l.batch);
	/* struct lfpi_mag (depot.h): two words, then the indices; the depot
	 * checks that this is its size. */
	if (__builtin_mul_overflow((size_t)l.nmags,
				   (2 + (size_t)l.batch) * sizeof(uint32_t),
				   &mags) ||
	    !slab_round_up(sizeof(struct lfp_pool), LFPI_CACHELINE, &l.slots_off) ||
	    __builtin_add_overflow(l.slots_off, meta, &meta) ||
	    !slab_round_up(meta, LFPI_CACHELINE, &l.mags_off) ||
	    __builtin_add_overflow(l.mags_off, mags, &mags) ||
	    !slab_round_up(mags, l.base_align, &l.objs_off) ||
	    __builtin_add_overflow(l.objs_off, objs, &l.total))
		return slab_refuse(fault, size_field, -EOVERFLOW);
	*out = l;
	return 0;
}

size_t lfpi_page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

int lfpi_commit_mprotect(void *addr, size_t len)
{
	return mprotect(addr, len, PROT_READ | PROT_WRITE) ? -errno : 0;
}

int (*lfpi_commit)(void *addr, size_t len) = lfpi_commit_mprotect;

/*
 * Map size bytes such that base + at is aligned to align (at is a multiple
 * of the alignment the block itself needs, so base keeps that too), of
 * which the first `commit` are usable and the rest only reserved
 * (PROT_NONE: no memory is committed for it until the pool grows into it,
 * see grow.c). Anonymous mappings are zero-filled and resident only once
 * touched, which is what makes a large pool cheap until it is used.
 * Alignment beyond a page is had by mapping extra and skipping to the
 * boundary: lfpi_map_len bytes in all. With `where` (page-aligned, inside
 * a private, anonymous, PROT_NONE reservation of the caller that has room
 * for them), that part of the reservation is committed in place by
 * mprotect, which never unmaps: a MAP_FIXED mmap over it that failed
 * could leave a hole for another mapping to take (Linux before 6.12),
 * and one that succeeded would escape RLIMIT_DATA.
 */
size_t lfpi_map_len(size_t size, size_t align)
{
	size_t len, extra = align > lfpi_page_size() ? align : 0;

	return __builtin_add_overflow(size, extra, &len) ? 0 : len;
}

void *lfpi_map(size_t size, size_t commit, size_t align, size_t at,
	       void *where, void **map, size_t *map_size)
{
	size_t page = lfpi_page_size();
	size_t len = lfpi_map_len(size, align), clen = len;
	uintptr_t base;
	void *p = where;

	if (!len)
		return NULL;
	if (!where) {
		p = mmap(NULL, len,
			 commit < size ? PROT_NONE : PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
	}
	base = align > page
		       ? (((uintptr_t)p + at + align - 1) & ~(uintptr_t)(align - 1)) - at
		       : (uintptr_t)p;
	if (commit < size)
		clen = (base - (uintptr_t)p + commit + page - 1) & ~(page - 1);
	if ((commit < size || where) && lfpi_commit(p, clen)) {
		if (where)
			lfpi_uncommit(where, len);
		else
			munmap(p, len);
		return NULL;
	}
	*map = p;
	*map_size = len;
	return (void *)base;
}

void *lfpi_reserve(size_t len)
{
	void *p = mmap(NULL, len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void lfpi_uncommit(void *addr, size_t len)
{
	/* Only after a failure, on memory nothing uses: if mprotect fails
	 * too, the range stays usable, which harms no one. */
	(void)mprotect(addr, len, PROT_NONE);
}

int lfpi_advise_huge_madvise(void *addr, size_t len)
{
#ifdef MADV_HUGEPAGE
	return madvise(addr, len, MADV_HUGEPAGE) ? -errno : 0;
#else
	(void)addr;
	(void)len;
	return -ENOTSUP;
#endif
}

int (*lfpi_advise_huge)(void *addr, size_t len) = lfpi_advise_huge_madvise;

/*
 * With LFP_F_HUGEPAGE the object region starts on a huge-page boundary
 * and the mapping reaches to the end of the huge page that holds the last
 * object: a huge page can back only a stretch that is aligned and wholly
 * inside the mapping. The whole mapping is advised (the metadata is
 * walked beside the objects); the advice is applied to the reserved tail
 * of a growable pool too, which keeps it when grow.c commits it. A failed
 * madvise (no THP in this kernel) leaves the pool on normal pages: the
 * flag is a hint, so creation does not fail for it.
 */
/* What lfpi_map_pool maps for l: 0 on overflow. */
static int slab_plan(const struct lfpi_layout *l, uint32_t flags,
		     size_t *size, size_t *commit, size_t *align, size_t *at)
{
	*commit = l->objs_off + (size_t)l->initial * l->stride;
	*size = l->total;
	*align = l->base_align;
	*at = 0;
	if ((flags & LFP_F_HUGEPAGE) && l->base_align < LFPI_HUGE_PAGE) {
		*align = LFPI_HUGE_PAGE;
		*at = l->objs_off;
		if (!slab_round_up(l->total - *at, LFPI_HUGE_PAGE, size) ||
		    __builtin_add_overflow(*size, *at, size))
			return 0;
	}
	/* All of it usable unless the pool may grow: a PROT_NONE tail would
	 * split the last huge page's stretch off into a mapping of its own. */
	if (l->initial == l->slots)
		*commit = *size;
	return 1;
}

size_t lfpi_map_pool_len(const struct lfpi_layout *l, uint32_t flags)
{
	size_t size, commit, align, at;

	return slab_plan(l, flags, &size, &commit, &align, &at)
		       ? lfpi_map_len(size, align)
		       : 0;
}

void *lfpi_map_pool(const struct lfpi_layout *l, uint32_t flags, void *where,
		    void **map, size_t *map_size)
{
	size_t size, commit, align, at;
	void *base;

	if (!slab_plan(l, flags, &size, &commit, &align, &at))
		return NULL;
	base = lfpi_map(size, commit, align, at, where, map, map_size);
	if (base && (flags & LFP_F_HUGEPAGE))
		(void)lfpi_advise_huge(*map, *map_size);
	return base;
}

void lfpi_unmap(void *map, size_t map_size)
{
	if (map)
		munmap(map, map_size);
}

/* Slots usable now. Relaxed: a stale, smaller limit only makes a pointer
 * into the newest segment look foreign to a thread that cannot have been
 * handed an object there yet. */
static uint32_t slab_limit(const struct lfp_pool *pool)
{
	return atomic_load_explicit(&((struct lfp_pool *)pool)->limit,
				    memory_order_relaxed);
}

bool lfp_owns(const struct lfp_pool *pool, const void *ptr)
{
	if (!pool || !ptr)
		return false;
	return (uintptr_t)ptr - (uintptr_t)pool->objs <
	       (size_t)slab_limit(pool) * pool->stride;
}

uint32_t lfp_index_of(const struct lfp_pool *pool, const void *obj)
{
	int err;

	uint32_t idx;

	if (!pool || !obj)
		return LFP_NO_INDEX;
	idx = lfpi_slot_of(pool, obj, &err);
	return idx < slab_limit(pool) ? idx : LFP_NO_INDEX;
}

void *lfp_at(const struct lfp_pool *pool, uint32_t index)
{
	if (!pool || index >= slab_limit(pool))
		return NULL;
	return lfpi_obj(pool, index);
}

uint32_t lfpi_slab_bump(struct lfp_pool *pool, uint32_t n, uint32_t *first)
{
	uint32_t b = atomic_load_explicit(&pool->bump, memory_order_relaxed);
	uint32_t take, limit;

	/*
	 * Relaxed bump: fresh slots' metadata was zeroed when the pool was
	 * made, before any thread could see the pool, and nobody else writes
	 * it. Acquire limit: pairs with the release store in grow.c, after
	 * which the new segment's memory is committed.
	 */
	do {
		limit = atomic_load_explicit(&pool->limit, memory_order_acquire);
		if (b >= limit)
			return 0;
		take = limit - b < n ? limit - b : n;
	} while (!atomic_compare_exchange_weak_explicit(
		&pool->bump, &b, b + take, memory_order_relaxed,
		memory_order_relaxed));
	*first = b;
	return take;
}
