/* SPDX-License-Identifier: MIT */
/*
 * The top layer (extras/, above pool/): the census (audit.c), a
 * consistency check of a whole pool for the tests and the stress
 * harness.
 */
#ifndef LFPOOL_AUDIT_H
#define LFPOOL_AUDIT_H

#include "pool/pool.h"


struct lfpi_census {
	uint64_t live;   /* slots whose generation says live */
	uint64_t listed; /* slots on the shared free stack */
	uint64_t cached; /* slots parked in caches */
	uint64_t fresh;  /* slots never handed out */
	uint64_t deferred; /* free, waiting for an RCU grace period */
};

/*
 * Walk the pool while no other thread uses it and check that every slot
 * is exactly one of: live, on the free stack, in a cache, never used; and that the
 * counters agree. Fills *out. Returns 0, or -EUCLEAN with a message in
 * msg (len bytes) naming the first problem and its slot.
 */
int lfpi_audit(struct lfp_pool *pool, struct lfpi_census *out, char *msg,
	       size_t len);

#endif /* LFPOOL_AUDIT_H */
