"""The default scheduler's VolumeBinding plugin, emulated: what a pod's
PersistentVolumeClaims say about where it may run, and the hand-off that lets a
WaitForFirstConsumer claim be provisioned on the node chosen for its first pod.

- a claim that does not exist, or is being deleted, fits no node;
- a bound claim fits the nodes its volume's required node affinity allows;
- an unbound claim of a WaitForFirstConsumer class fits any node - or the one already
  named in its volume.kubernetes.io/selected-node; an unbound claim of an Immediate class
  fits none until it is bound;
- once a node is chosen, the unbound claims get that node as selected-node (the
  persistentvolume controller then hands them to the provisioner), and the pod is bound
  only when all its claims are."""

from .node_affinity import volume_allows
from .persistent_volumes import SELECTED_NODE, delays_binding


class PodVolumes:
    """The claims of one pod as the API holds them now."""

    def __init__(self, client, pod):
        self.client = client
        ns = pod["metadata"]["namespace"]
        self.claims = {}   # claim name -> claim or None
        for v in (pod.get("spec") or {}).get("volumes") or []:
            if "persistentVolumeClaim" in v:
                name = v["persistentVolumeClaim"]["claimName"]
                self.claims[name] = client.get("persistentvolumeclaims", ns, name)

    def why_not(self, node):
        """None when the claims allow `node`, else the scheduler's reason."""
        for name, claim in self.claims.items():
            if claim is None:
                return f'persistentvolumeclaim "{name}" not found'
            if claim["metadata"].get("deletionTimestamp"):
                return f'persistentvolumeclaim "{name}" is being deleted'
            volume_name = claim["spec"].get("volumeName")
            if volume_name:
                volume = self.client.get("persistentvolumes", "", volume_name)
                if volume is not None and not volume_allows(volume,
                                                            node["metadata"].get("labels") or {}):
                    return "node(s) had volume node affinity conflict"
                continue
            selected = (claim["metadata"].get("annotations") or {}).get(SELECTED_NODE)
            if not delays_binding(self._storage_class(claim)):
                return "pod has unbound immediate PersistentVolumeClaims"
            if selected and selected != node["metadata"]["name"]:
                return "node(s) didn't match the node selected for its volumes"
        return None

    def _storage_class(self, claim):
        name = claim["spec"].get("storageClassName")
        return self.client.get("storageclasses", "", name) if name else None

    def bind_to(self, node_name):
        """Names the node on every unbound claim; True once all are bound (the pod may be
        bound then), False while the provisioner still has work to do."""
        ready = True
        for name, claim in self.claims.items():
            if claim["spec"].get("volumeName"):
                continue
            ready = False
            if (claim["metadata"].get("annotations") or {}).get(SELECTED_NODE) != node_name:
                def select(c):
                    c["metadata"].setdefault("annotations", {})[SELECTED_NODE] = node_name
                md = claim["metadata"]
                self.client.mutate("persistentvolumeclaims", md["namespace"], md["name"], select)
        return ready
