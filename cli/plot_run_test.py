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

    def test_a_worker_whose_stream_was_lost_for_a_while_is_placed_after_the_gap(self):
        # 10 W; its stream lost from 10 s to 15 s of the job: its own clock leaves
        # those 5 s out (as a team's wall time does), and it spent nothing then.
        snapshots = []
        for t in range(1, 31):
            wall = t if t <= 10 else max(10, t - 5)
            snapshots.append(snapshot(t, [(0, wall, 10.0 * wall)]))
        times, joules = plot_run.team_energy(snapshots)
        drawn = list(zip(times, joules))
        self.assertAlmostEqual(plot_run.energy_at(drawn, 10.0), 100.0)
        self.assertAlmostEqual(plot_run.energy_at(drawn, 30.0), 250.0)
        self.assertAlmostEqual(joules[-1], 250.0)
        self.assertAlmostEqual(times[-1], 30.0)

    def test_a_job_of_one_and_a_pipeline_draw_the_jobs_total_as_it_came(self):
        # A job of one reports one worker whose clock stays 0; a pipeline's stages
        # report their busy time (and their layers), not the job's clock.
        alone = [{"elapsedSeconds": t, "energyJoules": 2.0 * t,
                  "workers": [{"rank": 0, "wallSeconds": 0.0, "energyJoules": 2.0 * t}]} for t in range(1, 6)]
        self.assertEqual(plot_run.team_energy(alone), ([1, 2, 3, 4, 5], [2.0, 4.0, 6.0, 8.0, 10.0]))
        staged = [{"elapsedSeconds": t, "energyJoules": 3.0 * t,
                   "workers": [{"rank": 0, "wallSeconds": 0.7 * t, "energyJoules": 3.0 * t, "layers": "0-1"}]}
                  for t in range(1, 6)]
        self.assertEqual(plot_run.team_energy(staged), ([1, 2, 3, 4, 5], [3.0, 6.0, 9.0, 12.0, 15.0]))
        self.assertEqual(plot_run.team_energy([{"elapsedSeconds": 1}]), ([], []))
        # An evaluation of 3 s reported nothing new, then its idle joules at once:
        # spread back over it, not a flat line and a spike.
        evaluating = [{"elapsedSeconds": t, "energyJoules": j, "workers": [{"rank": 0, "layers": "0-1"}]}
                      for t, j in [(1, 3.0), (2, 6.0), (3, 6.0), (4, 6.0), (5, 12.0), (6, 15.0), (7, 15.0)]]
        self.assertEqual(plot_run.team_energy(evaluating), ([1, 2, 5, 6, 7], [3.0, 6.0, 12.0, 15.0, 15.0]))

    def test_a_link_is_timed_only_by_a_figure_above_zero(self):
        # A pipeline's stages report 0 both ways: drawn as gaps, which are no figure.
        staged = [{"elapsedSeconds": t, "workers": [{"rank": 0, "bandwidthMbps": 0.0, "layers": "0-1"}]}
                  for t in range(1, 4)]
        self.assertFalse(plot_run.timed(plot_run.worker_series(staged, "bandwidthMbps", zero_is_unknown=True)))
        staged[1]["workers"][0]["bandwidthMbps"] = 12.5
        self.assertTrue(plot_run.timed(plot_run.worker_series(staged, "bandwidthMbps", zero_is_unknown=True)))
        self.assertFalse(plot_run.timed({}))

    def test_a_long_run_is_drawn_in_a_bounded_number_of_steps(self):
        snapshots = [snapshot(t, [(0, t, 1.0 * t)]) for t in range(1, 86400, 60)]
        times, joules = plot_run.team_energy(snapshots)
        self.assertLessEqual(len(times), plot_run.MOST_ENERGY_STEPS + 1)
        self.assertAlmostEqual(joules[-1], snapshots[-1]["energyJoules"])


class StallTest(unittest.TestCase):
    def test_a_worker_on_a_stream_shows_its_wait_for_samples_beside_its_stall(self):
        # Worker 0 on a stream waits half its time for samples and never on the
        # team; worker 1 has no stream. Its stall alone read 0% (a new user's trial).
        snapshots = [{"elapsedSeconds": t, "workers": [
            {"rank": 0, "wallSeconds": t, "stallSeconds": 0.0, "stream": {"waitSeconds": 0.5 * t}},
            {"rank": 1, "wallSeconds": t, "stallSeconds": 0.25 * t}]} for t in range(0, 13)]
        waits = plot_run.stream_waits(snapshots)
        self.assertEqual(list(waits), [0])
        times, wait = waits[0]
        _, wall = plot_run.worker_series(snapshots, "wallSeconds")[0]
        shares_t, shares = plot_run.windowed_share(times, wait, wall)
        self.assertEqual(shares_t, [2, 4, 6, 8, 10, 12], "over an eighth of its 12 s, 1.5 s, in whole seconds")
        self.assertEqual(shares, [0.5] * 6)
        _, stall = plot_run.worker_series(snapshots, "stallSeconds")[1]
        self.assertEqual(plot_run.windowed_share(times, stall, wall)[1], [0.25] * 6)


