"""Flag types and checks the benchmarks share, each refused by argparse (exit
2, naming the flag) before anything runs."""
import argparse
import math
import os


def finite_float(text):
    """A number a run can use: `inf` and `nan` parse as floats, and had run a
    trial before ending in a traceback, or printed a final line of
    `Infinity`, which is not JSON (a reader's check)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def c_int_seed(text):
    """A seed the tests read as a C int: one beyond it ran as another seed,
    reported as the one given (a reader's check)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 0 <= value <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"must be from 0 to {2**31 - 1}, not {value}")
    return value


def require_programs(parser, folder, programs, flag):
    """Each of `programs` in `folder`, or the parser's refusal naming the one
    missing and `flag`, which gives another (--build a build folder, --bin
    its bin folder)."""
    for program in programs:
        path = os.path.join(folder, program)
        if not os.access(path, os.X_OK):
            where = "the build folder" if flag == "--build" else "the folder holding it"
            parser.error(f"{path} is missing: run make build, or give {flag} {where}")
