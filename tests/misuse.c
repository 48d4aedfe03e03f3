/*
 * A program that misuses a pool the way a user's bug would, for the tests
 * that must see the tools catch it:
 *   misuse write   writes into an object after releasing it, then
 *                  allocates again (ASan reports the write; otherwise the
 *                  release fill reports it at the next allocation)
 *   misuse read    reads an object after releasing it (ASan, memcheck)
 *   misuse leak    loses the last pointer to a live object (memcheck)
 *   misuse ok      uses the pool correctly: must exit 0 under every tool
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
