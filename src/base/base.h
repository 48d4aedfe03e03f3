/* SPDX-License-Identifier: MIT */
/*
 * The base layer (base/, the bottom: calls nothing of the library's other
 * layers). What every layer of lfpool shares: the "no index" value, branch
 * hints, the cache line, thread-local storage and the ThreadSanitizer
 * edges. Includes nothing of lfpool's but the public header.
 */
#ifndef LFPOOL_BASE_H
#define LFPOOL_BASE_H

#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lfpool.h"

#define LFPI_CACHELINE 64

/* The "no node" index: ends chains and marks an empty stack. */
#define LFPI_NIL UINT32_C(0xffffffff)

#if defined(__GNUC__)
#define LFPI_LIKELY(x) __builtin_expect(!!(x), 1)
#define LFPI_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LFPI_NOINLINE __attribute__((noinline))
#define LFPI_TLS _Thread_local __attribute__((tls_model("initial-exec")))
#else
#define LFPI_LIKELY(x) (x)
#define LFPI_UNLIKELY(x) (x)
#define LFPI_NOINLINE
#define LFPI_TLS _Thread_local
#endif

/*
 * ThreadSanitizer cannot see inside Debian's uninstrumented liburcu: the
 * code that relies on its ordering states the edges with these (a no-op
 * in other builds). Shared by the library, its tests and the harness.
 */
#if defined(__SANITIZE_THREAD__)
#define LFPI_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LFPI_TSAN 1
#endif
#endif
#ifdef LFPI_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define lfpi_tsan_acquire(addr) __tsan_acquire(addr)
#define lfpi_tsan_release(addr) __tsan_release(addr)
#else
#define lfpi_tsan_acquire(addr) ((void)(addr))
#define lfpi_tsan_release(addr) ((void)(addr))
#endif

/*
 * lock.c: the library's mutexes, taken so that a fork from a signal
 * handler knows which ones its own thread holds. lfpi_lock and
 * lfpi_unlock are pthread_mutex_lock and _unlock, plus the note;
 * lfpi_lock_mine says whether this thread holds m. Nested holds are
 * counted; the first LFPI_LOCKS_HELD_MAX are known by name.
 */
#include <pthread.h>
#define LFPI_LOCKS_HELD_MAX 4
void lfpi_lock(pthread_mutex_t *m);
void lfpi_unlock(pthread_mutex_t *m);
bool lfpi_lock_mine(const pthread_mutex_t *m);

#endif /* LFPOOL_BASE_H */
