"""The files the kubelet writes for every pod and binds over the image's: /etc/hosts,
/etc/resolv.conf and /etc/hostname.

With the emulated cluster DNS (as root) a pod's resolv.conf names it, with the search list
and ndots of a real kubelet's, and /etc/hosts holds only the pod itself and its
hostAliases. Without it (no port 53 without root) the pod keeps this machine's resolv.conf
and the kubelet writes the names the DNS would have answered into its /etc/hosts - every
Service's and every named endpoint's, with the short forms the search list would have
completed - and rewrites them as Endpoints change, so `coordinator.team` resolves the same
way in both. The file is rewritten in place (a bind-mounted file keeps its inode: a
rename would not reach the container); a reader may see it half-written for an instant,
like a DNS answer lost, and asks again."""

import os

from .cluster_names import hosts_lines

SEARCH = "{ns}.svc.cluster.local svc.cluster.local cluster.local"


def hosts(pod, ip, names):
    """/etc/hosts of `pod` at `ip`; `names` are the site's Service names to write (None
    when a cluster DNS serves them)."""
    md, spec = pod["metadata"], pod.get("spec") or {}
    hostname = spec.get("hostname") or md["name"]
    own = hostname
    if spec.get("subdomain"):
        own = f"{hostname}.{spec['subdomain']}.{md['namespace']}.svc.cluster.local\t{hostname}"
    text = ("# Kubernetes-managed hosts file (node emulator).\n127.0.0.1\tlocalhost\n"
            "::1\tlocalhost ip6-localhost ip6-loopback\n"
            f"{ip}\t{own}\n")
    for alias in spec.get("hostAliases") or []:
        text += f"{alias['ip']}\t{' '.join(alias.get('hostnames') or [])}\n"
    if names is not None and uses_cluster_names(pod):
        text += "# Services, as the cluster DNS would answer (no DNS without root)\n"
        text += "".join(hosts_lines(names, md["namespace"]))
    return text


def uses_cluster_names(pod):
    return (pod.get("spec") or {}).get("dnsPolicy", "ClusterFirst") in \
        ("ClusterFirst", "ClusterFirstWithHostNet")


def resolv_conf(pod, dns_address):
    if dns_address and uses_cluster_names(pod):
        return (f"search {SEARCH.format(ns=pod['metadata']['namespace'])}\n"
                f"nameserver {dns_address}\noptions ndots:5\n")
    with open("/etc/resolv.conf") as f:
        return f.read()


def hostname(pod):
    return ((pod.get("spec") or {}).get("hostname") or pod["metadata"]["name"]) + "\n"


def write_in_place(path, text):
    """Rewrites `path` keeping its inode; False when it already says `text`."""
    try:
        with open(path) as f:
            if f.read() == text:
                return False
    except FileNotFoundError:
        pass
    with open(path, "a+") as f:
        f.seek(0)
        f.truncate()
        f.write(text)
    return True


def write_all(folder, pod, ip, dns_address, names):
    """Writes the three files into the pod's folder; {target in the container: path}."""
    out = {}
    for target, text in (("/etc/hosts", hosts(pod, ip, names)),
                         ("/etc/resolv.conf", resolv_conf(pod, dns_address)),
                         ("/etc/hostname", hostname(pod))):
        path = os.path.join(folder, target.rsplit("/", 1)[1])
        write_in_place(path, text)
        out[target] = path
    return out
