/* SPDX-License-Identifier: MIT */
/*
 * mode.c: the names of the modes and of the exhaustion policies, and
 * whether a run has a mode. Rank 0, a leaf: calls nothing in the harness.
 */
#ifndef LFP_STRESS_MODE_H
#define LFP_STRESS_MODE_H

#include <stdbool.h>
#include <stdint.h>

#include "stress.h"

extern const char *const stress_mode_name[STRESS_NMODES];

bool stress_mode_enabled(const struct stress_opts *o, enum stress_mode m);
bool stress_exhaust_named(const char *name, uint32_t *exhaust);
const char *stress_exhaust_name(uint32_t exhaust);

#endif /* LFP_STRESS_MODE_H */
