/* SPDX-License-Identifier: MIT */
/*
 * The names of the modes and of the exhaustion policies, and whether a
 * run has a mode: what the parser, the modes and the report share.
 *
 * A leaf: calls nothing else in the harness.
 */
#include <string.h>

#include "mode.h"

const char *const stress_mode_name[STRESS_NMODES] = {
	[STRESS_POOL] = "pool",         [STRESS_CACHE] = "cache",
	[STRESS_EXPLICIT] = "explicit", [STRESS_BULK] = "bulk",
	[STRESS_HANDOFF] = "handoff",   [STRESS_EXIT] = "exit",
	[STRESS_BAD] = "bad",           [STRESS_HANDLE] = "handle",
	[STRESS_DEFERRED] = "deferred", [STRESS_IDLING] = "idle",
	[STRESS_TRIM] = "trim",
};

bool stress_mode_enabled(const struct stress_opts *o, enum stress_mode m)
{
	return o->weight[m] != 0;
}

/* The policies the harness can judge (not reclaim). */
static const char *const mode_exhaust_names[] = {
	[LFP_EXHAUST_NULL] = "null",
	[LFP_EXHAUST_GROW] = "grow",
	[LFP_EXHAUST_ABORT] = "abort",
};

bool stress_exhaust_named(const char *name, uint32_t *exhaust)
{
	for (uint32_t p = 0; p <= LFP_EXHAUST_ABORT; p++)
		if (mode_exhaust_names[p] &&
		    !strcmp(name, mode_exhaust_names[p])) {
			*exhaust = p;
			return true;
		}
	return false;
}

const char *stress_exhaust_name(uint32_t exhaust)
{
	return exhaust <= LFP_EXHAUST_ABORT && mode_exhaust_names[exhaust]
		       ? mode_exhaust_names[exhaust]
		       : "?";
}
