/* SPDX-License-Identifier: MIT */
/*
 * ThreadSanitizer builds only: the harness's own suppressions, so that it
 * runs by hand with no TSAN_OPTIONS=suppressions=... and still does not
 * stop on the race inside Debian's uninstrumented liburcu. TSan asks for
 * them at startup. The text is tests/tsan.supp itself (tsan-supp.inc is
 * made from it), so the file make check and users pass and the built-in
 * copy cannot drift apart.
 *
 * A leaf: calls nothing in the harness.
 */
const char *__tsan_default_suppressions(void);

__attribute__((visibility("default"))) const char *
__tsan_default_suppressions(void)
{
	return
#include "tsan-supp.inc"
		;
}
