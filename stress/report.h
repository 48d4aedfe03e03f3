/* SPDX-License-Identifier: MIT */
/*
 * report.c: progress, the summary or JSON, and resident memory. Rank 1:
 * calls only the leaf mode.c; the main file calls it.
 */
#ifndef LFP_STRESS_REPORT_H
#define LFP_STRESS_REPORT_H

#include <stdbool.h>
#include <stdint.h>

struct stress_run;
struct stress_tally;

/* Resident memory over a run, as the supervisor samples it. */
struct stress_rss {
	uint64_t start, warm, max_after_warm, end; /* bytes; 0 = not sampled */
	double warm_at;                             /* seconds */
};

uint64_t stress_rss_now(void);
void stress_progress(const struct stress_run *r, double elapsed, double rate,
		     uint64_t live);
void stress_progress_end(const struct stress_run *r);
void stress_report(const struct stress_run *r, const struct stress_tally *t,
		   const struct stress_rss *rss, double elapsed, bool ok);

#endif /* LFP_STRESS_REPORT_H */
