"""How a benchmark and the runs it starts stop together.

Each run is started in a session of its own, so that a Ctrl-C at the terminal
reaches the benchmark alone; the benchmark then stops the run as a Ctrl-C at
the terminal would, SIGINT to its whole process group (`edgetrain run` stops
its agents and removes what it made; a test's stand-in and operator, which
`unittest` does not stop on its way out, stop themselves), and SIGKILLs what
of the group has not ended a minute later. SIGTERM to the benchmark is taken
as SIGINT is, and so is SIGHUP: a closed terminal or a dropped ssh session had
killed the benchmark alone, its run training on to its cap with its agents,
namespaces and qdiscs (a reader's check). Before, a SIGTERM left the run training on with nothing
said, and a Ctrl-C had Python SIGKILL it a quarter of a second later, leaving
its run and TLS folders behind.
"""
import os
import signal
import subprocess
import sys
import time

# The signal that stopped the benchmark, once one has: its exit code is 128 + it.
STOPPED_BY = {"signal": None}


def _interrupt(signum, _frame):
    STOPPED_BY["signal"] = STOPPED_BY["signal"] or signum
    raise KeyboardInterrupt


# The signals that stop a benchmark and its runs.
STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def install():
    """SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt in the benchmark's main thread."""
    for s in STOPPING:
        signal.signal(s, _interrupt)


def exit_code():
    return 128 + (STOPPED_BY["signal"] or signal.SIGINT)


class Held:
    """The stopping signals noted rather than raised, until the block ends."""

    def __enter__(self):
        self.caught = None

        def note(signum, _frame):
            self.caught = self.caught or signum
        self.previous = [signal.signal(s, note) for s in STOPPING]
        return self

    def __exit__(self, *_):
        for s, handler in zip(STOPPING, self.previous):
            signal.signal(s, handler)
        return False

    def raise_if_caught(self):
        if self.caught:
            _interrupt(self.caught, None)


def _say(line):
    print(line, file=sys.stderr, flush=True)


def _signal_group(proc, signum):
    """`signum` to the process group `proc` leads (start() made it a session's)."""
    try:
        os.killpg(proc.pid, signum)
    except ProcessLookupError:
        pass


def group_processes(pgid):
    """The pids of process group `pgid` that still run. Zombies do not count: an
    init that reaps no orphans (a container's) leaves them in the group."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry))
    return found


def _group_alive(proc):
    """Whether a process of the group `proc` leads still runs."""
    return bool(group_processes(proc.pid))


def stop_all(procs, grace_s=60, say=_say):
    """SIGINT to each run's process group, then SIGKILL to what of it has not
    ended `grace_s` later. A signal to the benchmark meanwhile does not cut the
    stop short; once it is done, that signal stops the benchmark."""
    with Held() as held:
        for proc in procs:
            _signal_group(proc, signal.SIGINT)
        deadline = time.monotonic() + grace_s
        for proc in procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            # Its group too: what the run started may outlive it (a test's stand-in).
            while _group_alive(proc) and time.monotonic() < deadline:
                time.sleep(0.1)
            if proc.poll() is None or _group_alive(proc):
                say(f"  process group {proc.pid} did not stop within {grace_s} s of SIGINT: killed")
                _signal_group(proc, signal.SIGKILL)
                proc.wait()
    held.raise_if_caught()


def stop(proc, grace_s=60):
    stop_all([proc], grace_s)


def start(cmd, **kwargs):
    """A run in a session of its own. A signal while it starts is held until the
    run exists, then stops it. The caller keeps it from then on (a signal before
    its `try` leaves it running: keep nothing between the two)."""
    with Held() as held:
        proc = subprocess.Popen(cmd, start_new_session=True, **kwargs)
    if held.caught:
        stop(proc)
        held.raise_if_caught()
    return proc


def run(cmd, **kwargs):
    """subprocess.run's result, the child stopped as above if the benchmark is."""
    proc = start(cmd, **kwargs)
    try:
        out, err = proc.communicate()
    except BaseException:
        stop(proc)
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def exit_stopped(bench, what="nothing is reported"):
    """The benchmark's last words once a signal stopped it, and its exit code."""
    print(f"{bench}: stopped by signal {STOPPED_BY['signal'] or signal.SIGINT}; {what}", file=sys.stderr, flush=True)
    sys.exit(exit_code())


def supervise(procs, cap_s, overrun_s, label, done=None, say=_say):
    """Waits for `procs` (each from start()), checking every second: once done()
    holds (the target is held, say), or `overrun_s` past `cap_s`, those still
    running are stopped as Ctrl-C stops them; a signal to the benchmark stops
    them too, and its KeyboardInterrupt goes on."""
    began = time.monotonic()
    try:
        while any(proc.poll() is None for proc in procs):
            time.sleep(1)
            if done is not None and done():
                break
            if time.monotonic() - began > cap_s + overrun_s:
                say(f"  {label} overran its cap by {overrun_s:.0f} s: stopped")
                break
    finally:
        stop_all(procs, say=say)
