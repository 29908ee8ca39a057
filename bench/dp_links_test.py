#!/usr/bin/python3
"""What bench/dp-links refuses before it runs anything: out-of-range flags and
traces edgetrain would not read fail at once, saying why (exit 2), where they
had failed minutes in with a traceback, or run every mode for nothing and
exited 0. Needs the build's edgetrain (argv[1]: its bin folder), which reads
the trace as the runner does. And how it shares a worker's stall between the
time its link was out and the rest."""

import importlib.machinery
import json
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dp-links")
BIN = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(BENCH), "..", "build", "bin")


class RefusedBeforeAnythingRuns(unittest.TestCase):
    def refused(self, *args, trace_text=None):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out")
            extra = []
            if trace_text is not None:
                trace = os.path.join(d, "trace.csv")
                with open(trace, "w") as f:
                    f.write(trace_text)
                extra = ["--trace", trace]
            p = subprocess.run([BENCH, "--bin", BIN, "--out", out, *args, *extra], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertFalse(os.path.exists(out), "the output folder was made")
            self.assertEqual(p.stdout, "")
            return p.stderr.strip().splitlines()[-1]

    def test_flags_out_of_range(self):
        for args, said in ((("--cap", "0"), "--cap must be more than 0, not 0"),
                           (("--seeds", "0"), "--seeds must be at least 1, not 0"),
                           (("--scale", "0"), "--scale must be more than 0"),
                           (("--batch", "0"), "--batch must be at least 1"),
                           (("--eval-every", "0"), "--eval-every must be more than 0"),
                           (("--ratio", "-1"), "--ratio must be 0 or more"),
                           (("--target", "2"), "--target is a test accuracy in (0, 1]"),
                           (("--lr-grid", "0.001,x"), "--lr-grid is comma-separated learning rates"),
                           (("--bin", "/nonexistent"), "/nonexistent/edgetrain is missing"),
                           (("--cap", "inf"), "argument --cap: not a finite number: 'inf'"),
                           (("--scale", "nan"), "argument --scale: not a finite number: 'nan'"),
                           (("--modes", "bsp-int8,nosuch"), "unknown mode nosuch"),
                           (("--modes", ","), "--modes names no mode"),
                           (("--zero-stall-mode", "ddp"), "--zero-stall-mode must be one of edgetrain's modes")):
            with self.subTest(args=args):
                self.assertIn(said, self.refused(*args))

    def test_traces_edgetrain_would_not_read(self):
        for text, said in (("seconds,mbps\n0,40\n10,nan\n", ':3: mbps is not a number: "nan"'),
                           ("seconds,mbps\n0,40\n10,20\n5,30\n", ":4: seconds must increase"),
                           ("seconds,mbps\n0,0\n10,0\n", "is 0 Mbit/s throughout"),
                           ("0,40\n10,20\n", ':1: expected the header "seconds,mbps"'),
                           ("", "empty trace")):
            with self.subTest(text=text):
                refused = self.refused(trace_text=text)
                self.assertIn(said, refused)
                # Once, and not naming the check's own profile: every node
                # follows the trace, and each had said the same.
                self.assertEqual(refused.count(said), 1, refused)
                self.assertNotIn("spec.nodes", refused)


def load_bench():
    loader = importlib.machinery.SourceFileLoader("dp_links", BENCH)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("dp_links", loader))
    loader.exec_module(module)
    return module


