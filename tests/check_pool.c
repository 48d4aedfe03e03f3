/* SPDX-License-Identifier: MIT */
/* Allocation and release through the shared paths: counts, bad input,
 * exhaustion, lazy first touch, and threads handing objects around. */
#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h" /* PACKAGE_VERSION, from configure.ac's AC_INIT */
#include "testutil.h"

static void expect_stats(struct lfp_pool *pool, uint64_t live, uint64_t allocs,
			 uint64_t frees)
{
	struct lfp_stats st;

	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.live, live);
	ck_assert_uint_eq(st.allocs, allocs);
	ck_assert_uint_eq(st.frees, frees);
	ck_assert_uint_eq(st.free + st.cached + st.live + st.deferred,
			  st.capacity);
}

START_TEST(exhaust_release_refill)
{
	enum { CAP = 100 };
	struct lfp_pool *pool = test_pool_flags(48, CAP, test_modes[_i]);
	struct lfpi_census census;
	struct lfp_stats st;
	void *objs[CAP];

	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < CAP; i++) {
			objs[i] = lfp_alloc(pool);
			ck_assert_ptr_nonnull(objs[i]);
			/* Distinct: each index handed out once. */
			for (int j = 0; j < i; j++)
				ck_assert_ptr_ne(objs[i], objs[j]);
			memset(objs[i], 0x5a, 48);
		}
		ck_assert_ptr_null(lfp_alloc(pool));
		ck_assert_ptr_null(lfp_alloc(pool));
		ck_audit(pool, &census);
		ck_assert_uint_eq(census.live, CAP);
		lfp_stats(pool, &st);
		ck_assert_uint_eq(st.failed_allocs, 2 * (round + 1));
		ck_assert_uint_eq(st.high_water, CAP);
		for (int i = 0; i < CAP; i++)
			ck_assert_int_eq(lfp_free(pool, objs[i]), 0);
		ck_audit(pool, &census);
		ck_assert_uint_eq(census.live, 0);
		ck_assert_uint_eq(census.listed + census.cached, CAP);
	}
	expect_stats(pool, 0, 3 * CAP, 3 * CAP);
	lfp_destroy(pool);
}
END_TEST

START_TEST(reuse_is_lifo_and_lazy)
{
	struct lfp_pool *pool = test_pool_flags(32, 10, test_modes[_i]);
	struct lfp_stats st;
	void *a = lfp_alloc(pool), *b = lfp_alloc(pool);

	ck_assert_ptr_eq(a, lfp_at(pool, 0)); /* fresh slots in order */
	ck_assert_ptr_eq(b, lfp_at(pool, 1));
	ck_assert_int_eq(lfp_free(pool, a), 0);
	ck_assert_ptr_eq(lfp_alloc(pool), a); /* the warm one comes back */
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.high_water, 2);
	lfp_destroy(pool);
}
END_TEST

START_TEST(bad_frees_change_nothing)
{
	struct lfp_pool *pool = test_pool_flags(24, 8, test_modes[_i]);
	struct lfp_pool *other = test_pool(24, 8);
	struct lfpi_census census;
	struct lfp_stats st;
	char *p = lfp_alloc(pool), *q = lfp_alloc(pool);
	char *foreign = lfp_alloc(other);
	int local;

	ck_assert_int_eq(lfp_free(NULL, p), -EINVAL);
	ck_assert_int_eq(lfp_free(pool, NULL), -EINVAL);
	ck_assert_int_eq(lfp_free(pool, &local), -EFAULT);
	ck_assert_int_eq(lfp_free(pool, foreign), -EFAULT);
	ck_assert_int_eq(lfp_free(pool, (char *)lfp_at(pool, 7) + 32), -EFAULT);
	ck_assert_int_eq(lfp_free(pool, (char *)lfp_at(pool, 0) - 1), -EFAULT);
	ck_assert_int_eq(lfp_free(pool, p + 1), -EINVAL);
	ck_assert_int_eq(lfp_free(pool, q + 31), -EINVAL);
	ck_assert_int_eq(lfp_free(pool, lfp_at(pool, 5)), -EALREADY); /* never used */
	ck_audit(pool, &census);
	ck_assert_uint_eq(census.live, 2);
	expect_stats(pool, 2, 2, 0);

	ck_assert_int_eq(lfp_free(pool, p), 0);
	ck_assert_int_eq(lfp_free(pool, p), -EALREADY); /* double release */
	ck_audit(pool, &census);
	ck_assert_uint_eq(census.live, 1);
	ck_assert_uint_eq(census.listed + census.cached, 1);
	expect_stats(pool, 1, 2, 1);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.rejected_frees, 9);

	/* A double release must not let the slot out twice. */
	ck_assert_ptr_eq(lfp_alloc(pool), p);
	ck_assert_ptr_ne(lfp_alloc(pool), p);
	ck_audit(pool, &census);
	lfp_destroy(pool);
	lfp_destroy(other);
}
END_TEST

