/* SPDX-License-Identifier: MIT */
/* Sizing, alignment, bad configurations, index <-> pointer, caller memory. */
#include <errno.h>
#include <stdalign.h>
#include <string.h>
#include <sys/mman.h>

#include "testutil.h"

/*
 * What README.md ("### Memory") says a pool costs beside its objects. The
 * test below holds lfp_memory_size and the README to these numbers, so a
 * change to the metadata or the header fails here until both agree.
 */
/* Millionths of a byte of metadata per slot, at the default batch of 512:
 * 8 (next, generation) + 4 (a magazine entry) + 8 / 512 (its header). */
#define DOC_META_PER_SLOT_1M 12015625u
/* bytes of the fixed part: the pool struct holds pointers */
#define DOC_HEADER_LP64 70455u
#define DOC_HEADER_ILP32 70327u
#define DOC_HEADER (sizeof(void *) == 8 ? DOC_HEADER_LP64 : DOC_HEADER_ILP32)

static int try_create(struct lfp_config cfg)
{
	struct lfp_pool *sentinel = (struct lfp_pool *)&cfg, *pool = sentinel;
	int err = lfp_create(&cfg, &pool);

	if (err) /* *out must be left alone on error */
		ck_assert_ptr_eq(pool, sentinel);
	else
		lfp_destroy(pool);
	return err;
}

START_TEST(rejects_bad_configs)
{
	struct lfp_config ok = { .obj_size = 16, .capacity = 8 };
	struct lfp_config c;
	struct lfp_pool *pool;

	ck_assert_int_eq(lfp_create(NULL, &pool), -EINVAL);
	ck_assert_int_eq(lfp_create(&ok, NULL), -EINVAL);
	c = ok, c.obj_size = 0;
	ck_assert_int_eq(try_create(c), -EINVAL);
	c = ok, c.capacity = 0;
	ck_assert_int_eq(try_create(c), -EINVAL);
	for (size_t a = 3; a < 4096; a += 7)
		if (a & (a - 1)) {
			c = ok, c.align = a;
			ck_assert_int_eq(try_create(c), -EINVAL);
		}
	c = ok, c.capacity = LFP_MAX_CAPACITY + 1;
	ck_assert_int_eq(try_create(c), -EOVERFLOW);
	c = ok, c.obj_size = SIZE_MAX; /* rounding up to align overflows */
	ck_assert_int_eq(try_create(c), -EOVERFLOW);
	c = ok, c.obj_size = SIZE_MAX / 4, c.capacity = 8; /* size x capacity */
	ck_assert_int_eq(try_create(c), -EOVERFLOW);
	c = ok, c.align = SIZE_MAX / 4 + 1, c.capacity = 4;
	ck_assert_int_eq(try_create(c), -EOVERFLOW);
	c = ok, c.flags = 0x80000000u;
	ck_assert_int_eq(try_create(c), -EINVAL);
	/* And a good one still works. */
	ck_assert_int_eq(try_create(ok), 0);
}
END_TEST

/* lfp_create refuses c with err, and lfp_config_fault names field. */
static void expect_fault(struct lfp_config c, int err, const char *field)
{
	const char *fault = lfp_config_fault(&c);

	ck_assert_int_eq(try_create(c), err);
	ck_assert_msg(fault && strcmp(fault, field) == 0,
		      "lfp_config_fault names %s, not %s", fault ? fault : "NULL",
		      field);
}

static int fault_reclaim(struct lfp_pool *pool, void *arg)
{
	(void)pool, (void)arg;
	return 1;
}

static void fault_ctor(void *obj, void *arg)
{
	(void)obj, (void)arg;
}

/*
 * lfp_config_fault names the field of every refusal lfp_create's
 * comment lists, by its name in struct lfp_config; with several at
 * fault, the one checked first; NULL for what lfp_create accepts.
 */
