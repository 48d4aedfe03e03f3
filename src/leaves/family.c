/*
 * family.c: size-class families, a pool per object size behind one
 * allocator that takes a size.
 *
 * A leaf on top of the public API: every class is an ordinary pool made
 * with lfp_create, and the family only routes, through the inline paths
 * of lfpool.h (the thread's cache of the class, found in its table).
 * Allocation finds the smallest class that fits in a table indexed by
 * the size in 8-byte steps (sizes up to FAMILY_MAP_MAX; above, by binary
 * search over the sizes). Release
 * finds the class from the address: each pool's objects lie in one
 * region that starts at lfp_at(pool, 0) and never moves, the regions of
 * different pools do not overlap, so the only class that can own a
 * pointer is the one whose region starts nearest below it, and lfp_owns
 * says whether it does. The family is read-only after creation but for
 * its counters, so routing touches no shared word of its own.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "lfpool.h"

/* Sizes the map answers, in steps of 8 bytes; larger ones are searched. */
#define FAMILY_MAP_MAX 4096u

struct lfp_family {
	/* Read-only after lfp_family_create. */
	uint32_t classes;
	uint32_t spill;
	size_t map_max;       /* the largest size the map answers */
	/* Entry (size + 7) / 8: the first class that holds the step's
	 * smallest size (family_map_sizes). */
	uint8_t map[FAMILY_MAP_MAX / 8 + 1];
	size_t sizes[LFP_FAMILY_MAX_CLASSES]; /* increasing */
	struct lfp_pool *pools[LFP_FAMILY_MAX_CLASSES];
	/* The object regions' starts, increasing, and their classes. */
	uintptr_t bases[LFP_FAMILY_MAX_CLASSES];
	uint8_t base_class[LFP_FAMILY_MAX_CLASSES];

	/* Bumped only when an allocation fails or spills, or a release is
	 * refused: off the common paths, on a line of their own. Relaxed
	 * throughout: they are statistics and order nothing. */
	alignas(64) _Atomic uint64_t spilled;
	_Atomic uint64_t failed_allocs;
	_Atomic uint64_t bad_sizes;
	_Atomic uint64_t foreign_frees;
};

