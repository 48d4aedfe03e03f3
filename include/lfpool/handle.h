/* SPDX-License-Identifier: MIT */
/*
 * lfpool/handle.h: the bodies of lfpool.h's handle helpers
 * (lfp_handle_index, lfp_handle_gen, lfp_handle_is_null, lfp_handle_eq),
 * static inline in every program, with or without LFP_NO_INLINE.
 *
 * Part of lfpool.h: lfpool.h declares and documents them, and includes
 * this file after the declarations. Include lfpool.h, never this file.
 */
#ifndef LFPOOL_H
#error "lfpool/handle.h is part of lfpool.h: include <lfpool.h>"
#elif !defined(LFPOOL_HANDLE_H)
#define LFPOOL_HANDLE_H

#ifdef __cplusplus
/* The helpers below are C++ too, where -Wold-style-cast rejects C's casts
 * (not API). */
#define LFPI_H_CAST(type, x) static_cast<type>(x)
#else
#define LFPI_H_CAST(type, x) ((type)(x))
#endif

static inline uint32_t lfp_handle_index(lfp_handle h)
{
	return LFPI_H_CAST(uint32_t, h.bits);
}

static inline uint32_t lfp_handle_gen(lfp_handle h)
{
	return LFPI_H_CAST(uint32_t, h.bits >> 32);
}

static inline bool lfp_handle_is_null(lfp_handle h)
{
	return h.bits == 0;
}

static inline bool lfp_handle_eq(lfp_handle a, lfp_handle b)
{
	return a.bits == b.bits;
}

#endif /* LFPOOL_HANDLE_H */
