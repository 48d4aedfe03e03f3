/* SPDX-License-Identifier: MIT */
/*
 * What lfpool-stress tells: progress, the summary or JSON, and memory.
 *
 * Calls only the leaf mode.c (the names); the main file calls it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mode.h"
#include "report.h"
#include "run.h"

#define MIB (1024.0 * 1024.0)

uint64_t stress_rss_now(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long size, resident = 0;
	long page = sysconf(_SC_PAGESIZE);

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * (uint64_t)(page > 0 ? page : 4096);
}

void stress_progress(const struct stress_run *r, double elapsed, double rate,
		     uint64_t live)
{
	/* Relaxed: figures for people. */
	fprintf(stderr, "\r%7.1f s %12.0f ops/s  live %7" PRIu64
		"  threads %u  exits %" PRIu64 "  violations %u\033[K",
		elapsed, rate, live, r->o->threads,
		atomic_load_explicit(&r->exits, memory_order_relaxed),
		atomic_load_explicit(&r->violations, memory_order_relaxed));
	fflush(stderr);
}

void stress_progress_end(const struct stress_run *r)
{
	(void)r;
	fputs("\r\033[K", stderr);
	fflush(stderr);
}

/* The first violation, or NULL. */
static const char *report_violation(const struct stress_run *r)
{
	/* Acquire: pairs with the release store in stress_violation. */
	return atomic_load_explicit(&r->have_msg, memory_order_acquire)
		       ? r->violation
		       : NULL;
}

static double report_rate(uint64_t n, double s)
{
	return s > 0 ? (double)n / s : 0;
}

static void report_text_stats(const struct lfp_stats *s)
{
	printf("  pool stats: capacity %" PRIu64 " (grew %" PRIu64 " times), "
	       "allocs %" PRIu64 ", frees %" PRIu64
	       ", failed allocs %" PRIu64 ", rejected frees %" PRIu64
	       ", cas retries %" PRIu64 ", high water %" PRIu64 "\n",
	       s->capacity, s->grown, s->allocs, s->frees, s->failed_allocs,
	       s->rejected_frees, s->cas_retries, s->high_water);
#if STRESS_HAVE_CACHES
	printf("  cache stats: hits %" PRIu64 ", refills %" PRIu64
	       ", flushes %" PRIu64 ", steals %" PRIu64 "\n",
	       s->cache_hits, s->refills, s->flushes, s->steals);
#endif
}

static void report_text_rss(const struct stress_run *r,
			    const struct stress_rss *m)
{
	if (!r->o->duration)
		return;
	printf("  resident memory: start %.1f MiB, after warm-up (%.0f s) "
	       "%.1f MiB, most after %.1f MiB, end %.1f MiB",
	       m->start / MIB, m->warm_at, m->warm / MIB,
	       m->max_after_warm / MIB, m->end / MIB);
	if (r->o->rss_slack >= 0)
		printf(" (growth allowed: %.1f MiB)\n", r->o->rss_slack);
	else
		printf(" (growth not checked)\n");
}

