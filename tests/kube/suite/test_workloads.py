"""The emulated Deployment and ReplicaSet controllers, driven by real kubectl: a Deployment
rolls out (`kubectl rollout status`), scales (`kubectl scale`, through the scale
subresource), and rolls a new template out within its maxSurge and maxUnavailable - checked
at every pod event the API server wrote, not only at the end; a Recreate Deployment stops
every old pod before it starts a new one; one that cannot progress fails `rollout status`
once its progress deadline has passed."""

import socket
import threading
import time
import unittest

from emulated_site import SiteTestCase, condition

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
REPLICASETS = "/apis/apps/v1/namespaces/default/replicasets"
PODS = "/api/v1/namespaces/default/pods"


def web(name, replicas, version, strategy=None):
    """A Deployment of pods that serve HTTP on their pod IP and are ready once they do."""
    d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
         "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                  "template": {"metadata": {"labels": {"app": name}}, "spec": {
                      "terminationGracePeriodSeconds": 0,
                      "containers": [{
                          "name": "web", "image": "debian:12",
                          "command": ["sh", "-c", "exec python3 -m http.server --bind $(IP) 8080"],
                          "env": [{"name": "IP", "valueFrom": {"fieldRef": {
                              "fieldPath": "status.podIP"}}},
                                  {"name": "VERSION", "value": version}],
                          "readinessProbe": {"tcpSocket": {"port": 8080},
                                             "periodSeconds": 1}}]}}}}
    if strategy:
        d["spec"]["strategy"] = strategy
    return d


