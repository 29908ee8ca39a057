"""The Node a kubelet registers for a node of a cluster profile: capacity, the well-known
labels, the edgetrain.dev/ labels and annotations, the profile's taints
(docs/cluster-profiles.md, "As Kubernetes Nodes", is the table this follows)."""

from .client import now_rfc3339

KUBELET_VERSION = "v1.32.0+edgetrain-emulated"


COMPUTE_SCORE = "edgetrain.dev/compute-score"


def _number(x):
    return f"{x:g}"


def compute_score(slowdown):
    """What a node of this slowdown publishes: this machine is 1, ten times slower 0.1."""
    return _number(1.0 / slowdown)


def node_object(node, net=None):
    name = node["name"]
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/arch": node["arch"],
        "kubernetes.io/os": "linux",
        "edgetrain.dev/transient": "true" if node["transient"] else "false",
    }
    labels.update(node.get("labels") or {})
    power = node["power"]
    annotations = {
        COMPUTE_SCORE: compute_score(node["compute"]["slowdown"]),
        "edgetrain.dev/memory": node["memory"],
        "edgetrain.dev/compute-watts": _number(power["computeWatts"]),
        "edgetrain.dev/communicate-watts": _number(power["communicateWatts"]),
        "edgetrain.dev/idle-watts": _number(power["idleWatts"]),
    }
    capacity = {"cpu": str(node["cpu"]), "memory": node["memory"], "pods": str(node["pods"]),
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
