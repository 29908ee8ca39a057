#!/usr/bin/python3
"""Draws a run's curves as one PNG: what `edgetrain run` leaves in its output
folder as report.png, from the progress snapshots it kept there (progress.jsonl).

    edgetrain-plot-run HISTORY.jsonl OUT.png [--title T] [--worker NAME ...]

HISTORY holds one JSON object a line, {"t": seconds, "progress": {...}}, the
progress being the coordinator's GET /progress (docs/launch-contract.md); the
test accuracy comes from evaluations.csv beside it when the run wrote one. The
x axis is the job's training time (elapsedSeconds), which goes on across a
resumed run. Rates (samples/s, stall, watts) are taken between snapshots at
least a few seconds apart, so that one late poll does not draw a spike; over
an eighth of the run where that is less, so that a run of a few seconds,
polled every second, has rates to draw.

Exit codes: 0 drawn; 2 bad input; 3 matplotlib missing (the runner says how to
install it).
"""

import argparse
import bisect
import csv
import json
import os
import sys

RATE_WINDOW_S = 3.0  # the least time a rate is taken over, in runs long enough
RATES_A_RUN = 8  # at the least, where the run is shorter than that many windows
# Nor over less than this, which is the snapshots' timing and not the run's: a
# digits run of 0.18 s drew 10,000 W between two snapshots 1.6 microseconds
# apart in training time, its energy counted on meanwhile (a user's trial).
LEAST_RATE_WINDOW_S = 0.05
ENERGY_STEP_S = 0.5  # the job's energy is drawn at these steps from its workers' reports,
MOST_ENERGY_STEPS = 4000  # and in no more of them: a day's run draws in a second


def load(path):
    snapshots = []
    unread = []  # (line, why) of lines that are not snapshots
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                progress = json.loads(line)["progress"]
            except (ValueError, KeyError, TypeError) as e:
                unread.append((n, e))
                continue
            snapshots.append(progress)
    # A run killed as it wrote leaves its last line cut short, and a run that
    # resumes writes on after it: every later picture failed on that line (a
    # user's trial). Such lines are drawn around, and said; a file of none
    # that reads is no history.
    if unread and not snapshots:
        n, e = unread[0]
        raise ValueError(f"{path}:{n}: not a progress line ({e})")
    if len(unread) == 1:
        print(f"edgetrain-plot-run: {path}: line {unread[0][0]} is not a progress line (one a crash cut short, "
              "most likely), and is left out", file=sys.stderr)
    elif unread:
        lines = ", ".join(str(n) for n, _ in unread[:5]) + (" and more" if len(unread) > 5 else "")
        print(f"edgetrain-plot-run: {path}: lines {lines} are not progress lines (a crash cuts one short), and are "
              "left out", file=sys.stderr)
    # A resumed run's history follows the earlier one's; a snapshot taken before
    # the job trained again may repeat a time already drawn.
    snapshots.sort(key=lambda p: p.get("elapsedSeconds", 0))
    return snapshots


def load_evaluations(path):
    """(training seconds, accuracy) of every evaluation, from the run's
    evaluations.csv (docs/using-the-model.md): the snapshots miss those made
    between two polls, and know an evaluation only once it is done."""
    try:
        with open(path) as f:
            rows = list(csv.DictReader(f))
    except OSError:
        return []
    try:
        return sorted((float(r["seconds"]), float(r["accuracy"])) for r in rows)
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{path}: not an evaluations file ({e})") from None


def rate_window(times):
    """The least time a rate is taken over: RATE_WINDOW_S, or an RATES_A_RUN-th
    of the run where that is less (a job of 4 s drew no rate at all: a new
    user's trial)."""
    span = times[-1] - times[0] if times else 0
    return max(LEAST_RATE_WINDOW_S, min(RATE_WINDOW_S, span / RATES_A_RUN) if span > 0 else RATE_WINDOW_S)


def rates(times, totals):
    """(t, d total / d t) over windows of at least rate_window(times)."""
    window = rate_window(times)
    out_t, out_v = [], []
    i = 0
    for j in range(1, len(times)):
        dt = times[j] - times[i]
        if dt >= window:
            out_t.append(times[j])
            out_v.append(max(0.0, totals[j] - totals[i]) / dt)
            i = j
    return out_t, out_v


