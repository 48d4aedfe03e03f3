/* SPDX-License-Identifier: MIT */
/*
 * General-purpose allocators asked for 64 bytes.
 *
 * glibc runs in the driver's process. jemalloc and tcmalloc, as Debian
 * packages them, export malloc and free: linking either would replace
 * malloc in the whole process, so each runs in a child process of its own
 * with the library in LD_PRELOAD, and the same malloc/free loop as glibc.
 * mimalloc exports malloc too; it is loaded with dlopen(RTLD_LOCAL), which
 * keeps its malloc out of the global scope, and called as mi_malloc and
 * mi_free through pointers. oneTBB's scalable allocator exports
 * scalable_malloc and scalable_free only (its malloc replacement is
 * another library, libtbbmalloc_proxy), so lfpbench links it when
 * configure finds it and calls it directly, as it calls glibc's malloc.
 * Every row checks at run time that it calls the allocator it claims to.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "workloads.h"
#include "workloads_many.h"

/* The library that defines the malloc this process calls. */
const char *bench_malloc_origin(void)
{
	void *sym = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info info;

	if (!sym || !dladdr(sym, &info) || !info.dli_fname)
		return "(unknown)";
	return info.dli_fname;
}

bool bench_malloc_is_glibc(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *mine = dlsym(RTLD_DEFAULT, "malloc");
	bool same = libc && mine && dlsym(libc, "malloc") == mine;

	/* The address our calls go through must be that one too. */
	same = same && (void *)malloc == mine;
	if (libc)
		dlclose(libc);
	return same;
}

static int malloc_check(const char *want, char *why, size_t why_len)
{
	const char *origin = bench_malloc_origin();
	bool ok = want ? strstr(origin, want) != NULL : bench_malloc_is_glibc();
	void *p = malloc(BENCH_OBJ_SIZE);

	if (ok && bench_verbose)
		fprintf(stderr, "malloc is %s; a %d-byte block has %zu usable\n",
			origin, BENCH_OBJ_SIZE, malloc_usable_size(p));
	free(p);
	if (ok)
		return 0;
	snprintf(why, why_len, "malloc here comes from %s, not %s", origin,
		 want ? want : "glibc");
	return -1;
}

static int glibc_init(char *why, size_t why_len)
{
	return malloc_check(NULL, why, why_len);
}

static int jemalloc_init(char *why, size_t why_len)
{
	return malloc_check("jemalloc", why, why_len);
}

static int tcmalloc_init(char *why, size_t why_len)
{
	return malloc_check("tcmalloc", why, why_len);
}

static int malloc_setup(unsigned nthreads)
{
	(void)nthreads;
	return 0;
}

static int malloc_teardown(void)
{
	return 0;
}

/* The workloads need a non-NULL context to start. */
static char malloc_ctx;

static void *malloc_enter(unsigned tid)
{
	(void)tid;
	return &malloc_ctx;
}

static void malloc_leave(void *ctx)
{
	(void)ctx;
}

static inline void *malloc_alloc(void *ctx)
{
	(void)ctx;
	return malloc(BENCH_OBJ_SIZE);
}

static inline void malloc_free(void *ctx, void *obj)
{
	(void)ctx;
	free(obj);
}

BENCH_WORKLOADS(malloc, malloc_alloc, malloc_free);

/*
 * Many pools and families: one heap, so the pool an operation names is
 * ignored; "N pools" is the same sequence of malloc(64) and free as one,
 * and a family's sizes are asked of malloc as they are.
 */
static int malloc_many_setup(unsigned nthreads, enum bench_workload wl)
{
	(void)wl;
	return malloc_setup(nthreads);
}

static inline void *malloc_alloc_in(void *ctx, unsigned k, size_t size)
{
	(void)ctx;
	(void)k;
	return malloc(size);
}

static inline void malloc_free_in(void *ctx, unsigned k, void *obj)
{
	(void)ctx;
	(void)k;
	free(obj);
}

BENCH_POOLS_WORKLOADS(mallocm, malloc_alloc_in, malloc_free_in)
BENCH_FAMILY_WORKLOADS(mallocm, malloc_alloc_in, malloc_free_in)

