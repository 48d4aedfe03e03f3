/* SPDX-License-Identifier: MIT */
/*
 * Catching users' bugs, and the pool's own: the tools that watch released
 * objects (a fill pattern, AddressSanitizer poisoning, Valgrind memcheck's
 * mempool requests), and the reports that name a pool. Calls only the
 * slab; the census of every slot is extras/audit.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/debug.h"

#if defined(__SANITIZE_ADDRESS__)
#define DEBUG_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DEBUG_ASAN 1
#endif
#endif
#ifdef DEBUG_ASAN
#include <sanitizer/asan_interface.h>
#define DEBUG_ASAN_PRESENT 1
#else
/*
 * A build without ASan still poisons released objects for a program that
 * has it: the program's ASan runtime exports its poisoning interface, and
 * these weak references bind to it when the library is loaded (or linked
 * statically), else stay NULL. Default visibility, or -fvisibility=hidden
 * would make the link resolve them to NULL for good. lfpi_debug_init looks
 * once per pool; a pool that poisons has quirks, so its caches take the
 * out-of-line paths, and the inline fast path of other pools is as it was.
 */
__attribute__((weak, visibility("default"))) void
__asan_poison_memory_region(void const volatile *addr, size_t size);
__attribute__((weak, visibility("default"))) void
__asan_unpoison_memory_region(void const volatile *addr, size_t size);
#define DEBUG_ASAN_PRESENT \
	(__asan_poison_memory_region && __asan_unpoison_memory_region)
#define ASAN_POISON_MEMORY_REGION(addr, size) \
	__asan_poison_memory_region((addr), (size))
#define ASAN_UNPOISON_MEMORY_REGION(addr, size) \
	__asan_unpoison_memory_region((addr), (size))
#endif

#ifdef HAVE_VALGRIND_MEMCHECK_H
#include <valgrind/memcheck.h>
#else
#define RUNNING_ON_VALGRIND 0
#define VALGRIND_CREATE_MEMPOOL(pool, rz, zeroed) ((void)0)
#define VALGRIND_DESTROY_MEMPOOL(pool) ((void)0)
#define VALGRIND_MEMPOOL_ALLOC(pool, addr, size) ((void)0)
#define VALGRIND_MEMPOOL_FREE(pool, addr) ((void)0)
#define VALGRIND_MAKE_MEM_DEFINED(addr, size) ((void)0)
#define VALGRIND_CREATE_BLOCK(addr, size, desc) 0u
#define VALGRIND_DISCARD(handle) ((void)0)
#endif

/* The fill pattern, byte by byte as a little-endian 0x1deadb0b. */
static const unsigned char debug_fill[4] = { 0x0b, 0xdb, 0xea, 0x1d };

/*
 * memcheck must name the released object a bad access hits, and the
 * release that freed it. VALGRIND_MEMPOOL_FREE alone does not: memcheck
 * describes an address by trying, in this order, client blocks
 * (VALGRIND_CREATE_BLOCK, taken as they are), live mempool chunks, live
 * malloc blocks, and last its queue of freed blocks, oldest first, each
 * widened by the malloc redzone (16 bytes, --redzone-size; the mempool's
 * redzone plays no part there). Slots touch, so a neighbour released
 * earlier claims the first and last 16 bytes of an object ("3 bytes after
 * a block"); and a slot sits in the queue once per release, so a reused
 * slot is blamed on its oldest release. A redzone between slots would
 * change the layout and still lose to the oldest release.
 *
 * So a release also describes the object as a client block, made where
 * it was released, and the next allocation of the slot discards it.
 * memcheck looks for a free descriptor by scanning them from the first,
 * so a release costs O(client blocks): one block per released slot would
 * make releasing a large pool quadratic. The blocks live in a small
 * direct-mapped table instead, indexed by object address / stride, so
 * that DEBUG_VG_BLOCKS consecutive slots of a pool never share an entry. A
 * release whose entry is taken drops the block there, and that object is
 * left to memcheck's queue again.
 *
 * An entry is {low 32 bits of the object's address : 32, handle + 1 : 32},
 * 0 when empty. Whoever takes a block out of an entry, by an exchange or a
 * CAS, discards it: exactly one thread does. A stranger sharing an entry
 * and the low address bits only loses its description early. Relaxed:
 * the word only decides who takes a block, and Valgrind runs one thread
 * at a time, so a block is made before its handle can be taken.
 */
#define DEBUG_VG_BLOCKS 1024u

static _Atomic(uint64_t) debug_vg_blocks[DEBUG_VG_BLOCKS];

static _Atomic(uint64_t) *debug_vg_entry(const struct lfp_pool *pool,
					const void *obj)
{
	return &debug_vg_blocks[(uintptr_t)obj / pool->stride %
				DEBUG_VG_BLOCKS];
}

