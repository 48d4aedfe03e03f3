/* SPDX-License-Identifier: MIT */
/*
 * validate.c: which options go together. Rank 1: calls only the leaves
 * mode.c and bound.c.
 */
#ifndef LFP_STRESS_VALIDATE_H
#define LFP_STRESS_VALIDATE_H

#include "stress.h"

int stress_validate(struct stress_opts *o);

#endif /* LFP_STRESS_VALIDATE_H */