def run_mean_rate(times, totals):
    """The run's mean rate over its snapshots: what it gained over the time
    between its first and last (a resumed run's first carries its checkpoint's
    count), or None over less than a second."""
    if len(times) < 2 or times[-1] - times[0] < 1:
        return None
    return max(0.0, totals[-1] - totals[0]) / (times[-1] - times[0])


def alone(snapshots):
    """Whether the run is a job of one: its single worker, with no clock of its
    own (a team's counts its wall time), waits on no team and crosses no link."""
    workers = [w for p in snapshots for w in p.get("workers", [])]
    return (all(len(p.get("workers", [])) <= 1 for p in snapshots) and not staged(snapshots)
            and not any(w.get("wallSeconds", 0) > 0 for w in workers))


def staged(snapshots):
    """Whether the run is a pipeline's: its stages report the layers they hold."""
    return any("layers" in w for p in snapshots for w in p.get("workers", []))


def team_energy(snapshots):
    """(times, joules) of the whole job, each team worker's energy placed at the job
    time it was spent rather than when its report reached the coordinator: a robot
    whose link was out for 18 s reported nothing new meanwhile, then all of it at
    once, and the job's total drew 72.8 W on four devices of 15 W.

    A report first seen at job time E with the worker's own clock at W is placed at
    W plus the least E - W of it and every later report (no later than E): the
    gap between the two clocks only grows (a worker's clock leaves out the time
    between a lost stream and its reconnect), and a stale report's E - W is too
    large by how late it came, while a later fresh one's is not. Between two
    reports a worker's energy is spread evenly. A job of one (its clock stays 0)
    and a pipeline (a stage's clock is its busy time, not the job's) are drawn
    from the job's total, each new figure where it first came and spread evenly
    back to the one before: a pipeline's head evaluating for 12 s reported no
    new energy meanwhile, then the stages' idle watts at once, and the power
    line fell to 0 W, below every device's idle power, then spiked (a new
    user's trial)."""
    reports = {}  # rank -> [(wallSeconds, energyJoules, elapsedSeconds first seen)], wall rising
    for p in snapshots:
        for w in p.get("workers", []):
            wall, joules = w.get("wallSeconds"), w.get("energyJoules")
            if wall is None or joules is None or wall <= 0:
                continue
            run = reports.setdefault(w["rank"], [])
            if not run or wall > run[-1][0]:
                run.append((wall, joules, p["elapsedSeconds"]))
    if staged(snapshots) or not reports:
        energy = [(p["elapsedSeconds"], p["energyJoules"]) for p in snapshots if p.get("energyJoules") is not None]
        changed = [e for i, e in enumerate(energy) if i == 0 or e[1] != energy[i - 1][1] or i == len(energy) - 1]
        return [t for t, _ in changed], [j for _, j in changed]
    placed = []  # per worker: [(job time, energy)], time rising
    for run in reports.values():
        points, gap = [], float("inf")
        for wall, joules, seen in reversed(run):
            gap = min(gap, seen - wall)
            points.append((min(seen, wall + gap), joules))
        points.reverse()
        placed.append(points)
    start = min(points[0][0] for points in placed)
    end = max(points[-1][0] for points in placed)
    steps = max(1, min(int((end - start) / ENERGY_STEP_S), MOST_ENERGY_STEPS))
    times = [start + (end - start) * i / steps for i in range(steps + 1)]
    return times, [sum(energy_at(points, t) for points in placed) for t in times]


def energy_at(points, t):
    """A worker's energy at job time t: linear between its reports; before the
    first, the first's; after the last, the last's."""
    i = bisect.bisect_left(points, (t,))
    if i == 0:
        return points[0][1]
    if i == len(points):
        return points[-1][1]
    (t0, e0), (t1, e1) = points[i - 1], points[i]
    return e0 + (e1 - e0) * (t - t0) / (t1 - t0) if t1 > t0 else e1


