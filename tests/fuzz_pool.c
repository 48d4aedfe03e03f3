/* SPDX-License-Identifier: MIT */
/*
 * A libFuzzer target for lfpool's public API: `make fuzz` in tests/.
 *
 * The input is read as a program. Its first bytes configure pool 0 (see
 * fz_config); every following byte picks a call (see fz_step), and the
 * call takes its arguments from the bytes after it. Reads past the end
 * give zeroes, so every input is a valid program.
 *
 * Every result is checked against a reference model kept here: which
 * objects are live and what they hold, the error each bad call must
 * return, the counters lfp_stats must report, what the hooks and the
 * reclaim callback see, and what a walk visits. At the end of each input
 * (and on request) the library's own census, lfpi_audit, must agree too.
 * Any disagreement prints what differed and aborts.
 *
 * One thread calls the pool (liburcu's callback thread runs the deferred
 * releases). So "exhausted" is exact: with no other thread, a slot parked
 * in any cache is found by the allocation that needs it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/urcu-memb.h>

#include "internal.h"

#define FZ_POOLS 2
#define FZ_CACHES 3
#define FZ_HIST 32                /* released objects kept for stale calls */
#define FZ_MODEL_MAX (1u << 16)   /* larger pools are only made and checked */
#define FZ_MEM_MAX (16u << 20)    /* largest caller-provided block */
#define FZ_TOUCH_MAX (32u << 20)  /* largest lfp_reserve population */
#define FZ_OPS_MAX 4096           /* calls per input */

/* ------------------------------------------------------------------ */
/* Input and failure                                                   */

static const uint8_t *in_p;
static size_t in_n;

static uint8_t in8(void)
{
	if (!in_n)
		return 0;
	in_n--;
	return *in_p++;
}

static uint32_t in16(void)
{
	uint32_t lo = in8();

	return lo | (uint32_t)in8() << 8;
}

static uint32_t in32(void)
{
	uint32_t lo = in16();

	return lo | in16() << 16;
}

static void fz_fail(int line, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));

