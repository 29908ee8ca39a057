"""How a benchmark and the runs it starts stop together.

Each run is started in a session of its own, so that a Ctrl-C at the terminal
reaches the benchmark alone; the benchmark then stops the run as Ctrl-C stops
`edgetrain run` (SIGINT: it stops its agents and removes what it made), and
SIGKILLs it only if it has not ended a minute later. SIGTERM to the benchmark
is taken as SIGINT is. Before, a SIGTERM left the run training on with nothing
said, and a Ctrl-C had Python SIGKILL it a quarter of a second later, leaving
its run and TLS folders behind.
"""
import signal
import subprocess

# The signal that stopped the benchmark, once one has: its exit code is 128 + it.
STOPPED_BY = {"signal": None}


def _interrupt(signum, _frame):
    STOPPED_BY["signal"] = signum
    raise KeyboardInterrupt


def install():
    """SIGINT and SIGTERM raise KeyboardInterrupt in the benchmark's main thread."""
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)


def exit_code():
    return 128 + (STOPPED_BY["signal"] or signal.SIGINT)


def stop(proc, grace_s=60):
    """SIGINT to a run still going, then SIGKILL to one not ended `grace_s` later."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run(cmd, **kwargs):
    """subprocess.run's result, the child stopped as above if the benchmark is."""
    proc = subprocess.Popen(cmd, start_new_session=True, **kwargs)
    try:
        out, err = proc.communicate()
    except BaseException:
        # Signals stay deferred while it stops: a second Ctrl-C does not cut it short.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN), signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            stop(proc)
        finally:
            signal.signal(signal.SIGINT, previous[0])
            signal.signal(signal.SIGTERM, previous[1])
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
