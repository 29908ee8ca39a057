"""EMULATION of kube-controller-manager's Deployment controller: a Deployment owns
ReplicaSets, one per pod template it has had, told apart by the `pod-template-hash` label
on the ReplicaSet, its selector and its pods. The ReplicaSet of the current template is
the new one; the others are old. A rollout moves replicas from the old ones to the new
one (rollout.py has the arithmetic); this file does the bookkeeping around it:

- the new ReplicaSet is made when the template changes (`<deployment>-<hash>`, revision
  one above every old one in `deployment.kubernetes.io/revision`, which the Deployment
  carries too); an old template brought back becomes the new one again (a rollback);
- status is the sum over its ReplicaSets: replicas, updatedReplicas (the new one's),
  readyReplicas, availableReplicas, unavailableReplicas, observedGeneration, and the
  conditions `kubectl rollout status` reads - Available (at least replicas minus
  maxUnavailable are available) and Progressing (NewReplicaSetCreated,
  ReplicaSetUpdated while replicas move, NewReplicaSetAvailable once complete, False
  with ProgressDeadlineExceeded when nothing moved for progressDeadlineSeconds);
- old ReplicaSets scaled to zero beyond revisionHistoryLimit are deleted once the
  rollout is complete.

Not emulated: proportional scaling of several active ReplicaSets when replicas change in
the middle of a rollout (the rollout converges all the same), and `spec.paused` beyond
holding the rollout where it is."""

import copy
import time

from .client import Controller, now_rfc3339, parse_time, record_event
from .ownership import claim, controller_of, controller_ref
from .rollout import max_surge_and_unavailable, new_replicas, old_scale_downs
from .template_hash import pod_template_hash

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"


def revision(rs):
    try:
        return int(rs["metadata"].get("annotations", {}).get(REVISION, "0"))
    except ValueError:
        return 0


def without_hash(template):
    t = copy.deepcopy(template or {})
    (t.get("metadata") or {}).get("labels", {}).pop(HASH_LABEL, None)
    return t


def condition(obj, ctype):
    return next((c for c in (obj.get("status") or {}).get("conditions") or []
                 if c.get("type") == ctype), None)


