/* SPDX-License-Identifier: MIT */
/*
 * family.c: size-class families, a pool per object size behind one
 * allocator that takes a size.
 *
 * Above the pools (extras/): every class is an ordinary pool, and the
 * family only routes: lfpool.h's inline paths find the thread's cache of
 * the class (in its table), and the out-of-line halves here go down to
 * the pool's (lfpi_alloc_slow, lfpi_cache_alloc_slow, lfpi_free_slow,
 * lfpi_cache_free_slow in pool/slow.c), never back into the inline
 * paths. Allocation finds the smallest class that fits in a
 * table indexed by the size in 8-byte steps (sizes up to
 * LFPI_FAMILY_MAP_MAX; above, by binary search over the sizes). Release
 * finds the class from the address by arithmetic: the family reserves
 * one range of address space, a zone of 2^zshift bytes per class, and
 * each class's pool maps its memory at the start of its zone
 * (lfpi_create_at), so the class is the zone's number, and lfp_owns
 * says whether its pool owns the pointer. The family is read-only after
 * creation but for its counters and its list of family caches, so
 * routing touches no shared word of its own. The family caches are made
 * and given up in family_cache.c; the structs both files see are in
 * family.h.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "extras/family.h"
#include "memory/slab.h"

static void family_count(_Atomic(uint64_t) *counter)
{
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

/* ---- creation ----------------------------------------------------------- */

/* Refuse cfg for a field of it: err, *fault (if not NULL) naming it. */
static int family_refuse(const char **fault, const char *field, int err)
{
	if (fault)
		*fault = field;
	return err;
}

/* The family's own fields: 0 or -errno, naming the first at fault. */
static int family_check(const struct lfp_family_config *cfg, const char **fault)
{
	if (!cfg->classes)
		return family_refuse(fault, "classes", -EINVAL);
	if (!cfg->sizes)
		return family_refuse(fault, "sizes", -EINVAL);
	if (!cfg->capacities)
		return family_refuse(fault, "capacities", -EINVAL);
	if (cfg->classes > LFP_FAMILY_MAX_CLASSES)
		return family_refuse(fault, "classes", -E2BIG);
	for (uint32_t i = 0; i < cfg->classes; i++)
		if (!cfg->sizes[i] || (i && cfg->sizes[i] <= cfg->sizes[i - 1]))
			return family_refuse(fault, "sizes", -EINVAL);
	if (cfg->exhaust == LFP_EXHAUST_GROW && !cfg->max_capacities)
		return family_refuse(fault, "max_capacities", -EINVAL);
	return 0;
}

/* A field of a class's lfp_config by its name in lfp_family_config. */
static const char *family_field(const char *field)
{
	if (field && !strcmp(field, "obj_size"))
		return "sizes";
	if (field && !strcmp(field, "capacity"))
		return "capacities";
	if (field && !strcmp(field, "max_capacity"))
		return "max_capacities";
	return field;
}

/* Digits of v, at the end of buf[0..n); returns where they start. */
static char *family_digits(size_t v, char *buf, size_t n)
{
	char *p = buf + n;

	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) && p > buf);
	return p;
}

/*
 * "name/size", cut so that it fits in LFP_NAME_MAX bytes: the size is
 * what tells classes apart, so the family's name gives way, cut back to
 * a UTF-8 character boundary as lfp_create would cut it.
 */
static void family_class_name(const char *name, size_t size,
			      char out[LFP_NAME_MAX + 1])
{
	char buf[24];
	char *digits = family_digits(size, buf, sizeof(buf));
	size_t ndigits = (size_t)(buf + sizeof(buf) - digits);
	size_t len = 0;

	if (name && *name) {
		size_t room = LFP_NAME_MAX - ndigits - 1;

		len = strnlen(name, room + 1);
		if (len > room) {
			len = room;
			while (len && ((unsigned char)name[len] & 0xc0) == 0x80)
				len--;
		}
		memcpy(out, name, len);
		out[len++] = '/';
	}
	memcpy(out + len, digits, ndigits);
	out[len + ndigits] = '\0';
}

