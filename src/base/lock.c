/* SPDX-License-Identifier: MIT */
/*
 * The library's mutexes (each pool's grow_lock, fork.c's list lock) as a
 * fork from a signal handler must see them. fork's prepare takes every
 * one of them; a handler that forks after interrupting this very thread
 * while it held one would wait for itself. So a thread notes the locks it
 * holds, with every signal blocked from taking a lock to noting it, and
 * from forgetting it to dropping it, and prepare skips the ones its own
 * thread holds: the interrupted holder finishes what it was doing after
 * the handler returns, in the parent and in the child alike, and lets go
 * itself. These locks guard slow paths only (growth, trim, setup, pool
 * creation and destruction), where two more system calls cost nothing
 * that shows. A leaf: it calls nothing of the library.
 */
#include <pthread.h>
#include <signal.h>

#include "base/base.h"

/* The locks this thread holds, innermost last. Read by a signal handler
 * of the same thread: the signal mask keeps it from seeing a lock taken
 * but not yet noted, or forgotten but still held. */
static LFPI_TLS pthread_mutex_t *lock_held[LFPI_LOCKS_HELD_MAX];
static LFPI_TLS unsigned lock_nheld;

void lfpi_lock(pthread_mutex_t *m)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_mutex_lock(m);
	if (lock_nheld < LFPI_LOCKS_HELD_MAX)
		lock_held[lock_nheld] = m;
	lock_nheld++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void lfpi_unlock(pthread_mutex_t *m)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	lock_nheld--;
	pthread_mutex_unlock(m);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

bool lfpi_lock_mine(const pthread_mutex_t *m)
{
	for (unsigned i = 0; i < lock_nheld && i < LFPI_LOCKS_HELD_MAX; i++)
		if (lock_held[i] == m)
			return true;
	return false;
}