START_TEST(null_pool)
{
	struct lfp_stats st = { .live = 42 };

	ck_assert_ptr_null(lfp_alloc(NULL));
	lfp_stats(NULL, &st);
	ck_assert_uint_eq(st.live, 42);
	lfp_destroy(NULL);
}
END_TEST

/*
 * A pool of a million 64-byte objects maps 80 MiB (objects and metadata)
 * but makes almost none of it resident until objects are used. The second
 * half proves the measurement can see a change.
 */
START_TEST(creation_is_lazy)
{
	enum { CAP = 1 << 20, USED = 1 << 18 };
	struct lfp_pool *pool;
	size_t before, created, used;

	before = rss_bytes();
	pool = test_pool(64, CAP);
	for (int i = 0; i < 1000; i++)
		ck_assert_ptr_nonnull(lfp_alloc(pool));
	created = rss_bytes();
	ck_assert_msg(created - before < 4u << 20,
		      "creating a 64 MiB pool made %zu KiB resident",
		      (created - before) >> 10);
	for (int i = 1000; i < USED; i++)
		memset(lfp_alloc(pool), 1, 64);
	used = rss_bytes();
	ck_assert_msg(used - created >= (USED * 64u) / 2,
		      "touching 16 MiB of objects grew RSS by only %zu KiB",
		      (used - created) >> 10);
	lfp_destroy(pool);
}
END_TEST

/*
 * Threads allocate, stamp each object with their id, and hand it to the
 * next thread through a small mailbox; the receiver checks the stamp and
 * releases it. An owner word per slot proves no slot is ever live twice.
 */
enum { THREADS = 6, CAP = 64, ROUNDS = 20000, BOX = 8 };

struct mailbox {
	pthread_mutex_t lock;
	void *items[BOX];
	int n;
};

static struct lfp_pool *shared_pool;
static _Atomic uint32_t owner[CAP];
static struct mailbox box[THREADS];
static _Atomic int violations;

static void receive_all(int self)
{
	struct mailbox *mb = &box[self];
	void *items[BOX];
	int n;

	pthread_mutex_lock(&mb->lock);
	n = mb->n;
	memcpy(items, mb->items, sizeof(items));
	mb->n = 0;
	pthread_mutex_unlock(&mb->lock);
	for (int i = 0; i < n; i++) {
		uint32_t idx = lfp_index_of(shared_pool, items[i]);
		uint32_t who = *(uint32_t *)items[i];

		if (atomic_load(&owner[idx]) != who + 1 ||
		    !atomic_compare_exchange_strong(&owner[idx], &(uint32_t){ who + 1 }, 0))
			atomic_fetch_add(&violations, 1);
		if (lfp_free(shared_pool, items[i]) != 0)
			atomic_fetch_add(&violations, 1);
	}
}

static bool send(int to, void *obj)
{
	struct mailbox *mb = &box[to];
	bool sent = false;

	pthread_mutex_lock(&mb->lock);
	if (mb->n < BOX) {
		mb->items[mb->n++] = obj;
		sent = true;
	}
	pthread_mutex_unlock(&mb->lock);
	return sent;
}

static void *handoff(void *arg)
{
	int self = (int)(intptr_t)arg;
	uint32_t zero;

	for (int r = 0; r < ROUNDS; r++) {
		uint32_t *obj = lfp_alloc(shared_pool);

		receive_all(self);
		if (!obj)
			continue;
		zero = 0;
		if (!atomic_compare_exchange_strong(
			    &owner[lfp_index_of(shared_pool, obj)], &zero,
			    (uint32_t)self + 1))
			atomic_fetch_add(&violations, 1);
		*obj = (uint32_t)self;
		if (!send((self + 1) % THREADS, obj)) {
			atomic_store(&owner[lfp_index_of(shared_pool, obj)], 0);
			if (lfp_free(shared_pool, obj) != 0)
				atomic_fetch_add(&violations, 1);
		}
	}
	return NULL;
}