/* Class i's pool configuration; name is filled in, cfg must outlive c. */
static struct lfp_config family_class_config(const struct lfp_family_config *cfg,
					     uint32_t i, char *name)
{
	struct lfp_config c = {
		.obj_size = cfg->sizes[i],
		.align = cfg->align,
		.capacity = cfg->capacities[i],
		.flags = cfg->flags,
		.cache_size = cfg->cache_size,
		.batch_size = cfg->batch_size,
		.exhaust = cfg->exhaust,
		.max_capacity = cfg->max_capacities ? cfg->max_capacities[i]
						    : 0,
		.reclaim = cfg->reclaim,
		.reclaim_tries = cfg->reclaim_tries,
		.ctor = cfg->ctor,
		.on_alloc = cfg->on_alloc,
		.on_free = cfg->on_free,
		.hook_arg = cfg->hook_arg,
		.name = name,
	};

	family_class_name(cfg->name, cfg->sizes[i], name);
	return c;
}

/*
 * The zones: 2^zshift bytes each, the smallest power of two (a page at
 * least) that holds every class's mapping, so a class's zone is its
 * offset from the reservation shifted right. 0, or the error lfp_create
 * would return for the first class it would refuse (with *fault, if
 * fault is not NULL, naming the field at fault as cfg names it), or
 * -ENOMEM.
 */
static int family_zones(const struct lfp_family_config *cfg, uint32_t *zshift,
			const char **fault)
{
	char name[LFP_NAME_MAX + 1];
	size_t most = lfpi_page_size(), len;
	uint32_t z = 0, cb = 0;
	int err;

	for (uint32_t i = 0; i < cfg->classes; i++) {
		struct lfp_config c = family_class_config(cfg, i, name);
		const char *field = NULL;

		if ((err = lfpi_pool_map_len(&c, &len, &field))) {
			if (fault)
				*fault = family_field(field);
			return err;
		}
		if (len > most)
			most = len;
	}
	while (z < 63 && ((size_t)1 << z) < most)
		z++;
	/* All the zones must fit in half the address space. */
	while (((uint32_t)1 << cb) < cfg->classes)
		cb++;
	if (z + cb >= sizeof(size_t) * 8 - 1)
		return -ENOMEM;
	*zshift = z;
	return 0;
}

static int family_make_class(struct lfp_family *fam,
			     const struct lfp_family_config *cfg, uint32_t i)
{
	char name[LFP_NAME_MAX + 1];
	struct lfp_config c = family_class_config(cfg, i, name);
	size_t zone = (size_t)1 << fam->hot.zshift;
	int err;

	fam->hot.cls[i].size = cfg->sizes[i];
	err = lfpi_create_at(&c, (char *)fam->map + i * zone, zone,
			     &fam->hot.cls[i].pool);
	if (!err)
		fam->hot.num[i] = fam->hot.cls[i].pool->hot.num;
	return err;
}

/* The size map: for every 8-byte step up to the largest class (and
 * LFPI_FAMILY_MAP_MAX), the first class that holds the step's smallest
 * size (lfp_family_class goes on from there for sizes of the step that
 * it does not hold: classes need not be multiples of 8). */
static void family_map_sizes(struct lfp_family *fam)
{
	struct lfpi_family_hot *f = &fam->hot;
	size_t max = f->cls[f->classes - 1].size;
	uint32_t c = 0;

	f->map_max = max < LFPI_FAMILY_MAP_MAX ? max : LFPI_FAMILY_MAP_MAX;
	for (size_t i = 1; i * 8 - 7 <= f->map_max; i++) {
		while (f->cls[c].size < i * 8 - 7)
			c++;
		f->map[i] = (uint8_t)c;
	}
}

int lfp_family_create(const struct lfp_family_config *cfg,
		      struct lfp_family **out)
{
	struct lfp_family *fam;
	uint32_t zshift;
	int err;

