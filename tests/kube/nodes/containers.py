"""One container of a pod as its kubelet tracks it: the process the runtime started, its
state as containerStatuses reports it (waiting, running, terminated, and the last one),
its restarts with back-off, its readiness, and its log files."""

import json
import os
import signal
import subprocess
import sys
import time

from .client import now_rfc3339
from .probes import Prober

TERMINATION_MESSAGE_PATH = "/dev/termination-log"  # the API's default
TERMINATION_MESSAGE_LIMIT = 4096

SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "container_shim.py")


class Container:
    def __init__(self, spec, folder, restart_count, timings):
        self.spec, self.name = spec, spec["name"]
        self.folder = folder
        self.restart_count = restart_count
        self.timings = timings
        self.proc = None
        self.state = {"waiting": {"reason": "ContainerCreating"}}
        self.last_state = {}
        self.started_at = None   # monotonic, of the running process
        self.probes = {}         # kind -> Prober, of the running process
        self.kill_at = None      # monotonic: SIGKILL then, after a failed probe's SIGTERM
        self.backoff = 0.0       # the current back-off delay
        self.next_start = 0.0    # monotonic: not before this
        self.done = False        # will not run again (restartPolicy)
        self.runs = 0            # processes started for it (one for a life before this kubelet's)
        self.lost_exit = False   # it died with its node: an exit restartPolicy has not judged

    def resume(self, prior):
        """Takes up the container as its containerStatus left it when the node went down.
        One that was running died with the node: a runtime reports such a container of
        the node's previous life as exited with code 255, reason Unknown, and the kubelet
        restarts it or not by restartPolicy, as after any exit (Never: the pod fails)."""
        self.restart_count = prior.get("restartCount", 0)
        state, self.last_state = prior.get("state") or {}, prior.get("lastState") or {}
        if "running" in state:
            self.runs = 1
            self._terminated(255, "Unknown", state["running"].get("startedAt"))
            self.lost_exit = True
        elif "terminated" in state:
            self.runs = 1
            self.state = state
            self.lost_exit = True
        elif self.last_state:
            self.runs = 1  # waiting to start again: the next start is a restart

    def take_lost_exit(self):
        """True once for an exit of the node's previous life, for restartPolicy to judge."""
        lost, self.lost_exit = self.lost_exit, False
        return lost

    # -- logs -----------------------------------------------------------------------------

    def log_path(self, restart=None):
        n = self.restart_count if restart is None else restart
        return os.path.join(self.folder, "logs", self.name, f"{n}.log")

    # -- the termination message ------------------------------------------------------------

    def termination_path(self):
        return os.path.join(self.folder, "termination", self.name, str(self.restart_count))

    def termination_mount(self):
        """The file the kubelet binds at terminationMessagePath, made empty for this run.
        None under /dev: the emulator's /dev is the host's (bound, not a tmpfs of the
        pod's), so nothing is put there; a pod that wants a message names another path."""
        target = self.spec.get("terminationMessagePath") or TERMINATION_MESSAGE_PATH
        if target == "/dev" or target.startswith("/dev/"):
            return None
        path = self.termination_path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w"):
            pass
        os.chmod(path, 0o666)  # the container's user, whoever it is, writes it
        return {"source": path, "target": target, "readOnly": False}

    def termination_message(self, code):
        """As the kubelet reads it: the file's first 4096 bytes; with
        FallbackToLogsOnError and a failure, the log's last 80 lines (2048 bytes) when
        the file is empty."""
        try:
            with open(self.termination_path(), "rb") as f:
                message = f.read(TERMINATION_MESSAGE_LIMIT)
        except OSError:
            message = b""
        if not message and code != 0 and \
                self.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError":
            try:
                with open(self.log_path(), "rb") as f:
                    lines = f.read().splitlines()[-80:]
                message = b"\n".join(lines)[-2048:]
            except OSError:
                message = b""
        return message.decode(errors="replace")

    # -- running ----------------------------------------------------------------------------

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self, shim_spec, kubelet_pid):
        """Starts the container through the shim; returns None, or the start error."""
        if self.runs:
            self.restart_count += 1
        self.runs += 1
        os.makedirs(os.path.dirname(self.log_path()), exist_ok=True)
        termination = self.termination_mount()
        if termination:
            shim_spec["mounts"].append(termination)
        spec_path = os.path.join(self.folder, f"{self.name}.spec.json")
        with open(spec_path, "w") as f:
            json.dump(shim_spec, f)
        for d in ("rootfs", "layers"):
            os.makedirs(shim_spec[d], exist_ok=True)
        read_end, write_end = os.pipe()
        log = open(self.log_path(), "ab")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-S", SHIM, spec_path, str(write_end)], stdin=subprocess.DEVNULL,
                stdout=log, stderr=log, pass_fds=[write_end], start_new_session=True)
        finally:
            log.close()
            os.close(write_end)
        error = b""
        with os.fdopen(read_end, "rb") as r:  # EOF once the program is exec'd
            error = r.read()
        self.started_at = time.monotonic()
        started = now_rfc3339()
        if error:
            self.proc.wait()
            self.proc = None
            self._terminated(128, "StartError", started, error.decode(errors="replace"))
            return error.decode(errors="replace")
        self.state = {"running": {"startedAt": started}}
        self.probes = {kind: Prober(self.spec[f"{kind}Probe"], self.spec, self.started_at,
                                    initially=(kind == "liveness"))
                       for kind in ("startup", "liveness", "readiness")
                       if self.spec.get(f"{kind}Probe")}
        self.kill_at = None
        return None

    def _terminated(self, code, reason, started, message=None):
        t = {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now_rfc3339(),
             "containerID": self.container_id}
        if message:
            t["message"] = message
        self.state = {"terminated": t}

    @property
    def container_id(self):
        return f"emulated://{self.name}-{self.restart_count}"

    def reap(self):
        """Notes an exit; returns True when the process has just ended."""
        if self.proc is None or self.proc.poll() is None:
            return False
        code = self.proc.returncode
        code = 128 - code if code < 0 else code  # killed outright: 128+N, as runtimes say
        started = (self.state.get("running") or {}).get("startedAt")
        self._terminated(code, "Completed" if code == 0 else "Error", started,
                         self.termination_message(code))
        self.proc = None
        ran = time.monotonic() - (self.started_at or time.monotonic())
        if ran > self.timings.backoff_max:  # it ran well: the back-off starts over
            self.backoff = 0.0
        return True

    def probe(self, pod_ip, now, grace):
        """Runs the probes that are due, in the kubelet's order; a startup or liveness probe
        that has failed for good stops the process (SIGTERM, SIGKILL after `grace`, or the
        probe's own terminationGracePeriodSeconds), and restartPolicy decides the rest.
        Returns the events to record: (type, reason, message)."""
        if self.kill_at is not None:
            if now >= self.kill_at:
                self.signal(signal.SIGKILL)
            return []
        events = []
        for kind in ("startup", "liveness", "readiness"):
            prober = self.probes.get(kind)
            if prober is None:
                continue
            if kind == "startup" and prober.ready:
                continue
            if prober.due(now) and not prober.run(pod_ip, now):
                events.append(("Warning", "Unhealthy",
                               f"{kind.capitalize()} probe failed: {prober.message}"))
                if kind != "readiness" and prober.failures >= \
                        prober.spec.get("failureThreshold", 3):
                    events.append(("Normal", "Killing", f"Container {self.name} failed {kind} "
                                   f"probe, will be restarted"))
                    self.signal(signal.SIGTERM)
                    grace = prober.spec.get("terminationGracePeriodSeconds", grace)
                    self.kill_at = now + grace
                    return events
            if kind == "startup" and not prober.ready:
                return events  # nothing else runs before the container has started
        return events

    def schedule_restart(self):
        """After an exit: the next start waits out the back-off, which doubles."""
        self.backoff = min(self.timings.backoff_max, self.backoff * 2) if self.backoff \
            else self.timings.backoff_base
        self.next_start = time.monotonic() + self.backoff
        self.last_state = self.state
        self.state = {"waiting": {"reason": "CrashLoopBackOff", "message":
                                  f"back-off {self.backoff:g}s restarting failed container="
                                  f"{self.name}"}}

    def signal(self, signo):
        if self.running:
            try:
                if signo == signal.SIGKILL:
                    os.killpg(self.proc.pid, signo)  # the shim and PID 1: the namespace dies
                else:
                    self.proc.send_signal(signo)     # the shim forwards it to PID 1
            except ProcessLookupError:
                pass

    # -- status -----------------------------------------------------------------------------

    @property
    def started(self):
        return self.running and ("startup" not in self.probes or self.probes["startup"].ready)

    @property
    def ready(self):
        return self.started and ("readiness" not in self.probes or
                                 self.probes["readiness"].ready)

    def status(self, image):
        s = {"name": self.name, "image": image, "imageID": f"emulated://{image}",
             "ready": self.ready, "started": self.started, "restartCount": self.restart_count,
             "state": self.state}
        if "waiting" not in self.state:
            s["containerID"] = self.container_id
        if self.last_state:
            s["lastState"] = self.last_state
        return s
