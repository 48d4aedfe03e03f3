/* SPDX-License-Identifier: MIT */
/*
 * The command line of lfpool-stress: the defaults, and each option's
 * spelling and range, parsed into struct stress_opts. Whether the options
 * go together is for validate.c to say: the parser knows the modes by
 * name only, and which of them need the per-thread cache API.
 *
 * Calls only leaves: mode.c (the names) and usage.c (--help).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mode.h"
#include "options.h"
#include "usage.h"

/* The modes 'all' leaves out: each shapes the whole run. */
static bool opt_special(int m)
{
	return m == STRESS_POOL || m == STRESS_IDLING || m == STRESS_TRIM;
}

/* The modes that need the per-thread cache API. */
static bool opt_needs_caches(int m)
{
	return m == STRESS_CACHE || m == STRESS_EXPLICIT || m == STRESS_BULK;
}

static int opt_bad(const char *what, const char *arg)
{
	fprintf(stderr, "lfpool-stress: bad %s '%s' (see --help)\n", what, arg);
	return -EINVAL;
}

/* A count with an optional k/M/G suffix, within [min, max]. */
static int opt_count(const char *arg, uint64_t min, uint64_t max,
		     const char *what, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (*end == 'k')
		mul = 1000, end++;
	else if (*end == 'M')
		mul = 1000000, end++;
	else if (*end == 'G')
		mul = 1000000000, end++;
	if (errno || end == arg || *end || arg[0] == '-' ||
	    v > max / mul || v * mul < min || v * mul > max)
		return opt_bad(what, arg);
	*out = v * mul;
	return 0;
}

static int opt_u32(const char *arg, uint64_t min, uint64_t max,
		   const char *what, uint32_t *out)
{
	uint64_t v;
	int err = opt_count(arg, min, max, what, &v);

	if (!err)
		*out = (uint32_t)v;
	return err;
}

/* A duration: a number with ms, s, m or h (seconds if none). */
static int opt_duration(const char *arg, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || !(v > 0))
		return opt_bad("duration", arg);
	if (!strcmp(end, "ms"))
		v /= 1000;
	else if (!strcmp(end, "m"))
		v *= 60;
	else if (!strcmp(end, "h"))
		v *= 3600;
	else if (*end && strcmp(end, "s"))
		return opt_bad("duration", arg);
	*out = v;
	return 0;
}

static int opt_mode_named(const char *name, size_t len)
{
	for (int m = 0; m < STRESS_NMODES; m++)
		if (strlen(stress_mode_name[m]) == len &&
		    !strncmp(stress_mode_name[m], name, len))
			return m;
	return -1;
}

/* Enable every mode this build supports but pool, idle and trim. */
static void opt_mix_all(struct stress_opts *o, unsigned w)
{
	for (int m = 0; m < STRESS_NMODES; m++)
		if (!opt_special(m) &&
		    (STRESS_HAVE_CACHES || !opt_needs_caches(m)))
			o->weight[m] = w;
	if (!STRESS_HAVE_CACHES)
		o->weight[STRESS_POOL] = w;
}

/* One item of the mix: name or name:W. */
static int opt_mix_item(struct stress_opts *o, const char *item, size_t len)
{
	const char *colon = memchr(item, ':', len);
	size_t nlen = colon ? (size_t)(colon - item) : len;
	char wbuf[8];
	uint32_t w = 1;
	int m;

	if (colon) {
		if (len - nlen - 1 >= sizeof(wbuf) || len - nlen - 1 == 0)
			return opt_bad("weight in mix item", item);
		memcpy(wbuf, colon + 1, len - nlen - 1);
		wbuf[len - nlen - 1] = '\0';
		if (opt_u32(wbuf, 1, 100, "weight", &w))
			return -EINVAL;
	}
	if (nlen == 3 && !strncmp(item, "all", 3)) {
		opt_mix_all(o, w);
		return 0;
	}
	if ((m = opt_mode_named(item, nlen)) < 0)
		return opt_bad("mode in mix", item);
	if (opt_needs_caches(m) && !STRESS_HAVE_CACHES) {
		fprintf(stderr, "lfpool-stress: mode '%s' needs the per-thread "
				"cache API, which this lfpool lacks\n",
			stress_mode_name[m]);
		return -ENOTSUP;
	}
	o->weight[m] = w;
	return 0;
}