START_TEST(config_fault_names_the_field)
{
	static alignas(LFP_MEMORY_ALIGN) char region[1 << 16];
	struct lfp_config ok = { .obj_size = 16, .capacity = 8 };
	struct lfp_config c;

	ck_assert_ptr_null(lfp_config_fault(NULL));
	ck_assert_ptr_null(lfp_config_fault(&ok));
	c = ok, c.obj_size = 0;
	expect_fault(c, -EINVAL, "obj_size");
	c = ok, c.capacity = 0;
	expect_fault(c, -EINVAL, "capacity");
	c = ok, c.align = 24;
	expect_fault(c, -EINVAL, "align");
	c = ok, c.capacity = LFP_MAX_CAPACITY + 1;
	expect_fault(c, -EOVERFLOW, "capacity");
	c = ok, c.max_capacity = LFP_MAX_CAPACITY + 1;
	expect_fault(c, -EOVERFLOW, "max_capacity");
	c = ok, c.flags = 0x80000000u;
	expect_fault(c, -EINVAL, "flags");
	c = ok, c.max_capacity = 4;
	expect_fault(c, -EINVAL, "max_capacity");
	c = ok, c.exhaust = LFP_EXHAUST_ABORT + 1;
	expect_fault(c, -EINVAL, "exhaust");
	c = ok, c.exhaust = LFP_EXHAUST_RECLAIM;
	expect_fault(c, -EINVAL, "reclaim");
	c.reclaim = fault_reclaim;
	ck_assert_ptr_null(lfp_config_fault(&c));
	c = ok, c.exhaust = LFP_EXHAUST_GROW;
	expect_fault(c, -EINVAL, "max_capacity");
	c.max_capacity = 64;
	ck_assert_ptr_null(lfp_config_fault(&c));
	c = ok, c.flags = LFP_F_UNCHECKED | LFP_F_STRICT;
	expect_fault(c, -EINVAL, "flags");
	c = ok, c.flags = LFP_F_UNCHECKED, c.ctor = fault_ctor;
	expect_fault(c, -EINVAL, "ctor");
	c = ok, c.obj_size = SIZE_MAX; /* rounding up to align overflows */
	expect_fault(c, -EOVERFLOW, "obj_size");
	c = ok, c.obj_size = SIZE_MAX / 4; /* size x capacity */
	expect_fault(c, -EOVERFLOW, "obj_size");
	c = ok, c.align = SIZE_MAX / 4 + 1, c.capacity = 4; /* align is larger */
	expect_fault(c, -EOVERFLOW, "align");
	/* Fits, laid out, but not once aligned for mapping: still the size
	 * that overflows, as a family's class says (check_family). */
	c = ok, c.obj_size = SIZE_MAX / 2 + 1, c.align = SIZE_MAX / 4 + 1;
	c.capacity = 1;
	ck_assert_uint_ne(lfp_memory_size(&c), 0);
	expect_fault(c, -EOVERFLOW, "obj_size");
	c = ok, c.cache_size = LFP_MAX_CACHE_SIZE + 1;
	expect_fault(c, -EINVAL, "cache_size");
	c = ok, c.cache_size = 4, c.batch_size = 5;
	expect_fault(c, -EINVAL, "batch_size");
	c = ok, c.batch_size = 3; /* the default cache of 8 slots holds 2 */
	expect_fault(c, -EINVAL, "batch_size");
	c = ok, c.memory = region, c.memory_size = lfp_memory_size(&ok) - 1;
	expect_fault(c, -EINVAL, "memory_size");
	c = ok, c.memory = region + 8, c.memory_size = lfp_memory_size(&ok);
	expect_fault(c, -EINVAL, "memory");
	c.memory = region;
	ck_assert_ptr_null(lfp_config_fault(&c));
	ck_assert_int_eq(try_create(c), 0);
	/* Several at fault: the first lfp_create checks. */
	c = ok, c.obj_size = 0, c.capacity = 0, c.align = 3, c.flags = ~0u;
	ck_assert_str_eq(lfp_config_fault(&c), "obj_size");
	c.obj_size = 16;
	ck_assert_str_eq(lfp_config_fault(&c), "capacity");
	c.capacity = 8;
	ck_assert_str_eq(lfp_config_fault(&c), "align");
}
END_TEST

/*
 * Over configurations drawn from each field's good and bad values,
 * lfp_config_fault names a field exactly when lfp_create refuses one:
 * -EINVAL or -EOVERFLOW (with or without caller memory).
 */