START_TEST(threads_hand_objects_around)
{
	struct lfpi_census census;
	pthread_t th[THREADS];
	struct lfp_stats st;

	shared_pool = test_pool_flags(64, CAP, test_modes[_i]);
	atomic_store(&violations, 0);
	for (int i = 0; i < THREADS; i++) {
		pthread_mutex_init(&box[i].lock, NULL);
		box[i].n = 0;
	}
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, handoff,
						(void *)(intptr_t)i), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < THREADS; i++)
		receive_all(i);
	ck_assert_int_eq(atomic_load(&violations), 0);
	ck_audit(shared_pool, &census);
	ck_assert_uint_eq(census.live, 0);
	lfp_stats(shared_pool, &st);
	ck_assert_uint_eq(st.allocs, st.frees);
	ck_assert_uint_ge(st.allocs, ROUNDS);
	lfp_destroy(shared_pool);
}
END_TEST

/*
 * lfpool.h's LFP_VERSION_* are written by hand: when AC_INIT's version
 * changes, this fails until the header says the same. lfp_version, the
 * library's own answer at run time, must agree with both.
 */
START_TEST(version_matches_configure)
{
	char macros[40];

	snprintf(macros, sizeof(macros), "%d.%d.%d", LFP_VERSION_MAJOR,
		 LFP_VERSION_MINOR, LFP_VERSION_PATCH);
	ck_assert_str_eq(macros, PACKAGE_VERSION);
	ck_assert_ptr_nonnull(lfp_version());
	ck_assert_str_eq(lfp_version(), PACKAGE_VERSION);
}
END_TEST

/*
 * lfp_strerror names every code a public call can return, each
 * differently, in the pool's terms (a double release is "already free",
 * not strerror's "Operation already in progress"), for either sign; other
 * codes are "unknown", INT_MIN included. It is the C library's: no text
 * speaks of C++ (cxx_words), not even that of -EBUSY, which only the C++
 * wrappers' create returns. The codes come from the headers and the
 * sources (errcodes.inc, made by make: see tests/Makefile.am), so
 * a code added anywhere is held to this without a list kept by hand. The
 * system calls' codes the library passes on are among them: mprotect's
 * and pthread_atfork's -ENOMEM, pthread_key_create's -EAGAIN or -ENOMEM.
 * Two codes of the sources never leave the library, and must stay out of
 * the headers: -ENOSPC ends a growth that found the pool at its
 * max_capacity (grow.c), which an allocation turns into NULL and
 * lfp_reserve refuses beforehand as -EINVAL; -EUCLEAN is the census's
 * (audit.c), which only the tests and the stress harness call.
 */
static const int codes[] = {
#define LFPT_CODE(e) e,
#include "errcodes.inc"
#undef LFPT_CODE
};
static const char *const code_names[] = {
#define LFPT_CODE(e) #e,
#include "errcodes.inc"
#undef LFPT_CODE
};

/* Words of C++, not of C: a C caller would not know what they mean. */
static const char *const cxx_words[] = {
	"C++", "::", "()", "nullptr", "throw", "exception", "constructor",
	"destructor", "operator", "template",
};

static void expect_c_words(const char *text, const char *code)
{
	for (size_t i = 0; i < sizeof(cxx_words) / sizeof(cxx_words[0]); i++)
		ck_assert_msg(strstr(text, cxx_words[i]) == NULL,
			      "lfp_strerror(-%s) speaks C++ (\"%s\"): \"%s\"",
			      code, cxx_words[i], text);
}

static bool code_is_internal(int code)
{
	return code == ENOSPC || code == EUCLEAN;
}

/* Does the header text at path name code (as -EXXX or, in C++, EXXX)? */
static bool header_names(const char *path, const char *name)
{
	char line[512];
	bool found = false;
	FILE *f = fopen(path, "r");

	ck_assert_msg(f != NULL, "%s", path);
	while (!found && fgets(line, sizeof(line), f))
		for (const char *p = line; !found && (p = strstr(p, name)); p++)
			found = (p == line || !isalnum((unsigned char)p[-1])) &&
				!isalnum((unsigned char)p[strlen(name)]);
	fclose(f);
	return found;
}

