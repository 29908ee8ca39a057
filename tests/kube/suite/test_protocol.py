"""The "Protocol behaviours to honour" of shared/notes/kube-api.md, one test each (the
numbers in the test names are the note's), plus discovery, patches, tables, RBAC, TLS and
the test hooks. Black box: everything goes over HTTP to a stand-in process."""

import json
import sys
import threading
import time
import unittest

from base import StandinTestCase
from fixtures import configmap, lease, node, pod, widget
from harness import Standin, raw_http, wait_until


class ListAndWatch(StandinTestCase):
    def test_1_list_has_resource_version_empty_items_and_pages(self):
        r = self.api.get(self.widgets())
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["kind"], "WidgetList")
        self.assertEqual(r.json["items"], [])
        self.assertIn(b'"items":[]', r.raw)
        self.assertTrue(r.json["metadata"]["resourceVersion"].isdigit())
        for i in range(5):
            self.created(self.core("configmaps"), configmap(f"c{i}"))
        seen, cont, rvs = [], None, set()
        while True:
            q = {"limit": 2}
            if cont:
                q["continue"] = cont
            page = self.api.get(self.core("configmaps"), **q).json
            seen += [o["metadata"]["name"] for o in page["items"]]
            rvs.add(page["metadata"]["resourceVersion"])
            cont = page["metadata"].get("continue")
            if not cont:
                break
            self.assertGreater(page["metadata"]["remainingItemCount"], 0)
        self.assertEqual(seen, [f"c{i}" for i in range(5)])
        self.assertEqual(len(rvs), 1, "all pages are served at the first page's revision")
        # a continue token from before a compaction has expired
        token = self.api.get(self.core("configmaps"), limit=2).json["metadata"]["continue"]
        self.created(self.core("configmaps"), configmap("later"))
        self.api.hook("compact")
        self.assertStatus(self.api.get(self.core("configmaps"), limit=2, **{"continue": token}),
                          410, "Expired")

    def test_2_watch_without_version_starts_with_existing_objects(self):
        self.created(self.widgets(), widget("a"))
        self.created(self.widgets(), widget("b"))
        for rv in (None, "0"):
            q = {"timeoutSeconds": 5}
            if rv:
                q["resourceVersion"] = rv
            w = self.api.watch(self.widgets(), **q)
            first = w.events(2)
            self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in first],
                             [("ADDED", "a"), ("ADDED", "b")])
            w.close()

    def test_2_watch_from_version_sends_only_later_changes(self):
        a = self.created(self.widgets(), widget("a"))
        rv = a["metadata"]["resourceVersion"]
        w = self.api.watch(self.widgets(), resourceVersion=rv, timeoutSeconds=5)
        self.created(self.widgets(), widget("b"))
        self.api.patch(self.widgets("a"), {"spec": {"size": 4}})
        self.api.delete(self.widgets("b"))
        evs = w.events(3)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in evs],
                         [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")])
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
        self.assertEqual(rvs, sorted(rvs))
        self.assertGreater(rvs[0], int(rv))
        w.close()

    def test_3_watch_from_compacted_version_gets_410_event_then_close(self):
        a = self.created(self.widgets(), widget("a"))
        established = self.api.watch(self.widgets(), resourceVersion=a["metadata"]
                                     ["resourceVersion"], timeoutSeconds=5)
        self.api.patch(self.widgets("a"), {"spec": {"size": 5}})
        self.assertEqual(self.api.hook("compact").status, 200)
        self.api.patch(self.widgets("a"), {"spec": {"size": 6}})
        self.assertEqual([e["object"]["spec"]["size"] for e in established.events(2)], [5, 6],
                         "an open watch is not cut off by compaction")
        w = self.api.watch(self.widgets(), resourceVersion=a["metadata"]["resourceVersion"])
        self.assertEqual(w.status, 200)
        ev = w.next()
        self.assertEqual(ev["type"], "ERROR")
        self.assertEqual(ev["object"]["kind"], "Status")
        self.assertEqual(ev["object"]["code"], 410)
        self.assertEqual(ev["object"]["reason"], "Expired")
        self.assertIsNone(w.next(), "the stream ends after the error")
        # a relist gives a revision that can be watched again
        rv = self.api.get(self.widgets()).json["metadata"]["resourceVersion"]
        w2 = self.api.watch(self.widgets(), resourceVersion=rv, timeoutSeconds=1)
        self.assertEqual(w2.rest(), [])

    def test_4_watch_is_chunked_one_event_per_line_and_times_out_cleanly(self):
        self.created(self.widgets(), widget("a"))
        s = raw_http(self.server.url, (f"GET {self.widgets()}?watch=true&timeoutSeconds=1 "
                                       f"HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n\r\n")
                     .encode())
        data = b""
        t0 = time.monotonic()
        while not data.endswith(b"0\r\n\r\n"):
            chunk = s.recv(65536)
            self.assertTrue(chunk, "connection closed before the final chunk")
            data += chunk
        elapsed = time.monotonic() - t0
        s.close()
        head, _, body = data.partition(b"\r\n\r\n")
        self.assertIn(b"Transfer-Encoding: chunked", head)
        self.assertTrue(head.startswith(b"HTTP/1.1 200"))
        lines = []
        while body:
            size_line, _, body = body.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                break
            lines.append(body[:size])
            body = body[size + 2:]
        self.assertEqual(len(lines), 1)
        self.assertTrue(lines[0].endswith(b"\n"))
        self.assertEqual(json.loads(lines[0])["type"], "ADDED")
        self.assertGreaterEqual(elapsed, 0.9)
        self.assertLess(elapsed, 3)

    def test_4_bookmarks_only_when_allowed(self):
        self.created(self.widgets(), widget("a"))
        rv = self.api.get(self.widgets()).json["metadata"]["resourceVersion"]
        self.api.hook("bookmark-interval", seconds="0.2")
        try:
            plain = self.api.watch(self.widgets(), resourceVersion=rv, timeoutSeconds=1)
            self.assertEqual(plain.rest(), [])
            w = self.api.watch(self.widgets(), resourceVersion=rv, timeoutSeconds=1,
                               allowWatchBookmarks="true")
            evs = w.rest()
        finally:
            self.api.hook("bookmark-interval", seconds="60")
        self.assertTrue(evs)
        for e in evs:
            self.assertEqual(e["type"], "BOOKMARK")
            self.assertEqual(set(e["object"]["metadata"]), {"resourceVersion",
                                                            "creationTimestamp"})
            self.assertGreaterEqual(int(e["object"]["metadata"]["resourceVersion"]), int(rv))

    def test_watch_list_initial_events_end_with_a_bookmark(self):
        self.created(self.widgets(), widget("a"))
        w = self.api.watch(self.widgets(), sendInitialEvents="true",
                           allowWatchBookmarks="true", resourceVersionMatch="NotOlderThan",
                           timeoutSeconds=5)
        added, bookmark = w.events(2)
        self.assertEqual(added["type"], "ADDED")
        self.assertEqual(bookmark["type"], "BOOKMARK")
        self.assertEqual(bookmark["object"]["metadata"]["annotations"],
                         {"k8s.io/initial-events-end": "true"})

    def test_5_objects_leaving_and_entering_a_selector(self):
        self.created(self.core("configmaps"), configmap("a", labels={"team": "x"}))
        rv = self.api.get(self.core("configmaps")).json["metadata"]["resourceVersion"]
        w = self.api.watch(self.core("configmaps"), resourceVersion=rv,
                           labelSelector="team=x", timeoutSeconds=5)
        self.api.patch(self.core("configmaps", "a"), {"metadata": {"labels": {"team": "y"}}})
        self.api.patch(self.core("configmaps", "a"), {"data": {"k": "v"}})  # not seen
        self.api.patch(self.core("configmaps", "a"), {"metadata": {"labels": {"team": "x"}}})
        self.api.patch(self.core("configmaps", "a"), {"data": {"k": "w"}})
        evs = w.events(3)
        self.assertEqual([e["type"] for e in evs], ["DELETED", "ADDED", "MODIFIED"])
        self.assertEqual(evs[0]["object"]["metadata"]["labels"], {"team": "y"})

    def test_drop_watches_hook_ends_every_stream(self):
        w1 = self.api.watch(self.widgets(), timeoutSeconds=30)
        w2 = self.api.watch(self.core("pods"), timeoutSeconds=30)
        self.api.hook("drop-watches")
        self.assertEqual(w1.rest(), [])
        self.assertEqual(w2.rest(), [])


class Writes(StandinTestCase):
    def test_6_conflicts_missing_and_existing(self):
        w = self.created(self.widgets(), widget("a"))
        stale = dict(w)
        self.api.patch(self.widgets("a"), {"spec": {"size": 4}})
        self.assertStatus(self.api.put(self.widgets("a"), stale), 409, "Conflict")
        no_rv = json.loads(json.dumps(w))
        del no_rv["metadata"]["resourceVersion"]
        r = self.api.put(self.widgets("a"), no_rv)
        self.assertStatus(r, 422, "Invalid")
        self.assertIn("metadata.resourceVersion", r.json["message"])
        r = self.api.post(self.widgets(), widget("a"))
        self.assertStatus(r, 409, "AlreadyExists")
        self.assertEqual(r.json["details"]["name"], "a")
        r = self.api.get(self.widgets("nope"))
        self.assertStatus(r, 404, "NotFound")
        self.assertEqual(r.json["message"], 'widgets.test.standin.dev "nope" not found')
        self.assertStatus(self.api.put(self.widgets("nope"), widget("nope")), 404, "NotFound")
        # built-ins allow an unconditional PUT
        cm = self.created(self.core("configmaps"), configmap("c"))
        del cm["metadata"]["resourceVersion"]
        cm["data"] = {"x": "1"}
        self.assertEqual(self.api.put(self.core("configmaps", "c"), cm).status, 200)

    def test_7_status_subresource_rules(self):
        body = widget("a")
        body["status"] = {"phase": "Injected"}
        w = self.created(self.widgets(), body)
        self.assertNotIn("status", w, "create drops .status")
        self.assertEqual(w["metadata"]["generation"], 1)
        # /status changes only status and keeps generation
        st = json.loads(json.dumps(w))
        st["status"] = {"phase": "Running"}
        st["spec"]["size"] = 9
        r = self.api.put(self.widgets("a") + "/status", st)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["status"]["phase"], "Running")
        self.assertEqual(r.json["spec"]["size"], 3)
        self.assertEqual(r.json["metadata"]["generation"], 1)
        # /status still checks the resourceVersion
        self.assertStatus(self.api.put(self.widgets("a") + "/status", st), 409, "Conflict")
        # the main resource keeps the old status and bumps generation on spec change
        main = r.json
        main["status"] = {"phase": "Hacked"}
        main["spec"]["size"] = 4
        r2 = self.api.put(self.widgets("a"), main)
        self.assertEqual(r2.json["status"]["phase"], "Running")
        self.assertEqual(r2.json["metadata"]["generation"], 2)
        # metadata-only change: no generation bump
        r3 = self.api.patch(self.widgets("a"), {"metadata": {"labels": {"x": "y"}}})
        self.assertEqual(r3.json["metadata"]["generation"], 2)
        self.assertNotEqual(r3.json["metadata"]["resourceVersion"],
                            r2.json["metadata"]["resourceVersion"])
        # a no-op keeps the resourceVersion and emits nothing
        w_ = self.api.watch(self.widgets(), resourceVersion=r3.json["metadata"]
                            ["resourceVersion"], timeoutSeconds=1)
        r4 = self.api.put(self.widgets("a"), r3.json)
        self.assertEqual(r4.json["metadata"]["resourceVersion"],
                         r3.json["metadata"]["resourceVersion"])
        r5 = self.api.patch(self.widgets("a") + "/status", {"status": {"phase": "Running"}})
        self.assertEqual(r5.json["metadata"]["resourceVersion"],
                         r3.json["metadata"]["resourceVersion"])
        self.assertEqual(w_.rest(), [])

    def test_8_finalizers_hold_deletion_until_removed(self):
        w = widget("a")
        w["metadata"]["finalizers"] = ["edgetrain.dev/cleanup"]
        created = self.created(self.widgets(), w)
        watch = self.api.watch(self.widgets(), resourceVersion=created["metadata"]
                               ["resourceVersion"], timeoutSeconds=5)
        r = self.api.delete(self.widgets("a"), {"propagationPolicy": "Background"})
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["kind"], "Widget")
        self.assertTrue(r.json["metadata"]["deletionTimestamp"])
        self.assertEqual(self.api.get(self.widgets("a")).status, 200)
        # no new finalizers on a deleting object
        bad = self.api.patch(self.widgets("a"), {"metadata": {"finalizers":
                                                              ["edgetrain.dev/cleanup", "x/y"]}})
        self.assertStatus(bad, 422, "Invalid")
        r = self.api.patch(self.widgets("a"), {"metadata": {"finalizers": None}})
        self.assertEqual(r.status, 200, r)
        self.assertStatus(self.api.get(self.widgets("a")), 404)
        evs = watch.rest()
        self.assertEqual([e["type"] for e in evs], ["MODIFIED", "MODIFIED", "DELETED"])
        self.assertTrue(evs[-1]["object"]["metadata"]["deletionTimestamp"])

    def test_12_lease_leader_election(self):
        path = f"/apis/coordination.k8s.io/v1/namespaces/{self.ns}/leases"
        self.assertStatus(self.api.get(f"{path}/operator"), 404)
        mine = self.created(path, lease("operator", "replica-a"))
        self.assertEqual(mine["spec"]["renewTime"], "2025-01-01T00:00:00.000000Z")
        self.assertStatus(self.api.post(path, lease("operator", "replica-b")), 409,
                          "AlreadyExists")
        # replica-a renews with its resourceVersion; replica-b's takeover is then stale
        theirs = json.loads(json.dumps(mine))
        mine["spec"]["renewTime"] = "2025-01-01T00:00:02.000000Z"
        renewed = self.api.put(f"{path}/operator", mine)
        self.assertEqual(renewed.status, 200)
        theirs["spec"]["holderIdentity"] = "replica-b"
        theirs["spec"]["leaseTransitions"] = 1
        self.assertStatus(self.api.put(f"{path}/operator", theirs), 409, "Conflict")
        self.assertEqual(self.api.get(f"{path}/operator").json["spec"]["holderIdentity"],
                         "replica-a")
        # MicroTime fields: six fractional digits, as a real server's decoder insists
        bad = lease("other", "replica-a")
        bad["spec"]["renewTime"] = "2025-01-01T00:00:00Z"
        r = self.api.post(path, bad)
        self.assertStatus(r, 400, "BadRequest")
        self.assertIn("spec.renewTime", r.json["message"])

    def test_merge_json_and_strategic_patches(self):
        self.created(self.widgets(), widget("a", tags=["x"], title="abc"))
        r = self.api.patch(self.widgets("a"), {"spec": {"title": None, "size": 5}})
        self.assertNotIn("title", r.json["spec"])
        r = self.api.patch(self.widgets("a"), [
            {"op": "test", "path": "/spec/size", "value": 5},
            {"op": "add", "path": "/spec/tags/-", "value": "y"},
            {"op": "replace", "path": "/spec/size", "value": 6}],
            content_type="application/json-patch+json")
        self.assertEqual(r.json["spec"]["tags"], ["x", "y"])
        self.assertEqual(r.json["spec"]["size"], 6)
        r = self.api.patch(self.widgets("a"), [{"op": "test", "path": "/spec/size", "value": 1}],
                           content_type="application/json-patch+json")
        self.assertEqual(r.status, 422, r)
        r = self.api.patch(self.widgets("a"), {"spec": {}},
                           content_type="application/strategic-merge-patch+json")
        self.assertStatus(r, 415, "UnsupportedMediaType")
        # strategic merge on a built-in: containers merge by name, $patch: delete removes
        p = pod("p")
        p["spec"]["containers"].append({"name": "side", "image": "busybox:1"})
        self.created(self.core("pods"), p)
        r = self.api.patch(self.core("pods", "p"), {"spec": {"containers": [
            {"name": "main", "image": "edgetrain-agent:v2"}]}},
            content_type="application/strategic-merge-patch+json")
        self.assertEqual(r.status, 200, r)
        self.assertEqual([(c["name"], c["image"]) for c in r.json["spec"]["containers"]],
                         [("main", "edgetrain-agent:v2"), ("side", "busybox:1")])
        d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
             "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                 "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
                     {"name": "x", "image": "i"}, {"name": "y", "image": "j"}]}}}}
        self.created(f"/apis/apps/v1/namespaces/{self.ns}/deployments", d)
        r = self.api.patch(f"/apis/apps/v1/namespaces/{self.ns}/deployments/d",
                           {"spec": {"template": {"spec": {
                               "$setElementOrder/containers": [{"name": "x"}],
                               "containers": [{"$patch": "delete", "name": "y"}]}}}},
                           content_type="application/strategic-merge-patch+json")
        self.assertEqual([c["name"] for c in r.json["spec"]["template"]["spec"]["containers"]],
                         ["x"])
        self.assertEqual(r.json["metadata"]["generation"], 2)
        # service ports merge by port; defaults apply to what a patch adds
        svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
               "spec": {"ports": [{"name": "m", "port": 9090}]}}
        self.assertEqual(self.created(self.core("services"), svc)["spec"]["ports"],
                         [{"name": "m", "port": 9090, "protocol": "TCP", "targetPort": 9090}])
        r = self.api.patch(self.core("services", "s"), {"spec": {
            "$setElementOrder/ports": [{"port": 9091}],
            "ports": [{"name": "m", "port": 9091}, {"$patch": "delete", "port": 9090}]}},
            content_type="application/strategic-merge-patch+json")
        self.assertEqual(r.json["spec"]["ports"],
                         [{"name": "m", "port": 9091, "protocol": "TCP", "targetPort": 9091}])

    def test_events_are_one_store_seen_through_two_groups(self):
        new_api = f"/apis/events.k8s.io/v1/namespaces/{self.ns}/events"
        ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
              "metadata": {"name": "job.placed"}, "eventTime": "2025-01-01T00:00:00.000000Z",
              "regarding": {"kind": "TrainingJob", "name": "job", "namespace": self.ns},
              "reason": "Placed", "note": "4 workers placed", "type": "Normal",
              "action": "Place", "reportingController": "edgetrain.dev/operator",
              "reportingInstance": "operator-0"}
        created = self.created(new_api, ev)
        self.assertEqual(created["regarding"]["name"], "job")
        core = self.api.get(self.core("events", "job.placed")).json
        self.assertEqual(core["apiVersion"], "v1")
        self.assertEqual(core["involvedObject"]["name"], "job")
        self.assertEqual(core["message"], "4 workers placed")
        self.assertEqual(core["reportingComponent"], "edgetrain.dev/operator")
        found = self.api.get(self.core("events"), fieldSelector="involvedObject.name=job").json
        self.assertEqual(len(found["items"]), 1)
        found = self.api.get(new_api, fieldSelector="regarding.name=job").json
        self.assertEqual(found["items"][0]["note"], "4 workers placed")
        r = self.api.patch(f"{new_api}/job.placed", {"note": "5 workers placed"})
        self.assertEqual(r.json["note"], "5 workers placed")
        self.assertEqual(self.api.get(self.core("events", "job.placed")).json["message"],
                         "5 workers placed")

    def test_scale_subresource_and_workload_selectors(self):
        deployments = f"/apis/apps/v1/namespaces/{self.ns}/deployments"
        d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
             "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                 "metadata": {"labels": {"a": "c"}}, "spec": {"containers": [
                     {"name": "x", "image": "i"}]}}}}
        r = self.api.post(deployments, d)
        self.assertStatus(r, 422, "Invalid")
        self.assertIn("`selector` does not match template `labels`", r.json["message"])
        d["spec"]["template"]["metadata"]["labels"] = {"a": "b"}
        created = self.created(deployments, d)
        scale = self.api.get(f"{deployments}/d/scale").json
        self.assertEqual((scale["apiVersion"], scale["kind"]), ("autoscaling/v1", "Scale"))
        self.assertEqual((scale["spec"]["replicas"], scale["status"]["selector"]), (1, "a=b"))
        self.assertEqual(scale["metadata"]["resourceVersion"],
                         created["metadata"]["resourceVersion"])
        r = self.api.patch(f"{deployments}/d/scale", {"spec": {"replicas": 4}})
        self.assertEqual(r.json["spec"]["replicas"], 4, r)
        live = self.api.get(f"{deployments}/d").json
        self.assertEqual((live["spec"]["replicas"], live["metadata"]["generation"]), (4, 2))
        stale = dict(scale, spec={"replicas": 2})
        self.assertStatus(self.api.put(f"{deployments}/d/scale", stale), 409, "Conflict")
        self.assertStatus(self.api.patch(f"{deployments}/d/scale", {"spec": {"replicas": -1}}),
                          422, "Invalid")
        r = self.api.patch(f"{deployments}/d", {"spec": {"selector": {"matchLabels": {"a": "z"}},
                                                         "template": {"metadata": {
                                                             "labels": {"a": "z"}}}}})
        self.assertStatus(r, 422, "Invalid")
        self.assertIn("field is immutable", r.json["message"])
        self.assertStatus(self.api.get(f"/api/v1/namespaces/{self.ns}/configmaps/x/scale"), 404)
        subresources = {r["name"]: r for r in self.api.get("/apis/apps/v1").json["resources"]}
        self.assertEqual({k: subresources["deployments/scale"][k] for k in ("group", "version",
                                                                            "kind")},
                         {"group": "autoscaling", "version": "v1", "kind": "Scale"})

    def test_patch_naming_a_stale_resource_version_conflicts(self):
        w = self.created(self.widgets(), widget("a"))
        self.api.patch(self.widgets("a"), {"spec": {"size": 2}})
        r = self.api.patch(self.widgets("a"), {"metadata": {"resourceVersion":
                                                            w["metadata"]["resourceVersion"]},
                                               "spec": {"size": 4}})
        self.assertStatus(r, 409, "Conflict")

    def test_concurrent_patches_are_all_applied(self):
        self.created(self.core("configmaps"), configmap("c"))

        def writer(i):
            c = self.server.client()
            for j in range(10):
                c.patch(self.core("configmaps", "c"), {"data": {f"k{i}-{j}": "v"}})
            c.close()
        threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(self.api.get(self.core("configmaps", "c")).json["data"]), 40)

    def test_dry_run_does_not_persist(self):
        r = self.api.post(self.widgets(), widget("a"), dryRun="All")
        self.assertEqual(r.status, 201)
        self.assertEqual(r.json["spec"]["color"], "red")
        self.assertStatus(self.api.get(self.widgets("a")), 404)

    def test_object_meta_validation(self):
        cases = [({"labels": {"app": "x" * 64}}, "metadata.labels"),
                 ({"labels": {"bad key!": "v"}}, "name part must consist of"),
                 ({"finalizers": ["cleanup"]}, "neither a standard finalizer name"),
                 ({"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p"}]},
                  "metadata.ownerReferences[0].uid"),
                 ({"ownerReferences": [
                     {"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": "1",
                      "controller": True},
                     {"apiVersion": "v1", "kind": "Pod", "name": "b", "uid": "2",
                      "controller": True}]}, "Only one reference can have Controller")]
        for meta, fragment in cases:
            with self.subTest(fragment=fragment):
                body = configmap("c")
                body["metadata"].update(meta)
                r = self.api.post(self.core("configmaps"), body)
                self.assertStatus(r, 422, "Invalid")
                self.assertIn(fragment, r.json["message"])
        ok = configmap("c", labels={"edgetrain.dev/job": "fashion-mlp", "empty": ""})
        ok["metadata"]["finalizers"] = ["edgetrain.dev/pods"]
        self.created(self.core("configmaps"), ok)

    def test_generate_name_and_name_validation(self):
        body = configmap("")
        body["metadata"] = {"generateName": "job-"}
        r = self.created(self.core("configmaps"), body)
        self.assertRegex(r["metadata"]["name"], r"^job-[a-z0-9]{5}$")
        self.assertStatus(self.api.post(self.core("configmaps"), configmap("Bad_Name")), 422,
                          "Invalid")
        # A name that ends in a newline (a YAML block scalar) is refused as the API
        # server refuses it: created, it could not be deleted by its URL (a user's trial).
        self.assertStatus(self.api.post(self.core("configmaps"), configmap("digits-cnn\n")), 422,
                          "Invalid")
        self.assertStatus(self.api.post("/api/v1/namespaces/nope/configmaps", configmap("a")),
                          404, "NotFound")


