/* SPDX-License-Identifier: MIT */
/*
 * family_cache.c: a family's family caches, one cache of each class's
 * pool behind one handle (lfp_family_cache_create and the rest). Made
 * with mmap, pushed on the family's list, never unlinked: given up, a
 * family cache is taken again by the next lfp_family_cache_create.
 * Beside family.c, which routes through them, in the same rank: neither
 * calls the other.
 */
#include <sys/mman.h>

#include "extras/family.h"

/* Make fc's class caches: true, or false with none left made. */
static bool family_cache_fill(struct lfp_family_cache *fc)
{
	const struct lfpi_family_hot *f = &fc->fam->hot;

	for (uint32_t i = 0; i < f->classes; i++)
		if (!(fc->hot.caches[i] = lfp_cache_create(f->cls[i].pool))) {
			while (i--)
				lfp_cache_destroy(fc->hot.caches[i]);
			return false;
		}
	return true;
}

/* A family cache given up earlier, taken; or NULL. */
static struct lfp_family_cache *family_cache_reuse(struct lfp_family *fam)
{
	/* Acquire: pairs with the release CAS that pushed the cache, so its
	 * next and the initialization of taken come before our CAS. */
	struct lfp_family_cache *fc =
		atomic_load_explicit(&fam->caches, memory_order_acquire);

	for (; fc; fc = fc->next) {
		uint32_t idle = 0;

		/* Acquire: pairs with the release store in
		 * lfp_family_cache_destroy, after which its caches were
		 * given up. */
		if (atomic_compare_exchange_strong_explicit(
			    &fc->taken, &idle, 1, memory_order_acquire,
			    memory_order_relaxed))
			return fc;
	}
	return NULL;
}

struct lfp_family_cache *lfp_family_cache_create(struct lfp_family *fam)
{
	struct lfp_family_cache *fc, *head;

	if (!fam)
		return NULL;
	if ((fc = family_cache_reuse(fam))) {
		if (family_cache_fill(fc))
			return fc;
		/* Release: as in lfp_family_cache_destroy. */
		atomic_store_explicit(&fc->taken, 0, memory_order_release);
		return NULL;
	}
	fc = mmap(NULL, sizeof(*fc), PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fc == MAP_FAILED)
		return NULL;
	fc->hot.fam = &fam->hot;
	fc->fam = fam;
	atomic_init(&fc->taken, 1);
	if (!family_cache_fill(fc)) {
		munmap(fc, sizeof(*fc));
		return NULL;
	}
	head = atomic_load_explicit(&fam->caches, memory_order_relaxed);
	do
		fc->next = head;
	/* Release: pairs with the acquire load in family_cache_reuse. */
	while (!atomic_compare_exchange_weak_explicit(&fam->caches, &head, fc,
						      memory_order_release,
						      memory_order_relaxed));
	return fc;
}

void lfp_family_cache_destroy(struct lfp_family_cache *fc)
{
	if (!fc)
		return;
	for (uint32_t i = 0; i < fc->fam->hot.classes; i++)
		lfp_cache_destroy(fc->hot.caches[i]);
	/* Release: pairs with the acquire CAS in family_cache_reuse. */
	atomic_store_explicit(&fc->taken, 0, memory_order_release);
}

void lfp_family_cache_flush(struct lfp_family_cache *fc)
{
	if (!fc)
		return;
	for (uint32_t i = 0; i < fc->fam->hot.classes; i++)
		lfp_cache_flush(fc->hot.caches[i]);
}

struct lfp_cache *lfp_family_cache_class(const struct lfp_family_cache *fc,
					 uint32_t i)
{
	return fc && i < fc->fam->hot.classes ? fc->hot.caches[i] : NULL;
}
