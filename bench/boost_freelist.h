/* SPDX-License-Identifier: MIT */
/*
 * boost.lockfree's free list as a pool of fixed-size objects: the C side
 * of boost_freelist.cc, which c_lean.c makes a contender of. Built only
 * when configure finds the header and a C++ compiler.
 */
#ifndef LFP_BENCH_BOOST_FREELIST_H
#define LFP_BENCH_BOOST_FREELIST_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Make the list: count objects of size bytes carved from slab in order
 * and pushed as boost's constructor pushes them (the last at the top).
 * Returns 0, or -1 if size is not the object size boost_freelist.cc was
 * built for or the list's head is not lock-free. The list made by an
 * earlier call must have been taken down.
 */
int bench_bfl_setup(void *slab, size_t count, size_t size);
/* Take the list down after a run; returns the objects it held. */
size_t bench_bfl_teardown(void);
/* An object, or NULL if the list is empty. Thread safety: any thread. */
void *bench_bfl_alloc(void);
/* Give back an object bench_bfl_alloc returned. */
void bench_bfl_free(void *obj);
/* The Boost release the file was compiled with, e.g. "1_74". */
const char *bench_bfl_version(void);

#ifdef __cplusplus
}
#endif

#endif /* LFP_BENCH_BOOST_FREELIST_H */
