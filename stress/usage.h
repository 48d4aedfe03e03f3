/* SPDX-License-Identifier: MIT */
/*
 * usage.c: the text of --help. Rank 0, a leaf: calls nothing in the
 * harness.
 */
#ifndef LFP_STRESS_USAGE_H
#define LFP_STRESS_USAGE_H

#include <stdio.h>

void stress_usage(FILE *f);

#endif /* LFP_STRESS_USAGE_H */