class ShortRunTest(unittest.TestCase):
    def test_a_run_of_a_few_seconds_has_rates_to_draw(self):
        # Fashion-MNIST alone: 4.4 s, polled every second. Windows of 3 s drew
        # one point, which a line does not show (a new user's trial).
        times = [0.4, 1.4, 2.4, 3.4, 4.4]
        t, v = plot_run.rates(times, [60000 * x for x in times])
        self.assertEqual(t, times[1:])
        for rate in v:
            self.assertAlmostEqual(rate, 60000)
        # A long run keeps its windows of 3 s.
        long = list(range(0, 61))
        self.assertEqual(plot_run.rates(long, long)[0], list(range(3, 61, 3)))

    def test_the_runs_mean_rate_is_over_what_it_gained_between_its_first_and_last_snapshot(self):
        # A resumed run's first snapshot carries its checkpoint's 30,000 samples.
        self.assertAlmostEqual(plot_run.run_mean_rate([2.0, 4.0, 12.0], [30000, 31000, 40000]), 1000)
        self.assertIsNone(plot_run.run_mean_rate([0.2, 0.9], [0, 500]), "under a second: no rate")
        self.assertIsNone(plot_run.run_mean_rate([1.0], [100]))

    def test_a_job_of_one_waits_on_no_team_and_sends_nothing(self):
        solo = [{"elapsedSeconds": t, "workers": [{"rank": 0, "wallSeconds": 0.0, "stallSeconds": 0.0}]}
                for t in range(1, 5)]
        self.assertTrue(plot_run.alone(solo))
        # A team of one (edgetrain run --nodes) syncs with its coordinator over its link.
        team_of_one = [{"elapsedSeconds": t, "workers": [{"rank": 0, "wallSeconds": 1.0 * t}]} for t in range(1, 5)]
        self.assertFalse(plot_run.alone(team_of_one))
        staged = [{"elapsedSeconds": t, "workers": [{"rank": 0, "layers": "0-3"}]} for t in range(1, 5)]
        self.assertFalse(plot_run.alone(staged), "a pipeline of one stage is a pipeline")


class AccuracyAxisTest(unittest.TestCase):
    def test_a_links_estimate_reported_again_unchanged_is_a_gap(self):
        snapshots = [{"elapsedSeconds": t, "workers": [{"rank": 0, "downlinkMbps": v}]}
                     for t, v in [(1, 7.93), (2, 7.93), (3, 7.93), (4, 5.1), (5, 0)]]
        _, values = plot_run.worker_series(snapshots, "downlinkMbps", zero_is_unknown=True,
                                           held_is_unknown=True)[0]
        self.assertEqual(values[0], 7.93)
        self.assertTrue(all(v != v for v in values[1:3]), "not measured again: not drawn as measured")
        self.assertEqual(values[3], 5.1)
        self.assertTrue(values[4] != values[4], "down")

    def test_links_a_hundred_times_apart_are_drawn_on_a_log_axis(self):
        self.assertTrue(plot_run.spans_decades([2.0, None, 4.5, 3000.0]), "an unshaped gateway beside shaped links")
        self.assertFalse(plot_run.spans_decades([2.0, None, 0.0, 45.0]), "a link in a dip, on one axis")
        self.assertFalse(plot_run.spans_decades([None, 0.0]), "nothing timed")

    def test_a_teams_links_far_apart_are_drawn(self):
        # Its series as worker_series gives them, (times, values) by rank: the
        # first cut of the log axis read them as values and every team's
        # report failed (a user's trial).
        import tempfile
        snapshots = [{"elapsedSeconds": t, "iteration": 10 * t, "samples": 640 * t, "loss": 1.0 / t,
                      "energyJoules": 3.0 * t,
                      "workers": [{"rank": r, "bandwidthMbps": 3000.0 if r == 0 else 2.0 + t,
                                   "downlinkMbps": 40.0, "stallSeconds": 0.5 * t, "wallSeconds": 1.0 * t,
                                   "computeSeconds": 0.5 * t, "bytesSent": 1e6 * t, "bytesReceived": 2e6 * t,
                                   "energyJoules": 1.0 * t, "iteration": 10 * t}
                                  for r in range(2)]}
                     for t in range(1, 6)]
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "report.png")
            plot_run.draw(snapshots, [(2.0, 0.5), (4.0, 0.7)], out, "team", ["gateway", "robot"])
            self.assertGreater(os.path.getsize(out), 0)

    def test_one_evaluation_or_several_alike_get_an_axis_around_them(self):
        lo, hi = plot_run.accuracy_limits([0.3246])
        self.assertAlmostEqual(lo, 0.2746)
        self.assertAlmostEqual(hi, 0.3746)
        lo, hi = plot_run.accuracy_limits([0.99, 0.995])
        self.assertAlmostEqual(lo, 0.9425)
        self.assertEqual(hi, 1.0, "no accuracy above 1")
        self.assertIsNone(plot_run.accuracy_limits([0.71, 0.84, 0.85]), "matplotlib's own range")

    def test_a_run_of_hundredths_of_a_second_is_drawn_from_zero(self):
        lo, hi = plot_run.time_limits([0.0201529, 0.0201529, 0.0202])
        self.assertEqual(lo, 0.0)
        self.assertAlmostEqual(hi, 0.0202 * 1.05)
        self.assertIsNone(plot_run.time_limits([0.4, 1.4, 2.4]), "matplotlib's own range")


if __name__ == "__main__":
    unittest.main()
