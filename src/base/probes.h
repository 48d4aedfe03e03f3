/* SPDX-License-Identifier: MIT */
/*
 * Static tracepoints (USDT, <sys/sdt.h>) of provider "lfpool", one at
 * each slow-path event: refills, flushes, steals, exhaustion, growth,
 * trims and refused releases. lfpool-probes(7) lists them with their
 * arguments; tests/probes.test checks that the library carries exactly
 * that list.
 *
 * A probe is one nop and a note in the ELF file. Its arguments are asm
 * operands, so they are computed whether or not anybody traces: every
 * argument passed here is a value the caller holds already (a count, a
 * field of the pool; the pool's name is the array in the pool, never a
 * copy). None sits on the inline paths of lfpool.h, which stay as they
 * are without probes.
 *
 * LFPI_PROBE(event, pool, args...) is nothing unless configure found
 * <sys/sdt.h> and probes were not disabled (LFPI_PROBES in config.h).
 * Every probe passes the pool and its name first, then one to four
 * counts.
 */
#ifndef LFPOOL_PROBES_H
#define LFPOOL_PROBES_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#if defined(LFPI_PROBES) && LFPI_PROBES
#include <sys/sdt.h>

/* The pool and its name, then the probe's own arguments (2 to 6 in
 * all): DTRACE_PROBEn by count, without GNU's ##__VA_ARGS__. */
#define LFPI_PROBE_N(_1, _2, _3, _4, _5, _6, n, ...) n
#define LFPI_PROBE_CAT(a, b) a##b
#define LFPI_PROBE_SEL(n) LFPI_PROBE_CAT(DTRACE_PROBE, n)
#define LFPI_PROBE(event, pool, ...)                                        \
	LFPI_PROBE_SEL(LFPI_PROBE_N(pool, pool, __VA_ARGS__, 6, 5, 4, 3, 2, \
				    1))(lfpool, event, (const void *)(pool), \
					(const char *)(pool)->name,           \
					__VA_ARGS__)
#else
/* Not even the arguments are evaluated. */
#define LFPI_PROBE(event, pool, ...) ((void)0)
#endif

#endif /* LFPOOL_PROBES_H */