/* Does lfpool.hpp, or one of its pieces in include/lfpool/, name the code? */
static bool cxx_headers_name(const char *name)
{
	glob_t pieces;
	bool found = header_names(TEST_HEADER_CXX, name);

	/* No piece found would leave most of the C++ text unread. */
	ck_assert_int_eq(glob(TEST_HEADER_CXX_PIECES, 0, NULL, &pieces), 0);
	for (size_t i = 0; !found && i < pieces.gl_pathc; i++)
		found = header_names(pieces.gl_pathv[i], name);
	globfree(&pieces);
	return found;
}

START_TEST(strerror_names_each_code)
{
	size_t ncodes = sizeof(codes) / sizeof(codes[0]);
	struct lfp_config cfg = { .obj_size = 16, .capacity = 8 };
	struct lfp_pool *pool;
	lfp_handle h;
	void *obj;

	/* The list is the sources', not empty or cut short: at least the
	 * codes of lfp_create, lfp_free and lfp_family_create are there. */
	ck_assert_uint_ge(ncodes, 10);
	for (size_t i = 0; i < ncodes; i++) {
		const char *s;

		if (code_is_internal(codes[i])) {
			ck_assert_msg(!header_names(TEST_HEADER, code_names[i]) &&
				      !cxx_headers_name(code_names[i]),
				      "%s is documented: name it in "
				      "lfp_strerror", code_names[i]);
			continue;
		}
		s = lfp_strerror(-codes[i]);
		ck_assert_ptr_nonnull(s);
		ck_assert_msg(strncmp(s, "unknown", 7) != 0,
			      "lfp_strerror(-%s) is \"%s\"", code_names[i], s);
		ck_assert_str_eq(lfp_strerror(codes[i]), s);
		expect_c_words(s, code_names[i]);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(code_is_internal(codes[j]) ||
				      strcmp(lfp_strerror(-codes[j]), s) != 0,
				      "%s and %s read the same", code_names[j],
				      code_names[i]);
	}
	ck_assert_str_eq(lfp_strerror(0), "success");
	ck_assert_str_eq(lfp_strerror(-12345),
			 "unknown error: not a code lfpool returns");
	ck_assert_str_eq(lfp_strerror(INT_MIN), lfp_strerror(-12345));
	expect_c_words(lfp_strerror(-12345), "12345");
	/* Among the codes, the C++ wrappers' own. */
	ck_assert_ptr_nonnull(strstr(lfp_strerror(-EBUSY), "busy"));
	/* The codes real misuse returns. */
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	obj = (lfp_alloc)(pool);
	h = lfp_handle_of(pool, obj);
	ck_assert_int_eq((lfp_free)(pool, obj), 0);
	ck_assert_ptr_nonnull(strstr(lfp_strerror((lfp_free)(pool, obj)),
				     "already free"));
	ck_assert_ptr_nonnull(strstr(lfp_strerror(lfp_free_handle(pool, h)),
				     "stale handle"));
	ck_assert_ptr_nonnull(strstr(lfp_strerror((lfp_free)(pool, &cfg)),
				     "not an object"));
	lfp_destroy(pool);
}
END_TEST