def worker_series(snapshots, key, zero_is_unknown=False, held_is_unknown=False):
    """Per worker rank: (times, values of `key`, or of key(worker) for a function); with
    zero_is_unknown, 0 is a gap; with held_is_unknown, so is a value the same as the
    rank's last: a link's estimate, reported again in every snapshot until its link is
    timed again, drew 20 s of one old figure as a link measured steady (a user's trial)."""
    series, last = {}, {}
    for p in snapshots:
        for w in p.get("workers", []):
            t, v = series.setdefault(w["rank"], ([], []))
            t.append(p["elapsedSeconds"])
            value = key(w) if callable(key) else w.get(key, 0)
            held = held_is_unknown and last.get(w["rank"]) == value
            last[w["rank"]] = value
            v.append(float("nan") if (zero_is_unknown and not value) or held else value)
    return series


def stream_waits(snapshots):
    """Per worker rank on a stream: (times, the seconds it has waited for samples)."""
    on_stream = {w["rank"] for p in snapshots for w in p.get("workers", []) if "stream" in w}
    series = worker_series(snapshots, lambda w: w.get("stream", {}).get("waitSeconds", 0))
    return {rank: values for rank, values in series.items() if rank in on_stream}


def windowed_share(t, part, whole):
    """The share part/whole over windows of at least rate_window(t), clamped to 0..1."""
    window = rate_window(t)
    points_t, points_v = [], []
    i = 0
    for j in range(1, len(t)):
        if t[j] - t[i] >= window and whole[j] > whole[i]:
            points_t.append(t[j])
            points_v.append(min(1.0, max(0.0, (part[j] - part[i]) / (whole[j] - whole[i]))))
            i = j
    return points_t, points_v


def top_above(ax, values, room=1.1):
    """The y axis from 0 to a little above the largest value: a flat line at
    its top otherwise sat on the frame, out of sight (a new user's trial)."""
    largest = max(values, default=0)
    if largest > 0:
        ax.set_ylim(0, largest * room)
    else:
        ax.set_ylim(bottom=0)


def timed(series):
    """Whether any worker's series holds a figure (0 and gaps are none)."""
    return any(x > 0 for _, v in series.values() for x in v if x == x)


