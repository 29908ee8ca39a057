"""Flag types the benchmarks share. A number a run can use, or argparse's
refusal (exit 2, naming the flag) before anything runs: `inf` and `nan`
parse as floats, and had run a trial before ending in a traceback, or
printed a final line of `Infinity`, which is not JSON (a reader's check)."""
import argparse
import math


def finite_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value
