"""EMULATION of controllers that run beside a real API server, not in it:

- kube-controller-manager's garbage collector: deletes dependents whose owners (by
  ownerReferences uid) are all gone; drops references to owners that are gone while
  others remain; honours the `orphan` and `foregroundDeletion` finalizers that
  DELETE with propagationPolicy Orphan/Foreground puts on the owner;
- kube-controller-manager's namespace controller: empties a Terminating namespace,
  then removes its `kubernetes` finalizer so the namespace goes away;
- apiextensions-apiserver's CRD finalizer: deletes every instance of a CRD being
  deleted, then releases the CRD.

They run as one thread that follows the store's event history like any watcher, and
act only through the REST layer, so every effect is an ordinary watch event.
"""

import copy
import json
import threading

from .crd import CLEANUP_FINALIZER
from .errors import ApiError
from .rest import FOREGROUND, NAMESPACE_FINALIZER, ORPHAN
from .store import Expired


def _ident(key, obj):
    md = obj["metadata"]
    return (key, md.get("namespace") or "", md["name"])


class ClusterControllers(threading.Thread):
    def __init__(self, api, store, registry):
        super().__init__(name="controllers-emulation", daemon=True)
        self.api, self.store, self.registry = api, store, registry
        self._stopping = threading.Event()
        self.live = {}          # uid -> (key, ns, name)
        self.refs = {}          # (key, ns, name) -> ownerReferences
        self.dependents = {}    # owner uid -> set of (key, ns, name)
        self._work = []

    def stop(self):
        self._stopping.set()
        self.store.wake_all()

    # -- following the history ---------------------------------------------------------

    def _resync(self):
        """Rebuilds the indexes from a full snapshot (at start, and after falling out of
        the history window)."""
        with self.store.cond:
            rv = self.store.revision
            snapshot = [(t.key, s.obj) for t in self.registry.all()
                        for s in self.store.list(t.key)[0]]
        self.live.clear()
        self.refs.clear()
        self.dependents.clear()
        for key, obj in snapshot:
            self._index(key, obj)
            self._triage(key, obj, None)
        return rv

    def run(self):
        rv = self._resync()
        while not self._stopping.is_set():
            try:
                events = self.store.wait_events(rv, 0.5, self.store.watch_epoch)
            except Expired:
                rv = self._resync()
                continue
            for ev in events:
                rv = ev.rv
                if ev.type == "DELETED":
                    self._unindex(ev.key, ev.obj)
                else:
                    self._index(ev.key, ev.obj)
                self._triage(ev.key, ev.obj, ev.type)
            while self._work and not self._stopping.is_set():
                item = self._work.pop(0)
                try:
                    item[0](*item[1:])
                except ApiError:
                    pass  # the object changed or vanished meanwhile; a later event retries

    def _index(self, key, obj):
        ident = _ident(key, obj)
        self.live[obj["metadata"].get("uid")] = ident
        old = self.refs.pop(ident, None) or []
        for r in old:
            self.dependents.get(r.get("uid"), set()).discard(ident)
        refs = obj["metadata"].get("ownerReferences") or []
        if refs:
            self.refs[ident] = refs
            for r in refs:
                self.dependents.setdefault(r.get("uid"), set()).add(ident)

    def _unindex(self, key, obj):
        ident = _ident(key, obj)
        self.live.pop(obj["metadata"].get("uid"), None)
        for r in self.refs.pop(ident, None) or []:
            self.dependents.get(r.get("uid"), set()).discard(ident)

    def _triage(self, key, obj, event_type):
        md = obj["metadata"]
        ident = _ident(key, obj)
        if event_type == "DELETED":
            for dep in list(self.dependents.get(md.get("uid"), ())):
                self._work.append((self._check_dependent, dep))
            for r in md.get("ownerReferences") or []:
                owner = self.live.get(r.get("uid"))
                if owner:
                    self._work.append((self._owner_deleting, owner))
            if md.get("namespace"):
                self._work.append((self._namespace, md["namespace"]))
            rt = self.registry.by_key(key)
            if rt is not None and rt.crd is not None:
                self._work.append((self._crd, rt.crd.name))
            return
        if md.get("ownerReferences"):
            self._work.append((self._check_dependent, ident))
        if md.get("deletionTimestamp"):
            fins = md.get("finalizers") or []
            if ORPHAN in fins or FOREGROUND in fins:
                self._work.append((self._owner_deleting, ident))
            if key == ("", "namespaces"):
                self._work.append((self._namespace, md["name"]))
            if key == ("apiextensions.k8s.io", "customresourcedefinitions"):
                self._work.append((self._crd, md["name"]))

    # -- actions -----------------------------------------------------------------------

    def _current(self, ident):
        key, ns, name = ident
        s = self.store.get(key, ns, name)
        return None if s is None else s.obj

    def _delete_object(self, ident, policy="Background"):
        key, ns, name = ident
        rt = self.registry.by_key(key)
        if rt is None:
            return
        body = json.dumps({"propagationPolicy": policy}).encode()
        try:
            self.api.delete(rt, ns, name, body, {})
        except ApiError as e:
            if e.code != 404:
                raise

    def _rewrite(self, ident, change):
        """Read-modify-write through the REST layer, retried on conflicts."""
        key, ns, name = ident
        rt = self.registry.by_key(key)
        for _ in range(10):
            cur = self._current(ident)
            if cur is None or rt is None:
                return
            new = copy.deepcopy(cur)
            if not change(new):
                return
            try:
                self.api.update(rt, ns, name, json.dumps(new).encode(), {})
                return
            except ApiError as e:
                if e.code != 409:
                    raise

    def _remove_finalizer(self, ident, finalizer):
        def change(o):
            fins = o["metadata"].get("finalizers") or []
            if finalizer not in fins:
                return False
            o["metadata"]["finalizers"] = [f for f in fins if f != finalizer]
            return True
        self._rewrite(ident, change)

    def _owner_alive(self, ref):
        ident = self.live.get(ref.get("uid"))
        if ident is None:
            return False
        cur = self._current(ident)
        return cur is not None and cur["metadata"].get("uid") == ref.get("uid")

    def _check_dependent(self, ident):
        obj = self._current(ident)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        refs = obj["metadata"].get("ownerReferences") or []
        alive = [r for r in refs if self._owner_alive(r)]
        if not alive:
            self._delete_object(ident)
        elif len(alive) < len(refs):
            keep = {r.get("uid") for r in alive}

            def change(o):
                o["metadata"]["ownerReferences"] = [
                    r for r in o["metadata"].get("ownerReferences") or [] if r.get("uid") in keep]
                return True
            self._rewrite(ident, change)

    def _owner_deleting(self, ident):
        owner = self._current(ident)
        if owner is None or not owner["metadata"].get("deletionTimestamp"):
            return
        uid = owner["metadata"]["uid"]
        fins = owner["metadata"].get("finalizers") or []
        deps = list(self.dependents.get(uid, ()))
        if ORPHAN in fins:
            for dep in deps:
                self._rewrite(dep, lambda o: _drop_owner(o, uid))
            self._remove_finalizer(ident, ORPHAN)
        elif FOREGROUND in fins:
            blocking = []
            for dep in deps:
                cur = self._current(dep)
                if cur is None:
                    continue
                if not cur["metadata"].get("deletionTimestamp"):
                    self._delete_object(dep, "Foreground")
                if self._current(dep) is not None and any(
                        r.get("uid") == uid and r.get("blockOwnerDeletion")
                        for r in cur["metadata"].get("ownerReferences") or []):
                    blocking.append(dep)
            if not blocking:
                self._remove_finalizer(ident, FOREGROUND)

    def _namespace(self, name):
        ns = self._current((("", "namespaces"), "", name))
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        remaining = 0
        for rt in self.registry.all():
            if not rt.namespaced or (rt.crd is not None and rt.version != rt.crd.storage_version):
                continue
            items, _ = self.store.list(rt.key, name)
            for s in items:
                remaining += 1
                if not s.obj["metadata"].get("deletionTimestamp"):
                    self._delete_object((rt.key, name, s.obj["metadata"]["name"]))
        if remaining == 0 and NAMESPACE_FINALIZER in (ns.get("spec") or {}).get("finalizers", []):
            fins = [f for f in ns["spec"]["finalizers"] if f != NAMESPACE_FINALIZER]
            try:
                self.api.finalize_namespace(name, json.dumps({"spec": {"finalizers": fins}})
                                            .encode())
            except Exception:
                pass  # changed meanwhile; its next event brings us back

    def _crd(self, name):
        crd = self._current((("apiextensions.k8s.io", "customresourcedefinitions"), "", name))
        if crd is None or not crd["metadata"].get("deletionTimestamp"):
            return
        rt = next((t for t in self.registry.custom_types() if t.crd.name == name), None)
        remaining = 0
        if rt is not None:
            items, _ = self.store.list(rt.key)
            for s in items:
                remaining += 1
                if not s.obj["metadata"].get("deletionTimestamp"):
                    md = s.obj["metadata"]
                    self._delete_object((rt.key, md.get("namespace") or "", md["name"]))
        if remaining == 0:
            self._remove_finalizer((("apiextensions.k8s.io", "customresourcedefinitions"), "",
                                    name), CLEANUP_FINALIZER)


def _drop_owner(obj, uid):
    refs = obj["metadata"].get("ownerReferences") or []
    kept = [r for r in refs if r.get("uid") != uid]
    if len(kept) == len(refs):
        return False
    obj["metadata"]["ownerReferences"] = kept
    return True
