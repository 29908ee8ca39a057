"""Controller references, as kube-controller-manager's ControllerRefManager keeps them:
an object has at most one owner with `controller: true`; a controller adopts orphans its
selector matches, releases what it owns that the selector no longer matches, and never
touches what another controller owns."""

from apiserver.selectors import selector_matches


def controller_ref(owner):
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"],
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}


def controller_of(obj):
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def claim(client, plural, candidates, owner, adoptable=lambda obj: True):
    """The `candidates` (objects of the owner's namespace) that `owner` controls once
    orphans its selector matches are adopted and its own that it no longer matches are
    released, as written to the API."""
    uid = owner["metadata"]["uid"]
    selector = owner["spec"].get("selector")
    owned = []
    for obj in candidates:
        ref = controller_of(obj)
        matches = selector_matches(selector, obj["metadata"].get("labels"))
        md = obj["metadata"]
        if ref is not None and ref.get("uid") == uid:
            if matches:
                owned.append(obj)
            elif not md.get("deletionTimestamp"):
                client.mutate(plural, md["namespace"], md["name"], _release(uid))
        elif ref is None and matches and not md.get("deletionTimestamp") and adoptable(obj) \
                and not owner["metadata"].get("deletionTimestamp"):
            adopted = client.mutate(plural, md["namespace"], md["name"], _adopt(owner))
            if adopted is not None:
                owned.append(adopted)
    return owned


def _adopt(owner):
    def change(obj):
        if controller_of(obj) is not None:
            return False  # someone else was quicker
        obj["metadata"].setdefault("ownerReferences", []).append(controller_ref(owner))
    return change


def _release(uid):
    def change(obj):
        refs = obj["metadata"].get("ownerReferences") or []
        obj["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != uid]
    return change
