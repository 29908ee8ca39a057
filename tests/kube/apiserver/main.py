"""Entry point: `tests/kube/standin --kubeconfig FILE [--tls]`.

Starts the API server on an OS-chosen port, writes a kubeconfig (and optionally a
service-account directory), prints `ready` once it accepts requests, and runs until
SIGTERM/SIGINT; then it ends the watches, the CEL bridge and the controller emulation
and removes its temporary files.
"""

import argparse
import contextlib
import faulthandler
import fcntl
import gc
import glob
import importlib.util
import json
import os
import shutil
import signal
import sys
import tempfile
import threading

from . import credentials, rbac
from .cel import CelBridge
from .controllers import ClusterControllers
from .resources import Registry, builtin_types
from .rest import Api
from .server import StandinHTTPServer
from .store import Store
from .tokens import Authenticator

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="standin", description="Kubernetes API server stand-in "
                                "for tests (see tests/kube/README.md)")
    p.add_argument("--kubeconfig", required=True, help="where to write the kubeconfig")
    p.add_argument("--tls", action="store_true",
                   help="serve HTTPS with a generated CA and require a Bearer token")
    p.add_argument("--token", help="Bearer token to require (default: random with --tls, "
                   "none without)")
    p.add_argument("--serviceaccount-dir", help="also write token, ca.crt and namespace here, "
                   "as a pod's service-account volume would hold them")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 (the default): chosen by the OS")
    p.add_argument("--history", type=int, default=20000,
                   help="watch events kept; watches from older revisions get 410")
    p.add_argument("--enable-admission-plugins", default="", metavar="NAMES",
                   help="admission plugins a kube-apiserver runs only when enabled, comma-separated: "
                        "OwnerReferencesPermissionEnforcement (apiserver/admission.py)")
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    p.add_argument("--profile", metavar="FILE", help="profile every thread's CPU time (python3-yappi) "
                   "and write the functions that took most to FILE on stop: what a benchmark "
                   "measuring the stand-in's cost a request reads")
    n = p.add_argument_group("node emulator", "a K3s site's nodes, run here (tests/kube/README.md)")
    n.add_argument("--nodes", metavar="PROFILE.yaml", help="register and run the nodes of this "
                   "cluster profile (docs/cluster-profiles.md)")
    n.add_argument("--pod-network", choices=("netns", "loopback"),
                   default="netns" if os.geteuid() == 0 else "loopback",
                   help="netns (as root, the default then): each node a network namespace with "
                   "kernel-shaped links; loopback: pods on 127.x addresses")
    n.add_argument("--images", default=os.path.join(KUBE_DIR, "images.yaml"),
                   help="the image table (default tests/kube/images.yaml)")
    n.add_argument("--build-dir", default=os.path.join(REPO_ROOT, "build"),
                   help="where the images' programs are built (default: the repo's build/)")
    n.add_argument("--data-dir", default=os.environ.get("EDGETRAIN_DATA_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "edgetrain",
        "datasets"), help="the data sets the edgetrain images carry")
    n.add_argument("--edgetrain", help="the edgetrain binary whose node-links makes the "
                   "kernel's links (default BUILD/bin/edgetrain)")
    n.add_argument("--heartbeat", type=float, default=10.0, metavar="S",
                   help="kubelets renew their leases every S seconds (10)")
    n.add_argument("--node-monitor-grace", type=float, default=40.0, metavar="S",
                   help="a node whose lease is older is NotReady (40)")
    n.add_argument("--default-toleration-seconds", type=int, default=300, metavar="S",
                   help="how long pods tolerate not-ready and unreachable nodes by default (300)")
    n.add_argument("--backoff", type=float, default=10.0, metavar="S",
                   help="the first restart back-off; it doubles (10)")
    n.add_argument("--backoff-max", type=float, default=300.0, metavar="S",
                   help="the longest restart back-off (300)")
    n.add_argument("--resync", type=float, default=1.0, metavar="S",
                   help="controllers look again at what only time changes every S seconds (1)")
    args = p.parse_args(argv)
    args.enable_admission_plugins = [name for name in args.enable_admission_plugins.split(",") if name]
    for name in args.enable_admission_plugins:
        if name != "OwnerReferencesPermissionEnforcement":
            p.error(f"--enable-admission-plugins: {name} is not one the stand-in has")
    if args.edgetrain is None:
        args.edgetrain = os.path.join(args.build_dir, "bin", "edgetrain")
    return args


