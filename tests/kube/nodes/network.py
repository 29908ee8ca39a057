"""Pod networks: every pod has an address of its own, so that pods of one node never
clash on ports (a pod listens on its status.podIP, as it can on K3s too).

- NetnsNetwork (as root): each node is a network namespace whose link follows its trace,
  made and shaped by the runner's link code through `edgetrain node-links` (the C++
  NetnsLinks, reused, not copied); a node's pods hold addresses of its /24 in it, and the
  host reaches them all through the host link. Faults rescale, cut and restore links.
- LoopbackNetwork (without root): every pod a distinct 127.B.N.x address (Linux routes
  all of 127/8 to the loopback); links are shaped in the agents, from the plan.

Each emulator holds a block of addresses (10.B/16 or 127.B/16) by a lock on a file, so
that emulators running at once (ctest -j2) never share one, and a crashed emulator's
block is free again at once."""

import fcntl
import os
import queue
import subprocess
import tempfile
import threading

from .addresses import AddressPool

BLOCKS = range(100, 250)


class NodeNet:
    def __init__(self, address, pod_cidr, namespace=None):
        self.address, self.pod_cidr, self.namespace = address, pod_cidr, namespace


class _BlockLock:
    """An address block held by this emulator: an flock on a file named for it, so that
    emulators of concurrent tests take different blocks. The file goes when the block
    is given back; an emulator that locked it just before finds it unlinked and takes
    another (each holder checks that its file is still the one the name points to)."""

    def __init__(self, path, file):
        self.path, self._file = path, file

    def close(self):
        if self._file is None:
            return
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self._file.close()  # the flock goes with it, after the name
        self._file = None


def _reserve_block(skip=()):
    """(block, _BlockLock) of the first block no other emulator holds."""
    for b in BLOCKS:
        if b in skip:
            continue
        path = os.path.join(tempfile.gettempdir(), f"kube-standin-block-{b}.lock")
        f = open(path, "w")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.stat(path).st_ino == os.fstat(f.fileno()).st_ino:
                return b, _BlockLock(path, f)
        except OSError:  # held; or unlinked by its holder as we locked it
            pass
        f.close()
    raise RuntimeError("every address block is held by another emulator")


class LoopbackNetwork:
    kind = "loopback"
    dns_address = None  # no port 53 without root: Service names do not resolve

    def __init__(self):
        self.block, self._lock = _reserve_block()
        self.nodes = {}
        self._pools = {}
        self.host_address = "127.0.0.1"

    def start(self, names):
        for i, name in enumerate(names):
            prefix = f"127.{self.block}.{i}"
            self.nodes[name] = NodeNet(f"{prefix}.1", f"{prefix}.0/24")
            self._pools[name] = AddressPool(prefix)

    def allocate(self, node):
        return self._pools[node].take()

    def release(self, node, ip):
        self._pools[node].give_back(ip)

    def scale_link(self, node, factor):
        raise LinkFaultUnsupported("links are shaped in the agents without root: a link "
                                   "fault needs the kernel's links (run as root)")

    def link_rate(self, node):
        return None

    def stop(self):
        self._lock.close()


class LinkFaultUnsupported(Exception):
    pass


class NodeLinksError(Exception):
    pass


class NetnsNetwork:
    kind = "netns"

    def __init__(self, edgetrain_binary, profile_path):
        self.binary, self.profile_path = edgetrain_binary, profile_path
        self.nodes = {}
        self._pools = {}
        self._proc = None
        self.block = self._lock = None
        self.host_address = None
        # One question to node-links at a time: its answers come back in order on one
        # pipe, so two threads asking at once could each take the other's answer.
        self._asking = threading.Lock()

    @property
    def dns_address(self):
        return self.host_address

    def start(self, names):
        """Starts `edgetrain node-links` for `names`; retries another block when the
        host already routes this one (something else uses 10.B)."""
        tried = []
        while True:
            self.block, self._lock = _reserve_block(tried)
            try:
                self._start_links(names)
                return
            except NodeLinksError as e:
                self._lock.close()
                tried.append(self.block)
                if "File exists" not in str(e) or len(tried) > 5:
                    raise

    def _start_links(self, names):
        argv = [self.binary, "node-links", "--nodes", self.profile_path, "--subnet",
                str(self.block), "--host-link"]
        for n in names:
            argv += ["--node", n]
        # Its standard input is our pipe: when this process ends, however it ends, the
        # pipe closes and node-links removes every namespace, veth, qdisc and route.
        self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, bufsize=1)
        self._answers = queue.Queue()
        threading.Thread(target=self._read_answers, daemon=True, name="node-links").start()
        for line in self._lines(timeout=60):
            words = line.split()
            if line == "ready":
                return
            fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
            if words[0] == "node":
                prefix = fields["pods"].rsplit(".", 1)[0]  # 10.B.R of 10.B.R.0/24
                self.nodes[words[1]] = NodeNet(fields["address"], fields["pods"],
                                               fields["namespace"])
                self._pools[words[1]] = AddressPool(prefix)
            elif words[0] == "host":
                self.host_address = fields["address"]
        err = self._proc.stderr.read()
        self._proc.wait()
        raise NodeLinksError(f"edgetrain node-links failed: {err.strip()}")

    def _read_answers(self):
        for line in self._proc.stdout:
            self._answers.put(line.strip())
        self._answers.put(None)

    def _lines(self, timeout):
        while True:
            try:
                line = self._answers.get(timeout=timeout)
            except queue.Empty:
                return
            if line is None:
                return
            yield line

    def _ask(self, command):
        with self._asking:
            self._proc.stdin.write(command + "\n")
            self._proc.stdin.flush()
            answer = next(self._lines(timeout=30), "error: node-links gave no answer")
        if answer.startswith("error:"):
            raise NodeLinksError(answer[len("error: "):])
        return answer

    def allocate(self, node):
        ip = self._pools[node].take()
        subprocess.run(["ip", "-n", self.nodes[node].namespace, "addr", "add", f"{ip}/32",
                        "dev", "lo"], check=True, capture_output=True)
        return ip

    def release(self, node, ip):
        subprocess.run(["ip", "-n", self.nodes[node].namespace, "addr", "del", f"{ip}/32",
                        "dev", "lo"], capture_output=True)
        self._pools[node].give_back(ip)

    def scale_link(self, node, factor):
        self._ask(f"scale {node} {factor}")

    def link_rate(self, node):
        answer = self._ask(f"show {node}")
        return None if answer == "ok unshaped" else float(answer.split("=", 1)[1])

    def namespace_path(self, node):
        return f"/var/run/netns/{self.nodes[node].namespace}"

    def stop(self):
        if self._proc is not None:
            self._proc.stdin.close()
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc.stderr.close()
            self._proc = None
        if self._lock is not None:
            self._lock.close()
