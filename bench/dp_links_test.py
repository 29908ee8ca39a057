#!/usr/bin/python3
"""What bench/dp-links refuses before it runs anything: out-of-range flags and
traces edgetrain would not read fail at once, saying why (exit 2), where they
had failed minutes in with a traceback, or run every mode for nothing and
exited 0. Needs the build's edgetrain (argv[1]: its bin folder), which reads
the trace as the runner does."""

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
                open(trace, "w").write(trace_text)
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
                           (("--bin", "/nonexistent"), "/nonexistent/edgetrain is missing")):
            with self.subTest(args=args):
                self.assertIn(said, self.refused(*args))

    def test_traces_edgetrain_would_not_read(self):
        for text, said in (("seconds,mbps\n0,40\n10,nan\n", ':3: mbps is not a number: "nan"'),
                           ("seconds,mbps\n0,40\n10,20\n5,30\n", ":4: seconds must increase"),
                           ("seconds,mbps\n0,0\n10,0\n", "is 0 Mbit/s throughout"),
                           ("0,40\n10,20\n", ':1: expected the header "seconds,mbps"'),
                           ("", "empty trace")):
            with self.subTest(text=text):
                self.assertIn(said, self.refused(trace_text=text))


if __name__ == "__main__":
    unittest.main()