static uint64_t debug_vg_tag(const void *obj)
{
	return (uint64_t)(uint32_t)(uintptr_t)obj << 32;
}

static void debug_vg_discard(uint64_t e)
{
	if (e)
		VALGRIND_DISCARD((uint32_t)e - 1);
}

static void debug_vg_describe(const struct lfp_pool *pool, void *obj)
{
	uint64_t h = VALGRIND_CREATE_BLOCK(obj, pool->obj_size,
					   "released lfpool object");

	if (h >= UINT32_MAX) { /* no room in an entry: no description */
		VALGRIND_DISCARD(h);
		return;
	}
	debug_vg_discard(atomic_exchange_explicit(debug_vg_entry(pool, obj),
						  debug_vg_tag(obj) | (h + 1),
						  memory_order_relaxed));
}

/* Slot obj is allocated again: drop its block if it still has one. */
static void debug_vg_forget(const struct lfp_pool *pool, const void *obj)
{
	_Atomic(uint64_t) *entry = debug_vg_entry(pool, obj);
	uint64_t e = atomic_load_explicit(entry, memory_order_relaxed);

	if (e && (e >> 32) == (debug_vg_tag(obj) >> 32) &&
	    atomic_compare_exchange_strong_explicit(entry, &e, 0,
						    memory_order_relaxed,
						    memory_order_relaxed))
		debug_vg_discard(e);
}

/*
 * The pool goes: no block may describe its memory any more. The tags are
 * compared modulo 2^32, so a stranger with matching low address bits (or
 * every entry, for a pool of 4 GiB or more) goes too: it only loses its
 * description.
 */
static void debug_vg_forget_pool(const struct lfp_pool *pool)
{
	uint32_t base = (uint32_t)(uintptr_t)pool->objs;

	for (uint32_t i = 0; i < DEBUG_VG_BLOCKS; i++) {
		uint64_t e = atomic_load_explicit(&debug_vg_blocks[i],
						  memory_order_relaxed);

		if (e && (uint32_t)((e >> 32) - base) < pool->region_size &&
		    atomic_compare_exchange_strong_explicit(
			    &debug_vg_blocks[i], &e, 0, memory_order_relaxed,
			    memory_order_relaxed))
			debug_vg_discard(e);
	}
}

