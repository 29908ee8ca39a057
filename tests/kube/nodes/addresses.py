"""A node's pod addresses, as a CNI plugin's host-local IPAM hands them out: x.y.z.10 to
x.y.z.250 of the node's /24 (.1 and .2 are the node's link), round robin, so that an
address just given back is not handed out again at once."""

import threading


class AddressPool:
    def __init__(self, prefix, first=10, last=250):
        self.prefix = prefix
        self._range = range(first, last + 1)
        self._used = set()
        self._last = last
        self._lock = threading.Lock()

    def take(self):
        with self._lock:
            for step in range(1, len(self._range) + 1):
                n = self._range[(self._last - self._range[0] + step) % len(self._range)]
                if n not in self._used:
                    self._used.add(n)
                    self._last = n
                    return f"{self.prefix}.{n}"
            raise RuntimeError(f"no pod address left in {self.prefix}.0/24")

    def give_back(self, ip):
        with self._lock:
            self._used.discard(int(ip.rsplit(".", 1)[1]))