static void fz_fail(int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_pool.c:%d: model and library disagree: ", line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

#define FZ_CHECK(cond, fmt, ...)                                              \
	do {                                                                  \
		if (!(cond))                                                  \
			fz_fail(__LINE__, "%s: " fmt, #cond, ##__VA_ARGS__);  \
	} while (0)

/* ------------------------------------------------------------------ */
/* The model                                                            */

struct fz_obj {
	char *ptr;
	lfp_handle h;
	uint64_t serial; /* written into the object's first bytes */
};

/* Per-slot flags. */
#define FZ_S_CTOR 1u   /* the constructor ran on it */
#define FZ_S_PEND 2u   /* released with lfp_free_deferred, maybe pending */
#define FZ_S_SNAP 4u   /* live when the current walk began, in its range */
#define FZ_S_SEEN 8u   /* visited by the current walk */
#define FZ_S_GONE 16u  /* released during the walk before it got there */
#define FZ_S_USED 32u  /* handed out at least once */
#define FZ_S_TRIM 64u  /* free when lfp_trim gave memory back: its
			  constructor may run again at its next handout */

struct fz_walk {
	uint32_t begin, end; /* end clamped to the extent */
	int64_t last;        /* last index visited, begin - 1 before */
	int stop;            /* what the callback returned to stop, or 0 */
	bool active;
};

struct fz_pool {
	struct lfp_pool *pool;
	struct lfp_config cfg;
	void *block;               /* malloc'ed, behind cfg.memory */
	uintptr_t base;            /* lfp_at(pool, 0) */
	size_t stride, pattern;    /* pattern: bytes of the serial we write */
	uint32_t limit, max;       /* capacity now and at most */
	struct fz_obj *live;
	uint32_t nlive;
	uint32_t *where;           /* per slot: 1 + index in live[], or 0 */
	uint32_t *gen;             /* per slot: last live generation seen */
	uint8_t *flags;            /* per slot: FZ_S_* */
	uint32_t npend;            /* slots with FZ_S_PEND */
	struct fz_obj hist[FZ_HIST];
	uint32_t nhist;
	struct lfp_cache *cache[FZ_CACHES];
	uint64_t allocs, frees, failed, rejected, reclaims, grown, trimmed;
	uint64_t ctors, on_allocs, on_frees, max_live, top_idx;
	uint64_t used, reborn; /* slots ever handed out; ctor runs again */
	uint32_t extent;
	/* The reclaim callback: calls since the last successful reclaim. */
	uint32_t rc_consec;
	int rc_ret;
	bool rc_freed, rc_called, in_bulk;
	struct fz_walk walk;
};

static struct fz_pool fz_pools[FZ_POOLS];
static uint64_t fz_serial;
static bool fz_trace; /* FUZZ_TRACE=1: print each call (for crash inputs) */
static bool fz_deferred = true; /* FUZZ_DEFERRED=0: no lfp_free_deferred */
static char *fz_heap; /* a malloc'ed byte: foreign to every pool */

static uint32_t fz_tries(const struct fz_pool *f)
{
	return f->cfg.reclaim_tries ? f->cfg.reclaim_tries : 3;
}

/* Slots neither live nor possibly waiting for a grace period. */
static uint32_t fz_avail(const struct fz_pool *f)
{
	return f->limit - f->nlive - f->npend;
}

/* 0 and the slot of p, or the error a release of p must give. */
static int fz_slot(const struct fz_pool *f, const void *p, uint32_t *idx)
{
	uintptr_t off = (uintptr_t)p - f->base;

	if (!p)
		return -EINVAL;
	if ((uintptr_t)p < f->base || off / f->stride >= f->max)
		return -EFAULT;
	*idx = (uint32_t)(off / f->stride);
	return off % f->stride ? -EINVAL : 0;
}

static struct fz_obj *fz_live(struct fz_pool *f, uint32_t idx)
{
	return f->where[idx] ? &f->live[f->where[idx] - 1] : NULL;
}

static void fz_check_pattern(const struct fz_pool *f, const struct fz_obj *o)
{
	uint64_t got = 0;

	memcpy(&got, o->ptr, f->pattern);
	FZ_CHECK(memcmp(&got, &o->serial, f->pattern) == 0,
		 "object %p lost its contents (serial %llu)", (void *)o->ptr,
		 (unsigned long long)o->serial);
}

static void fz_check_all_patterns(const struct fz_pool *f)
{
	for (uint32_t i = 0; i < f->nlive; i++)
		fz_check_pattern(f, &f->live[i]);
}

/* A slot was just handed out as p: check it and make it live. */
static void fz_took(struct fz_pool *f, void *p)
{
	uint32_t idx = 0;
	lfp_handle h;
	struct fz_obj *o;

	FZ_CHECK(p && fz_slot(f, p, &idx) == 0, "allocation %p is no slot", p);
	FZ_CHECK(idx < f->limit, "slot %u beyond capacity %u", idx, f->limit);
	FZ_CHECK(!f->where[idx], "slot %u handed out twice", idx);
	FZ_CHECK(!f->cfg.ctor || f->flags[idx] & FZ_S_CTOR,
		 "slot %u handed out before its constructor ran", idx);
	if (f->flags[idx] & FZ_S_PEND) { /* its grace period is over */
		f->flags[idx] &= ~FZ_S_PEND;
		f->npend--;
	}
	h = lfp_handle_of(f->pool, p);
	FZ_CHECK(lfp_handle_index(h) == idx && lfp_handle_gen(h) & 1,
		 "handle %#llx of slot %u", (unsigned long long)h.bits, idx);
	FZ_CHECK(!(f->flags[idx] & FZ_S_USED) ||
			 lfp_handle_gen(h) != f->gen[idx],
		 "slot %u reused with the same generation %u", idx,
		 f->gen[idx]);
	f->gen[idx] = lfp_handle_gen(h);
	if (!(f->flags[idx] & FZ_S_USED))
		f->used++;
	/* Its memory was not given back, or the ctor has run again. */
	f->flags[idx] = (f->flags[idx] & ~FZ_S_TRIM) | FZ_S_USED;
	o = &f->live[f->nlive++];
	*o = (struct fz_obj){ p, h, ++fz_serial };
	f->where[idx] = f->nlive;
	memcpy(p, &o->serial, f->pattern);
	f->allocs++;
	if (f->nlive > f->max_live)
		f->max_live = f->nlive;
	if (idx + 1 > f->top_idx)
		f->top_idx = idx + 1;
}

/* Slot idx, live, was just released. */
static void fz_released(struct fz_pool *f, uint32_t idx, bool deferred)
{
	uint32_t pos = f->where[idx] - 1;

	f->hist[f->nhist++ % FZ_HIST] = f->live[pos];
	f->live[pos] = f->live[--f->nlive];
	if (pos < f->nlive)
		f->where[lfp_handle_index(f->live[pos].h)] = pos + 1;
	f->where[idx] = 0;
	f->frees++;
	if (deferred) {
		f->flags[idx] |= FZ_S_PEND;
		f->npend++;
	}
	if (f->walk.active && f->flags[idx] & FZ_S_SNAP && idx > f->walk.last)
		f->flags[idx] |= FZ_S_GONE;
}

/* ------------------------------------------------------------------ */
/* Hooks                                                                */

static uint32_t fz_hook_slot(struct fz_pool *f, void *obj, const char *hook)
{
	uint32_t idx = 0;

	/* Below max, not limit: a constructor runs as the pool grows. */
	FZ_CHECK(fz_slot(f, obj, &idx) == 0 && idx < f->max,
		 "%s got %p, not a slot", hook, obj);
	return idx;
}

static void fz_ctor(void *obj, void *arg)
{
	struct fz_pool *f = arg;
	uint32_t idx = fz_hook_slot(f, obj, "ctor");

	FZ_CHECK(!(f->flags[idx] & FZ_S_CTOR) || f->flags[idx] & FZ_S_TRIM,
		 "ctor ran twice on slot %u, not trimmed since", idx);
	FZ_CHECK(!f->where[idx], "ctor for live slot %u", idx);
	if (f->flags[idx] & FZ_S_CTOR)
		f->reborn++;
	f->flags[idx] = (f->flags[idx] & ~FZ_S_TRIM) | FZ_S_CTOR;
	f->ctors++;
}

static void fz_on_alloc(void *obj, void *arg)
{
	struct fz_pool *f = arg;
	uint32_t idx = fz_hook_slot(f, obj, "on_alloc");

	FZ_CHECK(!f->where[idx], "on_alloc for live slot %u", idx);
	f->on_allocs++;
}

static void fz_on_free(void *obj, void *arg)
{
	struct fz_pool *f = arg;
	uint32_t idx = fz_hook_slot(f, obj, "on_free");

	FZ_CHECK(f->where[idx], "on_free for slot %u, which is not live", idx);
	f->on_frees++;
}

static void fz_release(struct fz_pool *f, int how, struct lfp_cache *c,
		       void *p);

/*
 * LFP_EXHAUST_RECLAIM: the input says what to do: release a victim or
 * not, then go on (0) or give up.
 */
static int fz_reclaim(struct lfp_pool *pool, void *arg)
{
	struct fz_pool *f = arg;
	uint8_t how = in8();

	FZ_CHECK(pool == f->pool, "reclaim called for another pool");
	FZ_CHECK(f->in_bulk || fz_avail(f) == 0,
		 "reclaim called with %u slots free", fz_avail(f));
	FZ_CHECK(++f->rc_consec <= fz_tries(f), "reclaim called %u times",
		 f->rc_consec);
	f->reclaims++;
	f->rc_called = true;
	f->rc_freed = how & 1 && f->nlive;
	if (f->rc_freed)
		fz_release(f, how & 4 ? 3 : 0, NULL,
			   f->live[in8() % f->nlive].ptr);
	f->rc_ret = how & 2;
	if (f->rc_freed && !f->rc_ret)
		f->rc_consec = 0;
	return f->rc_ret;
}

/* ------------------------------------------------------------------ */
/* Creating a pool                                                      */

static const size_t fz_sizes[] = {
	0, 1, 2, 3, 7, 8, 13, 16, 24, 48, 64, 100, 4096, 5000,
	SIZE_MAX, SIZE_MAX / 2,
};
static const size_t fz_aligns[] = {
	0, 1, 2, 4, 8, 16, 32, 64, 128, 4096, 3, 24, 1u << 20,
	(size_t)1 << 62, SIZE_MAX, 8192,
};
static const uint32_t fz_caps[] = {
	0, 1, 2, 3, 4, 5, 8, 16, 31, 64, 100, 257, 1000, 65536,
	LFP_MAX_CAPACITY, UINT32_MAX,
};
static const uint32_t fz_cache_sizes[] = { 0, 1, 2, 3, 4, 8, 64, 4097 };

static uint32_t fz_pick_max(uint32_t cap, uint8_t b)
{
	switch (b % 8) {
	case 1: return cap;
	case 2: return cap * 2;
	case 3: return cap + 1;
	case 4: return cap - 1;
	case 5: return cap * 16;
	case 6: return UINT32_MAX;
	case 7: return cap + in8();
	}
	return 0;
}

/* The configuration in the next bytes (12 of them, and a few more). */
static struct lfp_config fz_config(struct fz_pool *f, uint8_t *memsel)
{
	struct lfp_config c = { 0 };
	uint8_t b;

	b = in8();
	c.obj_size = b & 0x80 ? (size_t)(b & 0x7f) + 1 : fz_sizes[b % 16];
	c.align = fz_aligns[in8() % 16];
	b = in8();
	c.capacity = b & 0x80 ? (uint32_t)(b & 0x7f) + 1 : fz_caps[b % 16];
	c.max_capacity = fz_pick_max(c.capacity, in8());
	b = in8();
	/* The three flags, and sometimes one of the bits 3..18: bit 3 is
	 * LFP_F_WAIT_DEFERRED (which waits for nothing here: the model
	 * ends grace periods before an allocation could meet one), the
	 * others are no flag's, but for bit 5, LFP_F_UNCHECKED: its double
	 * releases are undefined, which the model cannot follow
	 * (check_unchecked tests that mode), so bit 19 stands in for it. */
	c.flags = (b & 7) | (b & 8 ? 1u << (3 + (b >> 4)) : 0);
	if (c.flags & LFP_F_UNCHECKED)
		c.flags = (c.flags & ~LFP_F_UNCHECKED) | 1u << 19;
	c.cache_size = fz_cache_sizes[in8() % 8];
	b = in8();
	c.batch_size = b & 0x80 ? c.cache_size + (b & 1) : b % 4;
	b = in8();
	c.exhaust = b % 8 < 5 ? b % 8 : LFP_EXHAUST_GROW;
	c.reclaim = b & 8 ? NULL : fz_reclaim;
	c.reclaim_tries = in8() % 6;
	b = in8();
	c.ctor = b & 1 ? fz_ctor : NULL;
	c.on_alloc = b & 2 ? fz_on_alloc : NULL;
	c.on_free = b & 4 ? fz_on_free : NULL;
	c.hook_arg = f;
	*memsel = in8();
	return c;
}

#define FZ_KNOWN_FLAGS \
	(LFP_F_NO_CACHE | LFP_F_STRICT | LFP_F_POISON | LFP_F_HUGEPAGE |         \
	 LFP_F_WAIT_DEFERRED)

/* The cache size a pool made with c has: lfp_config's comment. */
static uint32_t fz_cache_size(const struct lfp_config *c)
{
	uint32_t n = c->capacity / 4;

	if (c->cache_size)
		return c->cache_size;
	return n < 2 ? 2 : n > 1024 ? 1024 : n;
}

/* Outcomes lfp_create may have: bits of FZ_OK, FZ_INVAL, ... */
#define FZ_OK 1u
#define FZ_INVAL 2u
#define FZ_OVERFLOW 4u
#define FZ_NOMEM 8u

static unsigned fz_err_bit(int err)
{
	switch (err) {
	case 0: return FZ_OK;
	case -EINVAL: return FZ_INVAL;
	case -EOVERFLOW: return FZ_OVERFLOW;
	case -ENOMEM: return FZ_NOMEM;
	}
	return 0;
}

/*
 * What the documented rules say about a configuration, memory aside: the
 * errors that apply (*must: lfp_create must fail with one of them) and
 * those that may (a size near the limits). The documentation gives no order among several errors.
 */
static unsigned fz_expect_config(const struct lfp_config *c, unsigned *must)
{
	size_t a = c->align ? c->align : alignof(max_align_t);
	unsigned __int128 slots, stride, lo, hi;
	unsigned may = 0;

	*must = 0;
	if (!c->obj_size || !c->capacity || (a & (a - 1)) ||
	    (c->flags & ~FZ_KNOWN_FLAGS) ||
	    c->exhaust > LFP_EXHAUST_ABORT ||
	    (c->exhaust == LFP_EXHAUST_RECLAIM && !c->reclaim) ||
	    (c->exhaust == LFP_EXHAUST_GROW && !c->max_capacity) ||
	    (c->max_capacity && c->max_capacity < c->capacity) ||
	    c->cache_size > LFP_MAX_CACHE_SIZE ||
	    c->batch_size > fz_cache_size(c))
		*must |= FZ_INVAL;
	if (c->capacity > LFP_MAX_CAPACITY ||
	    c->max_capacity > LFP_MAX_CAPACITY)
		*must |= FZ_OVERFLOW;
	/* Several errors at once may give any of them. */
	if (!c->obj_size || (a & (a - 1)))
		return *must | may;
	/* Object bytes alone (lo) and with generous room for the rest (hi):
	 * the metadata, the objects' start rounded up to align, and the
	 * mapping's own slack (align again, or a huge page's twice). */
	slots = c->max_capacity ? c->max_capacity : c->capacity;
	stride = ((unsigned __int128)c->obj_size + a - 1) / a * a;
	lo = slots * stride;
	hi = lo + slots * 64 + 2 * (unsigned __int128)a + 65536 + (4u << 20);
	if (lo > SIZE_MAX)
		*must |= FZ_OVERFLOW;
	else if (hi > SIZE_MAX)
		may |= FZ_OVERFLOW;
	/* Big mappings may fail; small ones must not. */
	if (hi > (1u << 30))
		may |= FZ_NOMEM;
	return *must | may;
}

/* Caller memory as memsel asks: exact, short, long or misaligned. */
static void *fz_memory(struct fz_pool *f, struct lfp_config *c,
		       uint8_t memsel, unsigned *must)
{
	size_t need = lfp_memory_size(c), size, align, off = 0;
	size_t req = c->align > LFP_MEMORY_ALIGN ? c->align : LFP_MEMORY_ALIGN;

	if (memsel % 4 || !need || need > FZ_MEM_MAX || req > (1u << 20))
		return NULL;
	size = need;
	switch (memsel >> 2 & 7) {
	case 1: size = need - 1; *must |= FZ_INVAL; break;
	case 2: size = need + in8(); break;
	case 3: off = 8; break;
	case 4: off = 32; break;
	case 5: off = LFP_MEMORY_ALIGN; break;
	case 6: size = 0; *must |= FZ_INVAL; break;
	}
	if (off % req)
		*must |= FZ_INVAL;
	align = req > 4096 ? req : 4096;
	f->block = aligned_alloc(align, (need + off + align) / align * align);
	FZ_CHECK(f->block, "out of memory for a %zu-byte block", need);
	c->memory = (char *)f->block + off;
	c->memory_size = size;
	return c->memory;
}

static void fz_model_init(struct fz_pool *f)
{
	f->limit = f->cfg.capacity;
	f->max = f->cfg.max_capacity ? f->cfg.max_capacity : f->cfg.capacity;
	f->live = calloc(f->max, sizeof(*f->live));
	f->where = calloc(f->max, sizeof(*f->where));
	f->gen = calloc(f->max, sizeof(*f->gen));
	f->flags = calloc(f->max, 1);
	FZ_CHECK(f->live && f->where && f->gen && f->flags, "out of memory");
	f->pattern = f->cfg.obj_size < 8 ? f->cfg.obj_size : 8;
}

/* Where the objects are: lfp_at must agree with lfp_index_of and the
 * alignment, and objects must not overlap. */
static void fz_layout(struct fz_pool *f)
{
	size_t a = f->cfg.align ? f->cfg.align : alignof(max_align_t);
	char *p0 = lfp_at(f->pool, 0), *p1 = lfp_at(f->pool, 1);

	FZ_CHECK(p0 && (uintptr_t)p0 % a == 0, "object 0 at %p", (void *)p0);
	f->base = (uintptr_t)p0;
	f->stride = (f->cfg.obj_size + a - 1) / a * a;
	FZ_CHECK(f->limit < 2 || (size_t)(p1 - p0) == f->stride,
		 "stride %td, expected %zu", p1 - p0, f->stride);
	FZ_CHECK(!lfp_at(f->pool, f->limit), "lfp_at(capacity) is not NULL");
	FZ_CHECK(lfp_index_of(f->pool, p0) == 0, "lfp_index_of(object 0)");
	if (f->cfg.memory)
		FZ_CHECK((char *)f->cfg.memory <= p0 &&
				 p0 + (size_t)f->max * f->stride <=
					 (char *)f->cfg.memory +
						 f->cfg.memory_size,
			 "objects outside the caller's memory");
}

static void fz_check_stats(struct fz_pool *f);

static void fz_destroy(struct fz_pool *f)
{
	if (f->pool)
		lfp_destroy(f->pool);
	free(f->block);
	free(f->live);
	free(f->where);
	free(f->gen);
	free(f->flags);
	memset(f, 0, sizeof(*f));
}

/*
 * The next bytes' configuration and caller memory for pool f: sets *must
 * and returns may (see fz_expect_config), memory included. lfp_memory_size
 * must be 0 exactly for the configurations lfp_create refuses.
 */
static unsigned fz_prepare(struct fz_pool *f, unsigned *must)
{
	unsigned may;
	uint8_t memsel;

	f->cfg = fz_config(f, &memsel);
	may = fz_expect_config(&f->cfg, must);
	FZ_CHECK(!(*must & (FZ_INVAL | FZ_OVERFLOW)) ||
			 lfp_memory_size(&f->cfg) == 0,
		 "lfp_memory_size of a bad configuration is %zu",
		 lfp_memory_size(&f->cfg));
	FZ_CHECK(*must || (may & (FZ_INVAL | FZ_OVERFLOW)) ||
			 lfp_memory_size(&f->cfg) != 0,
		 "lfp_memory_size of a good configuration is 0");
	if (fz_memory(f, &f->cfg, memsel, must))
		may &= ~FZ_NOMEM;
	return may | *must;
}

static void fz_trace_create(const struct fz_pool *f, unsigned k, int err)
{
	const struct lfp_config *c = &f->cfg;

	fprintf(stderr, "create pool %u: obj %zu align %zu capacity %u max %u "
		"flags %#x cache %u batch %u exhaust %u tries %u hooks %d%d%d "
		"memory %p+%zu: %d\n", k, c->obj_size, c->align, c->capacity,
		c->max_capacity, c->flags, c->cache_size, c->batch_size,
		c->exhaust, c->reclaim_tries, !!c->ctor, !!c->on_alloc,
		!!c->on_free, c->memory, c->memory_size, err);
}

/* Make pool k from the next bytes, checking the outcome. */
static void fz_create(unsigned k)
{
	struct fz_pool *f = &fz_pools[k];
	struct lfp_stats st;
	unsigned must, may;
	int err;

	fz_destroy(f);
	may = fz_prepare(f, &must);
	err = lfp_create(&f->cfg, &f->pool);
	if (fz_trace)
		fz_trace_create(f, k, err);
	/* A bad configuration must fail, and not for want of memory. */
	FZ_CHECK(must ? (fz_err_bit(err) & (may & ~FZ_NOMEM)) != 0
		      : (fz_err_bit(err) & (may | FZ_OK)) != 0,
		 "lfp_create gave %d (must %#x, may %#x)", err, must, may);
	FZ_CHECK(!err == !!f->pool, "lfp_create: %d and pool %p", err,
		 (void *)f->pool);
	if (err) {
		fz_destroy(f);
		return;
	}
	/* Too large to model: check the empty pool, and let it go. */
	if ((f->cfg.max_capacity ? f->cfg.max_capacity : f->cfg.capacity) >
	    FZ_MODEL_MAX) {
		lfp_stats(f->pool, &st);
		FZ_CHECK(st.capacity == f->cfg.capacity &&
				 st.free == st.capacity,
			 "an empty large pool's stats");
		fz_destroy(f);
		return;
	}
	fz_model_init(f);
	fz_layout(f);
	fz_check_stats(f);
}

/* ------------------------------------------------------------------ */
/* Checks on the whole pool                                             */

static void fz_check_counts(struct fz_pool *f, const struct lfp_stats *st)
{
	FZ_CHECK(st->allocs == f->allocs, "allocs %llu, model %llu",
		 (unsigned long long)st->allocs, (unsigned long long)f->allocs);
	FZ_CHECK(st->frees == f->frees, "frees %llu, model %llu",
		 (unsigned long long)st->frees, (unsigned long long)f->frees);
	FZ_CHECK(st->failed_allocs == f->failed,
		 "failed_allocs %llu, model %llu",
		 (unsigned long long)st->failed_allocs,
		 (unsigned long long)f->failed);
	FZ_CHECK(st->rejected_frees == f->rejected,
		 "rejected_frees %llu, model %llu",
		 (unsigned long long)st->rejected_frees,
		 (unsigned long long)f->rejected);
	FZ_CHECK(st->reclaims == f->reclaims && st->grown == f->grown &&
			 st->trimmed_bytes == f->trimmed,
		 "reclaims %llu/%llu grown %llu/%llu trimmed %llu/%llu",
		 (unsigned long long)st->reclaims,
		 (unsigned long long)f->reclaims, (unsigned long long)st->grown,
		 (unsigned long long)f->grown,
		 (unsigned long long)st->trimmed_bytes,
		 (unsigned long long)f->trimmed);
	FZ_CHECK(st->cache_hits <= st->allocs,
		 "cache_hits %llu, allocs %llu",
		 (unsigned long long)st->cache_hits,
		 (unsigned long long)st->allocs);
}

static void fz_check_hooks(struct fz_pool *f)
{
	uint32_t extent = lfp_extent(f->pool);

	FZ_CHECK(extent >= f->extent && extent >= f->top_idx &&
			 extent <= f->limit,
		 "extent %u (was %u, top %llu, capacity %u)", extent, f->extent,
		 (unsigned long long)f->top_idx, f->limit);
	f->extent = extent;
	/* Once per slot at its first handout, and again after a trim. */
	FZ_CHECK(!f->cfg.ctor || f->ctors == f->used + f->reborn,
		 "ctor ran %llu times for %llu slots handed out and %llu "
		 "given back by a trim", (unsigned long long)f->ctors,
		 (unsigned long long)f->used, (unsigned long long)f->reborn);
	FZ_CHECK(!f->cfg.on_alloc || f->on_allocs == f->allocs,
		 "on_alloc ran %llu times for %llu allocations",
		 (unsigned long long)f->on_allocs,
		 (unsigned long long)f->allocs);
	FZ_CHECK(!f->cfg.on_free || f->on_frees == f->frees,
		 "on_free ran %llu times for %llu releases",
		 (unsigned long long)f->on_frees, (unsigned long long)f->frees);
}

static bool fz_has_caches(const struct fz_pool *f)
{
	for (unsigned i = 0; i < FZ_CACHES; i++)
		if (f->cache[i])
			return true;
	return false;
}

static void fz_check_stats(struct fz_pool *f)
{
	struct lfp_stats st;

	lfp_stats(f->pool, &st);
	FZ_CHECK(st.capacity == f->limit && st.max_capacity == f->max,
		 "capacity %llu/%llu, model %u/%u",
		 (unsigned long long)st.capacity,
		 (unsigned long long)st.max_capacity, f->limit, f->max);
	FZ_CHECK(st.live == f->nlive, "live %llu, model %u",
		 (unsigned long long)st.live, f->nlive);
	FZ_CHECK(st.free + st.cached + st.live + st.deferred == st.capacity,
		 "free %llu + cached %llu + live %llu + deferred %llu",
		 (unsigned long long)st.free, (unsigned long long)st.cached,
		 (unsigned long long)st.live, (unsigned long long)st.deferred);
	FZ_CHECK(st.deferred <= f->npend, "deferred %llu, at most %u",
		 (unsigned long long)st.deferred, f->npend);
	FZ_CHECK(st.high_water >= f->max_live && st.high_water <= st.capacity,
		 "high_water %llu, most live %llu",
		 (unsigned long long)st.high_water,
		 (unsigned long long)f->max_live);
	/* With no cache anywhere, nothing can be parked in one. */
	FZ_CHECK(!(f->cfg.flags & LFP_F_NO_CACHE) || fz_has_caches(f) ||
			 st.cached == 0,
		 "%llu slots cached in a pool without caches",
		 (unsigned long long)st.cached);
	fz_check_counts(f, &st);
	fz_check_hooks(f);
}

/* Wait for pending deferred releases (a grace period: milliseconds). */
static void fz_barrier(struct fz_pool *f)
{
	if (!f->npend)
		return;
	lfp_barrier(f->pool);
	for (uint32_t i = 0; f->npend && i < f->max; i++)
		if (f->flags[i] & FZ_S_PEND) {
			f->flags[i] &= ~FZ_S_PEND;
			f->npend--;
		}
}

static void fz_audit(struct fz_pool *f)
{
	struct lfpi_census census;
	char msg[256] = "";
	int err;

	fz_barrier(f);
	err = lfpi_audit(f->pool, &census, msg, sizeof(msg));
	FZ_CHECK(err == 0, "lfpi_audit: %d: %s", err, msg);
	FZ_CHECK(census.live == f->nlive && census.deferred == 0,
		 "census: live %llu, deferred %llu; model %u live",
		 (unsigned long long)census.live,
		 (unsigned long long)census.deferred, f->nlive);
	FZ_CHECK(census.live + census.listed + census.cached + census.fresh ==
			 f->limit,
		 "census does not add up to capacity %u", f->limit);
	fz_check_stats(f);
}

/* ------------------------------------------------------------------ */
/* Allocation                                                           */

/* Before allocating n: make the model exact about deferred slots, and
 * keep an aborting pool from running out. Returns how many to ask. */
static uint32_t fz_alloc_prepare(struct fz_pool *f, uint32_t n)
{
	if (f->npend && f->nlive + f->npend + n > f->limit)
		fz_barrier(f);
	if (f->cfg.exhaust == LFP_EXHAUST_ABORT && n > fz_avail(f))
		n = fz_avail(f);
	f->rc_called = f->rc_freed = false;
	f->rc_ret = 0;
	f->rc_consec = 0;
	return n;
}

/* The pool had no free slot: the model grows as the policy says.
 * Returns whether the allocation must then succeed. */
static bool fz_grow(struct fz_pool *f)
{
	if (f->cfg.exhaust != LFP_EXHAUST_GROW || f->limit == f->max)
		return false;
	f->limit = f->limit > f->max - f->limit ? f->max : 2 * f->limit;
	f->grown++;
	return true;
}

/* One allocation's result, p, against the model. */
static void fz_alloc_result(struct fz_pool *f, void *p)
{
	bool empty = fz_avail(f) == 0 && !f->rc_freed;

	if (f->cfg.exhaust == LFP_EXHAUST_RECLAIM) {
		/* Succeeds iff a call released a victim and said go on. */
		FZ_CHECK(!p == (f->rc_called && (f->rc_ret || !f->rc_freed)),
			 "reclaim policy: got %p, freed %d, ret %d", p,
			 f->rc_freed, f->rc_ret);
		FZ_CHECK(f->rc_called == (empty || f->rc_freed),
			 "reclaim called %d, pool empty %d", f->rc_called,
			 empty);
	} else if (fz_avail(f) == 0 && !fz_grow(f)) {
		FZ_CHECK(!p, "allocated %p from an exhausted pool", p);
	} else {
		FZ_CHECK(p, "NULL with %u slots free", fz_avail(f));
	}
	if (fz_trace)
		fprintf(stderr, "  alloc: %p (live %u, capacity %u)\n", p,
			f->nlive, f->limit);
	if (p)
		fz_took(f, p);
	else
		f->failed++;
}

static void fz_alloc(struct fz_pool *f, struct lfp_cache *c)
{
	void *p;

	if (!fz_alloc_prepare(f, 1))
		return;
	p = c ? lfp_cache_alloc(c) : lfp_alloc(f->pool);
	fz_alloc_result(f, p);
}

/* lfp_alloc_bulk: n objects, or fewer only if the pool ran out. */
static void fz_alloc_bulk(struct fz_pool *f, uint32_t n)
{
	void *objs[64];
	size_t got;

	n = fz_alloc_prepare(f, n % 65);
	f->in_bulk = true;
	got = lfp_alloc_bulk(f->pool, objs, n);
	f->in_bulk = false;
	FZ_CHECK(got <= n, "lfp_alloc_bulk took %zu of %u", got, n);
	for (size_t i = 0; i < got; i++) {
		if (fz_avail(f) == 0 &&
		    f->cfg.exhaust != LFP_EXHAUST_RECLAIM)
			FZ_CHECK(fz_grow(f), "bulk allocation beyond capacity");
		fz_took(f, objs[i]);
	}
	if (got == n)
		return;
	f->failed++;
	if (f->cfg.exhaust == LFP_EXHAUST_RECLAIM)
		FZ_CHECK(f->rc_ret || f->rc_consec == fz_tries(f),
			 "bulk stopped at %zu of %u while reclaim went on", got,
			 n);
	else
		FZ_CHECK(fz_avail(f) == 0 && !fz_grow(f),
			 "bulk stopped at %zu of %u with %u free", got, n,
			 fz_avail(f));
}

/* ------------------------------------------------------------------ */
/* Releases, good and bad                                               */

static struct fz_pool *fz_other(struct fz_pool *f)
{
	struct fz_pool *o = &fz_pools[f == fz_pools];

	return o->pool ? o : NULL;
}

/* One of the last FZ_HIST objects released. */
static struct fz_obj *fz_hist(struct fz_pool *f, uint32_t r)
{
	return &f->hist[r % (f->nhist < FZ_HIST ? f->nhist : FZ_HIST)];
}

/*
 * A pointer for a release or a query: live, stale, foreign, interior...
 * The low nibble of the first byte picks the kind, the high one an offset.
 */
static void *fz_pick_ptr(struct fz_pool *f, void *local)
{
	uint8_t kind = in8();
	uint32_t r = in16();
	struct fz_pool *o;

	switch (kind & 15) {
	case 0: case 1: case 2:
		return f->nlive ? f->live[r % f->nlive].ptr : NULL;
	case 3:
		return f->nlive ? f->live[r % f->nlive].ptr +
					  (kind >> 4) % f->stride : local;
	case 4: case 5:
		return f->nhist ? fz_hist(f, r)->ptr : NULL;
	case 6: return NULL;
	case 7: return local;
	case 8: return fz_heap;
	case 9:
		o = fz_other(f);
		return o && o->nlive ? o->live[r % o->nlive].ptr : fz_heap;
	case 10: return (void *)(f->base - 1 - (kind >> 4) * f->stride);
	case 11: return (char *)f->base + (size_t)f->max * f->stride;
	case 12: return (char *)f->base + (size_t)(r % f->max) * f->stride;
	}
	/* 13..15: past the capacity (reserved, if the pool can grow). */
	return (char *)f->base + (size_t)f->limit * f->stride +
	       (kind >> 4) % f->stride;
}

/* Whether got is what a release of p must return (want, slot idx). */
static bool fz_release_ok(const struct fz_pool *f, int want, int got,
			  uint32_t idx)
{
	if (got == want)
		return true;
	/*
	 * Slots the pool reserved but has not grown into yet: whether they
	 * are "this pool's memory" is a matter of words. lfp_owns says no;
	 * lfp_free calls them never allocated (slot starts) or not slot
	 * starts. Either answer is safe.
	 */
	return want != 0 && want != -EFAULT && idx >= f->limit &&
	       got == -EFAULT;
}

/* how: 0 lfp_free, 1 lfp_cache_free, 2 lfp_free_deferred,
 *      3 lfp_free_handle of the pointer's current handle. */
static void fz_release(struct fz_pool *f, int how, struct lfp_cache *c,
		       void *p)
{
	uint32_t idx = 0;
	int want = fz_slot(f, p, &idx), got;

	if (!want && !f->where[idx])
		want = -EALREADY;
	if (!want)
		fz_check_pattern(f, fz_live(f, idx));
	if (how == 3 && !want)
		got = lfp_free_handle(f->pool, fz_live(f, idx)->h);
	else if (how == 1 && c)
		got = lfp_cache_free(c, p);
	else if (how == 2)
		got = lfp_free_deferred(f->pool, p);
	else
		got = lfp_free(f->pool, p);
	if (fz_trace)
		fprintf(stderr, "  release (%d) %p: %d\n", how, p, got);
	FZ_CHECK(fz_release_ok(f, want, got, idx),
		 "release (%d) of %p gave %d, expected %d", how, p, got, want);
	if (got == 0)
		fz_released(f, idx, how == 2);
	else
		f->rejected++;
}

/* lfp_free_bulk over a mix of good and bad pointers, duplicates too. */
static void fz_free_bulk(struct fz_pool *f, uint32_t n)
{
	void *objs[32];
	uint32_t idx[32], ok = 0, i, j;
	bool good[32];
	int local;
	size_t got;

	n %= 33;
	for (i = 0; i < n; i++) {
		objs[i] = fz_pick_ptr(f, &local);
		good[i] = !fz_slot(f, objs[i], &idx[i]) && f->where[idx[i]];
		/* A second copy of a pointer is a double release. */
		for (j = 0; good[i] && j < i; j++)
			good[i] = !(good[j] && idx[j] == idx[i]);
		if (good[i]) {
			fz_check_pattern(f, fz_live(f, idx[i]));
			ok++;
		}
	}
	got = lfp_free_bulk(f->pool, objs, n);
	FZ_CHECK(got == ok, "lfp_free_bulk released %zu, expected %u", got, ok);
	for (i = 0; i < n; i++)
		if (good[i])
			fz_released(f, idx[i], false);
	f->rejected += n - ok;
}

/* ------------------------------------------------------------------ */
/* Handles and queries                                                  */

static lfp_handle fz_pick_handle(struct fz_pool *f)
{
	uint8_t kind = in8();
	uint32_t r = in16();
	lfp_handle h = LFP_NULL_HANDLE;

	if (f->nlive)
		h = f->live[r % f->nlive].h;
	switch (kind % 8) {
	case 1:
		if (f->nhist)
			h = fz_hist(f, r)->h;
		break;
	case 2: return LFP_NULL_HANDLE;
	case 3: h.bits &= ~(UINT64_C(1) << 32); break; /* even generation */
	case 4: h.bits += UINT64_C(2) << 32; break;    /* a later one */
	case 5: return (lfp_handle){ UINT64_C(1) << 32 | (f->max + r) };
	case 6: return (lfp_handle){ (uint64_t)(in8() | 1) << 32 | r % f->max };
	case 7: return (lfp_handle){ (uint64_t)in32() << 32 | in32() };
	}
	return h;
}

/* What lfp_free_handle(h) must return; *idx is its slot. */
static int fz_expect_handle(struct fz_pool *f, lfp_handle h, uint32_t *idx)
{
	struct fz_obj *o;

	*idx = lfp_handle_index(h);
	if (!(lfp_handle_gen(h) & 1))
		return -EINVAL;
	if (*idx >= f->max)
		return -EFAULT;
	o = fz_live(f, *idx);
	return o && o->h.bits == h.bits ? 0 : -ESTALE;
}

static void fz_handle_op(struct fz_pool *f, uint8_t how)
{
	lfp_handle h = fz_pick_handle(f);
	uint32_t idx;
	int want = fz_expect_handle(f, h, &idx), got;
	struct lfp_cache *c = f->cache[how / 4 % FZ_CACHES];
	void *p = lfp_resolve(f->pool, h);

	FZ_CHECK(p == (want ? NULL : fz_live(f, idx)->ptr),
		 "lfp_resolve(%#llx) gave %p", (unsigned long long)h.bits, p);
	if (how & 1)
		return;
	if (!want)
		fz_check_pattern(f, fz_live(f, idx));
	got = how & 2 && c ? lfp_cache_free_handle(c, h)
			   : lfp_free_handle(f->pool, h);
	/* As for pointers: a slot not yet grown into may be either. */
	FZ_CHECK(got == want || (want == -ESTALE && got == -EFAULT &&
				 idx >= f->limit),
		 "lfp_free_handle(%#llx) gave %d, expected %d",
		 (unsigned long long)h.bits, got, want);
	if (got == 0)
		fz_released(f, idx, false);
	else
		f->rejected++;
}

/* lfp_owns, lfp_index_of, lfp_at, lfp_is_live, lfp_handle_of on p. */
static void fz_query(struct fz_pool *f)
{
	int local;
	void *p = fz_pick_ptr(f, &local);
	uint32_t idx = 0;
	int where = fz_slot(f, p, &idx);
	bool inside = p && (uintptr_t)p >= f->base &&
		      (uintptr_t)p - f->base < (size_t)f->limit * f->stride;
	struct fz_obj *o = !where && idx < f->limit ? fz_live(f, idx) : NULL;
	lfp_handle h = lfp_handle_of(f->pool, p);

	FZ_CHECK(lfp_owns(f->pool, p) == inside, "lfp_owns(%p)", p);
	FZ_CHECK(lfp_index_of(f->pool, p) ==
			 (!where && idx < f->limit ? idx : LFP_NO_INDEX),
		 "lfp_index_of(%p) = %u", p, lfp_index_of(f->pool, p));
	FZ_CHECK(lfp_is_live(f->pool, p) == !!o, "lfp_is_live(%p)", p);
	FZ_CHECK(h.bits == (o ? o->h.bits : 0), "lfp_handle_of(%p) = %#llx", p,
		 (unsigned long long)h.bits);
	idx = in16();
	p = idx < f->limit ? (char *)f->base + (size_t)idx * f->stride : NULL;
	FZ_CHECK(lfp_at(f->pool, idx) == p, "lfp_at(%u)", idx);
}

/* ------------------------------------------------------------------ */
/* Walks                                                                */

static int fz_visit(void *obj, lfp_handle h, void *arg)
{
	struct fz_pool *f = arg;
	uint32_t idx = lfp_handle_index(h);
	struct fz_obj *o = idx < f->max ? fz_live(f, idx) : NULL;
	uint8_t what = in8();

	FZ_CHECK(o && o->h.bits == h.bits && o->ptr == obj,
		 "visited %p, handle %#llx: not live", obj,
		 (unsigned long long)h.bits);
	FZ_CHECK(idx >= f->walk.begin && idx < f->walk.end &&
			 (int64_t)idx > f->walk.last,
		 "visited slot %u out of order or range [%u, %u)", idx,
		 f->walk.begin, f->walk.end);
	fz_check_pattern(f, o);
	f->walk.last = idx;
	f->flags[idx] |= FZ_S_SEEN;
	switch (what % 8) {
	case 4: fz_release(f, 0, NULL, obj); break;
	case 5: fz_release(f, 3, NULL, obj); break;
	case 6: return f->walk.stop = 1 + what / 8;
	case 7: fz_alloc(f, NULL); break;
	}
	return 0;
}

/* Every object live at the start, in range, and not released before the
 * walk got there, was visited, unless the walk stopped before it. */
static void fz_walk_end(struct fz_pool *f, const uint32_t *snap, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *fl = &f->flags[snap[i]];

		FZ_CHECK(*fl & (FZ_S_SEEN | FZ_S_GONE) ||
				 (f->walk.stop && snap[i] > f->walk.last),
			 "walk [%u, %u) missed live slot %u", f->walk.begin,
			 f->walk.end, snap[i]);
		*fl &= ~(FZ_S_SNAP | FZ_S_SEEN | FZ_S_GONE);
	}
	for (uint32_t i = f->walk.begin; i < f->walk.end; i++)
		f->flags[i] &= ~FZ_S_SEEN; /* objects allocated meanwhile */
}

static void fz_foreach(struct fz_pool *f)
{
	uint32_t begin = in16() % (f->limit + 2), end, n = 0, extent;
	uint32_t *snap;
	bool all = in8() & 1;
	int ret;

	end = all ? UINT32_MAX : in16() % (f->limit + 2);
	if (all)
		begin = 0;
	extent = lfp_extent(f->pool);
	snap = malloc((f->nlive + 1) * sizeof(*snap));
	FZ_CHECK(snap, "out of memory");
	f->walk = (struct fz_walk){ begin, end < extent ? end : extent,
				    (int64_t)begin - 1, 0, true };
	for (uint32_t i = 0; i < f->nlive; i++) {
		uint32_t idx = lfp_handle_index(f->live[i].h);

		if (idx >= f->walk.begin && idx < f->walk.end) {
			f->flags[idx] |= FZ_S_SNAP;
			snap[n++] = idx;
		}
	}
	ret = all ? lfp_foreach(f->pool, fz_visit, f)
		  : lfp_foreach_range(f->pool, begin, end, fz_visit, f);
	f->walk.active = false;
	FZ_CHECK(ret == f->walk.stop, "walk returned %d, callback stopped %d",
		 ret, f->walk.stop);
	FZ_CHECK(lfp_foreach(f->pool, NULL, NULL) == -EINVAL,
		 "lfp_foreach without a callback");
	fz_walk_end(f, snap, n);
	free(snap);
}

/* ------------------------------------------------------------------ */
/* Growth, trim, caches                                                 */

static void fz_reserve(struct fz_pool *f)
{
	uint32_t n, r = in16();
	int err;

	switch (in8() % 6) {
	case 0: n = f->limit + r % 64; break;
	case 1: n = f->max; break;
	case 2: n = f->max + 1 + r; break;
	case 3: n = r % (f->max + 1); break;
	case 4: n = 0; break;
	default: n = UINT32_MAX; break;
	}
	/* lfp_reserve faults in every page of the first n slots. */
	if (n <= f->max && (uint64_t)n * f->stride > FZ_TOUCH_MAX)
		return;
	err = lfp_reserve(f->pool, n);
	if (n > f->max) {
		FZ_CHECK(err == -EINVAL, "lfp_reserve(%u) above %u gave %d", n,
			 f->max, err);
		return;
	}
	FZ_CHECK(err == 0 || err == -ENOMEM, "lfp_reserve(%u) gave %d", n, err);
	if (!err && n > f->limit) {
		f->limit = n;
		f->grown++;
	}
}

static void fz_trim(struct fz_pool *f)
{
	size_t bytes = lfp_trim(f->pool);

	FZ_CHECK(!f->cfg.memory || bytes == 0,
		 "lfp_trim gave back %zu bytes of caller memory", bytes);
	FZ_CHECK(bytes % lfpi_page_size() == 0, "trimmed %zu bytes", bytes);
	f->trimmed += bytes;
	fz_check_all_patterns(f); /* live objects keep their bytes */
	for (uint32_t i = 0; bytes && i < f->limit; i++)
		if (!f->where[i])
			f->flags[i] |= FZ_S_TRIM;
}

static void fz_cache_op(struct fz_pool *f, uint8_t b)
{
	struct lfp_cache **c = &f->cache[b / 8 % FZ_CACHES];
	int local;

	switch (b % 8) {
	case 0:
		if (!*c) {
			*c = lfp_cache_create(f->pool);
			FZ_CHECK(*c, "lfp_cache_create failed");
		}
		break;
	case 1:
		lfp_cache_destroy(*c);
		*c = NULL;
		break;
	case 2: case 3:
		if (*c)
			fz_alloc(f, *c);
		break;
	case 4: case 5:
		if (*c)
			fz_release(f, 1, *c, fz_pick_ptr(f, &local));
		break;
	case 6:
		lfp_cache_flush(*c);
		break;
	default:
		fz_handle_op(f, 2 | (b / 8 % FZ_CACHES) << 2);
		break;
	}
}

/* Every call with a NULL pool or cache: documented no-ops and errors. */
static void fz_null_calls(void)
{
	struct lfp_stats st = { .live = 7 };
	void *objs[1] = { fz_heap };
	struct lfp_config c = { 0 };

	FZ_CHECK(!lfp_alloc(NULL) && lfp_free(NULL, fz_heap) == -EINVAL &&
			 !lfp_alloc_bulk(NULL, objs, 1) &&
			 !lfp_free_bulk(NULL, objs, 1) &&
			 lfp_free_deferred(NULL, fz_heap) == -EINVAL,
		 "NULL pool");
	FZ_CHECK(!lfp_cache_create(NULL) && !lfp_cache_alloc(NULL) &&
			 lfp_cache_free(NULL, fz_heap) == -EINVAL &&
			 lfp_cache_free_handle(NULL, LFP_NULL_HANDLE) ==
				 -EINVAL,
		 "NULL cache");
	lfp_cache_destroy(NULL);
	lfp_cache_flush(NULL);
	lfp_destroy(NULL);
	lfp_barrier(NULL);
	lfp_stats(NULL, &st);
	FZ_CHECK(st.live == 7, "lfp_stats(NULL) wrote");
	FZ_CHECK(!lfp_owns(NULL, fz_heap) &&
			 lfp_index_of(NULL, fz_heap) == LFP_NO_INDEX &&
			 !lfp_at(NULL, 0) && lfp_reserve(NULL, 1) == -EINVAL &&
			 lfp_trim(NULL) == 0 && !lfp_is_live(NULL, fz_heap) &&
			 lfp_handle_is_null(lfp_handle_of(NULL, fz_heap)) &&
			 !lfp_resolve(NULL, (lfp_handle){ 1ull << 32 }) &&
			 lfp_free_handle(NULL, (lfp_handle){ 1ull << 32 }) ==
				 -EINVAL &&
			 lfp_extent(NULL) == 0 &&
			 lfp_foreach(NULL, fz_visit, NULL) == -EINVAL &&
			 lfp_memory_size(NULL) == 0 &&
			 lfp_create(NULL, NULL) == -EINVAL &&
			 lfp_create(&c, NULL) == -EINVAL,
		 "NULL arguments");
}

/* ------------------------------------------------------------------ */
/* The program                                                          */

static void fz_step(void);
static bool fz_threaded; /* inside fz_in_thread's thread */

static void *fz_thread(void *arg)
{
	unsigned n = *(unsigned *)arg;

	urcu_memb_register_thread(); /* for lfp_free_deferred */
	fz_threaded = true;
	while (n-- && in_n)
		fz_step();
	urcu_memb_unregister_thread();
	return NULL;
}

/*
 * Run the next calls (1 to 8) in a new thread, and wait for it. Still one
 * thread at a time, but the implicit caches are the new thread's, and
 * its exit gives them back (the pthread key destructor in cache/registry.c).
 */
static void fz_in_thread(void)
{
	unsigned n = in8() % 8 + 1;
	pthread_t t;

	if (fz_threaded)
		return;
	FZ_CHECK(pthread_create(&t, NULL, fz_thread, &n) == 0,
		 "pthread_create failed");
	pthread_join(t, NULL);
	fz_threaded = false;
}

/* One call on pool f, chosen by op; the bytes after it are arguments. */
static void fz_pool_op(struct fz_pool *f, uint8_t op)
{
	int local;

	switch (op % 20) {
	case 0: case 1: case 2: fz_alloc(f, NULL); break;
	case 3: case 4: fz_release(f, 0, NULL, fz_pick_ptr(f, &local)); break;
	case 5: fz_alloc_bulk(f, in8()); break;
	case 6: fz_free_bulk(f, in8()); break;
	case 7: case 8: fz_cache_op(f, in8()); break;
	case 9: fz_handle_op(f, in8() & ~2); break;
	case 10: fz_query(f); break;
	case 11: fz_reserve(f); break;
	case 12: fz_trim(f); break;
	case 13: fz_foreach(f); break;
	case 14: fz_alloc(f, f->cache[op / 32 % FZ_CACHES]); break;
	case 15: lfp_barrier(f->pool); fz_barrier(f); break;
	case 16: fz_audit(f); break;
	case 17: fz_in_thread(); break;
	default: fz_release(f, 3, NULL, fz_pick_ptr(f, &local)); break;
	}
	if (f->pool) /* the calls in a thread may have destroyed it */
		fz_check_stats(f);
}

static void fz_step(void)
{
	uint8_t op = in8();
	struct fz_pool *f = &fz_pools[op >> 7];
	int local;

	if (fz_trace)
		fprintf(stderr, "op %#04x: pool %u, %s %u\n", op, op >> 7,
			(op & 0x7f) >= 0x60 && (op & 0x7f) <= 0x63 ? "rare"
								   : "call",
			(op & 0x7f) >= 0x60 && (op & 0x7f) <= 0x63 ? op & 3
								   : op % 20);

	/*
	 * Rare calls: op 0x60..0x63 and 0xe0..0xe3. Deferred releases are
	 * the rarest (op 0x63 and a next byte that is 0 mod 8), and can be
	 * turned off (FUZZ_DEFERRED=0): a pool that had one waits for a
	 * grace period when it is destroyed, and liburcu's callback thread
	 * sleeps 10 ms between batches, so they cost ten times the runs.
	 */
	switch (op & 0x7f) {
	case 0x60: fz_create(op >> 7); return;
	case 0x61: fz_destroy(f); return;
	case 0x62: fz_null_calls(); return;
	case 0x63:
		if (f->pool) {
			fz_release(f, in8() % 8 || !fz_deferred ? 0 : 2, NULL,
				   fz_pick_ptr(f, &local));
			fz_check_stats(f);
		}
		return;
	}
	if (f->pool)
		fz_pool_op(f, op);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* lfp_free_deferred calls call_rcu, which needs this. */
	urcu_memb_register_thread();
	fz_heap = malloc(1);
	fz_trace = getenv("FUZZ_TRACE") && *getenv("FUZZ_TRACE") == '1';
	fz_deferred = !getenv("FUZZ_DEFERRED") ||
		      *getenv("FUZZ_DEFERRED") != '0';
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	in_p = data;
	in_n = size;
	fz_create(0);
	for (unsigned ops = 0; in_n && ops < FZ_OPS_MAX; ops++)
		fz_step();
	for (unsigned k = 0; k < FZ_POOLS; k++) {
		if (fz_pools[k].pool)
			fz_audit(&fz_pools[k]);
		fz_destroy(&fz_pools[k]);
	}
	return 0;
}
