/* SPDX-License-Identifier: MIT */
/*
 * lfp_version: the library's own version. A leaf: it calls nothing of the
 * library.
 */
#include "base/base.h"

/* LFP_VERSION_* spelled out by the preprocessor, so the two cannot differ. */
#define VERSION_STR(x) #x
#define VERSION_OF(a, b, c) VERSION_STR(a) "." VERSION_STR(b) "." VERSION_STR(c)

const char *lfp_version(void)
{
	return VERSION_OF(LFP_VERSION_MAJOR, LFP_VERSION_MINOR,
			  LFP_VERSION_PATCH);
}