/* Spell the mix out, so a report says exactly what ran. */
static void opt_mix_text(struct stress_opts *o)
{
	size_t n = 0;

	o->mix[0] = '\0';
	for (int m = 0; m < STRESS_NMODES; m++) {
		if (!o->weight[m])
			continue;
		n += (size_t)snprintf(o->mix + n, sizeof(o->mix) - n, "%s%s",
				      n ? "," : "", stress_mode_name[m]);
		if (o->weight[m] > 1)
			n += (size_t)snprintf(o->mix + n, sizeof(o->mix) - n,
					      ":%u", o->weight[m]);
	}
}

static int opt_mix(struct stress_opts *o, const char *arg)
{
	const char *p = arg;
	int err;

	memset(o->weight, 0, sizeof(o->weight));
	while (*p) {
		size_t len = strcspn(p, ",");

		if (len && (err = opt_mix_item(o, p, len)))
			return err;
		p += len + (p[len] == ',');
	}
	if (o->weight[STRESS_POOL] && o->weight[STRESS_CACHE]) {
		fputs("lfpool-stress: pool and cache exclude each other: pool "
		      "makes lfp_alloc bypass the caches\n", stderr);
		return -EINVAL;
	}
	if (!o->weight[STRESS_POOL] && !o->weight[STRESS_CACHE] &&
	    !o->weight[STRESS_EXPLICIT] && !o->weight[STRESS_BULK])
		o->weight[STRESS_HAVE_CACHES ? STRESS_CACHE : STRESS_POOL] = 1;
	return 0;
}

static void opt_defaults(struct stress_opts *o)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	memset(o, 0, sizeof(*o));
	o->threads = cores < 1 ? 1 : cores > STRESS_MAX_THREADS
					     ? STRESS_MAX_THREADS
					     : (unsigned)cores;
	o->seed = 1;
	o->capacity = 1024;
	o->obj_size = 64;
	o->hold = 64;
	o->life = 2000;
	o->idle_every = 500;
	o->progress = isatty(STDERR_FILENO);
	o->rss_slack = STRESS_SANITIZED ? -1 : 4;
	o->stall = 60;
	opt_mix_all(o, 1);
}

static void opt_list_modes(void)
{
	const char *sep = "";

	for (int m = 0; m < STRESS_NMODES; m++)
		if (STRESS_HAVE_CACHES || !opt_needs_caches(m)) {
			printf("%s%s", sep, stress_mode_name[m]);
			sep = " ";
		}
	putchar('\n');
}

enum {
	OPT_SIZE = 256, OPT_HOLD, OPT_LIFE, OPT_CACHE, OPT_BATCH, OPT_GROW,
	OPT_STRICT, OPT_POISON, OPT_HOOKS, OPT_JSON, OPT_PROGRESS,
	OPT_NO_PROGRESS, OPT_RSS, OPT_STALL, OPT_LIST, OPT_EXHAUST, OPT_IDLE,
	OPT_SPARE, OPT_VERSION, OPT_UNCHECKED
};

static const struct option opt_long[] = {
	{ "threads", required_argument, NULL, 't' },
	{ "ops", required_argument, NULL, 'n' },
	{ "duration", required_argument, NULL, 'd' },
	{ "seed", required_argument, NULL, 's' },
	{ "capacity", required_argument, NULL, 'c' },
	{ "mix", required_argument, NULL, 'm' },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "hold", required_argument, NULL, OPT_HOLD },
	{ "life", required_argument, NULL, OPT_LIFE },
	{ "cache-size", required_argument, NULL, OPT_CACHE },
	{ "batch-size", required_argument, NULL, OPT_BATCH },
	{ "grow", required_argument, NULL, OPT_GROW },
	{ "exhaust", required_argument, NULL, OPT_EXHAUST },
	{ "idle-every", required_argument, NULL, OPT_IDLE },
	{ "spare-caches", required_argument, NULL, OPT_SPARE },
	{ "strict", no_argument, NULL, OPT_STRICT },
	{ "poison", no_argument, NULL, OPT_POISON },
	{ "unchecked", no_argument, NULL, OPT_UNCHECKED },
	{ "hooks", no_argument, NULL, OPT_HOOKS },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
	{ "rss-slack", required_argument, NULL, OPT_RSS },
	{ "stall", required_argument, NULL, OPT_STALL },
	{ "list-modes", no_argument, NULL, OPT_LIST },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* A floating-point option value. */
static int opt_real(const char *arg, const char *what, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(arg, &end);
	if (errno || end == arg || *end)
		return opt_bad(what, arg);
	return 0;
}

static int opt_threads(struct stress_opts *o, const char *a)
{
	uint32_t n;
	int err = opt_u32(a, 1, STRESS_MAX_THREADS, "thread count", &n);

	if (!err)
		o->threads = n;
	return err;
}

