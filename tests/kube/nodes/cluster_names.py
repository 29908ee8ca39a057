"""The names a cluster's DNS gives Services and their pods (CoreDNS's kubernetes plugin),
computed from Services and their Endpoints, for the emulated DNS to answer and - where no
DNS can serve the pods - for the kubelet to write into their /etc/hosts:

  <service>.<namespace>.svc.cluster.local     a headless Service: its ready endpoints'
                                              addresses; else its cluster IP
  <hostname>.<service>.<namespace>.svc.cluster.local   the endpoint of that hostname
                                              (a pod with hostname and subdomain set)

A pod's resolv.conf searches <namespace>.svc.cluster.local, svc.cluster.local and
cluster.local, so `<service>` and `<hostname>.<service>` resolve in its own namespace and
`<service>.<namespace>` anywhere; /etc/hosts has no search list, so those short forms are
written out as names of their own (`aliases`)."""

DOMAIN = "cluster.local"


def service_names(service, endpoints):
    """{fully qualified name: [addresses]} of one Service; a name may have none (a
    Service without ready endpoints exists, with an empty answer)."""
    md, spec = service["metadata"], service.get("spec") or {}
    base = f"{md['name']}.{md['namespace']}.svc.{DOMAIN}"
    ready = [a for s in (endpoints or {}).get("subsets") or [] for a in s.get("addresses") or []]
    cluster_ip = spec.get("clusterIP")
    names = {base: [cluster_ip] if cluster_ip not in (None, "", "None") else
             [a["ip"] for a in ready]}
    for a in ready:
        if a.get("hostname"):
            names.setdefault(f"{a['hostname']}.{base}", []).append(a["ip"])
    return names


def site_names(client):
    """The names of every Service of the site."""
    endpoints = {(e["metadata"]["namespace"], e["metadata"]["name"]): e
                 for e in client.list("endpoints")}
    names = {}
    for svc in client.list("services"):
        md = svc["metadata"]
        names.update(service_names(svc, endpoints.get((md["namespace"], md["name"]))))
    return names


def aliases(name, namespace):
    """What a pod of `namespace` may write for `name` (fully qualified), given its search
    list: the name itself, `<x>.<ns>.svc` and `<x>.<ns>`, and `<x>` in its own namespace."""
    prefix, _, ns = name[:-len(f".svc.{DOMAIN}")].rpartition(".")
    out = [name, f"{prefix}.{ns}.svc", f"{prefix}.{ns}"]
    if ns == namespace:
        out.append(prefix)
    return out


def hosts_lines(names, namespace):
    """/etc/hosts lines for `names` as a pod of `namespace` would resolve them."""
    return [f"{ip}\t{' '.join(aliases(name, namespace))}\n"
            for name in sorted(names) for ip in names[name]]
