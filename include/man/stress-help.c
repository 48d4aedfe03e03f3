/* SPDX-License-Identifier: MIT */
/*
 * lfpool-stress's --help and --version, alone: the text help2man turns
 * into lfpool-stress.1. Built for the build machine (CC_FOR_BUILD) from
 * the harness's own usage.c, so that the page is made from the source
 * even where lfpool-stress cannot run, as in a cross build; stress-usage.sh
 * checks that lfpool-stress says the same.
 */
#include <stdio.h>
#include <string.h>

#include "usage.h"

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("lfpool-stress (lfpool) %s\n", LFP_STRESS_VERSION);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		stress_usage(stdout);
		return 0;
	}
	fputs("usage: lfpool-stress-help --help | --version\n", stderr);
	return 2;
}
