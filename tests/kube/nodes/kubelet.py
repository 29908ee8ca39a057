"""EMULATION of one node's kubelet: it registers its Node, renews its Lease in
kube-node-lease every heartbeat (and sets Ready again after an outage), and runs the
pods bound to its node (spec.nodeName) as local processes, one PodWorker each.

Faults act here: a partitioned kubelet neither heartbeats nor hears from the API server
while its pods run on; a killed one loses every process; a revived one registers again
and takes up the pods still bound to it, whose lost containers restart as restartPolicy
says; a node whose compute slows down or whose link is rescaled publishes its new
edgetrain.dev/ measurements (as whatever measures nodes on a real site would) - and
nothing more: its running processes go on at their own speed."""

import math
import os
import shutil
import threading

from apiserver.errors import ApiError

from . import pod_files
from .client import Loop, now_micro, record_event
from .cluster_names import site_names
from .node_object import (COMPUTE_SCORE, LINK_MBPS, condition, measurements, node_object,
                          ready_condition, set_condition)
from .pod_worker import PodWorker

LEASE_NAMESPACE = "kube-node-lease"


class Kubelet(Loop):
    watches = ("pods", "configmaps", "secrets")

    def __init__(self, cluster, node):
        if not cluster.dns_address:  # names go into pods' /etc/hosts: Services matter
            self.watches = Kubelet.watches + ("services", "endpoints")
        super().__init__(cluster.client, cluster.timings.heartbeat / 4, f"kubelet-{node['name']}")
        self.cluster, self.profile = cluster, node
        self.node_name = node["name"]
        self.timings = cluster.timings
        self.network = cluster.network
        self.net = cluster.network.nodes[self.node_name]
        self.node_address = self.net.address
        self.images = cluster.images
        self.authn = cluster.authn
        self.api_server = cluster.api_server_for_pods
        self.root_mode = cluster.root_mode
        self.netns_path = cluster.network.namespace_path(self.node_name) \
            if cluster.network.kind == "netns" else None
        self.folder = os.path.join(cluster.folder, "nodes", self.node_name)
        os.makedirs(self.folder, exist_ok=True)
        self.slowdown = node["compute"]["slowdown"]  # now: a fault may change it
        self.link_factor = 1.0   # a link fault's multiplier of the trace (0: cut)
        self.alive = True        # the kubelet process runs
        self.connected = True    # it reaches the API server
        self.workers = {}        # pod uid -> PodWorker
        self.lock = threading.Lock()
        self.next_heartbeat = 0.0
        self.next_volume_sync = 0.0

    # -- Node and Lease ----------------------------------------------------------------------

    def register(self):
        try:
            self.client.create("nodes", "", node_object(self._profile_now(), self.net,
                                                        self.link_factor))
        except ApiError as e:
            if e.code != 409:
                raise

    def heartbeat(self):
        lease = self.client.get("leases", LEASE_NAMESPACE, self.node_name)
        now = now_micro()
        duration = max(1, math.ceil(self.timings.heartbeat * 4))
        if lease is None:
            node = self.client.get("nodes", "", self.node_name)
            owner = [{"apiVersion": "v1", "kind": "Node", "name": self.node_name,
                      "uid": node["metadata"]["uid"]}] if node else []
            self.client.create("leases", LEASE_NAMESPACE, {
                "metadata": {"name": self.node_name, "namespace": LEASE_NAMESPACE,
                             "ownerReferences": owner},
                "spec": {"holderIdentity": self.node_name, "leaseDurationSeconds": duration,
                         "renewTime": now}})
        else:
            def renew(lease):
                lease["spec"]["renewTime"] = now
            self.client.mutate("leases", LEASE_NAMESPACE, self.node_name, renew)

        def ready(node):
            c = condition(node, "Ready")
            if c is not None and c.get("status") == "True":
                return False
            set_condition(node, ready_condition(True))
        self.client.mutate("nodes", "", self.node_name, ready, "status")
        self._publish_measurements()

    def _profile_now(self):
        return dict(self.profile, compute=dict(self.profile["compute"], slowdown=self.slowdown))

    def _publish_measurements(self):
        """The Node's edgetrain.dev/ measurements as they are now, with an event for each
        that changed: what the operator places by and plans agents' slowdown from."""
        now = measurements(self._profile_now(), self.link_factor)
        before = {}

        def publish(node):
            notes = node["metadata"].setdefault("annotations", {})
            before.clear()
            for key, value in now.items():
                if notes.get(key) != value:
                    before[key] = notes.get(key)
                    if value is None:
                        del notes[key]
                    else:
                        notes[key] = value
            if not before:
                return False
        node = self.client.mutate("nodes", "", self.node_name, publish)
        if node is None:
            return
        if COMPUTE_SCORE in before:
            record_event(self.client, node, "Normal", "ComputeSlowdownChanged",
                         f"{COMPUTE_SCORE} {before[COMPUTE_SCORE]} -> {now[COMPUTE_SCORE]} "
                         f"(compute slowdown {self.slowdown:g})", "node-emulator")
        if LINK_MBPS in before:
            record_event(self.client, node, "Normal", "LinkRateChanged",
                         f"{LINK_MBPS} {before[LINK_MBPS] or 'none'} -> "
                         f"{now[LINK_MBPS] or 'none'} (link scale {self.link_factor:g})",
                         "node-emulator")

    # -- the loop ------------------------------------------------------------------------------

    def tick(self):
        import time
        if self.alive and self.connected and time.monotonic() >= self.next_heartbeat:
            self.next_heartbeat = time.monotonic() + self.timings.heartbeat
            self.heartbeat()
        if self.alive and self.connected and time.monotonic() >= self.next_volume_sync:
            self.next_volume_sync = time.monotonic() + self.timings.resync * 10
            self._refresh_volumes()

    def _refresh_volumes(self):
        """A kubelet's periodic sync of ConfigMap and Secret volumes: what a change's
        event did not bring (a read of the source that failed, under load) arrives at
        the next sync, as on a real node (there about a minute; here resync x 10)."""
        with self.lock:
            workers = list(self.workers.values())
        for w in workers:
            if w.volumes is None:
                continue
            try:
                w.volumes.refresh(w.pod)
            except Exception:
                pass  # a source missing now: the next sync tries again

    def resync(self):
        if not (self.alive and self.connected):
            return
        pods = self.client.list("pods", field_selector=f"spec.nodeName={self.node_name}")
        seen = set()
        for pod in pods:
            seen.add(pod["metadata"]["uid"])
            self.sync(pod)
        with self.lock:
            gone = [w for uid, w in self.workers.items() if uid not in seen]
        for w in gone:  # deleted while we were away: stop at once
            w.kill()

    def on_event(self, ev):
        if not (self.alive and self.connected):
            return
        if ev.key == ("", "pods"):
            if (ev.obj.get("spec") or {}).get("nodeName") != self.node_name:
                return
            if ev.type == "DELETED":
                with self.lock:
                    w = self.workers.get(ev.obj["metadata"]["uid"])
                if w is not None:
                    w.kill()  # force-deleted: nothing left to report to
                else:
                    self._remove_folder(ev.obj)
                return
            self.sync(ev.obj)
            return
        if ev.key in (("", "services"), ("", "endpoints")):
            self._refresh_hosts()
            return
        kind = "configmaps" if ev.key == ("", "configmaps") else "secrets"
        md = ev.obj["metadata"]
        with self.lock:
            workers = list(self.workers.values())
        for w in workers:
            if w.volumes is not None and w.ns == md.get("namespace") and \
                    (kind, md["name"]) in w.volumes.sources():
                try:
                    w.volumes.refresh(w.pod)
                except Exception:
                    pass  # a missing optional source now: the next change fixes it

    def sync(self, pod):
        uid = pod["metadata"]["uid"]
        with self.lock:
            w = self.workers.get(uid)
            if w is None:
                terminal = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
                if terminal and not pod["metadata"].get("deletionTimestamp"):
                    return
                w = PodWorker(self, pod)
                self.workers[uid] = w
                w.start()
                return
        w.update(pod)

    def worker_done(self, worker):
        with self.lock:
            if self.workers.get(worker.uid) is worker:
                del self.workers[worker.uid]
        if worker.deleting and not worker.killed:
            self._remove_folder(worker.pod)
        elif self.alive and self.connected and not worker.killed:
            # A terminated pod deleted later gets a worker again only for its final delete.
            current = self.client.get("pods", worker.ns, worker.pod_name)
            if current is not None and current["metadata"]["uid"] == worker.uid and \
                    current["metadata"].get("deletionTimestamp"):
                self.sync(current)

    def _remove_folder(self, pod):
        md = pod["metadata"]
        shutil.rmtree(os.path.join(self.folder, f"{md['namespace']}_{md['name']}_{md['uid']}"),
                      ignore_errors=True)

    def node_labels(self):
        """Its Node's labels as the API has them (a person may have added some)."""
        node = self.client.get("nodes", "", self.node_name)
        return (node or node_object(self._profile_now()))["metadata"].get("labels") or {}

    def worker_for(self, uid):
        with self.lock:
            return self.workers.get(uid)

    # -- what pods see ---------------------------------------------------------------------------

    def event(self, pod, etype, reason, message):
        if self.alive and self.connected:
            record_event(self.client, pod, etype, reason, message, "kubelet")

    def cluster_names(self):
        """The Service names pods' /etc/hosts must carry: None when a DNS answers them."""
        return None if self.cluster.dns_address else site_names(self.client)

    def pod_files(self, pod, ip, folder):
        """/etc/hosts, /etc/resolv.conf and /etc/hostname as the kubelet writes them."""
        return pod_files.write_all(folder, pod, ip, self.cluster.dns_address,
                                   self.cluster_names())

    def _refresh_hosts(self):
        """Services' names changed: every running pod's /etc/hosts says so (no DNS)."""
        names = self.cluster_names()
        with self.lock:
            workers = list(self.workers.values())
        for w in workers:
            path = os.path.join(w.folder, "hosts")
            if w.ip and os.path.exists(path):
                pod_files.write_in_place(path, pod_files.hosts(w.pod, w.ip, names))

    # -- faults -----------------------------------------------------------------------------------

    def partition(self):
        """Cut from the API server: no heartbeats, no news; the pods run on."""
        self.connected = False

    def kill(self):
        """The node dies: every process of every pod, at once."""
        self.alive = self.connected = False
        with self.lock:
            workers = list(self.workers.values())
        for w in workers:
            w.kill()
        for w in workers:
            w.join(10)

    def slow_down(self, slowdown):
        """Its compute now takes `slowdown` times as long as this machine's: published at
        once, or when it is back in touch with the API server."""
        self.slowdown = slowdown
        if self.alive and self.connected:
            self._publish_measurements()

    def rescale_link(self, factor):
        """Its link now carries its trace times `factor` (the network has made it so): its
        measured rate is published at once, or when it is back in touch."""
        self.link_factor = factor
        if self.alive and self.connected:
            self._publish_measurements()

    def revive(self):
        """Back: registers again if its Node went, heartbeats, and takes up its pods."""
        self.alive = self.connected = True
        self.register()
        self.next_heartbeat = 0.0
        self.resync()
        self.store.wake_all()

    def stop(self):
        super().stop()
        with self.lock:
            workers = list(self.workers.values())
        for w in workers:
            w.kill()
        for w in workers:
            w.join(10)
