"""How the emulated kubelets and controllers reach the API: the REST layer called in
process (as apiserver/controllers.py does), so that what they write is validated,
versioned and watched like any client's write, without HTTP in between."""

import copy
import json
import sys
import threading
import time
import traceback
from datetime import datetime, timezone

from apiserver.errors import ApiError
from apiserver.store import Expired


def now_rfc3339():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text):
    """Seconds since the epoch of an RFC 3339 time (with or without microseconds)."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


GROUPS = {"deployments": ("apps", "v1"), "replicasets": ("apps", "v1"),
          "leases": ("coordination.k8s.io", "v1"), "storageclasses": ("storage.k8s.io", "v1")}


class LocalClient:
    def __init__(self, api):
        self.api = api
        self.store = api.store

    def rt(self, plural):
        group, version = GROUPS.get(plural, ("", "v1"))
        return self.api.registry.lookup(group, version, plural)

    def get(self, plural, ns, name):
        s = self.store.get(self.rt(plural).key, ns or "", name)
        return None if s is None else s.obj

    def list(self, plural, ns=None, label_selector="", field_selector=""):
        rt = self.rt(plural)
        if not label_selector and not field_selector:
            # Nothing to filter: straight from the store (the emulated controllers list
            # every node and pod each second, and the request path's filter was a good part
            # of what that cost).
            return [s.obj for s in self.store.list(rt.key, (ns or None) if rt.namespaced else None)[0]]
        params = {"labelSelector": [label_selector], "fieldSelector": [field_selector]}
        return [s.obj for s in self.api.list(rt, ns or "", params)[0]]

    def create(self, plural, ns, obj):
        return self.api.create(self.rt(plural), ns or "", json.dumps(obj).encode(), {})[0]

    def update(self, plural, obj, subresource=None):
        md = obj["metadata"]
        return self.api.update(self.rt(plural), md.get("namespace", ""), md["name"],
                               json.dumps(obj).encode(), {}, subresource)[0]

    def mutate(self, plural, ns, name, change, subresource=None):
        """Read-modify-write, retried on conflicts, as client-go's RetryOnConflict: `change`
        edits a copy in place and returns False when there is nothing to write. Returns the
        object written, or None (gone, or nothing to change)."""
        for _ in range(20):
            cur = self.get(plural, ns, name)
            if cur is None:
                return None
            new = copy.deepcopy(cur)
            if change(new) is False:
                return None
            try:
                return self.update(plural, new, subresource)
            except ApiError as e:
                if e.code == 404:
                    return None
                if e.code != 409:
                    raise
        raise ApiError(409, "Conflict", f"{plural}/{name}: too many conflicting writes")

    def delete(self, plural, ns, name, grace_seconds=None, propagation=None, uid=None):
        body = {}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        if propagation:
            body["propagationPolicy"] = propagation
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            return self.api.delete(self.rt(plural), ns or "", name, json.dumps(body).encode(),
                                   {})[1]
        except ApiError as e:
            if e.code in (404, 409):
                return None  # gone already, or another incarnation of the name
            raise


class Loop(threading.Thread):
    """An emulated component's loop: follows the store's history for the kinds it
    `watches` (as an informer would; a fall out of the history window resyncs), and calls
    tick() at least every `period` seconds, for what is driven by time (heartbeats,
    grace periods, back-off). Exceptions are printed and the loop carries on."""

    watches = ()  # plurals

    def __init__(self, client, period, name):
        super().__init__(name=name, daemon=True)
        self.client = client
        self.store = client.store
        self.period = period
        self.stopping = threading.Event()
        self._keys = {client.rt(p).key for p in self.watches}

    def stop(self):
        self.stopping.set()
        self.store.wake_all()

    def resync(self):
        """Called first and after falling out of the history: read the world afresh."""

    def on_event(self, ev):
        pass

    def tick(self):
        pass

    def _guard(self, fn, *args):
        try:
            fn(*args)
        except Exception:
            print(f"{self.name}: internal error (carrying on):", file=sys.stderr)
            traceback.print_exc()

    def run(self):
        rv = self.store.revision
        self._guard(self.resync)
        next_tick = time.monotonic()
        while not self.stopping.is_set():
            now = time.monotonic()
            if now >= next_tick:
                self._guard(self.tick)
                next_tick = now + self.period
            try:
                events = self.store.wait_events(rv, max(0.0, next_tick - time.monotonic()),
                                                self.store.watch_epoch)
            except Expired:
                rv = self.store.revision
                self._guard(self.resync)
                continue
            for ev in events:
                rv = ev.rv
                if ev.key in self._keys and not self.stopping.is_set():
                    self._guard(self.on_event, ev)
            if events and not self.stopping.is_set():
                self._guard(self.after_events)

    def after_events(self):
        """Called once a batch of events has been handed to on_event."""


class Controller(Loop):
    """A Loop whose work is keyed, as a controller's work queue is: events `enqueue` keys,
    each queued key is reconciled once per batch of events however often it was queued,
    and `reconcile` returns None, or in how many seconds to look again at what only time
    changes (a rollout's deadline, a pod's minReadySeconds). The reconciler reads the world
    as it is and never remembers what it did; the queue mechanics are all here."""

    def __init__(self, client, period, name):
        super().__init__(client, period, name)
        self._queue = {}   # key -> None, in arrival order
        self._later = {}   # key -> monotonic time to look again

    def enqueue(self, key):
        self._queue[key] = None

    def enqueue_all(self, plural, ns=None):
        """(namespace, name) of every object of a kind, or of one namespace's."""
        for obj in self.client.list(plural, ns):
            self.enqueue((obj["metadata"]["namespace"], obj["metadata"]["name"]))

    def reconcile(self, key):
        raise NotImplementedError

    def resync(self):
        """Every object the controller owns, once: subclasses enqueue them all."""

    def after_events(self):
        self._drain()

    def tick(self):
        now = time.monotonic()
        for key, due in list(self._later.items()):
            if due <= now:
                del self._later[key]
                self.enqueue(key)
        self._drain()

    def _drain(self):
        while self._queue and not self.stopping.is_set():
            key = next(iter(self._queue))
            del self._queue[key]
            try:
                again = self.reconcile(key)
            except ApiError as e:
                if e.code not in (404, 409):
                    raise
                again = 0  # changed under us: look again at the next tick
            if again is not None:
                due = time.monotonic() + again
                self._later[key] = min(due, self._later.get(key, due))


def record_event(client, obj, etype, reason, message, component):
    """A core/v1 Event about `obj`, as `kubectl describe` lists them; repeats of the same
    event are counted on one object, as the event recorder does."""
    md = obj["metadata"]
    ns = md.get("namespace") or "default"
    name = f"{md['name']}.{abs(hash((md.get('uid'), reason, message))) % (1 << 40):x}"
    now = now_rfc3339()
    try:
        existing = client.get("events", ns, name)
        if existing is not None:
            existing["count"] = existing.get("count", 1) + 1
            existing["lastTimestamp"] = now
            client.update("events", existing)
            return
        client.create("events", ns, {
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": {"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"),
                               "namespace": md.get("namespace"), "name": md["name"],
                               "uid": md.get("uid")},
            "type": etype, "reason": reason, "message": message,
            "source": {"component": component}, "reportingComponent": component,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1})
    except ApiError:
        pass  # events are best effort, as on a real cluster