const char *lfpi_pool_label(const struct lfp_pool *pool,
			    char buf[LFPI_LABEL_MAX])
{
	char *p;

	if (!pool->name[0]) {
		snprintf(buf, LFPI_LABEL_MAX, "pool %p", (const void *)pool);
		return buf;
	}
	snprintf(buf, LFPI_LABEL_MAX, "pool \"%s\" (%p)", pool->name,
		 (const void *)pool);
	for (p = buf + sizeof("pool \"") - 1; p < buf + LFPI_LABEL_MAX && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return buf;
}

/* LFP_VALGRIND as first read: 0 not yet, DEBUG_VG_DEFAULT or
 * DEBUG_VG_PROFILE. */
#define DEBUG_VG_DEFAULT 1u
#define DEBUG_VG_PROFILE 2u
static _Atomic(uint32_t) debug_vg_mode;

bool lfpi_debug_vg_profile(void)
{
	uint32_t mode, seen = 0;
	const char *v;

	if (!RUNNING_ON_VALGRIND)
		return false;
	/*
	 * Read once for the process: the mode decides an unchecked pool's
	 * layout, so lfp_memory_size and a later lfp_create must see the
	 * same one even if the program changed the variable between them.
	 * The first reader's value stands (a racing one takes it). Relaxed:
	 * the word carries nothing but itself.
	 */
	mode = atomic_load_explicit(&debug_vg_mode, memory_order_relaxed);
	if (!mode) {
		v = getenv("LFP_VALGRIND");
		mode = v && !strcmp(v, "profile") ? DEBUG_VG_PROFILE
						  : DEBUG_VG_DEFAULT;
		if (!atomic_compare_exchange_strong_explicit(
			    &debug_vg_mode, &seen, mode, memory_order_relaxed,
			    memory_order_relaxed))
			mode = seen;
	}
	return mode == DEBUG_VG_PROFILE;
}

uint32_t lfpi_debug_tools(uint32_t flags, bool ctor)
{
	uint32_t d = 0;

#ifdef LFP_DEBUG
	d |= LFPI_DBG_FILL | LFPI_DBG_REPORT;
#endif
	if (flags & LFP_F_POISON)
		d |= LFPI_DBG_FILL;
	if (ctor) /* the constructed state must survive a release */
		d &= ~LFPI_DBG_FILL;
	if (DEBUG_ASAN_PRESENT)
		d |= LFPI_DBG_ASAN;
	/* memcheck knows better what is defined: no fill to check. */
	if (RUNNING_ON_VALGRIND && !lfpi_debug_vg_profile())
		d = (d & ~LFPI_DBG_FILL) | LFPI_DBG_VALGRIND;
	return d;
}

void lfpi_debug_init(struct lfp_pool *pool)
{
	uint32_t d = lfpi_debug_tools(pool->flags, pool->ctor != NULL);

	if (d & LFPI_DBG_VALGRIND)
		VALGRIND_CREATE_MEMPOOL(pool, 0, 0);
	pool->debug = d;
}

void lfpi_debug_destroy(struct lfp_pool *pool)
{
	uint32_t used = atomic_load_explicit(&pool->bump, memory_order_relaxed);

	if (pool->debug & LFPI_DBG_VALGRIND) {
		debug_vg_forget_pool(pool);
		VALGRIND_DESTROY_MEMPOOL(pool);
	}
	/* The memory may be the caller's, or mapped again: leave no poison. */
	if (pool->debug & LFPI_DBG_ASAN)
		ASAN_UNPOISON_MEMORY_REGION(lfpi_obj(pool, 0),
					    (size_t)used * pool->stride);
}

static void debug_written_after_release(struct lfp_pool *pool, uint32_t idx,
					size_t at)
{
	const unsigned char *p = lfpi_obj(pool, idx);
	char label[LFPI_LABEL_MAX];

	fprintf(stderr,
		"lfpool: %s, slot %u (object %p): written after its "
		"release: byte %zu is 0x%02x, the release fill is 0x%02x\n",
		lfpi_pool_label(pool, label), idx, (const void *)p, at, p[at],
		debug_fill[at % 4]);
	abort();
}

/*
 * Is the object still exactly as the release left it? Once lfp_trim has
 * given pages back, those read as zeroes, so a zero byte passes too: a
 * write of zeroes after release then goes unnoticed.
 */
static void debug_check_fill(struct lfp_pool *pool, uint32_t idx)
{
	const unsigned char *p = lfpi_obj(pool, idx);
	bool zero_ok = atomic_load_explicit(&pool->trimmed, memory_order_relaxed);

	for (size_t i = 0; i < pool->obj_size; i++)
		if (p[i] != debug_fill[i % 4] && !(zero_ok && !p[i]))
			debug_written_after_release(pool, idx, i);
}

void lfpi_debug_alloc(struct lfp_pool *pool, uint32_t idx, bool fresh)
{
	void *obj = lfpi_obj(pool, idx);

	if (pool->debug & LFPI_DBG_VALGRIND) {
		if (!fresh)
			debug_vg_forget(pool, obj);
		VALGRIND_MEMPOOL_ALLOC(pool, obj, pool->obj_size);
		/* A reused object of a pool with a ctor holds its constructed
		 * state, which MEMPOOL_ALLOC just marked undefined. */
		if (!fresh && pool->ctor)
			VALGRIND_MAKE_MEM_DEFINED(obj, pool->obj_size);
	}
	if (pool->debug & LFPI_DBG_ASAN)
		ASAN_UNPOISON_MEMORY_REGION(obj, pool->obj_size);
	if ((pool->debug & LFPI_DBG_FILL) && !fresh)
		debug_check_fill(pool, idx);
}

void lfpi_debug_free(struct lfp_pool *pool, uint32_t idx)
{
	unsigned char *p = lfpi_obj(pool, idx);

	if (pool->debug & LFPI_DBG_FILL)
		for (size_t i = 0; i < pool->obj_size; i++)
			p[i] = debug_fill[i % 4];
	if (pool->debug & LFPI_DBG_ASAN)
		ASAN_POISON_MEMORY_REGION(p, pool->obj_size);
	if (pool->debug & LFPI_DBG_VALGRIND) {
		VALGRIND_MEMPOOL_FREE(pool, p);
		debug_vg_describe(pool, p);
	}
}

void lfpi_debug_rejected(struct lfp_pool *pool, const void *obj, int err)
{
	char label[LFPI_LABEL_MAX];
	uint32_t idx;
	int e;

	if (!(pool->debug & LFPI_DBG_REPORT))
		return;
	idx = obj ? lfpi_slot_of(pool, obj, &e) : LFPI_NIL;
	fprintf(stderr, "lfpool: %s: release of %p refused (%s)",
		lfpi_pool_label(pool, label), obj,
		err == -EALREADY ? "already free"
		: err == -EFAULT ? "not in this pool"
				 : "not the start of an object");
	if (idx != LFPI_NIL)
		fprintf(stderr, ": slot %u", idx);
	else if (obj && lfp_owns(pool, obj))
		fprintf(stderr, " inside slot %zu",
			(size_t)((const char *)obj - pool->objs) / pool->stride);
	fputc('\n', stderr);
}