class Selectors(StandinTestCase):
    def test_10_field_selectors(self):
        self.created(self.widgets(), widget("a", color="blue"))
        self.created(self.widgets(), widget("b"))
        names = lambda r: [o["metadata"]["name"] for o in r.json["items"]]  # noqa: E731
        self.assertEqual(names(self.api.get(self.widgets(), fieldSelector="metadata.name=b")),
                         ["b"])
        self.assertEqual(names(self.api.get(self.widgets(),
                                            fieldSelector=f"metadata.namespace={self.ns}")),
                         ["a", "b"])
        # the CRD declares spec.color selectable
        self.assertEqual(names(self.api.get(self.widgets(), fieldSelector="spec.color!=red")),
                         ["a"])
        r = self.api.get(self.widgets(), fieldSelector="spec.size=3")
        self.assertStatus(r, 400, "BadRequest")
        self.assertIn("field label not supported: spec.size", r.json["message"])
        self.created(self.core("pods"), pod("p1", node_name="n1"))
        self.created(self.core("pods"), pod("p2", node_name="n2"))
        self.created(self.core("pods"), pod("p3"))
        self.assertEqual(names(self.api.get(self.core("pods"), fieldSelector="spec.nodeName=n1")),
                         ["p1"])
        self.assertEqual(names(self.api.get("/api/v1/pods",
                                            fieldSelector=f"spec.nodeName=,metadata.namespace="
                                                          f"{self.ns}")), ["p3"])
        self.assertEqual(names(self.api.get(self.core("pods"),
                                            fieldSelector="status.phase=Pending")),
                         ["p1", "p2", "p3"])
        self.assertStatus(self.api.get(self.core("configmaps"), fieldSelector="data.x=1"), 400)

    def test_label_selectors(self):
        for name, labels in (("a", {"app": "x", "tier": "1"}), ("b", {"app": "y"}),
                             ("c", {"tier": "2"})):
            self.created(self.core("configmaps"), configmap(name, labels=labels))
        cases = {"app=x": ["a"], "app!=x": ["b", "c"], "app in (x,y)": ["a", "b"],
                 "tier notin (1)": ["b", "c"], "app": ["a", "b"], "!app": ["c"],
                 "app,tier": ["a"], "app==y": ["b"]}
        for sel, want in cases.items():
            with self.subTest(sel=sel):
                r = self.api.get(self.core("configmaps"), labelSelector=sel)
                self.assertEqual([o["metadata"]["name"] for o in r.json["items"]], want)


