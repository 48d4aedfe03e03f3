/*
 * Every internal header of lfpool, for the tests and the stress harness,
 * which reach inside. The library's own files include the headers of
 * their layer and those below (see block.h). Never installed.
 */
#ifndef LFPOOL_INTERNAL_H
#define LFPOOL_INTERNAL_H

#include "audit.h"
#include "block.h"
#include "cache.h"
#include "counters.h"
#include "debug.h"
#include "depot.h"
#include "fork.h"
#include "grow.h"
#include "pool.h"
#include "rcu.h"
#include "slab.h"
#include "stack.h"
#include "trim.h"

#endif /* LFPOOL_INTERNAL_H */