class DeploymentController(Controller):
    watches = ("deployments", "replicasets", "pods")

    def __init__(self, client, timings):
        super().__init__(client, timings.resync, "deployment-controller-emulation")

    def resync(self):
        self.enqueue_all("deployments")

    def on_event(self, ev):
        md = ev.obj["metadata"]
        if ev.key == ("apps", "deployments"):
            self.enqueue((md["namespace"], md["name"]))
        elif ev.key == ("apps", "replicasets"):
            ref = controller_of(ev.obj)
            if ref is not None and ref.get("kind") == "Deployment":
                self.enqueue((md["namespace"], ref["name"]))
            elif ref is None:  # an orphan: whoever's selector matches may adopt it
                self.enqueue_all("deployments", md["namespace"])
        elif ev.type == "DELETED":  # Recreate waits for the old pods to be gone
            self.enqueue_all("deployments", md["namespace"])

    # -- reconcile ----------------------------------------------------------------------

    def reconcile(self, key):
        ns, name = key
        d = self.client.get("deployments", ns, name)
        if d is None or d["metadata"].get("deletionTimestamp"):
            return None
        owned = claim(self.client, "replicasets", self.client.list("replicasets", ns), d)
        template = without_hash(d["spec"].get("template"))
        new = next((rs for rs in sorted(owned, key=lambda r: r["metadata"]["creationTimestamp"])
                    if without_hash(rs["spec"].get("template")) == template), None)
        old = [rs for rs in owned if rs is not new]
        if d["spec"].get("paused"):
            return self._write_status(d, new, old, None)
        created = None
        if new is None:
            new = created = self._create_new(d, old)
            if new is None:
                return 0  # a hash collision: counted, tried again
        else:
            new = self._bring_forward(d, new, old)
        if d["spec"]["strategy"].get("type") == "Recreate":
            self._recreate(d, new, old)
        else:
            self._roll(d, new, old)
        return self._write_status(d, self._fresh(new), [self._fresh(rs) for rs in old],
                                  created)

    def _fresh(self, rs):
        md = rs["metadata"]
        return self.client.get("replicasets", md["namespace"], md["name"]) or rs

    def _create_new(self, d, old):
        md = d["metadata"]
        collisions = (d.get("status") or {}).get("collisionCount", 0)
        h = pod_template_hash(without_hash(d["spec"]["template"]), collisions)
        template = copy.deepcopy(d["spec"]["template"])
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = h
        selector = copy.deepcopy(d["spec"]["selector"])
        selector.setdefault("matchLabels", {})[HASH_LABEL] = h
        max_surge, _ = max_surge_and_unavailable(d)
        replicas = d["spec"].get("replicas", 1)
        rev = max([revision(rs) for rs in old] + [0]) + 1
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": f"{md['name']}-{h}", "namespace": md["namespace"],
                           "labels": dict(template["metadata"]["labels"]),
                           "annotations": {REVISION: str(rev), DESIRED: str(replicas),
                                           MAX_REPLICAS: str(replicas + max_surge)},
                           "ownerReferences": [controller_ref(d)]},
              "spec": {"replicas": 0, "minReadySeconds": d["spec"].get("minReadySeconds", 0),
                       "selector": selector, "template": template}}
        try:
            rs = self.client.create("replicasets", md["namespace"], rs)
        except Exception as e:
            if getattr(e, "code", None) != 409:
                raise
            # Another template has this hash: count the collision, as the real one does.
            def count(obj):
                obj.setdefault("status", {})["collisionCount"] = collisions + 1
            self.client.mutate("deployments", md["namespace"], md["name"], count, "status")
            return None
        self._set_revision(d, rev)
        return rs

    def _bring_forward(self, d, new, old):
        """A template used before is the new one again (a rollback): its ReplicaSet takes
        the next revision."""
        top = max([revision(rs) for rs in old] + [0])
        rev = revision(new)
        if rev <= top:
            rev = top + 1

            def bump(obj):
                obj["metadata"].setdefault("annotations", {})[REVISION] = str(rev)
            new = self.client.mutate("replicasets", new["metadata"]["namespace"],
                                     new["metadata"]["name"], bump) or new
        self._set_revision(d, rev)
        return new

    def _set_revision(self, d, rev):
        def change(obj):
            notes = obj["metadata"].setdefault("annotations", {})
            if notes.get(REVISION) == str(rev):
                return False
            notes[REVISION] = str(rev)
        md = d["metadata"]
        self.client.mutate("deployments", md["namespace"], md["name"], change)

    def _scale(self, d, rs, replicas):
        current = rs["spec"].get("replicas", 0)
        max_surge, _ = max_surge_and_unavailable(d)
        wanted = d["spec"].get("replicas", 1)

        def change(obj):
            notes = obj["metadata"].setdefault("annotations", {})
            same = obj["spec"].get("replicas") == replicas and \
                notes.get(DESIRED) == str(wanted)
            if same:
                return False
            obj["spec"]["replicas"] = replicas
            notes[DESIRED] = str(wanted)
            notes[MAX_REPLICAS] = str(wanted + max_surge)
        md = rs["metadata"]
        written = self.client.mutate("replicasets", md["namespace"], md["name"], change)
        if written is not None and current != replicas:
            verb = "up" if replicas > current else "down"
            record_event(self.client, d, "Normal", "ScalingReplicaSet",
                         f"Scaled {verb} replica set {md['name']} from {current} to {replicas}",
                         "deployment-controller")
        return written or rs

    # -- strategies ---------------------------------------------------------------------

    def _roll(self, d, new, old):
        target = new_replicas(d, new, old)
        if target != new["spec"].get("replicas", 0):
            self._scale(d, new, target)
            return  # the next pass, on the events this makes, scales the old ones down
        for rs, replicas in old_scale_downs(d, new, old):
            self._scale(d, rs, replicas)
        if self._complete(d, self._fresh(new), old):
            self._clean_up(d, [self._fresh(rs) for rs in old])

    def _recreate(self, d, new, old):
        """Every old pod gone before the first new one starts."""
        for rs in old:
            if rs["spec"].get("replicas", 0):
                self._scale(d, rs, 0)
        uids = {rs["metadata"]["uid"] for rs in old}
        running = [p for p in self.client.list("pods", d["metadata"]["namespace"])
                   if any(r.get("uid") in uids for r in p["metadata"].get("ownerReferences") or [])]
        if not running:
            self._scale(d, new, d["spec"].get("replicas", 1))

    def _clean_up(self, d, old):
        limit = d["spec"].get("revisionHistoryLimit", 10)
        idle = sorted((rs for rs in old if not rs["spec"].get("replicas") and
                       not (rs.get("status") or {}).get("replicas")), key=revision)
        for rs in idle[:max(0, len(idle) - limit)]:
            self.client.delete("replicasets", rs["metadata"]["namespace"],
                               rs["metadata"]["name"], uid=rs["metadata"]["uid"])

    # -- status -------------------------------------------------------------------------

    @staticmethod
    def _complete(d, new, old):
        replicas = d["spec"].get("replicas", 1)
        s = new.get("status") or {}
        others = sum((rs.get("status") or {}).get("replicas", 0) for rs in old)
        return new["spec"].get("replicas") == replicas and s.get("replicas", 0) == replicas \
            and s.get("availableReplicas", 0) == replicas and others == 0

    def _write_status(self, d, new, old, created):
        """Writes status; returns when to look again for the progress deadline."""
        everything = ([new] if new else []) + old
        total = lambda f: sum((rs.get("status") or {}).get(f, 0) for rs in everything)  # noqa: E731
        replicas = d["spec"].get("replicas", 1)
        _, max_unavailable = max_surge_and_unavailable(d)
        status = {"observedGeneration": d["metadata"].get("generation", 1),
                  "replicas": total("replicas"),
                  "updatedReplicas": (new.get("status") or {}).get("replicas", 0) if new else 0,
                  "readyReplicas": total("readyReplicas"),
                  "availableReplicas": total("availableReplicas"),
                  "unavailableReplicas": max(0, replicas - total("availableReplicas"))}
        if (d.get("status") or {}).get("collisionCount"):
            status["collisionCount"] = d["status"]["collisionCount"]
        available = status["availableReplicas"] >= replicas - max_unavailable
        conditions = [self._condition(d, "Available", available,
                                      "MinimumReplicasAvailable" if available else
                                      "MinimumReplicasUnavailable",
                                      "Deployment has minimum availability." if available else
                                      "Deployment does not have minimum availability.",
                                      touch=False)]
        progressing, again = self._progressing(d, new, old, status, created)
        if progressing is not None:
            conditions.append(progressing)
        status["conditions"] = conditions
        md = d["metadata"]

        def change(obj):
            if obj.get("status") == status:
                return False
            obj["status"] = status
        self.client.mutate("deployments", md["namespace"], md["name"], change, "status")
        return again

    def _progressing(self, d, new, old, status, created):
        prior = condition(d, "Progressing")
        if d["spec"].get("paused"):
            return self._condition(d, "Progressing", None, "DeploymentPaused",
                                   "Deployment is paused", touch=False), None
        if new is None:
            return prior, None
        name = new["metadata"]["name"]
        before = d.get("status") or {}
        if created is not None:
            return self._condition(d, "Progressing", True, "NewReplicaSetCreated",
                                   f'Created new replica set "{name}"', touch=True), \
                d["spec"].get("progressDeadlineSeconds", 600)
        if self._complete(d, new, old):
            return self._condition(d, "Progressing", True, "NewReplicaSetAvailable",
                                   f'ReplicaSet "{name}" has successfully progressed.',
                                   touch=prior is None or
                                   prior.get("reason") != "NewReplicaSetAvailable"), None
        old_replicas = lambda s: s.get("replicas", 0) - s.get("updatedReplicas", 0)  # noqa: E731
        moved = status["updatedReplicas"] > before.get("updatedReplicas", 0) or \
            old_replicas(status) < old_replicas(before) or \
            status["readyReplicas"] > before.get("readyReplicas", 0) or \
            status["availableReplicas"] > before.get("availableReplicas", 0) or \
            prior is None or prior.get("reason") == "NewReplicaSetAvailable"
        deadline = d["spec"].get("progressDeadlineSeconds", 600)
        if moved:
            return self._condition(d, "Progressing", True, "ReplicaSetUpdated",
                                   f'ReplicaSet "{name}" is progressing.', touch=True), deadline
        if prior.get("reason") == "ProgressDeadlineExceeded":
            return prior, None
        left = (parse_time(prior.get("lastUpdateTime")) or time.time()) + deadline - time.time()
        if left <= 0:
            return self._condition(d, "Progressing", False, "ProgressDeadlineExceeded",
                                   f'ReplicaSet "{name}" has timed out progressing.',
                                   touch=True), None
        return prior, left

    @staticmethod
    def _condition(d, ctype, ok, reason, message, touch):
        """The condition as it is to be written; `touch` marks progress (lastUpdateTime),
        else an unchanged condition is kept as it was."""
        prior = condition(d, ctype)
        status = "Unknown" if ok is None else ("True" if ok else "False")
        now = now_rfc3339()
        if prior is not None and prior.get("status") == status and prior.get("reason") == reason \
                and not touch:
            return prior
        return {"type": ctype, "status": status,
                "lastUpdateTime": now if touch or prior is None else prior.get("lastUpdateTime"),
                "lastTransitionTime": prior.get("lastTransitionTime")
                if prior is not None and prior.get("status") == status else now,
                "reason": reason, "message": message}