START_TEST(config_fault_agrees_with_create)
{
	static alignas(LFP_MEMORY_ALIGN) char region[1 << 16];
	/* Eight values a field, one or two of them bad (alone or with
	 * another field), so that both answers come up often. */
	static const size_t obj_sizes[] = { 0, 1, 8, 16, 24, 48, 64,
					    SIZE_MAX / 2 };
	static const size_t aligns[] = { 0, 0, 0, 8, 16, 64, 3,
					 SIZE_MAX / 4 + 1 };
	static const uint32_t caps[] = { 1, 8, 8, 16, 40, 64, 0,
					 LFP_MAX_CAPACITY + 1 };
	static const uint32_t maxes[] = { 0, 0, 0, 0, 64, 80, 20,
					  LFP_MAX_CAPACITY + 1 };
	static const uint32_t flags[] = { 0, 0, 0, LFP_F_NO_CACHE,
					  LFP_F_STRICT, LFP_F_UNCHECKED,
					  LFP_F_UNCHECKED | LFP_F_STRICT,
					  1u << 30 };
	static const uint32_t caches[] = { 0, 0, 0, 2, 16, 32, 64,
					   LFP_MAX_CACHE_SIZE + 1 };
	static const uint32_t batches[] = { 0, 0, 0, 0, 1, 2, 9, 40 };
	static const uint32_t exhausts[] = { LFP_EXHAUST_NULL,
					     LFP_EXHAUST_NULL,
					     LFP_EXHAUST_NULL,
					     LFP_EXHAUST_NULL,
					     LFP_EXHAUST_ABORT,
					     LFP_EXHAUST_GROW,
					     LFP_EXHAUST_RECLAIM, 99 };
	uint32_t seed = 12345;
	unsigned named = 0;

	for (int i = 0; i < 3000; i++) {
		struct lfp_config c = { 0 };
		const char *fault;
		int err;

#define PICK(a) a[(seed = seed * 1103515245u + 12345u) >> 29]
		c.obj_size = PICK(obj_sizes);
		c.align = PICK(aligns);
		c.capacity = PICK(caps);
		c.max_capacity = PICK(maxes);
		c.flags = PICK(flags);
		c.cache_size = PICK(caches);
		c.batch_size = PICK(batches);
		c.exhaust = PICK(exhausts);
#undef PICK
		if (seed & 0x300)
			c.reclaim = fault_reclaim;
		if (!(seed & 0xc00))
			c.ctor = fault_ctor;
		if (!(seed & 0x3000)) {
			c.memory = region + (seed & 0x4000 ? 16 : 0);
			c.memory_size = seed & 0x8000 ? 4096 : sizeof(region);
		}
		fault = lfp_config_fault(&c);
		err = try_create(c);
		ck_assert_msg((err == -EINVAL || err == -EOVERFLOW) ==
				      (fault != NULL),
			      "lfp_create: %d, lfp_config_fault: %s", err,
			      fault ? fault : "NULL");
		named += fault != NULL;
	}
	/* Both answers came up, many times. */
	ck_assert_uint_gt(named, 300);
	ck_assert_uint_lt(named, 2700);
}
END_TEST

START_TEST(memory_size_matches_validation)
{
	struct lfp_config c = { .obj_size = 24, .capacity = 100 };

	ck_assert_uint_eq(lfp_memory_size(NULL), 0);
	ck_assert_uint_ge(lfp_memory_size(&c), 100 * 32);
	c.obj_size = 0;
	ck_assert_uint_eq(lfp_memory_size(&c), 0);
	c.obj_size = 24, c.align = 12;
	ck_assert_uint_eq(lfp_memory_size(&c), 0);
	/* What lfp_create refuses has no size (found by the fuzzer). */
	c.align = 0, c.flags = 0x80000000u;
	ck_assert_uint_eq(lfp_memory_size(&c), 0);
	c.flags = 0, c.exhaust = LFP_EXHAUST_RECLAIM; /* without reclaim */
	ck_assert_uint_eq(lfp_memory_size(&c), 0);
	c.exhaust = 0;
	c.align = 0, c.obj_size = SIZE_MAX / 2;
	ck_assert_uint_eq(lfp_memory_size(&c), 0);
}
END_TEST

