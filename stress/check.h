/* SPDX-License-Identifier: MIT */
/*
 * check.c: the invariants (the slots' owner words, the pattern in every
 * live object, the final census), the hooks' checks, and the first
 * violation, which stops the run. Rank 0, a leaf: calls nothing in the
 * harness; every other file reports its violations here.
 */
#ifndef LFP_STRESS_CHECK_H
#define LFP_STRESS_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stress.h"

struct stress_parcel;
struct stress_run;
struct stress_tally;

/*
 * The first 24 bytes of a live object; the rest of it is a pattern
 * derived from the mark (stress_fill). RCU readers (rcu.c) read all but
 * the magic, which the holder overwrites when it lets the object go.
 */
struct stress_hdr {
	uint32_t magic;
	uint32_t tid;
	uint32_t slot;
	uint32_t gen;
	uint64_t seq;
};

bool stress_violation(struct stress_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
bool stress_claim(struct stress_run *r, uint32_t tid, void *obj,
		  const char *op, uint32_t *slot);
bool stress_take_over(struct stress_run *r, const struct stress_parcel *p,
		      uint32_t tid);
void stress_stamp(struct stress_run *r, void *obj,
		  const struct stress_mark *m);
bool stress_verify(struct stress_run *r, const struct stress_held *h,
		   uint32_t holder, const char *op);
bool stress_unclaim(struct stress_run *r, const struct stress_held *h,
		    uint32_t holder, const char *op);
uint64_t stress_fill(const struct stress_mark *m, size_t i);
int stress_final_checks(struct stress_run *r, const struct stress_tally *t);
void stress_hooks(struct stress_run *r, struct lfp_config *cfg);
void stress_hooks_bind(struct stress_tally *t);
bool stress_own(struct stress_run *r, uint32_t tid, void *obj, uint64_t seq,
		const char *op, struct stress_held *h);

#endif /* LFP_STRESS_CHECK_H */