class GarbageCollectionEmulation(StandinTestCase):
    def _owned_pod(self, name, owner, block=False):
        p = pod(name)
        p["metadata"]["ownerReferences"] = [{
            "apiVersion": "test.standin.dev/v1", "kind": "Widget",
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": block}]
        return self.created(self.core("pods"), p)

    def gone(self, path):
        return wait_until(lambda: self.api.get(path).status == 404)

    def test_9_background_deletion_removes_dependents(self):
        owner = self.created(self.widgets(), widget("job"))
        self._owned_pod("w0", owner)
        self._owned_pod("w1", owner)
        self.created(self.core("pods"), pod("unrelated"))
        self.api.delete(self.widgets("job"), {"propagationPolicy": "Background"})
        self.assertTrue(self.gone(self.core("pods", "w0")))
        self.assertTrue(self.gone(self.core("pods", "w1")))
        self.assertEqual(self.api.get(self.core("pods", "unrelated")).status, 200)

    def test_9_orphan_and_foreground_propagation(self):
        owner = self.created(self.widgets(), widget("a"))
        self._owned_pod("kept", owner)
        r = self.api.delete(self.widgets("a"), {"propagationPolicy": "Orphan"})
        self.assertIn("orphan", r.json["metadata"]["finalizers"])
        self.assertTrue(self.gone(self.widgets("a")))
        kept = self.api.get(self.core("pods", "kept")).json
        self.assertEqual(kept["metadata"].get("ownerReferences", []), [])

        owner = self.created(self.widgets(), widget("b"))
        self._owned_pod("blocker", owner, block=True)
        r = self.api.delete(self.widgets("b"), {"propagationPolicy": "Foreground"})
        self.assertIn("foregroundDeletion", r.json["metadata"]["finalizers"])
        self.assertTrue(self.gone(self.core("pods", "blocker")))
        self.assertTrue(self.gone(self.widgets("b")))

    def test_namespace_deletion_empties_then_removes_it(self):
        self.created(self.core("configmaps"), configmap("c"))
        self.created(self.widgets(), widget("w"))
        r = self.api.delete(f"/api/v1/namespaces/{self.ns}")
        self.assertEqual(r.json["status"]["phase"], "Terminating")
        self.assertTrue(self.gone(f"/api/v1/namespaces/{self.ns}"))
        self.assertEqual(self.api.get(self.core("configmaps")).json["items"], [])


class Discovery(StandinTestCase):
    def test_version_health_and_legacy_discovery(self):
        v = self.api.get("/version").json
        self.assertEqual((v["major"], v["minor"]), ("1", "32"))
        for p in ("/healthz", "/livez", "/readyz"):
            self.assertEqual(self.api.get(p).raw, b"ok")
        self.assertEqual(self.api.get("/api").json["versions"], ["v1"])
        groups = {g["name"] for g in self.api.get("/apis").json["groups"]}
        self.assertTrue({"apps", "coordination.k8s.io", "apiextensions.k8s.io",
                         "test.standin.dev"} <= groups)
        rl = self.api.get("/apis/test.standin.dev/v1").json
        names = {r["name"]: r for r in rl["resources"]}
        self.assertEqual(names["widgets"]["shortNames"], ["wd"])
        self.assertIn("widgets/status", names)
        self.assertIn("nodes", {r["name"] for r in self.api.get("/api/v1").json["resources"]})

    def test_aggregated_discovery_needs_the_exact_media_type(self):
        accept = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                  "application/json")
        r = self.api.request("GET", "/apis", headers={"Accept": accept})
        self.assertEqual(r.header("Content-Type"),
                         "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
        self.assertEqual(r.json["kind"], "APIGroupDiscoveryList")
        widgets = [res for g in r.json["items"] if g["metadata"]["name"] == "test.standin.dev"
                   for v in g["versions"] for res in v["resources"]]
        self.assertEqual(widgets[0]["resource"], "widgets")
        self.assertEqual(widgets[0]["subresources"][0]["subresource"], "status")
        core = self.api.request("GET", "/api", headers={"Accept": accept}).json
        self.assertEqual(core["items"][0]["metadata"]["name"], "")
        self.assertEqual(self.api.get("/apis").json["kind"], "APIGroupList")

    def test_openapi_v3_index_and_documents(self):
        idx = self.api.get("/openapi/v3").json["paths"]
        url = idx["apis/test.standin.dev/v1"]["serverRelativeURL"]
        self.assertIn("?hash=", url)
        doc = self.api.get(url).json
        patch = doc["paths"]["/apis/test.standin.dev/v1/namespaces/{namespace}/widgets/{name}"][
            "patch"]
        self.assertEqual(patch["x-kubernetes-group-version-kind"]["kind"], "Widget")
        self.assertIn("fieldValidation", [p["name"] for p in patch["parameters"]])
        # A custom resource's patch offers no strategic merge patch, as a real
        # server's does not: kubectl then sends a merge patch, without a warning.
        self.assertNotIn("application/strategic-merge-patch+json", patch["requestBody"]["content"])
        self.assertIn("application/merge-patch+json", patch["requestBody"]["content"])
        # v2 is served, with no schemas: kubectl falls back to it for a kind v3
        # does not know, and says "no matches for kind" as against a real server.
        v2 = self.api.get("/openapi/v2")
        self.assertEqual(v2.status, 200)
        self.assertEqual(v2.json["swagger"], "2.0")
        self.assertEqual(v2.json["definitions"], {})


    def test_tables_for_kubectl_get(self):
        w = widget("a", size=7, color="green")
        self.created(self.widgets(), w)
        self.api.patch(self.widgets("a") + "/status", {"status": {"conditions": [
            {"type": "Ready", "status": "True"}]}})
        accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        r = self.api.request("GET", self.widgets(), headers={"Accept": accept})
        self.assertEqual(r.json["kind"], "Table")
        cols = [c["name"] for c in r.json["columnDefinitions"]]
        self.assertEqual(cols, ["Name", "Size", "Color", "Ready", "Age"])
        cells = r.json["rows"][0]["cells"]
        self.assertEqual(cells[:4], ["a", 7, "green", "True"])
        self.assertRegex(cells[4], r"^\d+s$")
        self.assertEqual(r.json["rows"][0]["object"]["kind"], "PartialObjectMetadata")
        self.created("/api/v1/nodes", node(f"{self.ns}-n"))
        r = self.api.request("GET", f"/api/v1/nodes/{self.ns}-n", headers={"Accept": accept})
        self.assertEqual([c["name"] for c in r.json["columnDefinitions"]][:5],
                         ["Name", "Status", "Roles", "Age", "Version"])
        self.assertEqual(r.json["rows"][0]["cells"][1], "Ready")
        # a watch in table form: column definitions in the first event only
        rv = self.api.get(self.widgets()).json["metadata"]["resourceVersion"]
        tw = self.api.watch(self.widgets(), accept=accept, resourceVersion=rv, timeoutSeconds=5)
        self.api.patch(self.widgets("a"), {"spec": {"size": 8}})
        self.api.patch(self.widgets("a"), {"spec": {"size": 9}})
        first, second = tw.events(2)
        self.assertEqual(first["object"]["kind"], "Table")
        self.assertTrue(first["object"]["columnDefinitions"])
        self.assertFalse(second["object"]["columnDefinitions"])
        self.assertEqual(second["object"]["rows"][0]["cells"][1], 9)

    def test_protobuf_only_is_refused_json_preferred(self):
        self.created(self.widgets(), widget("a"))
        r = self.api.request("GET", self.widgets("a"), headers={
            "Accept": "application/vnd.kubernetes.protobuf,application/json"})
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["kind"], "Widget")
        r = self.api.request("GET", self.widgets("a"), headers={
            "Accept": "application/vnd.kubernetes.protobuf"})
        self.assertEqual(r.status, 406)


    def test_protobuf_delete_options_are_decoded(self):
        # client-go's typed clients (Helm's storage driver deleting its release Secrets)
        # send DeleteOptions as protobuf in a runtime.Unknown envelope.
        def varint(n):
            n &= (1 << 64) - 1
            out = b""
            while True:
                b, n = n & 0x7F, n >> 7
                if n:
                    out += bytes([b | 0x80])
                else:
                    return out + bytes([b])

        def field(num, value):
            if isinstance(value, int):
                return varint(num << 3) + varint(value)
            value = value.encode() if isinstance(value, str) else value
            return varint(num << 3 | 2) + varint(len(value)) + value

        def delete_options(uid=None, dry_run=False, policy="Background", grace=None):
            raw = b""
            if grace is not None:
                raw += field(1, grace)
            if uid is not None:
                raw += field(2, field(1, uid))
            raw += field(4, policy)
            if dry_run:
                raw += field(5, "All")
            type_meta = field(1, "meta.k8s.io/v1") + field(2, "DeleteOptions")
            return b"k8s\x00" + field(1, type_meta) + field(2, raw)

        uid = self.created(self.core("configmaps"), {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})["metadata"]["uid"]
        pb = "application/vnd.kubernetes.protobuf"
        r = self.api.request("DELETE", self.core("configmaps", "a"), delete_options(uid="not-" + uid),
                             content_type=pb)
        self.assertStatus(r, 409, "Conflict")
        self.assertIn("Precondition failed", r.json["message"])
        r = self.api.request("DELETE", self.core("configmaps", "a"), delete_options(uid=uid, dry_run=True),
                             content_type=pb)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.api.get(self.core("configmaps", "a")).status, 200, "dry run kept it")
        r = self.api.request("DELETE", self.core("configmaps", "a"), delete_options(uid=uid, grace=-1),
                             content_type=pb)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.api.get(self.core("configmaps", "a")).status, 404)
        # any other kind is still refused, saying what is decoded
        r = self.api.request("POST", self.core("services"), b"k8s\x00" + field(1, field(2, "Service")),
                             content_type=pb)
        self.assertStatus(r, 415, "UnsupportedMediaType")
        self.assertIn("DeleteOptions", r.json["message"])


