/* SPDX-License-Identifier: MIT */
/*
 * lfp_strerror: what an error code of lfpool means in the pool's own
 * terms. A leaf: it calls nothing of the library.
 */
#include <errno.h>

#include "base/base.h"

const char *lfp_strerror(int err)
{
	/* Unsigned: INT_MIN has no positive int. */
	switch (err < 0 ? 0u - (unsigned)err : (unsigned)err) {
	case 0:
		return "success";
	case EINVAL:
		return "invalid argument: a NULL argument, a configuration "
		       "field out of range, a pointer into an object but not "
		       "at its start, or a handle no live object can have";
	case EFAULT:
		return "not an object of this pool (or family): the pointer or "
		       "handle index is outside its memory";
	case EALREADY:
		return "object already free: a double release, or a slot that "
		       "was never allocated";
	case ESTALE:
		return "stale handle: its object was released (the slot may "
		       "hold a new one), or the slot was never handed out";
	case ENOMEM:
		return "out of memory: the pool's memory could not be mapped "
		       "or committed";
	case EOVERFLOW:
		return "too large: capacity above LFP_MAX_CAPACITY, or the "
		       "pool's size overflows";
	case ERANGE:
		return "size larger than the family's largest class";
	case EBUSY:
		return "busy: the destination holds a pool, cache or family "
		       "already; give that one up first";
	case E2BIG:
		return "too many classes: a family has at most "
		       "LFP_FAMILY_MAX_CLASSES";
	case EAGAIN:
		return "the per-thread cache key could not be made";
	case ENOTSUP:
		return "not supported: this platform has no lock-free 64-bit "
		       "atomics, or the pool is unchecked (LFP_F_UNCHECKED: "
		       "no handles, no walks)";
	case EIO:
		return "writing the report failed";
	}
	return "unknown error: not a code lfpool returns";
}
