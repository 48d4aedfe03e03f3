# SPDX-License-Identifier: MIT
# Throughput against threads, one panel per workload, from the data files
# lfpbench writes. Run by run-bench.sh as: gnuplot -e "dir='results'" plot.gp
if (!exists("dir")) dir = "."
load dir . "/plot.cfg"

# Three panels a row for the six single-object workloads, five when the
# four bulk ones are there too.
npanels = words(workloads)
ncols = (npanels > 6) ? 5 : 3
nrows = (npanels + ncols - 1) / ncols
set terminal pngcairo size 500 * ncols, 475 * nrows font ",9" noenhanced
set output dir . "/results.png"

# One style per contender, in lfpbench's column order: the limit dashed,
# lfpool thick and warm, general-purpose allocators cool, other pools grey;
# the lean lists (treiber, boost_freelist) dashed, tbbmalloc cool,
# DPDK's rte_mempool a pool of its own kind, dark and solid.
set linetype 1 lc rgb "black" lw 1.5 dt 2 pt 1
set linetype 2 lc rgb "#d62728" lw 3 dt 1 pt 7
set linetype 3 lc rgb "#ff7f0e" lw 3 dt 1 pt 5
set linetype 4 lc rgb "#8c564b" lw 3 dt 1 pt 9
set linetype 5 lc rgb "#1f77b4" lw 1.5 dt 1 pt 4
set linetype 6 lc rgb "#2ca02c" lw 1.5 dt 1 pt 6
set linetype 7 lc rgb "#9467bd" lw 1.5 dt 1 pt 8
set linetype 8 lc rgb "#17becf" lw 1.5 dt 1 pt 10
set linetype 9 lc rgb "#7f7f7f" lw 1.5 dt 4 pt 12
set linetype 10 lc rgb "#bcbd22" lw 1.5 dt 4 pt 14
set linetype 11 lc rgb "#555555" lw 1.5 dt 3 pt 3
set linetype 12 lc rgb "#e377c2" lw 3 dt 1 pt 11
set linetype 13 lc rgb "#000000" lw 1.5 dt 5 pt 13
set linetype 14 lc rgb "#aec7e8" lw 1.5 dt 5 pt 15
set linetype 15 lc rgb "#98df8a" lw 1.5 dt 1 pt 2
# lfp_unchecked and lfp_unchecked_implicit: lfpool's, thick, dotted
# beside the explicit and implicit rows' colours.
set linetype 16 lc rgb "#d62728" lw 3 dt 3 pt 7
set linetype 17 lc rgb "#ff7f0e" lw 3 dt 3 pt 5
set linetype 18 lc rgb "#393b79" lw 2 dt 1 pt 6

set datafile missing "?"
set logscale x 2
set logscale y 10
set xtics ("1" 1, "2" 2, "4" 4, "8" 8)
set xrange [0.85:9.5]
set xlabel "threads"
set ylabel "Mops/s (log scale)"
set grid ytics mytics xtics
set multiplot layout nrows, ncols title "lfpool and peers: throughput against threads, 64-byte objects (medians)"
do for [i=1:words(workloads)] {
	wl = word(workloads, i)
	# the columns with data in this panel (plot.cfg)
	cols = value(sprintf("cols%d", i))
	set title wl
	if (i == 1) { set key bottom right font ",8" samplen 3 } else { unset key }
	plot for [k=1:words(cols)] dir . "/plot-" . wl . ".dat" \
		using 1:(column(word(cols, k) + 0)) with linespoints \
		linetype (word(cols, k) - 1) title columnhead(word(cols, k) + 0)
}
unset multiplot