static void report_text(const struct stress_run *r, const struct stress_tally *t,
			const struct stress_rss *m, double secs, bool ok)
{
	const struct stress_opts *o = r->o;
	const char *v = report_violation(r);
	struct lfp_stats s;

	lfp_stats(r->pool, &s);
	printf("lfpool-stress: %s\n", ok ? "PASS" : "FAIL");
	printf("  %u threads, mix %s, seed %" PRIu64 ", capacity %" PRIu32
	       ", %" PRIu32 " B objects, hold %" PRIu32 "\n",
	       o->threads, o->mix, o->seed, o->capacity, o->obj_size, o->hold);
	if (o->strict || o->poison || o->hooks || o->grow || o->unchecked)
		printf("  pool made with:%s%s%s%s, growing to %" PRIu32 "\n",
		       o->strict ? " strict" : "", o->poison ? " poison" : "",
		       o->hooks ? " hooks" : "",
		       o->unchecked ? " unchecked" : "",
		       o->grow ? o->grow : o->capacity);
	printf("  on exhaustion: %s%s", stress_exhaust_name(o->exhaust),
	       r->never_dry ? ", and the pool cannot run dry" : "");
	if (r->never_dry)
		printf(" (the threads hold and park %" PRIu64 " slots at most)",
		       r->bound);
	if (o->spare_caches)
		printf("; %" PRIu32 " spare caches", o->spare_caches);
	putchar('\n');
	printf("  %" PRIu64 " operations in %.3f s: %.0f ops/s\n", t->ops,
	       secs, report_rate(t->ops, secs));
	printf("  objects: %" PRIu64 " allocated, %" PRIu64 " released, %"
	       PRIu64 " verified, %" PRIu64 " handed off\n",
	       t->allocs, t->frees, t->checks, t->handoffs);
	printf("  exhausted %" PRIu64 " times, %" PRIu64 " thread exits, %"
	       PRIu64 " bad releases refused\n", t->exhausted,
	       t->lives > o->threads ? t->lives - o->threads : 0, t->refused);
	if (stress_mode_enabled(o, STRESS_HANDLE) ||
	    stress_mode_enabled(o, STRESS_DEFERRED))
		printf("  handles: %" PRIu64 " probes, %" PRIu64 " of them "
		       "stale handles; %" PRIu64 " deferred releases, %" PRIu64
		       " RCU read sections checked (%" PRIu64 " saw their "
		       "object released), %" PRIu64 " barriers\n",
		       t->probes, t->stale, t->deferred, t->reads,
		       t->overlaps, t->barriers);
	if (stress_mode_enabled(o, STRESS_IDLING))
		printf("  idle: %" PRIu64 " rounds with every worker parked, %"
		       PRIu64 " objects drained in them (%" PRIu64 " while "
		       "the workers went idle); %" PRIu64 " workers held up "
		       "inside a pool call as a round began\n", t->rounds,
		       t->drained, t->grabbed, t->napped);
	if (stress_mode_enabled(o, STRESS_TRIM))
		printf("  trim: %" PRIu64 " lfp_trim calls gave back %" PRIu64
		       " bytes\n", t->trims, t->trimmed);
	printf("  operations by mode:");
	for (int i = 0; i < STRESS_NMODES; i++)
		if (t->by_mode[i])
			printf(" %s %" PRIu64, stress_mode_name[i],
			       t->by_mode[i]);
	putchar('\n');
	report_text_stats(&s);
	report_text_rss(r, m);
	if (v)
		printf("  violation: %s (%u in all)\n", v,
		       atomic_load_explicit(&r->violations,
					    memory_order_relaxed));
}

/* A JSON string: our messages hold no control characters but quotes. */
static void report_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		if ((unsigned char)*s >= 0x20)
			putchar(*s);
	}
	putchar('"');
}

static void report_json_stats(const struct lfp_stats *s)
{
	printf(",\"pool\":{\"capacity\":%" PRIu64 ",\"live\":%" PRIu64
	       ",\"cached\":%" PRIu64 ",\"free\":%" PRIu64
	       ",\"high_water\":%" PRIu64 ",\"allocs\":%" PRIu64
	       ",\"frees\":%" PRIu64 ",\"failed_allocs\":%" PRIu64
	       ",\"rejected_frees\":%" PRIu64 ",\"cas_retries\":%" PRIu64
	       ",\"deferred\":%" PRIu64 ",\"grown\":%" PRIu64,
	       s->capacity, s->live, s->cached, s->free, s->high_water,
	       s->allocs, s->frees, s->failed_allocs, s->rejected_frees,
	       s->cas_retries, s->deferred, s->grown);
#if STRESS_HAVE_CACHES
	printf(",\"cache_hits\":%" PRIu64 ",\"refills\":%" PRIu64
	       ",\"flushes\":%" PRIu64 ",\"steals\":%" PRIu64,
	       s->cache_hits, s->refills, s->flushes, s->steals);
#endif
	putchar('}');
}

