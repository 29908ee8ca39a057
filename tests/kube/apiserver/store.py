"""Versioned object storage and the event history that watches read from.

The model is etcd's, as the API server exposes it: one cluster-wide revision counter;
every write gets the next revision, stored as the object's metadata.resourceVersion;
every write appends an event to a bounded history. A watch from revision X replays
the history after X; if X is older than what the history still holds, the watch gets
410 Expired and the client must relist (client-go's reflector does exactly that).

Stored objects are never mutated after they are stored: readers share them freely and
writers build new dicts. Each object's JSON encoding is cached with it, so a list of
thousands of objects is a join of byte strings.
"""

import bisect
import json
import threading
from dataclasses import dataclass
from operator import itemgetter


class Conflict(Exception):
    """The object changed (or vanished) since the caller read it."""


class Exists(Exception):
    pass


class Missing(Exception):
    pass


class Expired(Exception):
    def __init__(self, requested, oldest):
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested, self.oldest = requested, oldest


def encode(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class Stored:
    obj: dict
    raw: bytes
    rv: int


@dataclass(frozen=True)
class Event:
    rv: int
    key: tuple        # storage key of the resource type: (group, plural)
    type: str         # ADDED | MODIFIED | DELETED
    obj: dict         # the object after the change (the last state for DELETED)
    raw: bytes
    old: dict = None  # the object before the change (selectors need both)


def object_key(obj):
    md = obj.get("metadata", {})
    return (md.get("namespace") or "", md["name"])


class Store:
    def __init__(self, history_limit=20000):
        self.cond = threading.Condition()   # guards everything below
        self._tables = {}                   # storage key -> {(ns, name): Stored}
        self._rv = 1                        # a fresh cluster is already at some revision
        self._history = []                  # [Event] in revision order
        self._history_rvs = []              # their revisions, for bisect
        self._kept_after = 1                # every event after this revision is kept
        self._compacted = 1                 # new watches/continues need a revision >= this
        self._history_limit = history_limit
        self.watch_epoch = 0                # bumped to make every open watch end

    # -- reads -------------------------------------------------------------------------

    @property
    def revision(self):
        with self.cond:
            return self._rv

    def get(self, key, ns, name):
        with self.cond:
            return self._tables.get(key, {}).get((ns or "", name))

    def list(self, key, ns=None):
        """A consistent snapshot: the objects sorted by (namespace, name) and the
        revision they are current at."""
        with self.cond:
            table = self._tables.get(key, {})
            if ns:
                keyed = [(k, s) for k, s in table.items() if k[0] == ns]
            else:
                keyed = list(table.items())
            rv = self._rv
        # By the table's own keys, which are each object's (namespace, name): reading them
        # out of every object again was a good part of a list of thousands.
        keyed.sort(key=itemgetter(0))
        return [s for _, s in keyed], rv

    # -- writes ------------------------------------------------------------------------
    # Each takes the fully prepared object; the store only assigns the revision.

    def _next(self, obj):
        self._rv += 1
        md = dict(obj["metadata"])
        md["resourceVersion"] = str(self._rv)
        obj = dict(obj)
        obj["metadata"] = md
        return obj, encode(obj), self._rv

    def _append(self, key, type_, obj, raw, old):
        ev = Event(self._rv, key, type_, obj, raw, old)
        self._history.append(ev)
        self._history_rvs.append(ev.rv)
        if len(self._history) > self._history_limit:
            drop = len(self._history) // 2
            self._kept_after = self._history_rvs[drop - 1]
            self._compacted = max(self._compacted, self._kept_after)
            del self._history[:drop]
            del self._history_rvs[:drop]
        self.cond.notify_all()

    def create(self, key, obj):
        with self.cond:
            table = self._tables.setdefault(key, {})
            k = object_key(obj)
            if k in table:
                raise Exists()
            obj, raw, rv = self._next(obj)
            table[k] = Stored(obj, raw, rv)
            self._append(key, "ADDED", obj, raw, None)
            return obj

    def replace(self, key, obj, expected_rv):
        """Stores obj over the current object if that is still at expected_rv."""
        with self.cond:
            table = self._tables.get(key, {})
            k = object_key(obj)
            cur = table.get(k)
            if cur is None:
                raise Missing()
            if cur.rv != expected_rv:
                raise Conflict()
            obj, raw, rv = self._next(obj)
            table[k] = Stored(obj, raw, rv)
            self._append(key, "MODIFIED", obj, raw, cur.obj)
            return obj

    def remove(self, key, obj, expected_rv):
        """Deletes the object if it is still at expected_rv; the DELETED event carries
        obj (its last state) at a new revision."""
        with self.cond:
            table = self._tables.get(key, {})
            k = object_key(obj)
            cur = table.get(k)
            if cur is None:
                raise Missing()
            if cur.rv != expected_rv:
                raise Conflict()
            del table[k]
            obj, raw, rv = self._next(obj)
            self._append(key, "DELETED", obj, raw, cur.obj)
            return obj

    # -- history -----------------------------------------------------------------------

    def events_after(self, rv):
        """Events with revision > rv for a new watch (or list continuation). Raises
        Expired if rv is older than the compaction point."""
        with self.cond:
            if rv < self._compacted:
                raise Expired(rv, self._compacted + 1)
            return self._events_after_locked(rv)

    def _events_after_locked(self, rv):
        if rv < self._kept_after:
            raise Expired(rv, self._kept_after + 1)
        i = bisect.bisect_right(self._history_rvs, rv)
        return self._history[i:]

    def wait_events(self, rv, timeout, epoch):
        """For an established watch: blocks until there are events after rv, the watch
        epoch moves on, or timeout, and returns them (possibly none). Like the watch
        cache's per-watcher buffers, an established watch is not cut off by compaction,
        only by falling behind the bounded history (Expired)."""
        with self.cond:
            evs = self._events_after_locked(rv)
            if not evs and epoch == self.watch_epoch and timeout > 0:
                self.cond.wait(timeout)
                evs = self._events_after_locked(rv)
            return evs

    def compact(self):
        """Compacts at the current revision: every new watch (or list continuation)
        from an older revision now gets 410; established watches carry on."""
        with self.cond:
            self._compacted = self._rv
            self.cond.notify_all()

    def end_all_watches(self):
        with self.cond:
            self.watch_epoch += 1
            self.cond.notify_all()

    def wake_all(self):
        with self.cond:
            self.cond.notify_all()
