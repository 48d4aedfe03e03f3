/* SPDX-License-Identifier: MIT */
/*
 * The census of a pool, for the tests and the stress harness: every slot
 * is exactly one of live, listed (the free list or a depot magazine),
 * cached, fresh or waiting for a grace period, and the counters agree.
 * Sits on top of every layer and reads them all.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "extras/audit.h"

struct audit_walk {
	struct lfp_pool *pool;
	uint8_t *seen;
	uint32_t bump;
	uint64_t listed;
	uint64_t cached;
	bool in_cache;
	char *msg;
	size_t len;
};

static int audit_fail(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (msg && len)
		vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return -EUCLEAN;
}

static int audit_listed(uint32_t idx, void *arg)
{
	struct audit_walk *w = arg;
	uint32_t gen;

	const char *where = w->in_cache ? "in a cache" : "on the free list";

	if (idx >= w->bump)
		return audit_fail(w->msg, w->len,
				  "slot %u is %s but was never handed out "
				  "(bump %u)", idx, where, w->bump);
	if (w->seen[idx])
		return audit_fail(w->msg, w->len,
				  "slot %u is free twice (found again %s)", idx,
				  where);
	w->seen[idx] = 1;
	/* Unchecked: no generation to tell live from free. */
	gen = w->pool->bare ? 0 :
		atomic_load_explicit(lfpi_slot_gen(w->pool, idx),
				     memory_order_relaxed);
	if (lfpi_gen_is_live(gen))
		return audit_fail(w->msg, w->len,
				  "slot %u is %s but live (generation %u)", idx,
				  where, gen);
	if (w->in_cache)
		w->cached++;
	else
		w->listed++;
	return 0;
}

int lfpi_audit(struct lfp_pool *pool, struct lfpi_census *out, char *msg,
	       size_t len)
{
	struct audit_walk w = { .pool = pool, .msg = msg, .len = len };
	struct lfp_stats st;
	uint64_t live = 0, pending = 0;
	uint32_t limit;
	int err;

	w.bump = atomic_load_explicit(&pool->bump, memory_order_relaxed);
	limit = atomic_load_explicit(&pool->limit, memory_order_relaxed);
	/* The one malloc in the library: the census is for the tests and
	 * the harness, and no public call reaches it. */
	w.seen = calloc(pool->capacity, 1);
	if (!w.seen)
		return -ENOMEM;
	err = lfpi_stack_walk(&pool->free, audit_listed, &w);
	if (!err)
		err = lfpi_depot_walk(&pool->depot, audit_listed, &w);
	w.in_cache = true;
	if (!err)
		err = lfpi_cache_walk(pool, audit_listed, &w);
	/* Unchecked: every slot handed out and on no list is live or
	 * deferred; the counters' live must then match, or slots were lost. */
	if (!err && pool->bare) {
		lfp_stats(pool, &st);
		pending = st.deferred;
		live = w.bump - w.listed - w.cached - pending;
	}
	for (uint32_t i = 0; !err && !pool->bare && i < w.bump; i++) {
		uint32_t gen = atomic_load_explicit(lfpi_slot_gen(pool, i),
						    memory_order_relaxed);
		if (lfpi_gen_is_live(gen))
			live++;
		else if (!w.seen[i])
			pending++; /* lost, unless a deferred release */
	}
	free(w.seen);
	if (err)
		return err;
	lfp_stats(pool, &st);
	if (pending != st.deferred)
		return audit_fail(msg, len, "%llu slots are free but on no list "
				  "and %llu deferred releases are pending: "
				  "slots were lost",
				  (unsigned long long)pending,
				  (unsigned long long)st.deferred);
	out->live = live;
	out->listed = w.listed;
	out->cached = w.cached;
	out->fresh = limit - w.bump;
	out->deferred = pending;
	if (st.live != live || st.cached != w.cached ||
	    st.free != w.listed + out->fresh)
		return audit_fail(msg, len, "stats disagree with the slots: "
				  "live %llu vs %llu, cached %llu vs %llu, "
				  "free %llu vs %llu",
				  (unsigned long long)st.live,
				  (unsigned long long)live,
				  (unsigned long long)st.cached,
				  (unsigned long long)w.cached,
				  (unsigned long long)st.free,
				  (unsigned long long)(w.listed + out->fresh));
	return 0;
}