KUBE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_ROOT = os.path.dirname(os.path.dirname(KUBE_DIR))


def hold_workdir():
    """A temporary folder held by a lock for this process's life. Folders whose lock
    nobody holds were left by a stand-in that was killed or crashed: removed, and said so."""
    for old in glob.glob(os.path.join(tempfile.gettempdir(), "kube-standin-*")):
        try:
            # "r+": a folder whose lock file is not there yet belongs to a
            # stand-in starting now (mkdtemp, then the lock), not a killed one.
            with open(os.path.join(old, "lock"), "r+") as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(old, ignore_errors=True)
                print(f"standin: removed {old}, left by a stand-in that was killed or crashed",
                      file=sys.stderr)
        except OSError:
            pass  # held (in use), or no lock in it (not ours to judge)
    workdir = tempfile.mkdtemp(prefix="kube-standin-")
    lock = open(os.path.join(workdir, "lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    return workdir, lock


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.profile and importlib.util.find_spec("yappi") is None:
        # Checked before anything starts: not a crash after "ready".
        sys.exit("standin: --profile needs python3-yappi (apt-get install python3-yappi)")
    # A kubeconfig an earlier stand-in left names a server that is gone: it goes
    # now, so that whoever waits for the file (the README's first lines) waits
    # for this one's, written once it serves.
    with contextlib.suppress(FileNotFoundError):
        os.remove(args.kubeconfig)
    workdir, _lock = hold_workdir()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    # A test whose stand-in outlasts its stop window sends SIGUSR2 first: every thread's
    # stack on stderr says where the shutdown hung.
    faulthandler.register(signal.SIGUSR2, all_threads=True)

    cel = CelBridge()  # starts Node.js in the background while we set up the rest
    if not cel.available:
        print(f"standin: CEL rules will NOT be enforced: {cel.unavailable_reason}",
              file=sys.stderr)
    store = Store(history_limit=args.history)
    registry = Registry(builtin_types())
    api = Api(store, registry, cel)
    ns_rt = registry.lookup("", "v1", "namespaces")
    for ns in INITIAL_NAMESPACES:
        api.create(ns_rt, "", json.dumps({"metadata": {"name": ns}}).encode(), {})
    for obj in rbac.bootstrap_policy():
        rt = registry.find_kind(obj["apiVersion"], obj["kind"])
        api.create(rt, "", json.dumps(obj).encode(), {})
    # Without --tls or --token no token is required: pods' requests carry tokens of
    # their service accounts all the same, which RBAC authorizes.
    token = args.token or (credentials.new_token() if args.tls else None)
    authn = Authenticator(store, registry, token)

    cluster = None
    if args.nodes:
        from nodes.cluster import EmulatedCluster
        from nodes.timings import Timings
        timings = Timings(heartbeat=args.heartbeat, node_monitor_grace=args.node_monitor_grace,
                          default_toleration=args.default_toleration_seconds,
                          backoff_base=args.backoff, backoff_max=args.backoff_max,
                          resync=args.resync)
        try:
            cluster = EmulatedCluster(api, args, timings, os.path.join(workdir, "nodes"), authn)
        except Exception as e:  # the profile, the image table, the links
            print(f"standin: --nodes: {e}", file=sys.stderr)
            shutil.rmtree(workdir, ignore_errors=True)
            cel.close()
            return 2
        from .admission import (default_storage_class, default_toleration_seconds, priority,
                                service_account, storage_object_in_use_protection,
                                system_priority_classes)
        api.graceful_pod_deletion = True
        api.admission = [default_toleration_seconds(timings.default_toleration),
                         service_account(store, registry),
                         priority(store, registry),
                         default_storage_class(store, registry),
                         storage_object_in_use_protection]
        classes = registry.lookup("scheduling.k8s.io", "v1", "priorityclasses")
        for pc in system_priority_classes():
            api.create(classes, "", json.dumps(pc).encode(), {})

    tls_context, ca_pem = None, None
    if args.tls:
        extra = [f"IP:{cluster.network.host_address}"] if cluster is not None else []
        certs = credentials.make_certificates(workdir, extra)
        tls_context = credentials.server_context(certs)
        with open(certs["ca.crt"], "rb") as f:
            ca_pem = f.read()

    from .hooks import HookState
    hooks = HookState()
    authz = rbac.Authorizer(store, registry)
    if "OwnerReferencesPermissionEnforcement" in args.enable_admission_plugins:
        from .admission import owner_references_permission_enforcement
        api.admission.append(owner_references_permission_enforcement(authz, registry))
    httpd = StandinHTTPServer((args.host, args.port), api, hooks, authn, authz, tls_context,
                              args.verbose, cluster)
    host, port = httpd.server_address[:2]
    url = f"{'https' if args.tls else 'http'}://{host}:{port}"
    controllers = ClusterControllers(api, store, registry)
    controllers.start()
    servers = [httpd]
    for_pods = (host, port)
    if cluster is not None and cluster.network.host_address not in (None, host):
        # Pods in the nodes' namespaces reach the API server on the host link's address.
        pod_side = StandinHTTPServer((cluster.network.host_address, port), api, hooks, authn,
                                     authz, tls_context, args.verbose, cluster)
        servers.append(pod_side)
        for_pods = (cluster.network.host_address, port)
    for s in servers:
        threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.2},
                         name="http-accept", daemon=True).start()
    if cluster is not None:
        cluster.start(for_pods, ca_pem)

    # Python's collector of cycles stops every thread while it walks the objects it
    # tracks: with 5,000 nodes and 5,000 pods stored, and their watch history, a full
    # pass held every request in flight for 130-160 ms, twice or three times while
    # 1,000 jobs were placed (bench/operator-scale; a real API server's collector
    # does not stop it). What is stored by now stays out of its passes, and the
    # passes over what is new come less often.
    gc.freeze()
    gc.set_threshold(50_000, 50, 1000)
    credentials.write_kubeconfig(args.kubeconfig, url, ca_pem, token)
    if args.serviceaccount_dir:
        credentials.write_serviceaccount_dir(args.serviceaccount_dir, ca_pem, token or "")
    print(f"standin: serving {url} (kubeconfig {args.kubeconfig})", file=sys.stderr)
    print("ready", flush=True)
    profiler = _start_profile() if args.profile else None

    # Waited for a slice at a time: a SIGTERM the kernel hands to another
    # thread only flags its Python handler, which runs when the main thread
    # next runs bytecode; a main thread blocked in an untimed wait never does
    # (the stand-in then outlived its stop window, now and then, under load).
    while not stop.wait(timeout=0.25):
        pass
    if cluster is not None:
        cluster.stop()  # every pod's processes, the links and namespaces, the DNS
    for s in servers:
        s.closing.set()
    store.end_all_watches()
    for s in servers:
        s.shutdown()
        s.server_close()
    controllers.stop()
    cel.close()
    if profiler is not None:
        _write_profile(profiler, args.profile)
    shutil.rmtree(workdir, ignore_errors=True)
    print("standin: stopped", file=sys.stderr)
    return 0


def _start_profile():
    import yappi  # Debian's python3-yappi: profiles every thread, which cProfile does not
    yappi.set_clock_type("cpu")
    yappi.start(builtins=True, profile_threads=True)
    return yappi


def _write_profile(yappi, path):
    yappi.stop()
    stats = yappi.get_func_stats()
    with open(path, "w") as f:
        for key, title in (("tsub", "own CPU time"), ("ttot", "CPU time with what it calls")):
            f.write(f"# the 40 functions of most {title} (seconds), every thread\n")
            stats.sort(key, "desc")
            for st in list(stats)[:40]:
                f.write(f"{st.ttot:9.2f} {st.tsub:9.2f} {st.ncall:9d}  {st.module}:{st.lineno} {st.name}\n")
            f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
