/* SPDX-License-Identifier: MIT */
/*
 * lfpool/stats.h: the body of lfpool.h's lfp_stats_delta, static inline
 * in every program, with or without LFP_NO_INLINE.
 *
 * Part of lfpool.h: lfpool.h declares and documents it, and includes this
 * file after the declaration. Include lfpool.h, never this file.
 */
#ifndef LFPOOL_H
#error "lfpool/stats.h is part of lfpool.h: include <lfpool.h>"
#elif !defined(LFPOOL_STATS_H)
#define LFPOOL_STATS_H

static inline void lfp_stats_delta(const struct lfp_stats *now,
				   const struct lfp_stats *before,
				   struct lfp_stats *out)
{
	struct lfp_stats d;

	if (!now || !before || !out)
		return;
	d = *now;
	d.allocs = now->allocs > before->allocs ?
			   now->allocs - before->allocs : 0;
	d.frees = now->frees > before->frees ?
			   now->frees - before->frees : 0;
	d.failed_allocs = now->failed_allocs > before->failed_allocs ?
			   now->failed_allocs - before->failed_allocs : 0;
	d.rejected_frees = now->rejected_frees > before->rejected_frees ?
			   now->rejected_frees - before->rejected_frees : 0;
	d.cas_retries = now->cas_retries > before->cas_retries ?
			   now->cas_retries - before->cas_retries : 0;
	d.cache_hits = now->cache_hits > before->cache_hits ?
			   now->cache_hits - before->cache_hits : 0;
	d.refills = now->refills > before->refills ?
			   now->refills - before->refills : 0;
	d.flushes = now->flushes > before->flushes ?
			   now->flushes - before->flushes : 0;
	d.steals = now->steals > before->steals ?
			   now->steals - before->steals : 0;
	d.grown = now->grown > before->grown ?
			   now->grown - before->grown : 0;
	d.trimmed_bytes = now->trimmed_bytes > before->trimmed_bytes ?
			   now->trimmed_bytes - before->trimmed_bytes : 0;
	d.reclaims = now->reclaims > before->reclaims ?
			   now->reclaims - before->reclaims : 0;
	*out = d;
}

#endif /* LFPOOL_STATS_H */
