"""Scale check: the stand-in takes 5,000 Nodes written by four clients at once over
keep-alive connections and lists them whole, as JSON and as a table; a watch sees
1,000 events in order. How fast is printed for the record, not asserted (a test
that times itself on a shared 2-core machine measures the machine):
bench/operator-scale is where the stand-in's and the operator's speed are judged."""

import sys
import threading
import time
import unittest

from base import StandinTestCase
from fixtures import configmap, node


class Scale(StandinTestCase):
    install_widgets = False

    def test_5000_nodes_written_at_once_list_whole_and_as_a_table(self):
        writers, per_writer = 4, 1250
        errors = []

        def register(w):
            c = self.server.client()
            for i in range(per_writer):
                n = node(f"edge-{w}-{i:04d}", labels={"edgetrain.dev/site": f"s{w}",
                                                      "kubernetes.io/hostname": f"edge-{w}-{i}"})
                n["metadata"]["annotations"] = {"edgetrain.dev/compute-score": "1.0",
                                                "edgetrain.dev/link-mbps": "54"}
                n["status"]["addresses"] = [{"type": "InternalIP", "address": f"10.1.{w}.{i % 250}"}]
                r = c.post("/api/v1/nodes", n)
                if r.status != 201:
                    errors.append(r)
            c.close()
        t0 = time.monotonic()
        threads = [threading.Thread(target=register, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        write_rate = writers * per_writer / (time.monotonic() - t0)
        self.assertEqual(errors, [])

        best = None
        for _ in range(3):
            t0 = time.monotonic()
            r = self.api.get("/api/v1/nodes")
            elapsed = time.monotonic() - t0
            best = elapsed if best is None else min(best, elapsed)
        self.assertEqual(len(r.json["items"]), 5000)
        accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        t0 = time.monotonic()
        table = self.api.request("GET", "/api/v1/nodes", headers={"Accept": accept})
        table_seconds = time.monotonic() - t0
        self.assertEqual(len(table.json["rows"]), 5000)
        print(f"\nscale: {write_rate:.0f} node creates/s; list 5000 nodes {best * 1000:.0f} ms "
              f"({len(r.raw) / 1e6:.1f} MB); as a table {table_seconds * 1000:.0f} ms",
              file=sys.stderr)

    def test_watch_delivers_1000_events_in_order(self):
        start = self.api.get(self.core("configmaps")).json["metadata"]["resourceVersion"]
        w = self.api.watch(self.core("configmaps"), resourceVersion=start, timeoutSeconds=60)
        t0 = time.monotonic()
        c = self.server.client()
        for i in range(500):
            c.post(self.core("configmaps"), configmap(f"c{i:03d}", n=str(i)))
        for i in range(500):
            c.patch(self.core("configmaps", f"c{i:03d}"), {"data": {"n": str(i + 1)}})
        c.close()
        events = w.events(1000, timeout=20)
        elapsed = time.monotonic() - t0
        w.close()
        self.assertEqual(len(events), 1000)
        self.assertEqual([e["type"] for e in events], ["ADDED"] * 500 + ["MODIFIED"] * 500)
        self.assertEqual([e["object"]["metadata"]["name"] for e in events[:500]],
                         [f"c{i:03d}" for i in range(500)])
        self.assertEqual([e["object"]["data"]["n"] for e in events[500:]],
                         [str(i + 1) for i in range(500)])
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
        self.assertEqual(rvs, sorted(set(rvs)), "strictly increasing resourceVersions")
        print(f"\nscale: 1000 watch events written and received in {elapsed * 1000:.0f} ms",
              file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