def said_instead(ax, words):
    """A panel with nothing to draw says why, on no scale: empty axes of 0 to 1
    against a run of 4 s read as a reading (a new user's trial)."""
    ax.text(0.5, 0.5, words, ha="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def both_ways(ax, up, down, scale, name, ylabel, title, alone, untimed=None, log_if_wide=False, points=False):
    """Each worker's uplink series (solid) and downlink series (dashed, same colour);
    with log_if_wide, on a log axis where they span decades (spans_decades); with
    points, each value marked, so that one between gaps shows."""
    marked = {"marker": ".", "markersize": 4} if points else {}
    # Series of gaps alone drew empty axes: every pipeline's report (a new user's trial).
    if up and untimed and not timed(up) and not timed(down):
        # Workers, but no figure for any link: say why rather than draw empty axes.
        up = {}
        alone = untimed
    for rank, (t, v) in sorted(up.items()):
        line, = ax.plot(t, [x * scale for x in v], label=f"{name(rank)} up", linewidth=1, **marked)
        dt, dv = down.get(rank, ([], []))
        ax.plot(dt, [x * scale for x in dv], "--", color=line.get_color(), label=f"{name(rank)} down", linewidth=1,
                **marked)
    ax.set_ylabel(ylabel)
    if log_if_wide and up and spans_decades([x for _, (_, v) in list(up.items()) + list(down.items()) for x in v]):
        ax.set_yscale("log")
        title += " (log scale)"
    ax.set_title(title)
    if up:
        ax.legend(fontsize=7, ncol=2)
    else:
        said_instead(ax, alone)


def spans_decades(values):
    """Whether the positive values span more than a factor of 30, which a
    linear axis shows as a line along the bottom for the smaller: an unshaped
    link's estimate (thousands of Mbit/s) beside shaped ones of a few made
    those flat (a user's trial). Gaps (None) and zeros are not values."""
    positive = [x for x in values if x is not None and x == x and x > 0]
    return bool(positive) and max(positive) > 30 * min(positive)


def accuracy_limits(accuracies):
    """The accuracy axis' range where matplotlib's own has nothing to span: one
    evaluation (a short run's), or all alike, drew an axis of a millionth
    around it, labelled as an offset ("1e-8+3.24596e-1": a user's trial).
    None where the values spread enough for its own."""
    lo, hi = min(accuracies), max(accuracies)
    if hi - lo >= 0.01:
        return None
    middle = (lo + hi) / 2
    return max(0.0, middle - 0.05), min(1.0, middle + 0.05)


def time_limits(times):
    """The time axis' range where its points span next to nothing (a run of a
    few hundredths of a second): matplotlib labelled it as an offset
    ("1e-8+2.0152e-2"). From 0 to past the last; None otherwise."""
    lo, hi = min(times), max(times)
    if hi - lo >= 0.01 * max(abs(hi), 1e-9) and hi - lo >= 1e-3:
        return None
    return 0.0, max(hi, 1e-3) * 1.05


def draw(snapshots, evaluations, out, title, names):
    import matplotlib
    matplotlib.use("Agg")
    # No axis of the report as an offset ("1e-8+3.24596e-1"): a short run's
    # loss was labelled so (a user's trial), as its accuracy and time were.
    matplotlib.rcParams["axes.formatter.useoffset"] = False
    import matplotlib.pyplot as plt

    def name(rank):
        return names[rank] if rank < len(names) else f"worker {rank}"

    times = [p["elapsedSeconds"] for p in snapshots]
    one = alone(snapshots)
    # A few points drawn as a line alone are hard to see, one not at all.
    few = {"marker": "."} if len(snapshots) < 30 else {}
    fig, axes = plt.subplots(3, 2, figsize=(13, 11))
    fig.suptitle(title)
    ax = axes[0][0]
    if evaluations:
        t, acc = zip(*evaluations)
        ax.plot(t, acc, "o-", color="tab:blue", markersize=3, label="test accuracy")
        limits = accuracy_limits(acc)
        if limits:
            ax.set_ylim(*limits)
    ax.set_ylabel("test accuracy", color="tab:blue")
    loss_ax = ax.twinx()
    # A resumed run reports its checkpoint's iteration before any loss of its own (0).
    trained = [p for p in snapshots if p.get("iteration", 0) > 0 and p.get("loss", 0) > 0]
    loss_ax.plot([p["elapsedSeconds"] for p in trained], [p["loss"] for p in trained], color="tab:orange",
                 linewidth=1)
    loss_ax.set_ylabel("training loss", color="tab:orange")
    ax.set_title("accuracy and loss")

    ax = axes[0][1]
    samples = [p.get("samples", 0) for p in snapshots]
    t, v = rates(times, samples)
    if t:
        ax.plot(t, v, color="tab:green", **few)
    else:
        said_instead(ax, "too short a run to draw a rate\n(the summary gives its samples a second)")
    # The line is the rate between snapshots; the run's mean, which the
    # summary gives, is drawn beside it (a user's trial read the line's last
    # point as the run's rate).
    mean = run_mean_rate(times, samples)
    if mean is not None:
        ax.axhline(mean, color="tab:green", linestyle="--", linewidth=1)
    ax.set_ylabel("samples/s")
    top_above(ax, v)
    ax.set_title("samples a second, the whole job" + ("" if mean is None else " (dashed: the run's mean)"))

    # A link's estimate is 0 until something large enough was timed, and while it is
    # down: drawn as a gap rather than as a dead link.
    both_ways(axes[1][0],
              {} if one else worker_series(snapshots, "bandwidthMbps", zero_is_unknown=True, held_is_unknown=True),
              worker_series(snapshots, "downlinkMbps", zero_is_unknown=True, held_is_unknown=True), 1, name,
              "Mbit/s", "each link as its ends measure it (gaps: not timed again, or down)", "a job of one: no links",
              "a pipeline: its stages' links are not timed\n(the bytes each moved are in the run's summary)"
              if staged(snapshots) else "no link timed: unshaped, or no message large enough to time",
              log_if_wide=True, points=True)

    ax = axes[1][1]
    stalls = {} if one else worker_series(snapshots, "stallSeconds")
    walls = worker_series(snapshots, "wallSeconds")
    # A worker on a stream waits for its samples too, which is not the team's
    # doing: drawn dashed beside its stall (a stream-bound worker read 0% alone).
    waits = stream_waits(snapshots)
    for rank, (t, stall) in sorted(stalls.items()):
        _, wall = walls[rank]
        line, = ax.plot(*windowed_share(t, stall, wall), label=name(rank), linewidth=1, **few)
        if rank in waits:
            # Above the stall lines: a stream-bound worker's wait lies where the others' stalls do.
            ax.plot(*windowed_share(t, waits[rank][1], wall), linestyle="--", linewidth=1.5, color=line.get_color(),
                    zorder=3, label=f"{name(rank)}, waiting for samples")
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("share of the time waiting")
    # Of each window, not of the run so far: its end read as contradicting the
    # summary's 88% (a user's trial).
    # On two lines with streams: on one it ran past its panel, cut at
    # "for its stream's sam" (a new user's trial).
    ax.set_title("stall: each window's share waiting on the team" +
                 ("\n(dashed: waiting for its stream's samples)" if waits else ""))
    if stalls:
        ax.legend(fontsize=7)
    else:
        said_instead(ax, "a job of one: never waits")

    ax = axes[2][0]
    t, joules = team_energy(snapshots)
    if t:
        ax.plot(t, joules, color="tab:red")
        wt, wv = rates(t, joules)
        if wt:  # a run too short for a rate draws its joules alone
            watts_ax = ax.twinx()
            watts_ax.plot(wt, wv, color="tab:purple", linewidth=1, **few)
            watts_ax.set_ylabel("W", color="tab:purple")
            top_above(watts_ax, wv)  # from 0: a tenth of a watt must not look like a swing
    else:
        said_instead(ax, "no energy model in this run")
    ax.set_ylabel("J, modelled", color="tab:red")
    ax.set_title("energy (docs/energy.md)")

    both_ways(axes[2][1], {} if one else worker_series(snapshots, "bytesSent"),
              worker_series(snapshots, "bytesReceived"), 1e-6,
              name, "MB", "bytes on the wire", "a job of one: nothing sent")

    every_time = times + [t for t, _ in evaluations]
    limits = time_limits(every_time)
    # One time axis for every panel: each of its own drew a short run's
    # energy over 1.5 microseconds, its last two snapshots', beside
    # accuracy over 0.1 s (a user's trial).
    if not limits and every_time and max(every_time) > min(every_time):
        limits = (min(every_time), max(every_time))
    for row in axes:
        for ax in row:
            ax.set_xlabel("training time, s")
            ax.grid(alpha=0.3)
            if limits:
                ax.set_xlim(*limits)
    fig.tight_layout()
    # Drawn beside it, then put in its place: killed mid-save (the runner's
    # time limit, or the runner itself killed), it had left a torn picture
    # where the earlier run's was (found in review). Killed, the runner
    # removes what it was drawing (cli/run_curves.cc).
    base, ext = os.path.splitext(out)
    drawing = f"{base}.drawing-{os.getpid()}{ext}"
    try:
        fig.savefig(drawing, dpi=80)
        os.replace(drawing, out)
    finally:
        if os.path.exists(drawing):
            os.remove(drawing)


def main():
    parser = argparse.ArgumentParser(prog="edgetrain-plot-run", description=__doc__.split("\n\n")[0])
    parser.add_argument("history")
    parser.add_argument("out")
    parser.add_argument("--title", default="")
    parser.add_argument("--worker", action="append", default=[], help="the name of worker 0, 1, ... in order")
    args = parser.parse_args()
    try:
        snapshots = load(args.history)
        evaluations = load_evaluations(os.path.join(os.path.dirname(args.history), "evaluations.csv"))
    except (OSError, ValueError) as e:
        print(f"edgetrain-plot-run: {e}", file=sys.stderr)
        return 2
    if not snapshots:
        print(f"edgetrain-plot-run: {args.history} holds no progress", file=sys.stderr)
        return 2
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("edgetrain-plot-run: python3-matplotlib is not installed", file=sys.stderr)
        return 3
    try:
        draw(snapshots, evaluations, args.out, args.title, args.worker)
    except OSError as e:
        # A full disk: one line that says so, not matplotlib's traceback
        # (a new user's trial), and no part of a picture left behind.
        print(f"edgetrain-plot-run: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        try:
            if os.path.isfile(args.out):
                os.remove(args.out)
        except OSError:
            pass
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