class StallByOutage(unittest.TestCase):
    def test_an_outage_that_froze_a_workers_figures_counts_inside_it(self):
        # The link is out from 10 s to 13 s of a 20 s period. The worker's
        # figures, which come over that link, last move at 9.5 s and next at
        # 13.5 s, by all of the four seconds between; the worker stalls all
        # of the outage and half of its other time.
        bench = load_bench()
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "trace.csv")
            with open(trace, "w") as f:
                f.write("seconds,mbps\n0,40\n10,0\n13,40\n19,40\n")
            snapshots, wall, stall = [], 0.0, 0.0
            for k in range(1, 41):  # every half second to 20 s
                t = k * 0.5
                if t == 13.5:
                    wall, stall = wall + 4.0, stall + 3.0 + 0.5
                elif not 10 <= t <= 13:  # the snapshots in between repeat the figures of 9.5 s
                    wall, stall = wall + 0.5, stall + 0.25
                snapshots.append({"t": t, "progress": {"workers": [{"rank": 0, "wallSeconds": wall,
                                                                    "stallSeconds": stall}]}})
            outside, inside = bench.stall_by_outage(snapshots, [trace], [0], 1.0)
        # The jump is shared by time, 3 s of its 4 inside: inside 0.875 and
        # outside 0.52 where the truth is 1 and 0.5. Judged by the link at the
        # end of the last interval alone, all of it had counted outside:
        # inside none, outside 0.58.
        self.assertIsNotNone(inside)
        self.assertAlmostEqual(inside, 0.875, places=3)
        self.assertAlmostEqual(outside, 8.625 / 16.5, places=3)

    def test_ddps_ranks_noted_where_they_ran_split_by_their_own_links(self):
        # Two DDP ranks, rank 1's link out from 10 s to 13 s (shifted by 5 s:
        # 5-8 s of its clock), rank 0's never. Each notes its figures every
        # half second where it runs: rank 0 stalls a fifth of its time; rank 1
        # all of its outage and a fifth of the rest, as the lines
        # "rank 1: {...}" that netns-run prints say.
        bench = load_bench()
        traces = {0: [], 1: []}
        wall, stall = {0: 0.0, 1: 0.0}, {0: 0.0, 1: 0.0}
        for k in range(1, 41):
            t = k * 0.5
            for r in (0, 1):
                out = r == 1 and 5 < t <= 8
                wall[r] += 0.5
                stall[r] += 0.5 if out else 0.1
                traces[r].append([t, wall[r], stall[r]])
        lines = [json.dumps({"stall_trace": {"rank": 0, "points": traces[0]}}),
                 "rank 1: " + json.dumps({"stall_trace": {"rank": 1, "points": traces[1]}})]
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "trace.csv")
            with open(trace, "w") as f:
                f.write("seconds,mbps\n0,40\n10,0\n13,40\n19,40\n")
            parsed = bench.ddp_stall_traces(lines)
            self.assertEqual(sorted(parsed), [0, 1])
            # Rank 0's link shifted by 15 s: out at 25-28 s, after the run.
            outside, inside = bench.stall_by_outage(bench.ddp_snapshots(parsed), [trace, trace], [15, 5], 1.0)
        self.assertAlmostEqual(inside, 1.0, places=2)
        self.assertAlmostEqual(outside, 0.2, places=2)


class AccuracyAtBudget(unittest.TestCase):
    def test_the_evaluation_due_at_the_budgets_end_counts(self):
        # Every 2 s, each landing a few tens of ms after it is due.
        run = {"evaluations": [(2.04, 0.5), (4.05, 0.6), (6.03, 0.65), (8.06, 0.7), (10.05, 0.8), (12.04, 0.81)]}
        bench = load_bench()
        self.assertEqual(bench.at_budget(run, 10, 2.0), 0.8)
        self.assertEqual(bench.at_budget(run, 9, 2.0), 0.7)
        self.assertIsNone(bench.at_budget(run, 1, 2.0))

    def test_a_run_that_holds_the_target_early_goes_on_to_the_budget(self):
        # Held from 10 s (the mean of five at 0.85), stopped only once 20 s are
        # trained: its accuracy at a budget of 20 s is then measured, where it
        # had been read as its accuracy at 10 s.
        bench = load_bench()
        evals = [{"seconds": 2.0 * i, "accuracy": 0.85, "iteration": 10.0 * i} for i in range(1, 6)]
        self.assertFalse(bench.held_after(evals, 0.85, 20))
        evals += [{"seconds": 2.0 * i, "accuracy": 0.9, "iteration": 10.0 * i} for i in range(6, 11)]
        self.assertTrue(bench.held_after(evals, 0.85, 20))
        self.assertFalse(bench.held_after([], 0.85, 0))

    def test_a_row_being_written_is_left_out(self):
        bench = load_bench()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "evaluations.csv")
            with open(path, "w") as f:
                f.write("seconds,iteration,samples,accuracy\n2.0,10,640,0.5\n4.0,20\n")
            self.assertEqual([e["accuracy"] for e in bench.read_evaluations(path)], [0.5])


class TableOfARun(unittest.TestCase):
    def test_a_failed_run_is_left_out_of_its_modes_figures(self):
        # Seeds at 20 s and 24 s and one that failed: the median of those that
        # ran, 22 s, as bench/dp-links' own; counted, the failed run had read
        # as a miss and made it 24 s (found in review).
        run = lambda t: {"time_to_target_s": t, "failed": False}
        doc = {"summary": {"trace": "t.csv", "ratio": 0.2, "setting": "default", "budget_s": 10,
                           "target_accuracy": 0.85, "seeds": 3, "modes": {"bsp": {"speedup_vs": {}}},
                           "detail": {"trace_mean_mbps": 10.0, "slowdown": 2.0}},
               "runs": {"bsp": [run(20.0), run(24.0), {"time_to_target_s": None, "failed": True}]}}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "results.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            p = subprocess.run([os.path.join(os.path.dirname(BENCH), "dp-links-table"), path], capture_output=True,
                               text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        row = next(line for line in p.stdout.splitlines() if line.startswith("| `bsp`"))
        self.assertTrue(row.startswith("| `bsp` [1 failed] | 22 (20–24) |"), row)


if __name__ == "__main__":
    unittest.main()
