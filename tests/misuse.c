/* SPDX-License-Identifier: MIT */
/*
 * A program that misuses a pool the way a user's bug would, for the tests
 * that must see the tools catch it:
 *   misuse write   writes into an object after releasing it, then
 *                  allocates again (ASan reports the write; otherwise the
 *                  release fill reports it at the next allocation)
 *   misuse read    reads an object after releasing it (ASan, memcheck)
 *   misuse stale   writes into two objects released in release_late(),
 *                  one whose neighbours were released earlier, one whose
 *                  slot was released once before, in release_early()
 *                  (memcheck must name each object and release_late)
 *   misuse leak    loses the last pointer to a live object (memcheck)
 *   misuse ok      uses the pool correctly: must exit 0 under every tool
 *   misuse ctor    reads the constructed state of a reused object of a
 *                  pool with a ctor: correct, must exit 0 under every tool
 * It exits 0 when the misuse went unnoticed.
 */
#include <lfpool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct lfp_pool *pool;

/* Lose every pointer to ten live objects, and wipe the stack they were
 * on so that no stale copy keeps them reachable. */
static __attribute__((noinline)) void leak_some(void)
{
	void *volatile objs[10];

	for (int i = 0; i < 10; i++)
		objs[i] = lfp_alloc(pool);
	for (int i = 0; i < 10; i++)
		if (objs[i])
			objs[i] = NULL;
}

static __attribute__((noinline)) void wipe_stack(void)
{
	volatile char junk[4096];

	memset((char *)junk, 0, sizeof(junk));
}

/*
 * Two release sites that a report must tell apart. Each counts into its
 * own variable, so that the compiler neither folds them into one function
 * nor turns the call into a tail call that leaves no frame.
 */
static int early, late;

static __attribute__((noinline)) void release_early(void *obj)
{
	early += lfp_free(pool, obj) == 0;
}

static __attribute__((noinline)) void release_late(void *obj)
{
	late += lfp_free(pool, obj) == 0;
}

/*
 * Fill the pool, so that the slot a release frees is the one the next
 * allocation takes. Slot 10's neighbours 9 and 11 are released before
 * it; slot 20 lived once before, and that life ended in release_early.
 * memcheck must name slots 10 and 20 and their last release.
 */
static int stale(void)
{
	void *objs[64];
	volatile char *a = lfp_at(pool, 10), *b = lfp_at(pool, 20);

	if (lfp_alloc_bulk(pool, objs, 64) != 64)
		return 2;
	release_early((char *)b);
	if (lfp_alloc(pool) != b)
		return 2;
	release_early(lfp_at(pool, 9));
	release_early(lfp_at(pool, 11));
	release_late((char *)a);
	release_late((char *)b);
	a[3] = 42;
	a[45] = 42;
	b[3] = 42;
	return early == 3 && late == 2 ? 0 : 2;
}

/* The constructed state: a reused object still holds it. */
static void construct(void *obj, void *arg)
{
	(void)arg;
	memset(obj, 7, 48);
}

static int ctor_state(void)
{
	struct lfp_config cfg = { .obj_size = 48, .capacity = 64,
				  .ctor = construct };
	struct lfp_pool *cpool;
	volatile char *p;
	int bad = 0;

	if (lfp_create(&cfg, &cpool))
		return 2;
	for (int i = 0; i < 3; i++) {
		p = lfp_alloc(cpool);
		if (p[47] != 7) /* a branch on the state: memcheck looks */
			bad = 1;
		lfp_free(cpool, (char *)p);
	}
	lfp_destroy(cpool);
	return bad;
}

static int run(const char *what)
{
	volatile char *p;
	char sink;

	if (!strcmp(what, "leak")) {
		/*
		 * memcheck skips its leak search when no malloc'd block is in
		 * use at exit, whatever mempool blocks are; lfpool mallocs
		 * nothing, so keep one block, as any real program has.
		 */
		void *kept = malloc(16);

		leak_some();
		return kept == NULL;
	}
	if (!strcmp(what, "stale"))
		return stale();
	if (!strcmp(what, "ctor"))
		return ctor_state();
	if (!strcmp(what, "pairs")) {
		/* A plain pool: valgrind.test counts with callgrind how many
		 * of these leave the inline paths. */
		struct lfp_config pc = { .obj_size = 48, .capacity = 4096 };
		struct lfp_pool *pp;
		int bad = lfp_create(&pc, &pp) != 0;

		for (int i = 0; !bad && i < 10000; i++) {
			void *o = lfp_alloc(pp);

			bad = !o || lfp_free(pp, o) != 0;
		}
		if (!bad)
			lfp_destroy(pp);
		return bad;
	}
	p = lfp_alloc(pool);
	memset((char *)p, 1, 48);
	if (!strcmp(what, "ok")) {
		sink = p[3];
		return lfp_free(pool, (char *)p) != 0 || sink != 1;
	}
	lfp_free(pool, (char *)p);
	if (!strcmp(what, "write")) {
		p[5] = 42;
		lfp_free(pool, lfp_alloc(pool)); /* the same slot, LIFO */
		return 0;
	}
	if (!strcmp(what, "read")) {
		sink = p[5];
		printf("read %d after release\n", sink);
		return 0;
	}
	return 2;
}

int main(int argc, char **argv)
{
	struct lfp_config cfg = { .obj_size = 48, .capacity = 64,
				  .flags = LFP_F_POISON };
	int r;

	if (argc != 2 || lfp_create(&cfg, &pool))
		return 2;
	r = run(argv[1]);
	wipe_stack();
	if (strcmp(argv[1], "leak"))
		lfp_destroy(pool);
	return r;
}