START_TEST(names_are_copied_and_cut)
{
	/* 30 bytes, then a 2-byte character across the 31-byte limit. */
	static const char cut[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9z";
	static const char full[] = "0123456789012345678901234567890"; /* 31 */
	alignas(LFP_MEMORY_ALIGN) static char mem[1 << 16];
	struct lfp_config cfg = { .obj_size = 16, .capacity = 8 };
	struct lfp_pool *pool;
	char name[] = "particles";

	cfg.name = name;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	name[0] = 'X'; /* the pool keeps its own copy */
	ck_assert_str_eq(lfp_name(pool), "particles");
	lfp_destroy(pool);

	cfg.name = full;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_str_eq(lfp_name(pool), full);
	lfp_destroy(pool);

	cfg.name = "0123456789012345678901234567890123456789";
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_str_eq(lfp_name(pool), full);
	lfp_destroy(pool);

	cfg.name = cut;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_uint_eq(strlen(lfp_name(pool)), 30);
	ck_assert_int_eq(strncmp(lfp_name(pool), cut, 30), 0);
	lfp_destroy(pool);

	/* In caller memory: the name lives in the header it already had. */
	cfg.name = "sounds";
	cfg.memory = mem;
	cfg.memory_size = sizeof(mem);
	ck_assert_uint_le(lfp_memory_size(&cfg), sizeof(mem));
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_str_eq(lfp_name(pool), "sounds");
	lfp_destroy(pool);

	cfg.name = NULL; /* no name: "", never NULL */
	cfg.memory = NULL;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_ptr_nonnull(lfp_name(pool));
	ck_assert_str_eq(lfp_name(pool), "");
	lfp_destroy(pool);
	ck_assert_ptr_null(lfp_name(NULL));
}
END_TEST

/*
 * Run fn(pool) in a child whose stderr is a pipe; read what it wrote into
 * buf and return its wait status.
 */
static int child_stderr(void (*fn)(struct lfp_pool *), struct lfp_pool *pool,
			char *buf, size_t len)
{
	int fd[2], status;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(fd), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fd[0]);
		dup2(fd[1], 2);
		signal(SIGABRT, SIG_DFL);
		fn(pool);
		fflush(stderr);
		_exit(0);
	}
	close(fd[1]);
	while (got < len - 1 && (n = read(fd[0], buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void exhaust(struct lfp_pool *pool)
{
	for (;;)
		lfp_alloc(pool);
}

/* The message names the pool as "pool \"<name>\" (<address>)". */
static void ck_names(const char *msg, struct lfp_pool *pool, const char *shown)
{
	char want[128];

	if (shown)
		snprintf(want, sizeof(want), "lfpool: pool \"%s\" (%p)", shown,
			 (void *)pool);
	else
		snprintf(want, sizeof(want), "lfpool: pool %p", (void *)pool);
	ck_assert_msg(strstr(msg, want), "want \"%s\" in: %s", want, msg);
}

START_TEST(abort_message_names_pool)
{
	static const char *const names[] = { "particles", NULL, "two\nlines" };
	static const char *const shown[] = { "particles", NULL, "two?lines" };
	struct lfp_config cfg = { .obj_size = 32, .capacity = 4,
				  .flags = test_modes[_i % TEST_NMODES],
				  .exhaust = LFP_EXHAUST_ABORT };
	struct lfp_pool *pool;
	char msg[1024];
	int status;

	cfg.name = names[_i / TEST_NMODES];
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	status = child_stderr(exhaust, pool, msg, sizeof(msg));
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		      "status %#x, stderr: %s", status, msg);
	ck_names(msg, pool, shown[_i / TEST_NMODES]);
	ck_assert_msg(strstr(msg, "exhausted and its policy is to abort: "
				  "capacity 4, live 4"),
		      "got: %s", msg);
	if (!shown[_i / TEST_NMODES])
		ck_assert_ptr_null(strchr(msg, '"'));
	lfp_destroy(pool);
}
END_TEST

static void write_after_release(struct lfp_pool *pool)
{
	char *p = lfp_alloc(pool);

	lfp_free(pool, p);
	p[5] = 1;
	lfp_alloc(pool); /* the same slot (LIFO): the fill check aborts */
}

static void release_twice(struct lfp_pool *pool)
{
	char *p;

	/* As --enable-debug sets it, before any cache copies the quirks. */
	pool->debug |= LFPI_DBG_REPORT;
	pool->quirks = 1;
	p = lfp_alloc(pool);
	lfp_free(pool, p);
	lfp_free(pool, p);
}

START_TEST(debug_reports_name_pool)
{
	struct lfp_config cfg = { .obj_size = 24, .capacity = 8,
				  .flags = test_modes[_i] | LFP_F_POISON,
				  .name = "bullets" };
	struct lfp_pool *pool;
	char msg[1024];
	int status;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	/* Under ASan the write itself is reported, by ASan (misuse.test
	 * checks that); the fill check is for the other builds. */
	if (!test_sanitizer() || strcmp(test_sanitizer(), "address")) {
		status = child_stderr(write_after_release, pool, msg,
				      sizeof(msg));
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
			      "status %#x, stderr: %s", status, msg);
		ck_names(msg, pool, "bullets");
		ck_assert_msg(strstr(msg, "written after its release: byte 5"),
			      "got: %s", msg);
	}

	status = child_stderr(release_twice, pool, msg, sizeof(msg));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "status %#x, stderr: %s", status, msg);
	ck_names(msg, pool, "bullets");
	ck_assert_msg(strstr(msg, "refused (already free): slot 0"), "got: %s",
		      msg);
	lfp_destroy(pool);
}
END_TEST

static void ck_has(const char *text, const char *want)
{
	ck_assert_msg(strstr(text, want), "want \"%s\" in:\n%s", want, text);
}