	if (!cfg || !out)
		return -EINVAL;
	if ((err = family_check(cfg, NULL)) ||
	    (err = family_zones(cfg, &zshift, NULL)))
		return err;
	/* mmap, not malloc: the library never calls malloc. */
	fam = mmap(NULL, sizeof(*fam), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fam == MAP_FAILED)
		return -ENOMEM;
	fam->spill = cfg->spill;
	fam->hot.zshift = zshift;
	fam->map_size = (size_t)cfg->classes << zshift;
	if (!(fam->map = lfpi_reserve(fam->map_size))) {
		munmap(fam, sizeof(*fam));
		return -ENOMEM;
	}
	fam->hot.base = (uintptr_t)fam->map;
	for (uint32_t i = 0; i < cfg->classes; i++) {
		if ((err = family_make_class(fam, cfg, i))) {
			lfp_family_destroy(fam);
			return err;
		}
		fam->hot.classes = i + 1;
	}
	family_map_sizes(fam);
	*out = fam;
	return 0;
}

const char *lfp_family_config_fault(const struct lfp_family_config *cfg)
{
	const char *fault = NULL;
	uint32_t zshift;

	if (cfg && !family_check(cfg, &fault))
		family_zones(cfg, &zshift, &fault);
	return fault;
}

void lfp_family_destroy(struct lfp_family *fam)
{
	struct lfp_family_cache *fc, *next;

	if (!fam)
		return;
	/* The pools free their explicit caches, the family caches' too. */
	for (uint32_t i = 0; i < fam->hot.classes; i++)
		lfp_destroy(fam->hot.cls[i].pool);
	/* Relaxed: no other thread may use the family now. */
	for (fc = atomic_load_explicit(&fam->caches, memory_order_relaxed); fc;
	     fc = next) {
		next = fc->next;
		munmap(fc, sizeof(*fc));
	}
	munmap(fam->map, fam->map_size);
	munmap(fam, sizeof(*fam));
}

/* ---- routing ------------------------------------------------------------ */

int lfp_family_class(const struct lfp_family *fam, size_t size)
{
	const struct lfpi_family_hot *f = fam ? &fam->hot : NULL;
	uint32_t lo = 0, hi;

	if (!fam || !size)
		return -EINVAL;
	if (size <= f->map_max) {
		lo = f->map[(size + 7) / 8];
		while (f->cls[lo].size < size) /* a class inside the step */
			lo++;
		return (int)lo;
	}
	hi = f->classes;
	if (size > f->cls[hi - 1].size)
		return -ERANGE;
	/* The first class whose size is >= size; there is one. */
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (f->cls[mid].size < size)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int)lo;
}

/* The class whose zone holds obj; >= classes if none does (the inline
 * paths' lfpi_family_zone, lfpool/inline.h, made again). */
static uint64_t family_zone(const struct lfpi_family_hot *f, const void *obj)
{
	return (uint64_t)((uintptr_t)obj - f->base) >> f->zshift;
}

int lfp_family_class_of(const struct lfp_family *fam, const void *obj)
{
	uint64_t z;

	if (!fam || !obj)
		return -EINVAL;
	/* Only the pool of obj's zone can own it. */
	z = family_zone(&fam->hot, obj);
	if (z >= fam->hot.classes)
		return -EFAULT;
	return lfp_owns(fam->hot.cls[z].pool, obj) ? (int)z : -EFAULT;
}

/* After a call through the thread's cache of class c's pool, which the
 * call may have made: make it the thread's entry for class c. */
static void family_cls_put(const struct lfp_family *fam, uint32_t c)
{
	lfpi_cache_cls_put(lfpi_cache_lookup(fam->hot.cls[c].pool,
					     fam->hot.num[c]),
			   c);
}

/* The class that fits, c, is exhausted: try up to spill larger ones,
 * through the calling thread's caches (fc NULL) or fc's. */
static void *family_spill(struct lfp_family *fam, struct lfp_family_cache *fc,
			  uint32_t c)
{
	uint32_t last = fam->hot.classes - 1;

	if (fam->spill < last - c)
		last = c + fam->spill;
	while (c++ < last) {
		void *obj = fc ? lfpi_cache_alloc_slow(fc->hot.caches[c],
						       LFPI_CTL_OUT)
			       : lfpi_alloc_slow(fam->hot.cls[c].pool);

		if (obj) {
			family_count(&fam->spilled);
			return obj;
		}
	}
	family_count(&fam->failed_allocs);
	return NULL;
}

/* The allocation the inline path left: a size the map does not answer at
 * once, a refused one, or one the class's cache cannot serve inline. */