static const bench_fn mallocm_fns[WL_COUNT] = {
	BENCH_POOLS_FNS(mallocm),
	BENCH_FAMILY_FNS(mallocm),
};

static const struct bench_many malloc_many = {
	.setup = malloc_many_setup,
	.teardown = malloc_teardown,
	.enter = malloc_enter,
	.leave = malloc_leave,
	.fns = mallocm_fns,
};

#define MALLOC_CONTENDER(id, text, flag, initfn)                               \
	{                                                                      \
		.name = id, .label = text, .flags = flag, .init = initfn,     \
		.setup = malloc_setup, .teardown = malloc_teardown,            \
		.enter = malloc_enter, .leave = malloc_leave,                  \
		.fns = malloc_fns, .many = &malloc_many,                       \
	}

const struct bench_contender bench_glibc = MALLOC_CONTENDER(
	"glibc", "glibc malloc/free", 0, glibc_init);
const struct bench_contender bench_jemalloc = MALLOC_CONTENDER(
	"jemalloc", "jemalloc malloc/free (LD_PRELOAD, own process)",
	CT_PRELOAD, jemalloc_init);
const struct bench_contender bench_tcmalloc = MALLOC_CONTENDER(
	"tcmalloc", "tcmalloc malloc/free (LD_PRELOAD, own process)",
	CT_PRELOAD, tcmalloc_init);

/* mimalloc */

static void *(*mi_malloc_p)(size_t size);
static void (*mi_free_p)(void *p);

static int mimalloc_init(char *why, size_t why_len)
{
	void *lib = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL);
	int (*version)(void);
	bool (*owns)(const void *p);
	void *p;

	if (!lib) {
		snprintf(why, why_len, "dlopen: %s", dlerror());
		return -1;
	}
	mi_malloc_p = (void *(*)(size_t))dlsym(lib, "mi_malloc");
	mi_free_p = (void (*)(void *))dlsym(lib, "mi_free");
	version = (int (*)(void))dlsym(lib, "mi_version");
	owns = (bool (*)(const void *))dlsym(lib, "mi_is_in_heap_region");
	if (!mi_malloc_p || !mi_free_p || !version || !owns) {
		snprintf(why, why_len, "libmimalloc.so.2 lacks mi_malloc, "
				       "mi_free, mi_version or "
				       "mi_is_in_heap_region");
		return -1;
	}
	p = mi_malloc_p(BENCH_OBJ_SIZE);
	if (!owns(p) || !bench_malloc_is_glibc()) {
		snprintf(why, why_len, "mimalloc is not isolated: mi_malloc "
				       "memory is not its own, or malloc is "
				       "no longer glibc's");
		return -1;
	}
	mi_free_p(p);
	if (bench_verbose)
		fprintf(stderr, "mimalloc %d loaded with RTLD_LOCAL\n",
			version());
	return 0;
}

static inline void *mimalloc_alloc(void *ctx)
{
	(void)ctx;
	return mi_malloc_p(BENCH_OBJ_SIZE);
}

static inline void mimalloc_free(void *ctx, void *obj)
{
	(void)ctx;
	mi_free_p(obj);
}

BENCH_WORKLOADS(mimalloc, mimalloc_alloc, mimalloc_free);

static inline void *mimalloc_alloc_in(void *ctx, unsigned k, size_t size)
{
	(void)ctx;
	(void)k;
	return mi_malloc_p(size);
}

static inline void mimalloc_free_in(void *ctx, unsigned k, void *obj)
{
	(void)ctx;
	(void)k;
	mi_free_p(obj);
}

BENCH_POOLS_WORKLOADS(mimallocm, mimalloc_alloc_in, mimalloc_free_in)
BENCH_FAMILY_WORKLOADS(mimallocm, mimalloc_alloc_in, mimalloc_free_in)

static const bench_fn mimallocm_fns[WL_COUNT] = {
	BENCH_POOLS_FNS(mimallocm),
	BENCH_FAMILY_FNS(mimallocm),
};

