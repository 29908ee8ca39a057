"""EMULATION of the cluster DNS (CoreDNS's kubernetes plugin), answering A queries over
UDP on the pods' nameserver address (the host link's, port 53: as root only) with the
names of cluster_names.py (publishNotReadyAddresses makes a pod's name resolvable before
it is ready), and <a-b-c-d>.<namespace>.pod.cluster.local as the address a.b.c.d.

Anything else is NXDOMAIN (the site has no upstream); AAAA and other types of a known name
get an empty answer, so that resolvers fall back to A. Pods' resolv.conf search
<namespace>.svc.cluster.local, svc.cluster.local and cluster.local with ndots:5, as
the kubelet writes it, so `coordinator.team` resolves in the pod's namespace."""

import socket
import struct
import threading

from .cluster_names import DOMAIN, service_names

TTL = 5


def _parse_question(packet):
    labels, i = [], 12
    while packet[i]:
        n = packet[i]
        labels.append(packet[i + 1:i + 1 + n].decode("ascii", "replace").lower())
        i += 1 + n
    qtype, qclass = struct.unpack("!HH", packet[i + 1:i + 5])
    return labels, qtype, qclass, i + 5


class ClusterDNS:
    def __init__(self, client, address, port=53):
        self.client = client
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((address, port))
        self.address = address
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="cluster-dns-emulation",
                                       daemon=True)

    def start(self):
        self.thread.start()

    def stop(self):
        self._stop.set()
        self.sock.close()
        self.thread.join(5)

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                packet, peer = self.sock.recvfrom(1500)
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                self.sock.sendto(self.answer(packet), peer)
            except Exception:  # a malformed query: a real server drops it too
                continue

    def lookup(self, labels):
        """The addresses of a name, [] for a name that exists without any, None for a name
        that does not exist."""
        if labels[-2:] != DOMAIN.split("."):
            return None
        rest = labels[:-2]
        if len(rest) == 3 and rest[2] == "pod":
            return [rest[0].replace("-", ".")]
        if len(rest) not in (3, 4) or rest[-1] != "svc":
            return None
        ns, svc_name = rest[-2], rest[-3]
        svc = self.client.get("services", ns, svc_name)
        if svc is None:
            return None
        found = service_names(svc, self.client.get("endpoints", ns, svc_name)) \
            .get(".".join(labels))
        return found if found or len(rest) == 3 else None

    def answer(self, packet):
        ident, flags = struct.unpack("!HH", packet[:4])
        labels, qtype, qclass, end = _parse_question(packet)
        question = packet[12:end]
        found = self.lookup(labels)
        rcode = 3 if found is None else 0  # NXDOMAIN
        answers = b""
        count = 0
        if found and qtype == 1 and qclass == 1:
            for ip in found:
                answers += struct.pack("!HHHIH", 0xC00C, 1, 1, TTL, 4) + socket.inet_aton(ip)
                count += 1
        header = struct.pack("!HHHHHH", ident, 0x8400 | (flags & 0x0100) | rcode, 1, count, 0, 0)
        return header + question + answers