static void report_json_run(const struct stress_run *r,
			    const struct stress_tally *t, double secs)
{
	const struct stress_opts *o = r->o;

	printf(",\"threads\":%u,\"mix\":", o->threads);
	report_json_str(o->mix);
	printf(",\"strict\":%s,\"poison\":%s,\"hooks\":%s,\"grow\":%" PRIu32,
	       o->strict ? "true" : "false", o->poison ? "true" : "false",
	       o->hooks ? "true" : "false", o->grow);
	printf(",\"unchecked\":%s", o->unchecked ? "true" : "false");
	printf(",\"exhaust\":\"%s\",\"never_dry\":%s,\"bound\":%" PRIu64
	       ",\"spare_caches\":%" PRIu32, stress_exhaust_name(o->exhaust),
	       r->never_dry ? "true" : "false", r->bound, o->spare_caches);
	printf(",\"seed\":%" PRIu64 ",\"capacity\":%" PRIu32
	       ",\"obj_size\":%" PRIu32 ",\"hold\":%" PRIu32
	       ",\"ops_per_thread\":%" PRIu64 ",\"duration_s\":%g"
	       ",\"elapsed_s\":%.3f,\"ops\":%" PRIu64 ",\"ops_per_s\":%.0f"
	       ",\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64
	       ",\"checks\":%" PRIu64 ",\"handoffs\":%" PRIu64
	       ",\"exhausted\":%" PRIu64
	       ",\"thread_exits\":%" PRIu64 ",\"bad_refused\":%" PRIu64,
	       o->seed, o->capacity, o->obj_size, o->hold, o->ops,
	       o->duration, secs, t->ops, report_rate(t->ops, secs),
	       t->allocs, t->frees, t->checks, t->handoffs, t->exhausted,
	       t->lives > o->threads ? t->lives - o->threads : 0, t->refused);
	printf(",\"probes\":%" PRIu64 ",\"stale\":%" PRIu64
	       ",\"deferred_frees\":%" PRIu64 ",\"reads\":%" PRIu64
	       ",\"overlaps\":%" PRIu64 ",\"barriers\":%" PRIu64,
	       t->probes, t->stale, t->deferred, t->reads, t->overlaps,
	       t->barriers);
	printf(",\"idle_rounds\":%" PRIu64 ",\"drained\":%" PRIu64
	       ",\"grabbed\":%" PRIu64 ",\"napped\":%" PRIu64
	       ",\"trims\":%" PRIu64 ",\"trimmed_bytes\":%" PRIu64,
	       t->rounds, t->drained, t->grabbed, t->napped, t->trims,
	       t->trimmed);
	printf(",\"by_mode\":{");
	for (int i = 0, n = 0; i < STRESS_NMODES; i++)
		if (o->weight[i])
			printf("%s\"%s\":%" PRIu64, n++ ? "," : "",
			       stress_mode_name[i], t->by_mode[i]);
	putchar('}');
}

static void report_json(const struct stress_run *r, const struct stress_tally *t,
			const struct stress_rss *m, double secs, bool ok)
{
	const char *v = report_violation(r);
	struct lfp_stats s;

	lfp_stats(r->pool, &s);
	printf("{\"ok\":%s", ok ? "true" : "false");
	report_json_run(r, t, secs);
	report_json_stats(&s);
	if (r->o->duration)
		printf(",\"rss\":{\"start\":%" PRIu64 ",\"warm\":%" PRIu64
		       ",\"warm_at_s\":%.0f,\"max_after_warm\":%" PRIu64
		       ",\"end\":%" PRIu64 ",\"slack_mib\":%g}",
		       m->start, m->warm, m->warm_at, m->max_after_warm, m->end,
		       r->o->rss_slack);
	printf(",\"violations\":%u,\"violation\":",
	       atomic_load_explicit(&r->violations, memory_order_relaxed));
	if (v)
		report_json_str(v);
	else
		printf("null");
	printf("}\n");
}

void stress_report(const struct stress_run *r, const struct stress_tally *t,
		   const struct stress_rss *rss, double elapsed, bool ok)
{
	if (r->o->json)
		report_json(r, t, rss, elapsed, ok);
	else
		report_text(r, t, rss, elapsed, ok);
	fflush(stdout);
}