static const struct bench_many mimalloc_many = {
	.setup = malloc_many_setup,
	.teardown = malloc_teardown,
	.enter = malloc_enter,
	.leave = malloc_leave,
	.fns = mimallocm_fns,
};

const struct bench_contender bench_mimalloc = {
	.name = "mimalloc",
	.label = "mimalloc mi_malloc/mi_free (dlopen RTLD_LOCAL, called "
		 "through pointers)",
	.init = mimalloc_init,
	.setup = malloc_setup,
	.teardown = malloc_teardown,
	.enter = malloc_enter,
	.leave = malloc_leave,
	.fns = mimalloc_fns,
	.many = &mimalloc_many,
};

/* oneTBB's scalable allocator */

#ifdef BENCH_HAVE_TBBMALLOC
#include <tbb/scalable_allocator.h>

/* scalable_malloc must come from libtbbmalloc, and malloc stay glibc's. */
static int tbbmalloc_init(char *why, size_t why_len)
{
	Dl_info info;
	void *p = scalable_malloc(BENCH_OBJ_SIZE);
	bool ok = p && scalable_msize(p) >= BENCH_OBJ_SIZE &&
		  dladdr((void *)scalable_malloc, &info) && info.dli_fname &&
		  strstr(info.dli_fname, "libtbbmalloc") &&
		  bench_malloc_is_glibc();

	scalable_free(p);
	if (!ok) {
		snprintf(why, why_len, "scalable_malloc is not libtbbmalloc's, "
				       "or malloc is no longer glibc's");
		return -1;
	}
	if (bench_verbose)
		fprintf(stderr, "scalable_malloc from %s\n", info.dli_fname);
	return 0;
}

static inline void *tbbmalloc_alloc(void *ctx)
{
	(void)ctx;
	return scalable_malloc(BENCH_OBJ_SIZE);
}

static inline void tbbmalloc_free(void *ctx, void *obj)
{
	(void)ctx;
	scalable_free(obj);
}

BENCH_WORKLOADS(tbbmalloc, tbbmalloc_alloc, tbbmalloc_free);

static inline void *tbbmalloc_alloc_in(void *ctx, unsigned k, size_t size)
{
	(void)ctx;
	(void)k;
	return scalable_malloc(size);
}

static inline void tbbmalloc_free_in(void *ctx, unsigned k, void *obj)
{
	(void)ctx;
	(void)k;
	scalable_free(obj);
}

BENCH_POOLS_WORKLOADS(tbbmallocm, tbbmalloc_alloc_in, tbbmalloc_free_in)
BENCH_FAMILY_WORKLOADS(tbbmallocm, tbbmalloc_alloc_in, tbbmalloc_free_in)

static const bench_fn tbbmallocm_fns[WL_COUNT] = {
	BENCH_POOLS_FNS(tbbmallocm),
	BENCH_FAMILY_FNS(tbbmallocm),
};

static const struct bench_many tbbmalloc_many = {
	.setup = malloc_many_setup,
	.teardown = malloc_teardown,
	.enter = malloc_enter,
	.leave = malloc_leave,
	.fns = tbbmallocm_fns,
};
#define TBBMALLOC_FNS tbbmalloc_fns
#define TBBMALLOC_MANY (&tbbmalloc_many)
#else
static int tbbmalloc_init(char *why, size_t why_len)
{
	snprintf(why, why_len, "not built: configure found no "
			       "tbb/scalable_allocator.h or libtbbmalloc "
			       "(apt-get install libtbb-dev)");
	return -1;
}
#define TBBMALLOC_FNS NULL
#define TBBMALLOC_MANY NULL
#endif

const struct bench_contender bench_tbbmalloc = {
	.name = "tbbmalloc",
	.label = "oneTBB scalable_malloc/scalable_free (libtbbmalloc, "
		 "linked; malloc stays glibc's)",
	.init = tbbmalloc_init,
	.setup = malloc_setup,
	.teardown = malloc_teardown,
	.enter = malloc_enter,
	.leave = malloc_leave,
	.fns = TBBMALLOC_FNS,
	.many = TBBMALLOC_MANY,
};
