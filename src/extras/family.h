/* SPDX-License-Identifier: MIT */
/*
 * The top layer (extras/, above pool/): what is built on pools, whose
 * calls lfpool.h declares. A family and its family caches, as family.c
 * (creation, routing, introspection) and family_cache.c (the family
 * caches) both see them. Private to extras/.
 */
#ifndef LFPI_EXTRAS_FAMILY_H
#define LFPI_EXTRAS_FAMILY_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "pool/pool.h"

struct lfp_family {
	/* Read-only after lfp_family_create. */
	struct lfpi_family_hot hot; /* first: lfpool.h reads it */
	uint32_t spill;
	void *map;                  /* the zones' reservation */
	size_t map_size;

	/* Every family cache ever made of the family; pushed, never
	 * unlinked, reused once given up. */
	_Atomic(struct lfp_family_cache *) caches;

	/* Bumped only when an allocation fails or spills, or a release is
	 * refused: off the common paths, on a line of their own. Relaxed
	 * throughout: they are statistics and order nothing. */
	alignas(64) _Atomic(uint64_t) spilled;
	_Atomic(uint64_t) failed_allocs;
	_Atomic(uint64_t) bad_sizes;
	_Atomic(uint64_t) foreign_frees;
};

struct lfp_family_cache {
	struct lfpi_family_cache_hot hot; /* first: lfpool.h reads it */
	struct lfp_family *fam;
	struct lfp_family_cache *next; /* in fam->caches; set before the push */
	_Atomic(uint32_t) taken;        /* 1 while a thread has it */
};

#endif
