"""PersistentVolumeClaims on the emulated site, as on K3s: the default StorageClass
local-path provisions a directory on the disk of the node chosen for a claim's first pod
(WaitForFirstConsumer) and pins the volume there; the shared-path class (a site's shared
file system) provisions at once, for every node. A job's output outlives its pods; what
is on a shared volume is seen from another node, what is on a node's disk is not; a claim
in use is held while deleted, and its volume and directory go with it."""

import os
import unittest

from emulated_site import SiteTestCase, phase, seen_uid, shell_pod
from harness import wait_until

CLAIMS = "/api/v1/namespaces/default/persistentvolumeclaims"
VOLUMES = "/api/v1/persistentvolumes"


def claim(name, mode="ReadWriteOnce", storage_class=None):
    c = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
         "spec": {"accessModes": [mode], "resources": {"requests": {"storage": "1Gi"}}}}
    if storage_class:
        c["spec"]["storageClassName"] = storage_class
    return c


def with_claim(pod, claim_name):
    pod["spec"]["volumes"] = [{"name": "out", "persistentVolumeClaim": {"claimName": claim_name}}]
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "out", "mountPath": "/out"}]
    pod["spec"]["securityContext"] = {"runAsUser": 1000}
    return pod


def finished(p):
    return phase(p) in ("Succeeded", "Failed")


class StorageTest(SiteTestCase):
    def events_of(self, name):
        return [(e["reason"], e["message"]) for e in self.api.get(
            "/api/v1/namespaces/default/events",
            fieldSelector=f"involvedObject.name={name}").json["items"]]

    def wait_events(self, name, reason, text, timeout=10):
        """Events have no watch a test could block on here: a cheap GET, polled."""
        return wait_until(lambda: any(r == reason and text in m
                                      for r, m in self.events_of(name)), timeout)

    def run_pod(self, pod):
        self.apply(pod)
        done = self.wait_pod(pod["metadata"]["name"], finished)
        log = self.kubectl.run("logs", pod["metadata"]["name"]).stdout
        self.assertEqual(phase(done), "Succeeded", log)
        return done, log

    def test_the_default_class_provisions_on_the_first_pods_node_and_pins_the_volume(self):
        classes = self.kubectl.run("get", "storageclass").stdout
        self.assertRegex(classes, r"local-path \(default\)\s+rancher.io/local-path\s+Delete\s+"
                                  r"WaitForFirstConsumer")
        self.apply(claim("output"))
        self.assertTrue(self.wait_events("output", "WaitForFirstConsumer",
                                         "waiting for first consumer to be created before "
                                         "binding"))
        waiting = self.api.get(f"{CLAIMS}/output").json
        self.assertEqual(waiting["spec"]["storageClassName"], "local-path", "the default class")
        self.assertEqual(waiting["status"]["phase"], "Pending")

        # The scheduler places the writer (on the robot, as its selector says); the
        # claim is provisioned there, then the pod is bound.
        writer = with_claim(shell_pod("writer", "echo model > /out/model.pt && id -u",
                                      nodeSelector={"kubernetes.io/hostname": "robot"}), "output")
        del writer["spec"]["nodeName"]
        done, log = self.run_pod(writer)
        self.assertEqual((done["spec"]["nodeName"], log), ("robot", seen_uid(1000) + "\n"))
        bound = self.api.get(f"{CLAIMS}/output").json
        self.assertEqual(bound["status"]["phase"], "Bound")
        notes = bound["metadata"]["annotations"]
        self.assertEqual(notes["volume.kubernetes.io/selected-node"], "robot")
        self.assertEqual(notes["volume.kubernetes.io/storage-provisioner"], "rancher.io/local-path")
        self.assertEqual(notes["pv.kubernetes.io/bind-completed"], "yes")
        self.assertIn("kubernetes.io/pvc-protection", bound["metadata"]["finalizers"])
        volume = self.api.get(f"{VOLUMES}/{bound['spec']['volumeName']}").json
        self.assertEqual(volume["metadata"]["name"], f"pvc-{bound['metadata']['uid']}")
        self.assertEqual((volume["status"]["phase"], volume["spec"]["claimRef"]["name"],
                          volume["spec"]["persistentVolumeReclaimPolicy"]),
                         ("Bound", "output", "Delete"))
        self.assertEqual(volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
                         ["matchExpressions"][0]["values"], ["robot"])

        # The output outlives the pod that wrote it, on that node.
        _, log = self.run_pod(with_claim(shell_pod("reader", "cat /out/model.pt", node="robot"),
                                         "output"))
        self.assertEqual(log, "model\n")
        # Elsewhere the kubelet will not mount it; the scheduler would not send a pod there.
        self.apply(with_claim(shell_pod("elsewhere", "cat /out/model.pt", node="gw"), "output"))
        self.assertTrue(self.wait_events("elsewhere", "FailedMount",
                                         "MountVolume.NodeAffinity check failed"))
        self.assertEqual(phase(self.get_pod("elsewhere")), "Pending")

        # Deleting the claim waits for the pod that still wants it; then its volume and
        # directory go (reclaim policy Delete).
        path = volume["spec"]["hostPath"]["path"]
        self.assertTrue(os.path.isfile(os.path.join(path, "model.pt")))
        self.kubectl.run("delete", "pvc", "output", "--wait=false")
        held = self.api.get(f"{CLAIMS}/output").json
        self.assertTrue(held["metadata"].get("deletionTimestamp"), "Terminating, in use")
        self.kubectl.run("delete", "pod", "elsewhere")
        self.wait_for(CLAIMS, "output", lambda c: c is None)
        self.wait_for(VOLUMES, volume["metadata"]["name"], lambda v: v is None)
        self.assertFalse(os.path.exists(path))

    def test_a_shared_volume_is_provisioned_at_once_and_seen_from_another_node(self):
        self.apply(claim("checkpoints", "ReadWriteMany", "shared-path"))
        bound = self.wait_for(CLAIMS, "checkpoints",
                              lambda c: c["status"].get("phase") == "Bound")
        self.assertEqual(bound["status"]["accessModes"], ["ReadWriteMany"])
        self.run_pod(with_claim(shell_pod("save", "echo 42 > /out/iteration", node="gw"),
                                "checkpoints"))
        _, log = self.run_pod(with_claim(shell_pod("resume", "cat /out/iteration",
                                                   node="robot"), "checkpoints"))
        self.assertEqual(log, "42\n", "written on gw, read on robot")

    def test_a_pod_bound_by_name_waits_until_its_claim_names_a_node(self):
        # Pods bound with spec.nodeName skip the scheduler, so a WaitForFirstConsumer
        # claim of theirs is never provisioned - as on K3s - until someone names the
        # node the scheduler would have (the annotation the scheduler sets).
        self.apply(claim("pinned"))
        self.apply(with_claim(shell_pod("bound-by-name", "ls /out && echo ok", node="gw"),
                              "pinned"))
        self.assertTrue(self.wait_events("bound-by-name", "FailedMount", "not bound yet"))
        self.assertEqual(self.api.get(f"{CLAIMS}/pinned").json["status"]["phase"], "Pending")
        self.kubectl.run("annotate", "pvc", "pinned", "volume.kubernetes.io/selected-node=gw")
        done = self.wait_pod("bound-by-name", finished)
        self.assertEqual(phase(done), "Succeeded")


if __name__ == "__main__":
    unittest.main()