/*
 * Near LFP_MAX_CAPACITY with a batch of one slot, a pool needs a magazine
 * per slot: lfp_memory_size answers a size that grows with the capacity
 * and covers every slot's object, metadata and magazine entry, or 0 (as
 * lfpool.h says when the size overflows); never a wrapped count. (Counted
 * in 32 bits, the magazines wrapped past 2^32: 0xfffffffe slots "needed"
 * 103 GB, 40 fewer 155 GB.) Growable pools lay out max_capacity slots
 * and are held to the same.
 */
START_TEST(memory_size_near_max_capacity)
{
	struct lfp_config c = { .obj_size = 16, .cache_size = 2,
				.batch_size = 1 };
	/* Object, next and generation words, a magazine of one index
	 * (two words of header): 36 bytes a slot at least. */
	const size_t per_slot = 16 + 8 + 3 * sizeof(uint32_t);
	size_t prev = 0;

	for (uint64_t n = LFP_MAX_CAPACITY - 64; n <= LFP_MAX_CAPACITY; n++) {
		size_t size, grow;

		c.capacity = (uint32_t)n, c.max_capacity = 0;
		c.exhaust = LFP_EXHAUST_NULL;
		size = lfp_memory_size(&c);
		if (size == 0)
			continue;
		ck_assert_msg(size / per_slot >= n, "%llu slots: %zu bytes",
			      (unsigned long long)n, size);
		ck_assert_msg(size >= prev, "%llu slots: %zu bytes, one fewer %zu",
			      (unsigned long long)n, size, prev);
		prev = size;
		c.capacity = 64, c.max_capacity = (uint32_t)n;
		c.exhaust = LFP_EXHAUST_GROW;
		grow = lfp_memory_size(&c);
		ck_assert_msg(grow == 0 || grow / per_slot >= n,
			      "growable to %llu slots: %zu bytes",
			      (unsigned long long)n, grow);
	}
	/* On a 64-bit machine these sizes fit: 0 would be a refusal the
	 * header does not name. */
	if (sizeof(size_t) == 8)
		ck_assert_uint_gt(prev, 0);
}
END_TEST

/* Objects are aligned, spaced by the stride, and never overlap. */
static void check_geometry(size_t obj_size, size_t align, size_t stride)
{
	struct lfp_config cfg = { .obj_size = obj_size, .align = align,
				  .capacity = 33 };
	size_t want = align ? align : alignof(max_align_t);
	struct lfp_pool *pool;
	char *prev = NULL;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	for (uint32_t i = 0; i < cfg.capacity; i++) {
		char *p = lfp_at(pool, i);
		ck_assert_uint_eq((uintptr_t)p % want, 0);
		if (prev)
			ck_assert_uint_eq((size_t)(p - prev), stride);
		ck_assert_uint_eq(lfp_index_of(pool, p), i);
		prev = p;
	}
	lfp_destroy(pool);
}

START_TEST(alignment_and_stride)
{
	check_geometry(1, 0, alignof(max_align_t));
	check_geometry(24, 0, 32);
	check_geometry(24, 8, 24); /* not a power of two: index by division */
	check_geometry(1, 64, 64);
	check_geometry(100, 128, 128);
	check_geometry(10, 4096, 4096);
	check_geometry(3, 1, 3);
}
END_TEST

