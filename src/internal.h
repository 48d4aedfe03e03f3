/* SPDX-License-Identifier: MIT */
/*
 * Every internal header of lfpool, for the tests and the stress harness,
 * which reach inside, lowest layer first. The library's own files
 * include the headers of their layer and those below (see
 * memory/block.h). Never installed.
 */
#ifndef LFPOOL_INTERNAL_H
#define LFPOOL_INTERNAL_H

#include "base/base.h"
#include "base/counters.h"
#include "lists/stack.h"
#include "lists/depot.h"
#include "memory/block.h"
#include "memory/slab.h"
#include "tools/debug.h"
#include "rcu/rcu.h"
#include "cache/cache.h"
#include "cache/implicit.h"
#include "pool/fork.h"
#include "pool/trim.h"
#include "pool/grow.h"
#include "pool/pool.h"
#include "extras/audit.h"

#endif /* LFPOOL_INTERNAL_H */