START_TEST(stats_print_reports)
{
	struct lfp_config cfg = { .obj_size = 16, .capacity = 8,
				  .max_capacity = 32, .exhaust = LFP_EXHAUST_GROW,
				  .flags = LFP_F_NO_CACHE, .cache_size = 8,
				  .name = "hud" };
	struct lfp_pool *pool;
	struct lfp_cache *c;
	char *text = NULL, want[128];
	size_t len = 0;
	void *obj[9];
	FILE *f;
	int local;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	for (int i = 0; i < 9; i++) /* the ninth grows the pool to 16 */
		ck_assert_ptr_nonnull(obj[i] = lfp_alloc(pool));
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(lfp_free(pool, obj[i]), 0);
	ck_assert_int_eq(lfp_free(pool, obj[0]), -EALREADY);
	ck_assert_int_eq(lfp_free(pool, &local), -EFAULT);
	/* Through an explicit cache: 1 miss (its refill takes the 4 slots
	 * released one by one above, a magazine's worth), 3 hits, 4 back
	 * into it, 2 hits, and a flush of the other 2. */
	ck_assert_ptr_nonnull(c = lfp_cache_create(pool));
	for (int i = 0; i < 4; i++)
		ck_assert_ptr_nonnull(obj[i] = lfp_cache_alloc(c));
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(lfp_cache_free(c, obj[i]), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_ptr_nonnull(lfp_cache_alloc(c));
	lfp_cache_flush(c);

	ck_assert_ptr_nonnull(f = open_memstream(&text, &len));
	ck_assert_int_eq(lfp_stats_print(pool, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(want, sizeof(want), "lfpool: pool \"hud\" (%p)\n",
		 (void *)pool);
	ck_assert_msg(strncmp(text, want, strlen(want)) == 0, "got:\n%s", text);
	ck_has(text, "capacity 16 (max 32), live 7, cached 0, free 9, "
		     "deferred 0, high water 9");
	ck_has(text, "allocs 15, frees 8, failed allocs 0, rejected frees 2");
	ck_has(text, "hit rate 33.3% (5 of 15), refills 1, flushes 1, "
		     "steals 0");
	ck_has(text, "grown 1 times, trimmed 0 bytes, reclaim calls 0");
	free(text);
	lfp_cache_destroy(c);
	lfp_destroy(pool);

	/* No allocation yet: no hit rate to speak of; no name, no quotes. */
	pool = test_pool(16, 4);
	ck_assert_ptr_nonnull(f = open_memstream(&text, &len));
	ck_assert_int_eq(lfp_stats_print(pool, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(want, sizeof(want), "lfpool: pool %p\n", (void *)pool);
	ck_assert_msg(strncmp(text, want, strlen(want)) == 0, "got:\n%s", text);
	ck_has(text, "hit rate - (0 of 0)");
	free(text);

	/* Bad arguments write nothing; write errors are -EIO. */
	ck_assert_ptr_nonnull(f = open_memstream(&text, &len));
	ck_assert_int_eq(lfp_stats_print(NULL, f), -EINVAL);
	ck_assert_int_eq(lfp_stats_print(pool, NULL), -EINVAL);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_uint_eq(len, 0);
	free(text);
	ck_assert_ptr_nonnull(f = fopen("/dev/null", "r"));
	ck_assert_int_eq(lfp_stats_print(pool, f), -EIO);
	fclose(f);
	if ((f = fopen("/dev/full", "w"))) { /* buffered: fails at the flush */
		ck_assert_int_eq(lfp_stats_print(pool, f), -EIO);
		fclose(f);
	}
	lfp_destroy(pool);
}
END_TEST

/* The fields of struct lfp_stats, all uint64_t, seen as an array. */
#define STATS_N (sizeof(struct lfp_stats) / sizeof(uint64_t))

static uint64_t *stats_word(struct lfp_stats *st, size_t i)
{
	return (uint64_t *)(void *)st + i;
}

static bool stats_is_gauge(size_t i)
{
	static const size_t gauges[] = {
		offsetof(struct lfp_stats, capacity),
		offsetof(struct lfp_stats, live),
		offsetof(struct lfp_stats, cached),
		offsetof(struct lfp_stats, free),
		offsetof(struct lfp_stats, deferred),
		offsetof(struct lfp_stats, high_water),
		offsetof(struct lfp_stats, max_capacity),
	};

	for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++)
		if (gauges[g] == i * sizeof(uint64_t))
			return true;
	return false;
}

/* Every field is either an event (subtracted) or a gauge (copied). */
START_TEST(stats_delta_fields)
{
	struct lfp_stats now, before, out, keep;

	for (size_t i = 0; i < STATS_N; i++) {
		*stats_word(&now, i) = 1000 + 7 * i;
		*stats_word(&before, i) = 3 * i;
	}
	memset(&out, 0xee, sizeof(out));
	lfp_stats_delta(&now, &before, &out);
	for (size_t i = 0; i < STATS_N; i++)
		ck_assert_msg(*stats_word(&out, i) ==
				      (stats_is_gauge(i) ? 1000 + 7 * i
							 : 1000 + 4 * i),
			      "field %zu: %llu", i,
			      (unsigned long long)*stats_word(&out, i));
	ck_assert_uint_eq(out.allocs, now.allocs - before.allocs);
	ck_assert_uint_eq(out.live, now.live);

	/* Swapped snapshots: events clamp to 0, gauges come from "now". */
	lfp_stats_delta(&before, &now, &out);
	for (size_t i = 0; i < STATS_N; i++)
		ck_assert_uint_eq(*stats_word(&out, i),
				  stats_is_gauge(i) ? 3 * i : 0);

	/* out may be either input. */
	keep = now;
	lfp_stats_delta(&now, &before, &now);
	ck_assert_uint_eq(now.frees, keep.frees - before.frees);
	ck_assert_uint_eq(now.cached, keep.cached);
	now = keep;
	lfp_stats_delta(&now, &before, &before);
	ck_assert_uint_eq(before.reclaims, now.reclaims - 3 * (STATS_N - 1));

	/* NULL arguments do nothing. */
	out = keep;
	lfp_stats_delta(NULL, &before, &out);
	lfp_stats_delta(&now, NULL, &out);
	ck_assert_int_eq(memcmp(&out, &keep, sizeof(out)), 0);
	lfp_stats_delta(&now, &before, NULL);
}
END_TEST

/* One frame's worth of work, as a game would measure it. */
START_TEST(stats_delta_per_frame)
{
	struct lfp_pool *pool = test_pool_flags(16, 64, test_modes[_i]);
	struct lfp_stats before, now, d;
	void *obj[10];

	for (int i = 0; i < 5; i++) /* earlier frames */
		lfp_free(pool, lfp_alloc(pool));
	lfp_stats(pool, &before);
	for (int i = 0; i < 10; i++)
		ck_assert_ptr_nonnull(obj[i] = lfp_alloc(pool));
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(lfp_free(pool, obj[i]), 0);
	ck_assert_int_eq(lfp_free(pool, obj[0]), -EALREADY);
	lfp_stats(pool, &now);
	lfp_stats_delta(&now, &before, &d);
	ck_assert_uint_eq(d.allocs, 10);
	ck_assert_uint_eq(d.frees, 4);
	ck_assert_uint_eq(d.rejected_frees, 1);
	ck_assert_uint_eq(d.failed_allocs, 0);
	ck_assert_uint_eq(d.live, 6);
	ck_assert_uint_eq(d.capacity, 64);
	ck_assert_uint_eq(d.live + d.cached + d.free + d.deferred, 64);
	lfp_destroy(pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("pool");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, exhaust_release_refill, 0, TEST_NMODES);
	tcase_add_loop_test(tc, reuse_is_lifo_and_lazy, 0, TEST_NMODES);
	tcase_add_loop_test(tc, bad_frees_change_nothing, 0, TEST_NMODES);
	tcase_add_test(tc, null_pool);
	tcase_add_test(tc, creation_is_lazy);
	tcase_add_loop_test(tc, threads_hand_objects_around, 0, TEST_NMODES);
	tcase_add_test(tc, version_matches_configure);
	tcase_add_test(tc, strerror_names_each_code);
	tcase_add_test(tc, names_are_copied_and_cut);
	tcase_add_loop_test(tc, abort_message_names_pool, 0, 3 * TEST_NMODES);
	tcase_add_loop_test(tc, debug_reports_name_pool, 0, TEST_NMODES);
	tcase_add_test(tc, stats_print_reports);
	tcase_add_test(tc, stats_delta_fields);
	tcase_add_loop_test(tc, stats_delta_per_frame, 0, TEST_NMODES);
	suite_add_tcase(s, tc);
	return test_run(s);
}
