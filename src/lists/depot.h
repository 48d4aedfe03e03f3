/* SPDX-License-Identifier: MIT */
/*
 * The lists layer (lists/, above base/, below memory/): the depot of
 * magazines
 * (Bonwick and Adams, "Magazines and Vmem", 2001). A magazine is an array
 * of free slot indices; the depot keeps the loaded ones on one lock-free
 * stack and the empty ones on another, so a thread cache exchanges a
 * whole magazine with one CAS and never walks per-slot links. Calls only
 * the stack.
 */
#ifndef LFPOOL_DEPOT_H
#define LFPOOL_DEPOT_H

#include "lists/stack.h"

struct lfpi_mag {
	_Atomic(uint32_t) next; /* the depot's stack link */
	/* idx[0..count) are free slots. Only the magazine's owner writes
	 * count, and ownership moves through the stacks' release and
	 * acquire; atomic only for lfpi_depot_slots, which reads it while
	 * owners fill and empty the magazine. */
	_Atomic(uint32_t) count;
	/* Plain: only the magazine's owner reads or writes them. */
	uint32_t idx[];
};

struct lfpi_depot {
	struct lfpi_stack full;  /* magazines holding 1..size slots */
	struct lfpi_stack empty; /* magazines holding none */
	/* Magazines [bump, nmags) were never used. */
	alignas(LFPI_CACHELINE) _Atomic(uint32_t) bump;
	uint32_t nmags;
	uint32_t size;           /* slot indices a magazine holds */
	size_t mag_bytes;        /* bytes from one magazine to the next */
	char *mags;
};

/* Bytes of memory for nmags magazines of size indices. */
size_t lfpi_depot_bytes(uint32_t nmags, uint32_t size);
/* A depot in mem (lfpi_depot_bytes of it, any content, aligned to 8). */
void lfpi_depot_init(struct lfpi_depot *d, void *mem, uint32_t nmags,
		     uint32_t size);

static inline struct lfpi_mag *lfpi_depot_mag(const struct lfpi_depot *d,
					      uint32_t m)
{
	return (struct lfpi_mag *)(d->mags + (size_t)m * d->mag_bytes);
}

/*
 * Store idx[0..n), n <= size, as one loaded magazine: the caller's spare
 * (*spare, then LFPI_NIL) if it has one, else an empty one from the
 * depot. One CAS with a spare, two without. Returns false, storing
 * nothing, if every magazine is in use.
 */
bool lfpi_depot_store(struct lfpi_depot *d, const uint32_t *idx, uint32_t n,
		      uint32_t *spare, uint32_t *retries);
/*
 * Take one loaded magazine: copy its slots to out (room for size) and
 * return how many (0: none loaded). The emptied magazine becomes the
 * caller's *spare if it has none, else goes back to the depot. One CAS
 * with no spare, two with one.
 */
uint32_t lfpi_depot_load(struct lfpi_depot *d, uint32_t *out, uint32_t *spare,
			 uint32_t *retries);
/* Take one slot out of a loaded magazine (the rest stay in the depot):
 * the slot, or LFPI_NIL if none is loaded. Two CAS. */
uint32_t lfpi_depot_take_one(struct lfpi_depot *d, uint32_t *retries);
/* Give a spare magazine back (cache teardown). */
void lfpi_depot_put_spare(struct lfpi_depot *d, uint32_t spare);
/* Take every loaded magazine: the first (follow next) or LFPI_NIL. */
uint32_t lfpi_depot_take_all(struct lfpi_depot *d);
/* Put back the magazines lfpi_depot_take_all took, with one CAS. */
void lfpi_depot_put_back(struct lfpi_depot *d, uint32_t first);
/* Whether no magazine looked loaded a moment ago. */
bool lfpi_depot_is_empty(struct lfpi_depot *d);
/* Call fn on every slot in the loaded magazines from first on (as
 * lfpi_depot_take_all returns them), until fn returns non-zero. */
int lfpi_depot_walk_from(struct lfpi_depot *d, uint32_t first,
			 int (*fn)(uint32_t idx, void *arg), void *arg);
/* The same over the depot as it is: quiescent pools only. */
int lfpi_depot_walk(struct lfpi_depot *d, int (*fn)(uint32_t idx, void *arg),
		    void *arg);
/* The slots in the loaded magazines, counted while other threads may
 * move them: a snapshot, exact when the depot is idle. At most nmags
 * magazines are followed, so it ends. */
uint64_t lfpi_depot_slots(struct lfpi_depot *d);

#endif /* LFPOOL_DEPOT_H */
