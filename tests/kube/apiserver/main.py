"""Entry point: `tests/kube/standin --kubeconfig FILE [--tls]`.

Starts the API server on an OS-chosen port, writes a kubeconfig (and optionally a
service-account directory), prints `ready` once it accepts requests, and runs until
SIGTERM/SIGINT; then it ends the watches, the CEL bridge and the controller emulation
and removes its temporary files.
"""

import argparse
import json
import shutil
import signal
import sys
import tempfile
import threading

from . import credentials
from .cel import CelBridge
from .controllers import ClusterControllers
from .resources import Registry, builtin_types
from .rest import Api
from .server import StandinHTTPServer
from .store import Store

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
    p.add_argument("--nodes", help="cluster profile for the node emulator (not available "
                   "yet: the node emulator is a later piece of work)")
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.nodes:
        print("standin: --nodes is not implemented yet (node emulator pending)", file=sys.stderr)
        return 2
    workdir = tempfile.mkdtemp(prefix="kube-standin-")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

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

    tls_context, ca_pem, token = None, None, args.token
    if args.tls:
        certs = credentials.make_certificates(workdir)
        tls_context = credentials.server_context(certs)
        with open(certs["ca.crt"], "rb") as f:
            ca_pem = f.read()
        token = token or credentials.new_token()

    from .hooks import HookState
    hooks = HookState()
    httpd = StandinHTTPServer((args.host, args.port), api, hooks, tls_context, token,
                              args.verbose)
    host, port = httpd.server_address[:2]
    url = f"{'https' if args.tls else 'http'}://{host}:{port}"
    controllers = ClusterControllers(api, store, registry)
    controllers.start()
    serving = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2},
                               name="http-accept", daemon=True)
    serving.start()

    credentials.write_kubeconfig(args.kubeconfig, url, ca_pem, token)
    if args.serviceaccount_dir:
        credentials.write_serviceaccount_dir(args.serviceaccount_dir, ca_pem, token or "")
    print(f"standin: serving {url} (kubeconfig {args.kubeconfig})", file=sys.stderr)
    print("ready", flush=True)

    stop.wait()
    httpd.closing.set()
    store.end_all_watches()
    httpd.shutdown()
    httpd.server_close()
    controllers.stop()
    cel.close()
    shutil.rmtree(workdir, ignore_errors=True)
    print("standin: stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
