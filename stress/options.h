/* SPDX-License-Identifier: MIT */
/*
 * options.c: the command line parsed into struct stress_opts. Rank 1:
 * calls only the leaves mode.c and usage.c.
 */
#ifndef LFP_STRESS_OPTIONS_H
#define LFP_STRESS_OPTIONS_H

#include "stress.h"

int stress_parse(int argc, char **argv, struct stress_opts *o);

#endif /* LFP_STRESS_OPTIONS_H */