START_TEST(index_and_ownership)
{
	struct lfp_pool *pool = test_pool(24, 10), *other = test_pool(24, 10);
	char *first = lfp_at(pool, 0), *last = lfp_at(pool, 9);
	int local;

	ck_assert_ptr_null(lfp_at(pool, 10));
	ck_assert_ptr_null(lfp_at(pool, LFP_NO_INDEX));
	ck_assert_ptr_null(lfp_at(NULL, 0));
	ck_assert(lfp_owns(pool, first));
	ck_assert(lfp_owns(pool, first + 5)); /* any byte of a slot */
	ck_assert(lfp_owns(pool, last + 31));
	ck_assert(!lfp_owns(pool, last + 32)); /* one past the end */
	ck_assert(!lfp_owns(pool, first - 1));
	ck_assert(!lfp_owns(pool, &local));
	ck_assert(!lfp_owns(pool, lfp_at(other, 0)));
	ck_assert(!lfp_owns(pool, NULL));
	ck_assert(!lfp_owns(NULL, first));
	ck_assert_uint_eq(lfp_index_of(pool, first + 1), LFP_NO_INDEX);
	ck_assert_uint_eq(lfp_index_of(pool, &local), LFP_NO_INDEX);
	ck_assert_uint_eq(lfp_index_of(pool, lfp_at(other, 3)), LFP_NO_INDEX);
	ck_assert_uint_eq(lfp_index_of(pool, NULL), LFP_NO_INDEX);
	ck_assert_uint_eq(lfp_index_of(pool, last), 9);
	lfp_destroy(pool);
	lfp_destroy(other);
}
END_TEST

/* Objects live inside the caller's region, which the pool never frees. */
static void use_caller_memory(void *mem, size_t size)
{
	struct lfp_config cfg = { .obj_size = 40, .capacity = 64,
				  .memory = mem, .memory_size = size };
	struct lfpi_census census;
	struct lfp_pool *pool;
	void *objs[64];

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	for (int i = 0; i < 64; i++) {
		objs[i] = lfp_alloc(pool);
		ck_assert_ptr_nonnull(objs[i]);
		ck_assert((char *)objs[i] >= (char *)mem);
		ck_assert((char *)objs[i] + 40 <= (char *)mem + size);
		memset(objs[i], i, 40);
	}
	ck_assert_ptr_null(lfp_alloc(pool));
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(lfp_free(pool, objs[i]), 0);
	ck_audit(pool, &census);
	ck_assert_uint_eq(census.listed + census.cached, 64);
	lfp_destroy(pool);
}

static alignas(LFP_MEMORY_ALIGN) char static_region[16384];

START_TEST(caller_memory)
{
	struct lfp_config cfg = { .obj_size = 40, .capacity = 64 };
	size_t need = lfp_memory_size(&cfg);
	struct lfp_pool *pool;
	char *heap;

	ck_assert_uint_le(need, sizeof(static_region));
	use_caller_memory(static_region, need);
	/* The same memory again, dirty from the last pool: still sound. */
	use_caller_memory(static_region, sizeof(static_region));

	heap = aligned_alloc(LFP_MEMORY_ALIGN, need + LFP_MEMORY_ALIGN);
	memset(heap, 0xa5, need + LFP_MEMORY_ALIGN);
	use_caller_memory(heap, need);
	cfg.memory = heap, cfg.memory_size = need - 1;
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	cfg.memory = heap + 8, cfg.memory_size = need;
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	free(heap);

	/* Object alignment above LFP_MEMORY_ALIGN is required of the region. */
	cfg.align = 128;
	need = lfp_memory_size(&cfg);
	heap = aligned_alloc(128, need + 128);
	cfg.memory = heap + 64, cfg.memory_size = need;
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	cfg.memory = heap;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_uint_eq((uintptr_t)lfp_at(pool, 1) % 128, 0);
	lfp_destroy(pool);
	free(heap);
}
END_TEST

