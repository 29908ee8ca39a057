"""The emulated site as a whole (`standin --nodes PROFILE.yaml`): the pod network, one
kubelet per node of the profile (nodes only on paper are registered and left alone), the
emulated controllers, and the faults people and tests inject. Started after the API
server, stopped before it; stopping ends every process and link it made."""

import os
import shutil
import sys

from .client import LocalClient
from .deployment_controller import DeploymentController
from .dns import ClusterDNS
from .endpoints import EndpointsController
from .faults import Faults
from .images import ImageTable
from .kubelet import Kubelet
from .local_path import LocalPathProvisioner, storage_classes
from .network import LoopbackNetwork, NetnsNetwork
from .node_lifecycle import NodeLifecycleController
from .node_object import node_object
from .persistent_volumes import PersistentVolumeController
from .profile import load_profile
from .replicaset_controller import ReplicaSetController
from .scheduler import Scheduler
from .service_accounts import ServiceAccountController
from .storage_protection import StorageProtectionController

KUBE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class EmulatedCluster:
    def __init__(self, api, options, timings, folder, authn):
        self.api, self.client = api, LocalClient(api)
        self.options, self.timings = options, timings
        self.folder = folder
        self.profile = load_profile(options.nodes)
        self.nodes = self.profile["spec"]["nodes"]
        self.root_mode = os.geteuid() == 0
        running = [n["name"] for n in self.nodes if not n["registeredOnly"]]
        if options.pod_network == "netns":
            self.network = NetnsNetwork(options.edgetrain, options.nodes)
        else:
            self.network = LoopbackNetwork()
        self.network.start(running)
        self.images = ImageTable(options.images, options.build_dir, options.data_dir)
        self.authn = authn  # issues the service-account tokens of pods' projected volumes
        self.api_server_for_pods = None  # (host, port), set by main once it listens
        self.kubelets = {}
        self.controllers = []
        self.faults = Faults(self)

    dns = None

    @property
    def dns_address(self):
        return self.dns.address if self.dns else None

    def start(self, api_server_for_pods, ca_pem):
        self.api_server_for_pods = api_server_for_pods
        self.controllers = [ServiceAccountController(self.client, self.timings, ca_pem),
                            EndpointsController(self.client, self.timings),
                            NodeLifecycleController(self.client, self.timings,
                                                    [n["name"] for n in self.nodes
                                                     if n["registeredOnly"]]),
                            Scheduler(self.client, self.timings),
                            DeploymentController(self.client, self.timings),
                            ReplicaSetController(self.client, self.timings),
                            PersistentVolumeController(self.client, self.timings),
                            StorageProtectionController(self.client, self.timings),
                            LocalPathProvisioner(self.client, self.timings,
                                                 "rancher.io/local-path",
                                                 os.path.join(self.folder, "disks"), True),
                            LocalPathProvisioner(self.client, self.timings,
                                                 "cluster.local/shared-path",
                                                 os.path.join(self.folder, "shared"), False)]
        if self.network.dns_address and self.root_mode:
            self.dns = ClusterDNS(self.client, self.network.dns_address)
            self.dns.start()
        self._publish_api_server(api_server_for_pods)
        for storage_class in storage_classes():
            self.client.create("storageclasses", "", storage_class)
        for n in self.nodes:
            if n["registeredOnly"]:
                self.client.create("nodes", "", node_object(n))
                continue
            k = Kubelet(self, n)
            k.register()
            k.heartbeat()
            self.kubelets[n["name"]] = k
        for k in self.kubelets.values():
            k.start()
        for c in self.controllers:
            c.start()

    def _publish_api_server(self, address):
        """The `kubernetes` Service of the default namespace, whose Endpoints name the API
        server's address as pods reach it (KUBERNETES_SERVICE_HOST is that address, not
        the cluster IP: no kube-proxy here routes cluster IPs)."""
        host, port = address
        if self.client.get("services", "default", "kubernetes") is None:
            self.client.create("services", "default", {
                "metadata": {"name": "kubernetes", "labels": {"component": "apiserver",
                                                              "provider": "kubernetes"}},
                "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}})
        self.client.create("endpoints", "default", {
            "metadata": {"name": "kubernetes"},
            "subsets": [{"addresses": [{"ip": host}], "ports": [{"name": "https", "port": port}]}]})

    def stop(self):
        for c in self.controllers:
            c.stop()
        for k in self.kubelets.values():
            k.stop()
        for k in self.kubelets.values():
            k.join(5)
        if self.dns:
            self.dns.stop()
        self.network.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- what the HTTP front end asks --------------------------------------------------------

    def log_source(self, pod, container, previous):
        """(path of the log file, is the container still running?) or an error message."""
        node = (pod.get("spec") or {}).get("nodeName")
        kubelet = self.kubelets.get(node)
        if kubelet is None:
            return None, f'pod {pod["metadata"]["name"]} does not have a host assigned' \
                if not node else f"node {node} runs no kubelet"
        names = [c["name"] for c in pod["spec"].get("containers") or []]
        if container is None:
            if len(names) != 1:
                return None, (f'a container name must be specified for pod {pod["metadata"]["name"]}, '
                              f'choose one of: [{" ".join(names)}]')
            container = names[0]
        if container not in names:
            return None, f'container {container} is not valid for pod {pod["metadata"]["name"]}'
        statuses = {s["name"]: s for s in (pod.get("status") or {}).get("containerStatuses") or []}
        restarts = (statuses.get(container) or {}).get("restartCount", 0)
        md = pod["metadata"]
        folder = os.path.join(kubelet.folder, f"{md['namespace']}_{md['name']}_{md['uid']}")
        n = restarts - 1 if previous else restarts
        path = os.path.join(folder, "logs", container, f"{n}.log")
        if n < 0 or not os.path.exists(path):
            if previous:
                return None, f'previous terminated container "{container}" in pod "{md["name"]}" not found'
            return None, f'container "{container}" in pod "{md["name"]}" is waiting to start: ' \
                         f'ContainerCreating'
        worker = kubelet.worker_for(md["uid"])
        c = worker.container(container) if worker else None

        def running():
            return bool(not previous and c is not None and c.running and c.restart_count == n)
        return (path, running), None


def warn(message):
    print(f"standin: {message}", file=sys.stderr)
