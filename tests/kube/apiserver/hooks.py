"""TEST HOOKS, served under the private prefix /_standin/ (no real server has them).

They let tests provoke what is hard to provoke against a real cluster:
  POST /_standin/compact                 compact at the current revision: new watches
                                         (and list continuations) from older revisions
                                         get 410 Expired; open watches carry on
  POST /_standin/drop-watches            end every open watch stream now (after the
                                         events of writes made before the call)
  POST /_standin/pause, /_standin/resume hold every request (and watch delivery) until
                                         resumed, like an API server that hangs
  POST /_standin/latency?ms=N            delay every request by N ms (0 to stop)
  POST /_standin/bookmark-interval?seconds=S  how often watches with bookmarks get one
  POST /_standin/watch-chunk-bytes?bytes=N  watches opened from now on cut every event into
                                         HTTP chunks of at most N bytes (0: one chunk each),
                                         as a proxy or a slow link may deliver them
  POST /_standin/flow-control?enabled=false  answer without API Priority and Fairness's
                                         X-Kubernetes-PF-* headers, as a server before 1.20
                                         or with the feature off (true: with them, the default)
  POST /_standin/throttle?count=N&retryAfterSeconds=S  answer the next N requests 429
                                         TooManyRequests with Retry-After S, as APF does
                                         when a priority level's queues are full
  GET  /_standin/info                    revision, open watches, whether CEL is enforced
  GET  /_standin/wait-watches?count=N[&resource=R][&timeoutSeconds=T]
                                         block until N watches (on resource R) are open,
                                         so tests synchronise on events, not sleeps
  GET  /_standin/wait-watches?opened=N[&resource=R]...
                                         block until N watches (on R) have been opened
                                         since the start (info's "opened" is the tally)
"""

import threading
import time


class HookState:
    def __init__(self):
        self.cond = threading.Condition()
        self._resumed = threading.Event()
        self._resumed.set()
        self.latency = 0.0
        self.bookmark_interval = 60.0
        self.watch_chunk_bytes = 0
        self.flow_control = True
        self.throttled = 0          # requests still to be answered 429
        self._retry_after = 1
        self.watches = {}  # id -> resource plural, of the open watches
        self.opened = {}   # resource plural -> watches opened since the start
        self._next_id = 0

    # -- pause / latency ---------------------------------------------------------------

    def pause(self):
        self._resumed.clear()

    def resume(self):
        self._resumed.set()

    @property
    def paused(self):
        return not self._resumed.is_set()

    def gate(self, timeout=None):
        """Blocks while paused, then applies the injected latency. Returns False if still
        paused after timeout."""
        if not self._resumed.wait(timeout):
            return False
        if self.latency:
            time.sleep(self.latency)
        return True

    # -- API Priority and Fairness's rejections -----------------------------------------

    def throttle(self, count, retry_after):
        with self.cond:
            self.throttled, self._retry_after = count, retry_after

    def take_throttle(self):
        """Retry-After seconds if this request is to be rejected, else None."""
        with self.cond:
            if self.throttled <= 0:
                return None
            self.throttled -= 1
            return self._retry_after

    # -- open watches ------------------------------------------------------------------

    def watch_opened(self, resource):
        with self.cond:
            self._next_id += 1
            self.watches[self._next_id] = resource
            self.opened[resource] = self.opened.get(resource, 0) + 1
            self.cond.notify_all()
            return self._next_id

    def watch_closed(self, wid):
        with self.cond:
            self.watches.pop(wid, None)
            self.cond.notify_all()

    def count(self, resource=None):
        with self.cond:
            return sum(1 for r in self.watches.values() if resource in (None, r))

    def _opened(self, resource):
        return sum(n for r, n in self.opened.items() if resource in (None, r))

    def wait_watches(self, count, opened, resource, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while sum(1 for r in self.watches.values() if resource in (None, r)) < count \
                    or self._opened(resource) < opened:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True
