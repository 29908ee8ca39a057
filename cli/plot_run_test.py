#!/usr/bin/python3
"""Tests of edgetrain-plot-run's arithmetic (cli/plot_run.py): what it draws is
matplotlib's; what the job's energy and power are at each time is its own."""

import importlib.util
import os
import unittest

_spec = importlib.util.spec_from_file_location(
    "plot_run", os.path.join(os.path.dirname(os.path.abspath(__file__)), "plot_run.py"))
plot_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plot_run)


def snapshot(elapsed, workers):
    """A /progress snapshot: workers as (rank, wallSeconds, energyJoules)."""
    return {"elapsedSeconds": elapsed, "energyJoules": sum(e for _, _, e in workers),
            "workers": [{"rank": r, "wallSeconds": w, "energyJoules": e} for r, w, e in workers]}


class TeamEnergyTest(unittest.TestCase):
    def test_a_worker_whose_reports_stopped_while_its_link_was_out_is_spread_over_the_outage(self):
        # Two workers at 10 W each, polled every second for 30 s; worker 1's
        # reports stop coming from 7 s to 24 s, then its figures arrive at once.
        snapshots = []
        for t in range(1, 31):
            heard = t if not 7 <= t < 24 else 6
            snapshots.append(snapshot(t, [(0, t, 10.0 * t), (1, heard, 10.0 * heard)]))
        lumped = plot_run.rates([p["elapsedSeconds"] for p in snapshots], [p["energyJoules"] for p in snapshots])
        self.assertGreater(max(lumped[1]), 60, "the job's total as reported lumps the outage's joules")
        times, joules = plot_run.team_energy(snapshots)
        _, watts = plot_run.rates(times, joules)
        self.assertTrue(watts)
        for w in watts:
            self.assertAlmostEqual(w, 20.0, delta=1e-6)
        self.assertAlmostEqual(joules[-1], 600.0)

    def test_a_resumed_run_starts_its_workers_clocks_again(self):
        # 10 s at 5 W, then a resumed run whose worker's clock starts at 0 and
        # whose energy carries on from 50 J; the job's time goes on from 10 s.
        first = [snapshot(t, [(0, t, 5.0 * t)]) for t in range(1, 11)]
        second = [snapshot(10 + t, [(0, t, 50 + 5.0 * t)]) for t in range(1, 11)]
        times, joules = plot_run.team_energy(first + second)
        self.assertAlmostEqual(times[-1], 20.0)
        self.assertAlmostEqual(joules[-1], 100.0)
        _, watts = plot_run.rates(times, joules)
        for w in watts:
            self.assertAlmostEqual(w, 5.0, delta=1e-6)

    def test_a_job_of_one_draws_its_total_as_it_came(self):
        snapshots = [{"elapsedSeconds": t, "energyJoules": 2.0 * t} for t in range(1, 6)]
        self.assertEqual(plot_run.team_energy(snapshots), ([1, 2, 3, 4, 5], [2.0, 4.0, 6.0, 8.0, 10.0]))
        self.assertEqual(plot_run.team_energy([{"elapsedSeconds": 1}]), ([], []))


if __name__ == "__main__":
    unittest.main()
