"""bench/stopping.py on real processes: a benchmark stopped, or stopping a run,
leaves nothing of the run's process group behind, and a signal that comes while
a run is being stopped stops the benchmark once the stop is done.

Each case runs a small benchmark-like driver in a process of its own, signals
it as a terminal or a supervisor would, and reads what of its run survived
from the pid files the run's processes wrote."""
import os
import signal
import subprocess
import shutil
import sys
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))

# A run as `unittest` is to the kube benches: a parent that ends at SIGINT at
# once, leaving a child that stops itself on SIGINT, in a second, as the
# stand-in does (or, with "ignore", never).
CHILD = textwrap.dedent("""
    import os, signal, sys, time
    with open(os.path.join(sys.argv[1], "child.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.rename(os.path.join(sys.argv[1], "child.tmp"), os.path.join(sys.argv[1], "child.pid"))  # whole when seen
    if sys.argv[2] == "ignore":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGINT, lambda *_: (time.sleep(1), sys.exit(0)))
    while True:
        time.sleep(0.05)
""")
RUN = textwrap.dedent("""
    import os, subprocess, sys, time
    folder = sys.argv[1]
    subprocess.Popen([sys.executable, os.path.join(folder, "child.py"), folder, sys.argv[2]])
    while not os.path.exists(os.path.join(folder, "child.pid")):
        time.sleep(0.01)
    open(os.path.join(folder, "ready"), "w").close()
    time.sleep(600)
""")

# A benchmark: its run waited for ("wait"), or stopped once ready with a grace
# of that many seconds, saying so first ("stopping").
DRIVER = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    import stopping
    folder, mode, ignore = sys.argv[2], sys.argv[3], sys.argv[4]
    stopping.install()
    try:
        proc = stopping.start([sys.executable, os.path.join(folder, "run.py"), folder, ignore])
        if mode == "wait":
            stopping.supervise([proc], 600, 0, "run")
        else:
            while not os.path.exists(os.path.join(folder, "ready")):
                time.sleep(0.01)
            open(os.path.join(folder, "stopping"), "w").close()
            stopping.stop_all([proc], grace_s=float(mode))
        open(os.path.join(folder, "went-on"), "w").close()
    except KeyboardInterrupt:
        stopping.exit_stopped("driver")
""")


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class StoppingTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="stopping-test-")
        for name, text in (("child.py", CHILD), ("run.py", RUN)):
            with open(os.path.join(self.folder, name), "w") as f:
                f.write(text)
        with open(os.path.join(self.folder, "driver.py"), "w") as f:
            f.write(DRIVER)
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)

    def driver(self, mode, ignore="stop"):
        return subprocess.Popen([sys.executable, os.path.join(self.folder, "driver.py"), HERE, self.folder, mode,
                                 ignore], stderr=subprocess.PIPE, text=True)

    def wait_for(self, name):
        end = time.monotonic() + 30
        while not os.path.exists(os.path.join(self.folder, name)):
            self.assertLess(time.monotonic(), end, f"no {name} file")
            time.sleep(0.02)

    def wait_ready(self):
        self.wait_for("ready")
        with open(os.path.join(self.folder, "child.pid")) as f:
            return int(f.read())

    def stops_what_its_run_started(self, signum):
        d = self.driver("wait")
        child = self.wait_ready()
        d.send_signal(signum)
        _, err = d.communicate(timeout=60)
        self.assertEqual(d.returncode, 128 + signum, err)
        self.assertIn(f"driver: stopped by signal {signum}; nothing is reported", err)
        self.assertFalse(alive(child), "the run's child outlived it")

    def test_a_benchmark_stopped_by_sigterm_stops_what_its_run_started(self):
        self.stops_what_its_run_started(signal.SIGTERM)

    def test_a_benchmark_whose_terminal_closed_stops_what_its_run_started(self):
        # SIGHUP, as a closed terminal or a dropped ssh session sends: it had
        # killed the benchmark alone, its run training on in a session of its own.
        self.stops_what_its_run_started(signal.SIGHUP)

    def test_a_signal_while_a_run_is_being_stopped_stops_the_benchmark_after(self):
        d = self.driver("5")  # the run stopped by the benchmark's own choice
        self.wait_for("stopping")
        d.send_signal(signal.SIGINT)  # within the child's second of stopping
        _, err = d.communicate(timeout=60)
        self.assertEqual(d.returncode, 130, err)
        self.assertFalse(os.path.exists(os.path.join(self.folder, "went-on")), "it went on to its next run")

    def test_what_of_the_run_ignores_sigint_is_killed_after_the_grace(self):
        d = self.driver("0.5", ignore="ignore")
        child = self.wait_ready()
        _, err = d.communicate(timeout=60)
        self.assertEqual(d.returncode, 0, err)
        self.assertIn("did not stop within 0.5 s of SIGINT: killed", err)
        self.assertFalse(alive(child))


if __name__ == "__main__":
    unittest.main()