class Hooks(StandinTestCase):
    install_widgets = False

    def test_pause_holds_requests_until_resume(self):
        self.api.hook("pause")
        result = {}

        def call():
            c = self.server.client()
            result["r"] = c.get(self.core("configmaps"))
            c.close()
        t = threading.Thread(target=call)
        t.start()
        t.join(0.3)
        self.assertTrue(t.is_alive(), "a request completed while paused")
        self.assertTrue(self.api.hook("info", method="GET").json["paused"])
        self.api.hook("resume")
        t.join(5)
        self.assertEqual(result["r"].status, 200)

    def test_latency_injection(self):
        self.api.hook("latency", ms="150")
        try:
            t0 = time.monotonic()
            self.api.get(self.core("configmaps"))
            slow = time.monotonic() - t0
        finally:
            self.api.hook("latency", ms="0")
        self.assertGreaterEqual(slow, 0.15)
        self.assertEqual(self.api.hook("info", method="GET").json["latencyMs"], 0)

    def test_wait_watches_synchronises_on_open_streams(self):
        self.assertEqual(self.api.hook("wait-watches", method="GET", count=1,
                                       resource="configmaps", timeoutSeconds="0.2").status, 504)
        opened = self.api.hook("info", method="GET").json["opened"].get("configmaps", 0)
        w = self.api.watch(self.core("configmaps"), timeoutSeconds=5)
        r = self.api.hook("wait-watches", method="GET", count=1, resource="configmaps")
        self.assertEqual(r.status, 200)
        r = self.api.hook("wait-watches", method="GET", opened=opened + 1, resource="configmaps")
        self.assertEqual(r.status, 200)
        w.close()
        # the server notices the client went away and frees the watch
        r = self.api.hook("wait-watches", method="GET", opened=opened + 2, resource="configmaps",
                          timeoutSeconds="0.2")
        self.assertEqual(r.status, 504)
        self.assertTrue(wait_until(lambda: self.api.hook("info", method="GET")
                                   .json["watches"] == 0, timeout=5))


