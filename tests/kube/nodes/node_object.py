"""The Node a kubelet registers for a node of a cluster profile: capacity, the well-known
labels, the edgetrain.dev/ labels and annotations, the profile's taints
(docs/cluster-profiles.md, "As Kubernetes Nodes", is the table this follows)."""

from .client import now_rfc3339
from .profile import link_mean_mbps

KUBELET_VERSION = "v1.32.0+edgetrain-emulated"

# What a site's measurements publish of a node (core/node_view.h reads them) and faults
# change while the site runs.
COMPUTE_SCORE = "edgetrain.dev/compute-score"
EMULATED_SLOWDOWN = "edgetrain.dev/emulated-slowdown"
LINK_MBPS = "edgetrain.dev/link-mbps"
# A node's own stream of samples a second (its profile's stream.ratePerSecond): what a
# worker there draws when its job's stream names no rates. A rate trace is a file of
# this machine, which a pod's root file system does not show: such a node publishes none.
EMULATED_STREAM_RATE = "edgetrain.dev/emulated-stream-rate"


def _number(x):
    """The shortest text that reads back as the same double, so that a reader of the
    Node has the very value `edgetrain plan` computes from the profile (1, 0.25, 30.5...)."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text


def measurements(node, link_factor=1.0):
    """The annotations a node's measurements give, as they are now: compute score and
    the emulated slowdown it comes from (the agents' to apply: an emulated node's processes
    run at this machine's speed), and the link's mean rate times a link fault's factor.
    A wired node publishes no link rate, unless a fault cut its link: then 0. A value of
    None means the annotation is absent."""
    slowdown = node["compute"]["slowdown"]
    mean = link_mean_mbps(node)
    if mean is None:
        link = None if link_factor == 1 else "0"  # an unshaped link: cut or whole
    else:
        link = _number(mean * link_factor)
    # The score: this machine is 1, a node ten times slower 0.1.
    return {COMPUTE_SCORE: _number(1.0 / slowdown), EMULATED_SLOWDOWN: _number(slowdown),
            LINK_MBPS: link}


def node_object(node, net=None, link_factor=1.0):
    name = node["name"]
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/arch": node["arch"],
        "kubernetes.io/os": "linux",
        "edgetrain.dev/transient": "true" if node["transient"] else "false",
    }
    labels.update(node.get("labels") or {})
    power = node["power"]
    annotations = {k: v for k, v in measurements(node, link_factor).items() if v is not None}
    annotations.update({
        # A plain number of bytes (memory: 4294967296), as edgetrain reads a profile, is
        # text here: annotations and quantities are strings (the stand-in had crashed on it).
        "edgetrain.dev/memory": str(node["memory"]),
        "edgetrain.dev/compute-watts": _number(power["computeWatts"]),
        "edgetrain.dev/communicate-watts": _number(power["communicateWatts"]),
        "edgetrain.dev/idle-watts": _number(power["idleWatts"]),
    })
    rate = (node.get("stream") or {}).get("ratePerSecond")
    if rate is not None:
        annotations[EMULATED_STREAM_RATE] = _number(rate)
    capacity = {"cpu": str(node["cpu"]), "memory": str(node["memory"]), "pods": str(node["pods"]),
                "ephemeral-storage": "64Gi"}
    spec = {}
    if node.get("taints"):
        spec["taints"] = [dict(t) for t in node["taints"]]
    addresses = [{"type": "Hostname", "address": name}]
    if net is not None:
        spec["podCIDR"] = net.pod_cidr
        spec["podCIDRs"] = [net.pod_cidr]
        addresses.insert(0, {"type": "InternalIP", "address": net.address})
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [ready_condition(True)] + pressure_conditions(),
            "addresses": addresses,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"architecture": node["arch"], "operatingSystem": "linux",
                         "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": "",
                         "containerRuntimeVersion": "edgetrain-emulated://1",
                         "osImage": "node emulator (tests/kube)", "kernelVersion": "",
                         "machineID": name, "systemUUID": name, "bootID": name},
        },
    }


def ready_condition(ready, reason=None, message=None):
    now = now_rfc3339()
    return {"type": "Ready", "status": "True" if ready else "False",
            "reason": reason or ("KubeletReady" if ready else "KubeletNotReady"),
            "message": message or ("kubelet is posting ready status" if ready
                                   else "kubelet is not ready"),
            "lastHeartbeatTime": now, "lastTransitionTime": now}


def pressure_conditions():
    now = now_rfc3339()
    return [{"type": t, "status": "False", "reason": f"KubeletHas{r}", "message": m,
             "lastHeartbeatTime": now, "lastTransitionTime": now}
            for t, r, m in (("MemoryPressure", "SufficientMemory", "kubelet has sufficient memory available"),
                            ("DiskPressure", "NoDiskPressure", "kubelet has no disk pressure"),
                            ("PIDPressure", "SufficientPID", "kubelet has sufficient PID available"))]


def condition(node, ctype):
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def set_condition(node, cond):
    """Replaces the condition of cond's type, keeping lastTransitionTime when the status
    did not change."""
    conds = node.setdefault("status", {}).setdefault("conditions", [])
    for i, c in enumerate(conds):
        if c.get("type") == cond["type"]:
            if c.get("status") == cond["status"]:
                cond = dict(cond, lastTransitionTime=c.get("lastTransitionTime"))
            conds[i] = cond
            return
    conds.append(cond)