static int opt_size(struct stress_opts *o, const char *a)
{
	int err = opt_u32(a, 24, 4096, "object size", &o->obj_size);

	return err ? err : o->obj_size % 8 ? opt_bad("object size", a) : 0;
}

static int opt_stall(struct stress_opts *o, const char *a)
{
	int err = opt_real(a, "stall time", &o->stall);

	return err ? err : o->stall > 0 ? 0 : opt_bad("stall time", a);
}

/* --exhaust: the policies the harness can judge (not reclaim). */
static int opt_exhaust(struct stress_opts *o, const char *a)
{
	if (stress_exhaust_named(a, &o->exhaust))
		return 0;
	return opt_bad("exhaustion policy", a);
}

/* The options that say how to make the pool; -ENOENT for any other. */
static int opt_pool(struct stress_opts *o, int c, const char *a)
{
	switch (c) {
	case OPT_GROW:
		return opt_u32(a, 1, LFP_MAX_CAPACITY / 2, "growth limit",
			       &o->grow);
	case OPT_EXHAUST:
		return opt_exhaust(o, a);
	case OPT_SPARE:
		return opt_u32(a, 0, 65536, "spare cache count",
			       &o->spare_caches);
	case OPT_STRICT:
		o->strict = true;
		return 0;
	case OPT_POISON:
		o->poison = true;
		return 0;
	case OPT_UNCHECKED:
		o->unchecked = true;
		return 0;
	case OPT_HOOKS:
		o->hooks = true;
		return 0;
	}
	return -ENOENT;
}

/* The options that shape the run; -ENOENT for any other. */
static int opt_shape(struct stress_opts *o, int c, const char *a)
{
	switch (c) {
	case 't':
		return opt_threads(o, a);
	case 'n':
		return opt_count(a, 1, UINT64_MAX / 2, "operation count",
				 &o->ops);
	case 'd':
		return opt_duration(a, &o->duration);
	case 's':
		return opt_count(a, 0, UINT64_MAX, "seed", &o->seed);
	case 'c':
		return opt_u32(a, 1, LFP_MAX_CAPACITY / 2, "capacity",
			       &o->capacity);
	case 'm':
		return opt_mix(o, a);
	case OPT_SIZE:
		return opt_size(o, a);
	case OPT_HOLD:
		return opt_u32(a, 1, STRESS_MAX_HOLD, "hold", &o->hold);
	case OPT_LIFE:
		return opt_u32(a, 1, UINT32_MAX / 2, "life", &o->life);
	case OPT_CACHE:
		return opt_u32(a, 0, UINT32_MAX, "cache size", &o->cache_size);
	case OPT_BATCH:
		return opt_u32(a, 0, UINT32_MAX, "batch size", &o->batch_size);
	case OPT_IDLE:
		return opt_u32(a, 1, UINT32_MAX / 4, "idle period",
			       &o->idle_every);
	}
	return opt_pool(o, c, a);
}

/* What to print and when to fail; 1 means "done, exit 0" (help, list). */
static int opt_output(struct stress_opts *o, int c, const char *a,
		      bool *progress_set)
{
	switch (c) {
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_PROGRESS:
	case OPT_NO_PROGRESS:
		o->progress = c == OPT_PROGRESS;
		*progress_set = true;
		return 0;
	case OPT_RSS:
		return opt_real(a, "RSS slack", &o->rss_slack);
	case OPT_STALL:
		return opt_stall(o, a);
	case OPT_LIST:
		opt_list_modes();
		return 1;
	case 'h':
		stress_usage(stdout);
		return 1;
	case OPT_VERSION:
		printf("lfpool-stress (lfpool) %s\n", lfp_version());
		return 1;
	}
	/* getopt has said what was wrong; say where to look. */
	fputs("Try 'lfpool-stress --help' for more information.\n", stderr);
	return -EINVAL;
}

/*
 * Returns 0 to go on (to stress_validate), 1 to exit successfully (help,
 * list, version), < 0 on a bad line.
 */
int stress_parse(int argc, char **argv, struct stress_opts *o)
{
	bool progress_set = false;
	int c, err;

	opt_defaults(o);
	while ((c = getopt_long(argc, argv, "t:n:d:s:c:m:h", opt_long,
				NULL)) != -1) {
		err = opt_shape(o, c, optarg);
		if (err == -ENOENT)
			err = opt_output(o, c, optarg, &progress_set);
		if (err)
			return err;
	}
	if (optind < argc)
		return opt_bad("argument", argv[optind]);
	if (!o->ops && !o->duration)
		o->ops = 100000;
	if (o->json && !progress_set)
		o->progress = false;
	opt_mix_text(o);
	return 0;
}