static void family_count(_Atomic uint64_t *counter)
{
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

/* ---- creation ----------------------------------------------------------- */

static int family_check(const struct lfp_family_config *cfg)
{
	if (!cfg->classes || !cfg->sizes || !cfg->capacities)
		return -EINVAL;
	if (cfg->classes > LFP_FAMILY_MAX_CLASSES)
		return -E2BIG;
	for (uint32_t i = 0; i < cfg->classes; i++)
		if (!cfg->sizes[i] || (i && cfg->sizes[i] <= cfg->sizes[i - 1]))
			return -EINVAL;
	if (cfg->exhaust == LFP_EXHAUST_GROW && !cfg->max_capacities)
		return -EINVAL;
	return 0;
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

static int family_make_class(struct lfp_family *fam,
			     const struct lfp_family_config *cfg, uint32_t i)
{
	char name[LFP_NAME_MAX + 1];
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
	fam->sizes[i] = cfg->sizes[i];
	return lfp_create(&c, &fam->pools[i]);
}

/* Sort the classes' regions by address (insertion sort: 64 at most). */
static void family_sort_regions(struct lfp_family *fam)
{
	for (uint32_t i = 0; i < fam->classes; i++) {
		uintptr_t base = (uintptr_t)lfp_at(fam->pools[i], 0);
		uint32_t j = i;

		for (; j && fam->bases[j - 1] > base; j--) {
			fam->bases[j] = fam->bases[j - 1];
			fam->base_class[j] = fam->base_class[j - 1];
		}
		fam->bases[j] = base;
		fam->base_class[j] = (uint8_t)i;
	}
}

/* The size map: for every 8-byte step up to the largest class (and
 * FAMILY_MAP_MAX), the first class that holds the step's smallest size
 * (lfp_family_class goes on from there for sizes of the step that it
 * does not hold: classes need not be multiples of 8). */
static void family_map_sizes(struct lfp_family *fam)
{
	size_t max = fam->sizes[fam->classes - 1];
	uint32_t c = 0;

	fam->map_max = max < FAMILY_MAP_MAX ? max : FAMILY_MAP_MAX;
	for (size_t i = 1; i * 8 - 7 <= fam->map_max; i++) {
		while (fam->sizes[c] < i * 8 - 7)
			c++;
		fam->map[i] = (uint8_t)c;
	}
}

int lfp_family_create(const struct lfp_family_config *cfg,
		      struct lfp_family **out)
{
	struct lfp_family *fam;
	int err;

	if (!cfg || !out)
		return -EINVAL;
	if ((err = family_check(cfg)))
		return err;
	/* mmap, not malloc: the library never calls malloc. */
	fam = mmap(NULL, sizeof(*fam), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fam == MAP_FAILED)
		return -ENOMEM;
	fam->spill = cfg->spill;
	for (uint32_t i = 0; i < cfg->classes; i++) {
		if ((err = family_make_class(fam, cfg, i))) {
			lfp_family_destroy(fam);
			return err;
		}
		fam->classes = i + 1;
	}
	family_sort_regions(fam);
	family_map_sizes(fam);
	*out = fam;
	return 0;
}

void lfp_family_destroy(struct lfp_family *fam)
{
	if (!fam)
		return;
	for (uint32_t i = 0; i < fam->classes; i++)
		lfp_destroy(fam->pools[i]);
	munmap(fam, sizeof(*fam));
}

/* ---- routing ------------------------------------------------------------ */

int lfp_family_class(const struct lfp_family *fam, size_t size)
{
	uint32_t lo = 0, hi;

	if (!fam || !size)
		return -EINVAL;
	if (size <= fam->map_max) {
		lo = fam->map[(size + 7) / 8];
		while (fam->sizes[lo] < size) /* a class inside the step */
			lo++;
		return (int)lo;
	}
	hi = fam->classes;
	if (size > fam->sizes[hi - 1])
		return -ERANGE;
	/* The first class whose size is >= size; there is one. */
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (fam->sizes[mid] < size)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int)lo;
}

int lfp_family_class_of(const struct lfp_family *fam, const void *obj)
{
	uintptr_t p = (uintptr_t)obj;
	uint32_t lo = 0, hi, c;

	if (!fam || !obj)
		return -EINVAL;
	/* The last region that starts at or below p: the only one that
	 * can hold it, since regions do not overlap. */
	hi = fam->classes;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (fam->bases[mid] <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -EFAULT;
	c = fam->base_class[lo - 1];
	return lfp_owns(fam->pools[c], obj) ? (int)c : -EFAULT;
}

/* The class that fits is exhausted: try up to spill larger ones. */
static void *family_spill(struct lfp_family *fam, uint32_t c)
{
	uint32_t last = fam->classes - 1;

	if (fam->spill < last - c)
		last = c + fam->spill;
	while (c++ < last) {
		void *obj = lfpi_alloc_inline(fam->pools[c]);

		if (obj) {
			family_count(&fam->spilled);
			return obj;
		}
	}
	family_count(&fam->failed_allocs);
	return NULL;
}

void *lfp_family_alloc(struct lfp_family *fam, size_t size)
{
	int c = lfp_family_class(fam, size);
	void *obj;

	if (c < 0) {
		if (fam)
			family_count(&fam->bad_sizes);
		return NULL;
	}
	obj = lfpi_alloc_inline(fam->pools[c]);
	return obj ? obj : family_spill(fam, (uint32_t)c);
}

int lfp_family_free(struct lfp_family *fam, void *obj)
{
	int c = lfp_family_class_of(fam, obj);

	if (c >= 0)
		return lfpi_free_inline(fam->pools[c], obj);
	if (c == -EFAULT)
		family_count(&fam->foreign_frees);
	return c;
}

/* ---- introspection ------------------------------------------------------ */

uint32_t lfp_family_classes(const struct lfp_family *fam)
{
	return fam ? fam->classes : 0;
}

struct lfp_pool *lfp_family_pool(const struct lfp_family *fam, uint32_t i)
{
	return fam && i < fam->classes ? fam->pools[i] : NULL;
}

size_t lfp_family_class_size(const struct lfp_family *fam, uint32_t i)
{
	return fam && i < fam->classes ? fam->sizes[i] : 0;
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
	for (uint32_t i = 0; i < fam->classes; i++) {
		struct lfp_stats s;

		lfp_stats(fam->pools[i], &s);
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
