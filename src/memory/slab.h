/* SPDX-License-Identifier: MIT */
/*
 * The memory layer (memory/, above lists/, below tools/): the slab. How
 * big a pool is, where its parts lie in one block of memory, where the
 * block comes from; slot index <-> object pointer; the bump index of slots
 * never used. Calls nothing above it.
 */
#ifndef LFPOOL_SLAB_H
#define LFPOOL_SLAB_H

#include "memory/block.h"


#define LFPI_KNOWN_FLAGS                                                      \
	(LFP_F_NO_CACHE | LFP_F_STRICT | LFP_F_POISON | LFP_F_HUGEPAGE |      \
	 LFP_F_WAIT_DEFERRED | LFP_F_UNCHECKED)

/* The huge page LFP_F_HUGEPAGE aligns the object region to: the PMD size
 * of x86-64 and of arm64 with 4 KiB pages. */
#define LFPI_HUGE_PAGE ((size_t)2 << 20)

struct lfpi_layout {
	size_t align;     /* object alignment */
	size_t stride;    /* object size rounded up to align */
	size_t slots_off; /* offset of the metadata array */
	size_t meta;      /* its bytes per slot: 4 if bare, else 8 */
	bool bare;        /* no generation words (struct lfp_pool.bare) */
	size_t mags_off;  /* offset of the depot's magazines */
	uint32_t nmags;   /* magazines laid out */
	size_t objs_off;  /* offset of the object region */
	size_t total;     /* bytes for header, metadata and objects */
	size_t base_align;/* alignment the whole block needs */
	uint32_t cache_size; /* slots per thread cache */
	uint32_t batch;      /* slots per exchange */
	uint32_t initial;    /* slots usable at creation */
	uint32_t slots;      /* slots laid out (max_capacity) */
};

/* The layout of a pool made from cfg: 0 or -errno, with *fault (if
 * fault is not NULL) set to the name of the field refused, if one was
 * (lfp_config_fault). bare: the pool keeps no generation words (the
 * caller knows whether a debug tool will watch it, which keeps them). */
int lfpi_layout(const struct lfp_config *cfg, bool bare,
		struct lfpi_layout *out, const char **fault);
/* The field a pool's size that overflows is blamed on: align if the
 * caller set it larger than obj_size, else obj_size. */
const char *lfpi_size_field(const struct lfp_config *cfg);
size_t lfpi_map_len(size_t size, size_t align);
void *lfpi_map(size_t size, size_t commit, size_t align, size_t at,
	       void *where, void **map, size_t *map_size);
/* len bytes of address space, PROT_NONE: the start, or NULL. */
void *lfpi_reserve(size_t len);
/* Make [addr, addr+len) of a reservation PROT_NONE again. */
void lfpi_uncommit(void *addr, size_t len);
/* The memory of a pool laid out as l, mapped (with LFP_F_HUGEPAGE in flags,
 * advised and placed for huge pages) at where if not NULL (see lfpi_map):
 * its base, or NULL. lfpi_map_pool_len says how many bytes it maps (0:
 * too many). */
size_t lfpi_map_pool_len(const struct lfpi_layout *l, uint32_t flags);
void *lfpi_map_pool(const struct lfpi_layout *l, uint32_t flags, void *where,
		    void **map, size_t *map_size);
/* madvise(MADV_HUGEPAGE): 0 or -errno. A pointer so that tests can make
 * the advice fail. */
extern int (*lfpi_advise_huge)(void *addr, size_t len);
int lfpi_advise_huge_madvise(void *addr, size_t len);
size_t lfpi_page_size(void);
/* Make [addr, addr+len) usable: 0 or -errno. A pointer so that tests can
 * inject a failure to get memory. */
extern int (*lfpi_commit)(void *addr, size_t len);
int lfpi_commit_mprotect(void *addr, size_t len);
void lfpi_unmap(void *map, size_t map_size);

/*
 * Index of the slot that starts at ptr, or LFPI_NIL with *err set to
 * -EFAULT (outside the region) or -EINVAL (inside, not a slot start).
 */
static inline uint32_t lfpi_slot_of(const struct lfp_pool *pool,
				    const void *ptr, int *err)
{
	uintptr_t off = (uintptr_t)ptr - (uintptr_t)pool->objs;
	size_t idx;

	/* Unsigned wrap makes pointers below objs huge, hence outside. */
	if (LFPI_UNLIKELY(off >= pool->region_size)) {
		*err = -EFAULT;
		return LFPI_NIL;
	}
	if (pool->stride_shift)
		idx = off >> pool->stride_shift;
	else
		idx = off / pool->stride;
	if (LFPI_UNLIKELY(idx * pool->stride != off)) {
		*err = -EINVAL;
		return LFPI_NIL;
	}
	return (uint32_t)idx;
}

static inline void *lfpi_obj(const struct lfp_pool *pool, uint32_t idx)
{
	return pool->objs + (size_t)idx * pool->stride;
}


/* Take up to n never-used slots: returns how many, the first in *first. */
uint32_t lfpi_slab_bump(struct lfp_pool *pool, uint32_t n, uint32_t *first);

#endif /* LFPOOL_SLAB_H */