def rolling(max_surge, max_unavailable):
    return {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": max_unavailable}}


class History(threading.Thread):
    """Objects of one kind and label selector as the API server wrote them, event by
    event, from a list and a watch from its resourceVersion: what a rollout did at every
    step, not only its end. `states` is the objects by name after each event."""

    def __init__(self, api, path, selector):
        super().__init__(daemon=True)
        self.api, self.path, self.selector = api, path, selector
        listed = api.get(path, labelSelector=selector).json
        self.objects = {o["metadata"]["name"]: o for o in listed["items"]}
        self.states = [dict(self.objects)]
        self.watch = api.watch(path, labelSelector=selector,
                               resourceVersion=listed["metadata"]["resourceVersion"])
        self.start()

    def run(self):
        while True:
            try:
                ev = self.watch.next(timeout=120)
            except (OSError, ValueError):
                return  # stop() shut the connection
            if ev is None:
                return
            name = ev["object"]["metadata"]["name"]
            objects = dict(self.objects)
            if ev["type"] == "DELETED":
                objects.pop(name, None)
            else:
                objects[name] = ev["object"]
            self.states.append(objects)
            self.objects = objects  # after the state, for catch_up()

    def catch_up(self, timeout=10):
        """Waits until the watch has delivered every write the API server has made so far:
        a rollout can be complete before the events of its last deletions reach this
        thread, and the last state would then be one the server has already left."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listed = self.api.get(self.path, labelSelector=self.selector).json["items"]
            seen = self.objects
            if ({o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in listed} ==
                    {name: o["metadata"]["resourceVersion"] for name, o in seen.items()}):
                return
            time.sleep(0.05)
        raise AssertionError(f"the watch did not reach the listed state in {timeout} s")

    def stop(self):
        self.catch_up()
        self.watch.conn.sock.shutdown(socket.SHUT_RDWR)  # ends the read in run() at once
        self.join(5)
        self.watch.close()
        return self.states


class Rollout:
    """The pods and ReplicaSets of one Deployment, recorded while it rolls out."""

    def __init__(self, api, app):
        self.pods = History(api, PODS, f"app={app}")
        self.replica_sets = History(api, REPLICASETS, f"app={app}")

    def stop(self):
        return self.pods.stop(), self.replica_sets.stop()


def serving(pods):
    """Pods that count for a Deployment: not being deleted (their endpoints are gone)."""
    return [p for p in pods.values() if not p["metadata"].get("deletionTimestamp")]


def ready(pods):
    return [p for p in serving(pods) if condition(p, "Ready") == "True"]


def version(pod):
    env = pod["spec"]["containers"][0].get("env") or []
    return next(e["value"] for e in env if e["name"] == "VERSION")


class DeploymentTest(SiteTestCase):
    def rollout_status(self, name, ok=True):
        return self.kubectl.run("rollout", "status", f"deployment/{name}", "--timeout=60s",
                                ok=ok)

    def replica_sets(self, app):
        return self.api.get(REPLICASETS, labelSelector=f"app={app}").json["items"]

    def test_a_deployment_rolls_out_scales_and_updates_within_surge_and_unavailability(self):
        self.apply(web("web", 2, "v1", rolling(1, 0)))
        self.assertIn('deployment "web" successfully rolled out', self.rollout_status("web").stdout)
        [rs] = self.replica_sets("web")
        h = rs["metadata"]["labels"]["pod-template-hash"]
        self.assertEqual(rs["metadata"]["name"], f"web-{h}")
        self.assertEqual(rs["spec"]["selector"]["matchLabels"], {"app": "web", "pod-template-hash": h})
        self.assertEqual(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1")
        self.assertEqual(rs["metadata"]["ownerReferences"][0]["kind"], "Deployment")
        pods = self.api.get(PODS, labelSelector=f"pod-template-hash={h}").json["items"]
        self.assertEqual(len(pods), 2)
        self.assertTrue(all(p["metadata"]["ownerReferences"][0]["name"] == rs["metadata"]["name"]
                            and p["spec"]["nodeName"] for p in pods),
                        "owned by the ReplicaSet and placed by the scheduler")

        out = self.kubectl.run("scale", "deployment/web", "--replicas=3").stdout
        self.assertEqual(out.strip(), "deployment.apps/web scaled")
        self.rollout_status("web")
        scale = self.api.get(f"{DEPLOYMENTS}/web/scale").json
        self.assertEqual((scale["kind"], scale["spec"]["replicas"], scale["status"]["selector"]),
                         ("Scale", 3, "app=web"))

        # What a Deployment promises, at every step: its ReplicaSets together never ask
        # for more than replicas + maxSurge pods, and never fewer than replicas -
        # maxUnavailable pods are ready (pods being deleted do not count).
        for v, surge, unavailable in (("v2", 1, 0), ("v3", 0, 1)):
            rollout = Rollout(self.api, "web")
            self.apply(web("web", 3, v, rolling(surge, unavailable)))
            self.rollout_status("web")
            pods, sets = rollout.stop()
            self.assertLessEqual(max(sum(rs["spec"]["replicas"] for rs in s.values())
                                     for s in sets), 3 + surge, f"maxSurge {surge}")
            self.assertGreaterEqual(min(len(ready(s)) for s in pods), 3 - unavailable,
                                    f"maxUnavailable {unavailable}")
            self.assertEqual({version(p) for p in serving(pods[-1])}, {v})

        d = self.api.get(f"{DEPLOYMENTS}/web").json
        self.assertEqual(d["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "3")
        self.assertEqual({c["type"]: c["reason"] for c in d["status"]["conditions"]},
                         {"Available": "MinimumReplicasAvailable",
                          "Progressing": "NewReplicaSetAvailable"})
        self.assertEqual({k: d["status"][k] for k in ("replicas", "updatedReplicas",
                                                      "readyReplicas", "availableReplicas")},
                         {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
                          "availableReplicas": 3})
        sets = {rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]:
                rs["spec"]["replicas"] for rs in self.replica_sets("web")}
        self.assertEqual(sets, {"1": 0, "2": 0, "3": 3}, "old ReplicaSets kept, scaled to 0")

        self.kubectl.run("scale", "deployment/web", "--replicas=1")
        self.wait_for(DEPLOYMENTS, "web", lambda d: d["status"].get("replicas") == 1)
        self.assertEqual(len(ready(self.pods_of("web"))), 1)

    def pods_of(self, app):
        return {p["metadata"]["name"]: p for p in
                self.api.get(PODS, labelSelector=f"app={app}").json["items"]}

    def test_recreate_stops_every_old_pod_before_starting_a_new_one(self):
        self.apply(web("once", 2, "v1", {"type": "Recreate"}))
        self.rollout_status("once")
        history = History(self.api, PODS, "app=once")
        self.apply(web("once", 2, "v2", {"type": "Recreate"}))
        self.rollout_status("once")
        states = history.stop()
        mixed = [s for s in states if len({version(p) for p in s.values()}) > 1]
        self.assertEqual(mixed, [], "old and new pods never exist together")
        self.assertEqual({version(p) for p in states[-1].values()}, {"v2"})

    def test_rollout_status_fails_once_the_progress_deadline_has_passed(self):
        stuck = web("stuck", 1, "v1")
        stuck["spec"]["progressDeadlineSeconds"] = 1
        stuck["spec"]["template"]["spec"]["containers"][0]["image"] = "nowhere/nothing:1"
        self.apply(stuck)
        p = self.rollout_status("stuck", ok=False)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn('deployment "stuck" exceeded its progress deadline', p.stderr)
        d = self.api.get(f"{DEPLOYMENTS}/stuck").json
        self.assertEqual(condition(d, "Available"), "False")


if __name__ == "__main__":
    unittest.main()
