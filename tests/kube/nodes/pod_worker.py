"""One pod on one node, as its kubelet's pod worker runs it: set up (an address, the
volumes), start the containers, restart them under restartPolicy with back-off, probe
readiness, write the status a kubelet writes, and, when the pod is deleted, stop it:
SIGTERM, the grace period, SIGKILL; then the final delete that lets the object go."""

import os
import shutil
import signal
import threading
import time

from apiserver.errors import ApiError

from .client import now_rfc3339
from .container import ConfigError, shim_spec
from .containers import Container
from .images import PullError
from .volumes import PodVolumes, VolumeError

TICK = 0.05  # how often the worker looks at its processes


class PodWorker(threading.Thread):
    def __init__(self, kubelet, pod):
        md = pod["metadata"]
        super().__init__(name=f"pod-{md['namespace']}/{md['name']}", daemon=True)
        self.kubelet, self.client, self.timings = kubelet, kubelet.client, kubelet.timings
        self.pod, self.uid = pod, md["uid"]
        self.ns, self.pod_name = md["namespace"], md["name"]
        self.folder = os.path.join(kubelet.folder, f"{self.ns}_{self.pod_name}_{self.uid}")
        self.wake = threading.Event()
        self.pod_lock = threading.Lock()
        self.killed = False       # the node died: processes go at once, nothing is written
        self.ip = None
        self.started_at = now_rfc3339()
        self.volumes = None
        self.images = {}
        self.setup_error = None   # (reason, message) while the pod cannot start
        self.next_setup = 0.0
        self.setup_backoff = 0.0
        prior = {s["name"]: s for s in (pod.get("status") or {}).get("containerStatuses") or []}
        self.containers = []
        for c in (pod.get("spec") or {}).get("containers") or []:
            container = Container(c, self.folder, 0, self.timings)
            if prior.get(c["name"]):
                # A kubelet that starts again (its node killed and revived) finds what its
                # containers did before; restartPolicy decides what happens next.
                container.resume(prior[c["name"]])
            self.containers.append(container)
        self.terminal = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")

    # -- from the kubelet ------------------------------------------------------------------------

    def update(self, pod):
        self._newer(pod)
        self.wake.set()

    def _newer(self, pod):
        """Keeps the newest version seen: events and our own writes race."""
        rv = lambda p: int(p["metadata"].get("resourceVersion") or 0)  # noqa: E731
        with self.pod_lock:
            if pod is not None and pod["metadata"].get("uid") == self.uid and rv(pod) >= rv(self.pod):
                self.pod = pod

    def kill(self):
        """The node died: every process now, and nothing more written."""
        self.killed = True
        for c in self.containers:
            c.signal(signal.SIGKILL)
        self.wake.set()

    def container(self, name):
        for c in self.containers:
            if name in (None, c.name):
                return c
        return None

    @property
    def deleting(self):
        return bool(self.pod["metadata"].get("deletionTimestamp"))

    # -- the loop ---------------------------------------------------------------------------

    def run(self):
        try:
            if not self.terminal:
                self._live()
        finally:
            for c in self.containers:
                c.signal(signal.SIGKILL)
            if self.ip:
                self.kubelet.network.release(self.kubelet.node_name, self.ip)
            shutil.rmtree(os.path.join(self.folder, "rootfs"), ignore_errors=True)
            shutil.rmtree(os.path.join(self.folder, "layers"), ignore_errors=True)
            self.kubelet.worker_done(self)

    def _live(self):
        os.makedirs(self.folder, exist_ok=True)
        spec = self.pod.get("spec") or {}
        if not self.deleting:
            # A pod deleted while its node was away is found Terminating when the node
            # comes back: a kubelet starts nothing of it and only confirms its deletion.
            # Its status written Pending, with a new IP, read as the pod back, and the
            # operator counted a second recovery (a new user's trial).
            self.ip = self.kubelet.network.allocate(self.kubelet.node_name)
            self._write_status()
        while not self.killed and not self.deleting:
            now = time.monotonic()
            if self.volumes is None or self.setup_error:
                if now >= self.next_setup:
                    self._set_up()
            else:
                self._drive(spec, now)
                if self._finished(spec):
                    break
            self._write_status()
            self.wake.wait(TICK)
            self.wake.clear()
        if self.killed:
            return
        if self.deleting:
            self._stop_containers()
        self._write_status(final=True)
        if self.deleting:
            # What lets the object go: the kubelet's delete with no grace left.
            if self.kubelet.connected:
                self.client.delete("pods", self.ns, self.pod_name, grace_seconds=0, uid=self.uid)

    def _set_up(self):
        try:
            for c in self.containers:
                self.images[c.name] = self.kubelet.images.resolve(c.spec.get("image"))
            self.volumes = PodVolumes(self.client, self.pod, self.folder,
                                      self.kubelet.authn,
                                      self.kubelet.node_labels())
            self.volume_paths = self.volumes.set_up()
            self.setup_error = None
        except PullError as e:
            self._setup_failed("ErrImagePull", str(e), "Failed")
        except VolumeError as e:
            self.volumes = None
            self._setup_failed("ContainerCreating", str(e), "FailedMount")
        except OSError as e:
            # A volume's folder could not be written (a full disk): the pod waits and
            # tries again, as it would for a missing source, rather than losing its
            # worker and staying in ContainerCreating for good.
            self.volumes = None
            self._setup_failed("ContainerCreating", f"setting up the pod's volumes: {e}", "FailedMount")

    def _setup_failed(self, reason, message, event_reason):
        if self.setup_error is None or self.setup_error[1] != message:
            self.kubelet.event(self.pod, "Warning", event_reason, message)
        self.setup_backoff = min(self.timings.backoff_max, self.setup_backoff * 2) \
            if self.setup_backoff else self.timings.backoff_base
        self.next_setup = time.monotonic() + self.setup_backoff
        # After the first failed pull, the wait between pulls reads ImagePullBackOff.
        if reason == "ErrImagePull" and self.setup_error and \
                self.setup_error[0] in ("ErrImagePull", "ImagePullBackOff"):
            reason = "ImagePullBackOff" if self.setup_error[0] == "ErrImagePull" else "ErrImagePull"
        self.setup_error = (reason, message)
        for c in self.containers:
            c.state = {"waiting": {"reason": reason, "message": message}}

    def _drive(self, spec, now):
        policy = spec.get("restartPolicy", "Always")
        for c in self.containers:
            if c.reap() or c.take_lost_exit():
                code = c.state["terminated"]["exitCode"]
                restart = policy == "Always" or (policy == "OnFailure" and code != 0)
                if restart:
                    c.schedule_restart()
                    self.kubelet.event(self.pod, "Warning", "BackOff",
                                       f"Back-off restarting failed container {c.name}")
                else:
                    c.done = True
            if c.running:
                grace = spec.get("terminationGracePeriodSeconds", 30)
                for etype, reason, message in c.probe(self.ip, now, grace):
                    self.kubelet.event(self.pod, etype, reason, message)
                continue
            if c.done or now < c.next_start:
                continue
            self._start(c)

    def _start(self, c):
        try:
            s = shim_spec(self.client, self._pod_with_ip(), c.spec, self.images[c.name],
                          self.volume_paths, self.kubelet.pod_files(self.pod, self.ip, self.folder),
                          self.kubelet.api_server, self.kubelet.netns_path, self.kubelet.root_mode,
                          self.folder, os.getpid())
        except ConfigError as e:
            c.state = {"waiting": {"reason": "CreateContainerConfigError", "message": str(e)}}
            c.next_start = time.monotonic() + self.timings.backoff_base
            return
        error = c.start(s, os.getpid())
        if error:
            self.kubelet.event(self.pod, "Warning", "Failed", f"Error: {error}")
            policy = (self.pod.get("spec") or {}).get("restartPolicy", "Always")
            if policy == "Never":
                c.done = True
            else:
                c.schedule_restart()
        else:
            self.kubelet.event(self.pod, "Normal", "Started", f"Started container {c.name}")

    def _finished(self, spec):
        return all(c.done for c in self.containers)

    # Not `_stop`: this is a threading.Thread, whose own _stop() join() and is_alive() call.
    def _stop_containers(self):
        """SIGTERM, then SIGKILL once the grace period (the deletion's) is over."""
        grace = self.pod["metadata"].get("deletionGracePeriodSeconds")
        if grace is None:
            grace = (self.pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        running = [c for c in self.containers if c.running]
        if running:
            self.kubelet.event(self.pod, "Normal", "Killing",
                               f"Stopping container {', '.join(c.name for c in running)}")
        for c in running:
            c.signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while any(c.running for c in self.containers) and time.monotonic() < deadline \
                and not self.killed:
            time.sleep(TICK)
        for c in self.containers:
            c.signal(signal.SIGKILL)
        for c in self.containers:
            if c.proc is not None:
                c.proc.wait()
                c.reap()
            c.done = True

    # -- status ---------------------------------------------------------------------------

    def _pod_with_ip(self):
        pod = dict(self.pod)
        status = dict(pod.get("status") or {})
        status.update({"podIP": self.ip, "podIPs": [{"ip": self.ip}],
                       "hostIP": self.kubelet.node_address, "hostIPs": [{"ip": self.kubelet.node_address}]})
        pod["status"] = status
        return pod

    def phase(self, final=False):
        started = all(c.runs or c.done for c in self.containers)
        if not started and not final:
            return "Pending"
        if all(c.done for c in self.containers):
            codes = [(c.state.get("terminated") or {}).get("exitCode", 1) for c in self.containers]
            return "Succeeded" if all(code == 0 for code in codes) else "Failed"
        return "Running"

    def status(self, final=False):
        now = now_rfc3339()
        phase = self.phase(final)
        ready = all(c.ready for c in self.containers) and phase == "Running"
        old = {c["type"]: c for c in (self.pod.get("status") or {}).get("conditions") or []}

        def cond(ctype, ok, reason=None):
            status = "True" if ok else "False"
            prev = old.get(ctype)
            c = {"type": ctype, "status": status, "lastProbeTime": None,
                 "lastTransitionTime": prev["lastTransitionTime"]
                 if prev and prev.get("status") == status else now}
            if reason and not ok:
                c["reason"] = reason
            return c
        waiting_reason = "ContainersNotReady"
        s = {
            "phase": phase,
            "conditions": [cond("PodReadyToStartContainers", self.ip is not None),
                           cond("Initialized", True),
                           cond("Ready", ready, waiting_reason),
                           cond("ContainersReady", ready, waiting_reason),
                           cond("PodScheduled", True)],
            "hostIP": self.kubelet.node_address,
            "hostIPs": [{"ip": self.kubelet.node_address}],
            "startTime": (self.pod.get("status") or {}).get("startTime") or self.started_at,
            "qosClass": (self.pod.get("status") or {}).get("qosClass", "BestEffort"),
            "containerStatuses": [c.status(c.spec.get("image")) for c in self.containers],
        }
        if self.ip and not final:
            s["podIP"], s["podIPs"] = self.ip, [{"ip": self.ip}]
        elif (self.pod.get("status") or {}).get("podIP"):
            s["podIP"] = self.pod["status"]["podIP"]
            s["podIPs"] = self.pod["status"].get("podIPs")
        return s

    def _write_status(self, final=False):
        if self.killed or not self.kubelet.connected:
            return  # a dead or partitioned kubelet reports nothing
        new = self.status(final)
        if self.pod.get("status") == new:
            return

        def change(pod):
            if pod["metadata"].get("uid") != self.uid:
                return False  # another pod of the same name
            merged = dict(pod.get("status") or {})
            merged.update(new)
            for k in [k for k in ("podIP", "podIPs") if k not in new]:
                merged.pop(k, None)
            if merged == pod.get("status"):
                return False
            pod["status"] = merged
        try:
            written = self.client.mutate("pods", self.ns, self.pod_name, change, "status")
        except ApiError:
            return
        self._newer(written if written is not None else
                    self.client.get("pods", self.ns, self.pod_name))