/* n as README.md writes it: 80,002,496. */
static const char *with_commas(size_t n, char *buf, size_t len)
{
	char digits[32];
	size_t nd = (size_t)snprintf(digits, sizeof(digits), "%zu", n), o = 0;

	for (size_t i = 0; i < nd && o + 2 < len; i++) {
		if (i && (nd - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = 0;
	return buf;
}

/*
 * The overhead README.md states: per slot, lfp_memory_size grows by the
 * stride plus DOC_META_PER_SLOT_1M / 10^6, and the rest is a fixed header of
 * DOC_HEADER bytes; the README says both numbers.
 */
START_TEST(documented_overhead)
{
	struct lfp_config c = { .obj_size = 64, .capacity = 1000000 };
	size_t one = lfp_memory_size(&c), two;
	char want[96], num[32], *text;
	FILE *f;
	long len;

	c.capacity = 2000000;
	two = lfp_memory_size(&c);
	/* Magazines come whole and parts are rounded up to cache lines:
	 * within one magazine (2056 bytes) and a line. */
	ck_assert_uint_le(two - one,
			  1000000u * 64 + DOC_META_PER_SLOT_1M + 2200);
	ck_assert_uint_ge(two - one,
			  1000000u * 64 + DOC_META_PER_SLOT_1M - 2200);
	ck_assert_uint_eq(one - 1000000u * 64 - DOC_META_PER_SLOT_1M,
			  DOC_HEADER);
	f = fopen(TEST_README, "r");
	ck_assert_msg(f != NULL, "cannot open %s", TEST_README);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)len + 1);
	ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	snprintf(want, sizeof(want), "%u.%06u bytes of metadata per slot",
		 DOC_META_PER_SLOT_1M / 1000000, DOC_META_PER_SLOT_1M % 1000000);
	ck_assert_msg(strstr(text, want), "README.md lacks \"%s\"", want);
	/* Both figures, whichever this machine's: the table's example is
	 * of 64-bit pointers. */
	snprintf(want, sizeof(want), "a header of %u bytes", DOC_HEADER_LP64);
	ck_assert_msg(strstr(text, want), "README.md lacks \"%s\"", want);
	snprintf(want, sizeof(want), "a header of %u bytes", DOC_HEADER_ILP32);
	ck_assert_msg(strstr(text, want), "README.md lacks \"%s\"", want);
	snprintf(want, sizeof(want), "| `lfp_memory_size` | %s (",
		 with_commas(one + DOC_HEADER_LP64 - DOC_HEADER, num,
			     sizeof(num)));
	ck_assert_msg(strstr(text, want), "README.md lacks \"%s\"", want);
	free(text);
}
END_TEST

static int advise_fails(void *addr, size_t len)
{
	(void)addr;
	(void)len;
	return -EINVAL;
}

/* Whether /proc/self/smaps lists the mapping that holds p with MADV_HUGEPAGE
 * ("hg" among its VmFlags); -1 if smaps cannot say. */
static int advised_huge(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long lo, hi;
	char line[512];
	bool in = false;
	int found = -1;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			found = strstr(line, " hg") != NULL;
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/*
 * Whether MADV_HUGEPAGE takes here: the kernel has THP (else EINVAL) and
 * the advice shows in smaps. qemu-user answers every madvise with 0 and
 * passes none to the kernel: there the pool is made on normal pages, the
 * fallback, and the caller says which path it checked.
 */
static bool kernel_has_thp(void)
{
	size_t len = (size_t)4 << 20;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ok;

	ck_assert_ptr_ne(p, MAP_FAILED);
	ok = lfpi_advise_huge_madvise(p, len) == 0 && advised_huge(p) == 1;
	munmap(p, len);
	printf("hugepage_advice: %s\n",
	       ok ? "the kernel takes MADV_HUGEPAGE: the advice is checked"
		  : "MADV_HUGEPAGE does not take here (no THP, or an emulator "
		    "that drops madvise): pools on normal pages are checked");
	return ok;
}

/* A pool made from cfg, with LFP_F_HUGEPAGE or (to compare) without:
 * objects on a 2 MiB boundary if asked for, the same size for caller
 * memory either way, every slot usable and accounted for. */
static struct lfp_pool *huge_pool(struct lfp_config cfg)
{
	struct lfp_config plain = cfg;
	struct lfp_pool *pool;
	void *o;

	plain.flags &= ~LFP_F_HUGEPAGE;
	ck_assert_uint_eq(lfp_memory_size(&cfg), lfp_memory_size(&plain));
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	if (!(cfg.flags & LFP_F_HUGEPAGE))
		; /* the plain pool, to compare with */
	else if (cfg.align <= LFPI_HUGE_PAGE)
		ck_assert_uint_eq((uintptr_t)lfp_at(pool, 0) % LFPI_HUGE_PAGE, 0);
	else
		ck_assert_uint_eq((uintptr_t)lfp_at(pool, 0) % cfg.align, 0);
	for (uint32_t i = 0; (o = lfp_alloc(pool)); i++)
		memset(o, (int)i, cfg.obj_size);
	expect_accounted(pool, cfg.max_capacity ? cfg.max_capacity
						 : cfg.capacity);
	for (uint32_t i = 0; i < lfp_extent(pool); i++)
		ck_assert_int_eq(lfp_free(pool, lfp_at(pool, i)), 0);
	expect_accounted(pool, 0);
	return pool;
}

START_TEST(hugepage_layout)
{
	struct lfp_config cfgs[] = {
		{ .obj_size = 64, .capacity = 1000 },
		{ .obj_size = 24, .align = 8, .capacity = 200000 },
		{ .obj_size = 10, .align = 4096, .capacity = 700 },
		{ .obj_size = 8, .align = (size_t)4 << 20, .capacity = 3 },
		{ .obj_size = 64, .capacity = 1000, .max_capacity = 100000,
		  .exhaust = LFP_EXHAUST_GROW },
	};

	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		cfgs[i].flags = LFP_F_HUGEPAGE;
		lfp_destroy(huge_pool(cfgs[i]));
		cfgs[i].flags |= LFP_F_NO_CACHE;
		lfp_destroy(huge_pool(cfgs[i]));
	}
}
END_TEST

/* The mapping carries the advice; a refused madvise still makes a pool. */
START_TEST(hugepage_advice)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 100000,
				  .flags = LFP_F_HUGEPAGE };
	struct lfp_pool *pool = huge_pool(cfg);
	int (*saved)(void *, size_t) = lfpi_advise_huge;
	bool thp = kernel_has_thp();

	if (thp)
		ck_assert_int_eq(advised_huge(lfp_at(pool, 0)), 1);
	lfp_destroy(pool);
	cfg.flags = 0;
	pool = huge_pool(cfg);
	if (thp)
		ck_assert_int_eq(advised_huge(lfp_at(pool, 0)), 0);
	lfp_destroy(pool);

	lfpi_advise_huge = advise_fails;
	cfg.flags = LFP_F_HUGEPAGE;
	pool = huge_pool(cfg);
	lfpi_advise_huge = saved;
	if (thp)
		ck_assert_int_eq(advised_huge(lfp_at(pool, 0)), 0);
	lfp_destroy(pool);
}
END_TEST