RBAC_V1 = "/apis/rbac.authorization.k8s.io/v1"


class Rbac(StandinTestCase):
    """RBAC as the real authorizer decides it, for tokens of service accounts; the admin
    token (the client every other test uses) is a cluster-admin."""
    install_widgets = False

    def account(self, name="app", ns=None):
        """A new ServiceAccount of the test's namespace, and a client holding a token of
        it from the TokenRequest API."""
        ns = ns or self.ns
        self.created(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": name}})
        r = self.api.post(f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token",
                          {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["kind"], "TokenRequest")
        self.assertEqual(r.json["spec"]["expirationSeconds"], 3600)
        self.assertRegex(r.json["status"]["expirationTimestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        client = self.server.client(token=r.json["status"]["token"])
        self.addCleanup(client.close)
        return client

    def grant(self, name, rules, ns=None):
        """A Role in ns, or a ClusterRole without one, with these rules."""
        path = f"{RBAC_V1}/namespaces/{ns}/roles" if ns else f"{RBAC_V1}/clusterroles"
        self.created(path, {"metadata": {"name": name}, "rules": rules})
        if not ns:
            self.addCleanup(self.api.delete, f"{path}/{name}")

    def bind(self, name, role_kind, role, subjects, ns=None):
        """A RoleBinding in ns, or a ClusterRoleBinding without one."""
        path = f"{RBAC_V1}/namespaces/{ns}/rolebindings" if ns else f"{RBAC_V1}/clusterrolebindings"
        self.created(path, {"metadata": {"name": name}, "subjects": subjects,
                            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role}})
        if not ns:
            self.addCleanup(self.api.delete, f"{path}/{name}")

    def other_namespace(self):
        other = self.ns + "-b"
        self.created("/api/v1/namespaces", {"metadata": {"name": other}})
        return other

    def sa(self, name="app"):
        return {"kind": "ServiceAccount", "name": name, "namespace": self.ns}

    def test_refused_with_the_real_servers_message_and_status(self):
        app = self.account()
        user = f"system:serviceaccount:{self.ns}:app"
        r = app.get(self.core("pods"))
        self.assertStatus(r, 403, "Forbidden")
        self.assertEqual(r.json["message"], f'pods is forbidden: User "{user}" cannot list resource "pods" '
                                            f'in API group "" in the namespace "{self.ns}"')
        self.assertEqual(r.json["details"], {"kind": "pods"})
        r = app.get(self.core("pods", "p1") + "/log")
        self.assertEqual(r.json["message"], f'pods "p1" is forbidden: User "{user}" cannot get resource "pods/log" '
                                            f'in API group "" in the namespace "{self.ns}"')
        self.assertEqual(r.json["details"], {"kind": "pods", "name": "p1"})
        r = app.get("/apis/apps/v1/deployments", watch="true")
        self.assertEqual(r.json["message"], f'deployments.apps is forbidden: User "{user}" cannot watch resource '
                                            f'"deployments" in API group "apps" at the cluster scope')
        self.assertEqual(r.json["details"], {"kind": "deployments", "group": "apps"})
        r = app.delete(self.core("configmaps"))
        self.assertIn('cannot deletecollection resource "configmaps"', r.json["message"])
        # refused before routing: a resource that does not exist is no 404 to it
        self.assertIn('cannot list resource "nothings"', app.get(self.core("nothings")).json["message"])
        # discovery is every authenticated user's (the bootstrap system:discovery)
        self.assertEqual(app.get("/api").status, 200)
        self.assertEqual(app.get("/apis/apps/v1").status, 200)
        r = app.get("/metrics")
        self.assertStatus(r, 403, "Forbidden")
        self.assertEqual(r.json["message"], f'forbidden: User "{user}" cannot get path "/metrics"')
        # the admin's requests are not recorded; the account's are, each once with a count
        records = self.api.hook("authorizations", method="GET", user=user).json["decisions"]
        self.assertIn({"verb": "list", "apiGroup": "", "resource": "pods", "subresource": "",
                       "namespace": self.ns, "name": "", "allowed": False, "count": 1}, records)
        self.assertIn({"verb": "get", "nonResourceURL": "/api", "allowed": True, "count": 1}, records)
        self.assertNotIn("system:admin", self.api.hook("authorizations", method="GET").json["users"])

    def test_a_role_grants_its_verbs_and_resources_in_its_namespace_only(self):
        app = self.account()
        other = self.other_namespace()
        self.grant("reader", [{"apiGroups": [""], "resources": ["configmaps", "pods/log"], "verbs": ["get", "list"]}],
                   ns=self.ns)
        self.bind("reader", "Role", "reader", [self.sa()], ns=self.ns)
        self.created(self.core("configmaps"), configmap("c1"))
        self.assertEqual(app.get(self.core("configmaps")).status, 200)
        self.assertEqual(app.get(self.core("configmaps", "c1")).status, 200)
        self.assertEqual(app.get(self.core("configmaps"), watch="true").status, 403, "watch is a verb of its own")
        self.assertEqual(app.post(self.core("configmaps"), configmap("c2")).status, 403)
        self.assertEqual(app.get(self.core("pods", "p1")).status, 403, "pods/log is not pods")
        self.assertEqual(app.get(self.core("pods", "p1") + "/log").status, 404, "allowed, and there is no p1")
        self.assertEqual(app.get(f"/api/v1/namespaces/{other}/configmaps").status, 403)
        self.assertEqual(app.get("/api/v1/configmaps").status, 403, "every namespace is the cluster scope")

    def test_a_cluster_role_applies_where_it_is_bound(self):
        app = self.account()
        other = self.other_namespace()
        self.grant(f"{self.ns}-lister", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}])
        # by a RoleBinding: in that namespace only
        self.bind("lister", "ClusterRole", f"{self.ns}-lister", [self.sa()], ns=self.ns)
        self.assertEqual(app.get(self.core("secrets")).status, 200)
        self.assertEqual(app.get(f"/api/v1/namespaces/{other}/secrets").status, 403)
        # by a ClusterRoleBinding, to a group the account is in: everywhere
        self.bind(f"{self.ns}-lister", "ClusterRole", f"{self.ns}-lister",
                  [{"kind": "Group", "name": f"system:serviceaccounts:{self.ns}"}])
        self.assertEqual(app.get(f"/api/v1/namespaces/{other}/secrets").status, 200)
        self.assertEqual(app.get("/api/v1/secrets").status, 200)

    def test_resource_names_wildcards_and_subresources(self):
        app = self.account()
        self.grant("narrow", [
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["mine"], "verbs": ["get", "list"]},
            {"apiGroups": ["apps"], "resources": ["*"], "verbs": ["list"]},
            {"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["*"]}], ns=self.ns)
        self.bind("narrow", "Role", "narrow", [{"kind": "ServiceAccount", "name": "app"}], ns=self.ns)  # ns: the binding's
        for name in ("mine", "theirs"):
            self.created(self.core("configmaps"), configmap(name))
        self.assertEqual(app.get(self.core("configmaps", "mine")).status, 200)
        self.assertEqual(app.get(self.core("configmaps", "theirs")).status, 403)
        self.assertEqual(app.get(self.core("configmaps")).status, 403, "a list names no object")
        self.assertEqual(app.get(self.core("configmaps"), fieldSelector="metadata.name=mine").status, 200,
                         "a list of one object by name is authorized as that object")
        self.assertEqual(app.get(f"/apis/apps/v1/namespaces/{self.ns}/replicasets").status, 200)
        self.assertEqual(app.get(f"/apis/batch/v1/namespaces/{self.ns}/jobs").status, 403)
        self.assertEqual(app.get(self.core("pods", "p1") + "/status").status, 404, "any status, any verb")
        self.assertEqual(app.get(self.core("pods", "p1")).status, 403)

    def test_a_token_ends_with_its_service_account(self):
        app = self.account()
        self.grant("reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
                   ns=self.ns)
        self.bind("reader", "Role", "reader", [self.sa()], ns=self.ns)
        self.assertEqual(app.get(self.core("configmaps")).status, 200)
        self.assertEqual(self.api.delete(self.core("serviceaccounts", "app")).status, 200)
        self.assertStatus(app.get(self.core("configmaps")), 401, "Unauthorized")
        # a new account of the same name is another account: the old token stays dead
        self.created(self.core("serviceaccounts"), {"metadata": {"name": "app"}})
        self.assertEqual(app.get(self.core("configmaps")).status, 401)
        # and tokens are asked for accounts that exist, for at least 10 minutes
        r = self.api.post(self.core("serviceaccounts", "nobody") + "/token", {"spec": {}})
        self.assertStatus(r, 404, "NotFound")
        r = self.api.post(self.core("serviceaccounts", "app") + "/token", {"spec": {"expirationSeconds": 60}})
        self.assertStatus(r, 422, "Invalid")

    def test_self_subject_access_review_answers_for_the_caller(self):
        app = self.account()
        self.grant("reader", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}], ns=self.ns)
        self.bind("reader", "Role", "reader", [self.sa()], ns=self.ns)

        def can(client, verb, resource, ns):
            r = client.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
                "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "namespace": ns}}})
            self.assertEqual(r.status, 201, r)
            return r.json["status"]
        allowed = can(app, "list", "pods", self.ns)
        self.assertEqual(allowed, {"allowed": True, "reason": f'RBAC: allowed by RoleBinding "reader/{self.ns}" '
                                                              f'of Role "reader" to ServiceAccount "app/{self.ns}"'})
        self.assertFalse(can(app, "delete", "pods", self.ns)["allowed"])
        self.assertTrue(can(self.api, "delete", "pods", self.ns)["allowed"], "the admin may do anything")
        # a review is a question, not a request: nothing refused is recorded
        records = self.api.hook("authorizations", method="GET", user=f"system:serviceaccount:{self.ns}:app").json
        self.assertEqual([d for d in records["decisions"] if not d["allowed"]], [])


class OwnerReferencesPermissionEnforcement(StandinTestCase):
    """--enable-admission-plugins=OwnerReferencesPermissionEnforcement, as OpenShift runs
    it: an owner reference that blocks its owner's deletion needs `update` on the owner's
    finalizers (the operator's job objects carry such references)."""
    install_widgets = False
    server_args = ("--enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
    account, grant, bind, sa = Rbac.account, Rbac.grant, Rbac.bind, Rbac.sa

    def test_blocking_an_owners_deletion_needs_update_on_its_finalizers(self):
        app = self.account()
        user = f"system:serviceaccount:{self.ns}:app"
        owner = self.created(self.core("configmaps"), configmap("owner"))
        self.grant("maker", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}], ns=self.ns)
        self.bind("maker", "Role", "maker", [self.sa()], ns=self.ns)

        def child(name, block):
            made = configmap(name)
            made["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                                    "uid": owner["metadata"]["uid"], "controller": True,
                                                    "blockOwnerDeletion": block}]
            return app.post(self.core("configmaps"), made)

        self.assertEqual(child("free", False).status, 201, "a reference that blocks nothing needs nothing more")
        r = child("blocking", True)
        self.assertStatus(r, 403, "Forbidden")
        self.assertEqual(r.json["message"],
                         'configmaps "blocking" is forbidden: cannot set blockOwnerDeletion if an ownerReference '
                         f"refers to a resource you can't set finalizers on: User \"{user}\" cannot update resource "
                         f'"configmaps/finalizers" in API group "" in the namespace "{self.ns}"')
        self.grant("finalizer", [{"apiGroups": [""], "resources": ["configmaps/finalizers"], "verbs": ["update"]}],
                   ns=self.ns)
        self.bind("finalizer", "Role", "finalizer", [self.sa()], ns=self.ns)
        self.assertEqual(child("blocking", True).status, 201)
        records = self.api.hook("authorizations", method="GET", user=user).json["decisions"]
        check = {"verb": "update", "apiGroup": "", "resource": "configmaps", "subresource": "finalizers",
                 "namespace": self.ns, "name": "owner"}
        self.assertIn({**check, "allowed": False, "count": 1}, records)
        self.assertIn({**check, "allowed": True, "count": 1}, records)
        # the admin is a cluster-admin: never asked
        made = configmap("by-admin")
        made["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                                "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}]
        self.assertEqual(self.api.post(self.core("configmaps"), made).status, 201)