static void *family_alloc(struct lfp_family *fam, struct lfp_family_cache *fc,
			  size_t size)
{
	int c = lfp_family_class(fam, size);
	void *obj;

	if (c < 0) {
		if (fam)
			family_count(&fam->bad_sizes);
		return NULL;
	}
	if (fc) {
		obj = lfpi_cache_alloc_slow(fc->hot.caches[c], LFPI_CTL_OUT);
	} else {
		obj = lfpi_alloc_slow(fam->hot.cls[c].pool);
		/* After: the call may have made the cache. */
		family_cls_put(fam, (uint32_t)c);
	}
	return obj ? obj : family_spill(fam, fc, (uint32_t)c);
}

void *lfpi_family_alloc_slow(struct lfp_family *fam, size_t size)
{
	return family_alloc(fam, NULL, size);
}

void *lfpi_family_cache_alloc_slow(struct lfp_family_cache *fc, size_t size)
{
	return fc ? family_alloc(fc->fam, fc, size) : NULL;
}

/* The release the inline path left: not a live object's start in its
 * zone's pool (or a cache the thread has not made yet). */
static int family_free(struct lfp_family *fam, struct lfp_family_cache *fc,
		       void *obj)
{
	int c = lfp_family_class_of(fam, obj);

	if (c >= 0 && fc)
		return lfpi_cache_free_slow(fc->hot.caches[c], obj);
	if (c >= 0) {
		int err = lfpi_free_slow(fam->hot.cls[c].pool, obj);

		family_cls_put(fam, (uint32_t)c);
		return err;
	}
	if (c == -EFAULT)
		family_count(&fam->foreign_frees);
	return c;
}

int lfpi_family_free_slow(struct lfp_family *fam, void *obj)
{
	return family_free(fam, NULL, obj);
}

int lfpi_family_cache_free_slow(struct lfp_family_cache *fc, void *obj)
{
	return fc ? family_free(fc->fam, fc, obj) : -EINVAL;
}

/* ---- introspection ------------------------------------------------------ */

uint32_t lfp_family_classes(const struct lfp_family *fam)
{
	return fam ? fam->hot.classes : 0;
}

struct lfp_pool *lfp_family_pool(const struct lfp_family *fam, uint32_t i)
{
	return fam && i < fam->hot.classes ? fam->hot.cls[i].pool : NULL;
}

size_t lfp_family_class_size(const struct lfp_family *fam, uint32_t i)
{
	return fam && i < fam->hot.classes ? fam->hot.cls[i].size : 0;
}

static void family_add(struct lfp_stats *t, const struct lfp_stats *s)
{
	t->capacity += s->capacity;
	t->live += s->live;
	t->cached += s->cached;
	t->free += s->free;
	t->high_water += s->high_water;
	t->allocs += s->allocs;
	t->frees += s->frees;
	t->failed_allocs += s->failed_allocs;
	t->rejected_frees += s->rejected_frees;
	t->cas_retries += s->cas_retries;
	t->cache_hits += s->cache_hits;
	t->refills += s->refills;
	t->flushes += s->flushes;
	t->steals += s->steals;
	t->deferred += s->deferred;
	t->max_capacity += s->max_capacity;
	t->grown += s->grown;
	t->trimmed_bytes += s->trimmed_bytes;
	t->reclaims += s->reclaims;
}

void lfp_family_stats(const struct lfp_family *fam,
		      struct lfp_family_stats *out)
{
	struct lfp_family *f = (struct lfp_family *)fam; /* counters only */
	struct lfp_family_stats st;

	if (!fam || !out)
		return;
	memset(&st, 0, sizeof(st));
	for (uint32_t i = 0; i < fam->hot.classes; i++) {
		struct lfp_stats s;

		lfp_stats(fam->hot.cls[i].pool, &s);
		family_add(&st.total, &s);
	}
	st.spilled = atomic_load_explicit(&f->spilled, memory_order_relaxed);
	st.failed_allocs = atomic_load_explicit(&f->failed_allocs,
						memory_order_relaxed);
	st.bad_sizes = atomic_load_explicit(&f->bad_sizes,
					    memory_order_relaxed);
	st.foreign_frees = atomic_load_explicit(&f->foreign_frees,
						memory_order_relaxed);
	st.total.rejected_frees += st.foreign_frees;
	*out = st;
}
