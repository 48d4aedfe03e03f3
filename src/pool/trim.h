/* SPDX-License-Identifier: MIT */
/*
 * Giving idle memory back (trim.c, lfp_trim): what the pool's handout
 * and destroy need of it. Calls the lists and the slab.
 */
#ifndef LFPOOL_TRIM_H
#define LFPOOL_TRIM_H

#include "memory/block.h"

/* Whether slot idx, being handed out, lost its constructed state to a
 * trim (and so needs ctor again); clears the mark. */
bool lfpi_trim_reborn(struct lfp_pool *pool, uint32_t idx);
/* At lfp_destroy: unmap what trims mapped. */
void lfpi_trim_destroy(struct lfp_pool *pool);

#endif /* LFPOOL_TRIM_H */