class TransportSecurity(unittest.TestCase):
    def test_tls_with_generated_ca_and_bearer_token(self):
        with Standin(tls=True) as s:
            self.assertTrue(s.url.startswith("https://127.0.0.1:"))
            good = s.client()
            self.assertEqual(good.get("/api/v1/namespaces").status, 200)
            bad = s.client(token="wrong")
            r = bad.get("/api/v1/namespaces")
            self.assertEqual(r.status, 401)
            self.assertEqual(r.json["reason"], "Unauthorized")
            self.assertEqual(bad.get("/healthz").status, 200)
            bad.close()
            # keep-alive: many requests, one connection
            for _ in range(20):
                good.get("/version")
            self.assertEqual(good.connections_opened, 1)
            good.close()
        self.assertEqual(s.returncode, 0)

    def test_serviceaccount_directory_for_in_cluster_clients(self):
        import os
        import tempfile
        d = tempfile.mkdtemp()
        with Standin("--serviceaccount-dir", d, tls=True) as s:
            def read(*path):
                with open(os.path.join(*path), "rb") as f:
                    return f.read()
            self.assertEqual(read(d, "token").decode(), s.token)
            self.assertEqual(read(d, "ca.crt"), read(s.ca_file))
            self.assertEqual(read(d, "namespace"), b"default")

    def test_starts_and_stops_cleanly(self):
        # How fast is printed, not asserted: on a machine busy with other
        # suites a start's time says more of the machine than of the stand-in.
        times = []
        for _ in range(3):
            with Standin() as s:
                times.append(s.startup_seconds)
            self.assertEqual(s.returncode, 0)
        print(f"\nstand-in: started in {min(times) * 1000:.0f} ms (best of 3)", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
