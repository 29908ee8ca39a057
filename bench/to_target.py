"""Medians of a figure to the target over a benchmark's seeds.

A run that never reached the target has no time to it; leaving it out of the
median flattered a mode that misses some seeds (20, 22 and 24 s and two misses
gave 22 s). Here a miss counts as slower than every run that reached the target
(beyond the cap), and the median is None when the middle run is a miss, as
bench/sim_evaluations.h's MedianToTarget does for the simulated benchmarks.
Other figures (a rate, an energy) take the median of the runs that have one."""

import statistics


def median_of_known(values):
    """The median of the values that are not None; None when none is."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def median_to_target(values):
    ordered = sorted(values, key=lambda v: (v is None, v or 0))
    n = len(ordered)
    if n == 0:
        return None
    if n % 2:
        return ordered[n // 2]
    low, high = ordered[n // 2 - 1], ordered[n // 2]
    return None if low is None or high is None else (low + high) / 2
