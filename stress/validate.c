/* SPDX-License-Identifier: MIT */
/*
 * The rules a parsed command line must meet before a run: --grow and
 * --exhaust together, the modes that exclude each other, and the sizing
 * of runs that cannot run dry. The parser (options.c) knows only the
 * spelling of the options; what each mode needs of the others is here.
 *
 * Calls only leaves: mode.c (the names) and bound.c (what the threads
 * can keep).
 */
#include <errno.h>
#include <stdio.h>

#include "bound.h"
#include "mode.h"
#include "validate.h"

/* --grow and --exhaust together: --grow alone means grow. */
static int valid_policy(struct stress_opts *o)
{
	if (o->grow && o->exhaust == LFP_EXHAUST_NULL)
		o->exhaust = LFP_EXHAUST_GROW;
	if (o->grow && o->exhaust != LFP_EXHAUST_GROW) {
		fputs("lfpool-stress: --grow goes with --exhaust grow only\n",
		      stderr);
		return -EINVAL;
	}
	if (o->exhaust == LFP_EXHAUST_GROW && !o->grow)
		o->grow = o->capacity > LFP_MAX_CAPACITY / 4 ? LFP_MAX_CAPACITY / 2
							   : 2 * o->capacity;
	if (o->grow && o->grow < o->capacity) {
		fputs("lfpool-stress: --grow is below --capacity\n", stderr);
		return -EINVAL;
	}
	return 0;
}

/* Whether what `who` names (on) rules mode n out. */
static int valid_excludes(const struct stress_opts *o, const char *who,
			  bool on, enum stress_mode n, const char *why)
{
	if (!on || !o->weight[n])
		return 0;
	fprintf(stderr, "lfpool-stress: %s excludes %s: %s\n", who,
		stress_mode_name[n], why);
	return -EINVAL;
}

/*
 * A run that judges every failed allocation must be one where none can
 * fail legitimately: what the threads can hold and park stays below the
 * capacity (bound.c).
 */
static int valid_never_dry(struct stress_opts *o)
{
	static const char why[] = "a run that cannot run dry must know "
				  "how many slots each thread keeps";
	const char *who = o->weight[STRESS_TRIM] ? "trim" : "--exhaust abort";
	uint64_t bound;
	int err;

	if ((err = valid_excludes(o, who, true, STRESS_HANDOFF, why)) ||
	    (err = valid_excludes(o, who, true, STRESS_EXIT, why)) ||
	    (err = valid_excludes(o, who, true, STRESS_DEFERRED, why)))
		return err;
	if (!o->cache_size)
		o->cache_size = 4;
	bound = stress_bound(o);
	if (bound < o->capacity)
		return 0;
	fprintf(stderr, "lfpool-stress: %s needs a pool that cannot run "
		"dry, but %u threads may hold and park %llu slots, not fewer "
		"than --capacity %u: raise --capacity or lower --threads, "
		"--hold or --cache-size (see --help)\n", who, o->threads,
		(unsigned long long)bound, o->capacity);
	return -EINVAL;
}

/*
 * An unchecked pool keeps no generation: no handles (handle, and
 * deferred, whose RCU readers find objects by handle), no LFP_F_STRICT
 * and no ctor (--hooks gives one); lfp_create would refuse the last two.
 */
static int valid_unchecked(const struct stress_opts *o)
{
	static const char why[] = "an unchecked pool gives no handles";
	int err;

	if ((err = valid_excludes(o, "--unchecked", o->unchecked, STRESS_HANDLE,
				  why)) ||
	    (err = valid_excludes(o, "--unchecked", o->unchecked,
				  STRESS_DEFERRED, why)))
		return err;
	if (o->unchecked && (o->strict || o->hooks)) {
		fprintf(stderr, "lfpool-stress: --unchecked excludes %s: it "
			"needs the generation an unchecked pool does not "
			"keep\n", o->strict ? "--strict" : "--hooks (the ctor)");
		return -EINVAL;
	}
	return 0;
}

/* Modes that do not go together. */
static int valid_combine(struct stress_opts *o)
{
	static const char idle[] = "the drainer needs every worker parked "
				   "and nothing waiting for a grace period";
	bool on = o->weight[STRESS_IDLING];
	int err;

	if ((err = valid_excludes(o, "idle", on, STRESS_EXIT, idle)) ||
	    (err = valid_excludes(o, "idle", on, STRESS_DEFERRED, idle)) ||
	    (err = valid_excludes(o, "idle", on, STRESS_TRIM,
				  "each has its own way to judge a failed "
				  "allocation")))
		return err;
	if (o->weight[STRESS_TRIM] || o->exhaust == LFP_EXHAUST_ABORT)
		return valid_never_dry(o);
	return 0;
}

/*
 * Returns 0 to run, < 0 (having said why) if the options do not go
 * together. Fills in what they leave open: the policy --grow implies,
 * the limit of a growing pool, the cache size of a run that cannot run
 * dry.
 */
int stress_validate(struct stress_opts *o)
{
	int err = valid_policy(o);

	if (!err)
		err = valid_unchecked(o);
	return err ? err : valid_combine(o);
}