/* Caller memory ignores the flag: the objects stay where the caller put
 * them, after the header and metadata, and nothing is advised. */
START_TEST(hugepage_caller_memory)
{
	struct lfp_config cfg = { .obj_size = 40, .capacity = 64,
				  .flags = LFP_F_HUGEPAGE };
	size_t need = lfp_memory_size(&cfg);
	struct lfp_config plain = cfg;
	struct lfp_pool *pool, *ref;

	plain.flags = 0;
	ck_assert_uint_le(need, sizeof(static_region));
	cfg.memory = static_region, cfg.memory_size = need;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_ptr_eq(pool, (void *)static_region);
	ref = test_pool(40, 64);
	ck_assert_uint_eq((size_t)((char *)lfp_at(pool, 0) - static_region),
			  (size_t)((char *)lfp_at(ref, 0) - (char *)ref));
	ck_assert_uint_eq(lfp_memory_size(&plain), need);
	lfp_destroy(ref);
	lfp_destroy(pool);
	use_caller_memory(static_region, need);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("slab");
	TCase *tc = tcase_create("slab");

	/* Under a sanitizer on a loaded machine the larger pools take
	 * seconds: more than Check's default of 4. */
	tcase_set_timeout(tc, 60);

	tcase_add_test(tc, rejects_bad_configs);
	tcase_add_test(tc, config_fault_names_the_field);
	tcase_add_test(tc, config_fault_agrees_with_create);
	tcase_add_test(tc, memory_size_matches_validation);
	tcase_add_test(tc, memory_size_near_max_capacity);
	tcase_add_test(tc, alignment_and_stride);
	tcase_add_test(tc, index_and_ownership);
	tcase_add_test(tc, caller_memory);
	tcase_add_test(tc, documented_overhead);
	tcase_add_test(tc, hugepage_layout);
	tcase_add_test(tc, hugepage_advice);
	tcase_add_test(tc, hugepage_caller_memory);
	suite_add_tcase(s, tc);
	return test_run(s);
}
