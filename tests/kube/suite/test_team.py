"""The launch contract in real pods, with no operator: tests/kube/manifests/digits-team.yaml
(a headless Service, the plan in a ConfigMap, a coordinator and two workers bound to
nodes of examples/nodes/edge-site.yaml) applied with kubectl trains digits to the end,
its agents talking over mutual TLS with credentials made by the openssl command line;
the coordinator's /progress is read through its pod IP, and workers find it by the DNS
name the operator's pods will use - answered by the cluster DNS on kernel links (root),
by /etc/hosts on 127.x addresses (what a run without root has)."""

import http.client
import json
import os
import subprocess
import tempfile
import time
import unittest

from emulated_site import EDGE_SITE, SiteTestCase, container_state, phase
from harness import AGENT, KUBE_DIR, requires_built

MANIFEST = os.path.join(KUBE_DIR, "manifests", "digits-team.yaml")


def get_json(host, port, path, timeout=2):
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return json.loads(r.read()) if r.status == 200 else None
    finally:
        conn.close()


def make_credentials(folder, job):
    """The job's authority and one certificate for its agents, as a person makes them
    with openssl (docs/launch-contract.md, "Credentials"): the agent's names the job as
    its common name and as the DNS name <job>.job.edgetrain.dev, for client and server
    use. Returns {key: path} of ca.crt, tls.crt and tls.key."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
            "-keyout", "ca.key", "-out", "ca.crt", "-subj", f"/O=edgetrain/OU=job authority/CN={job}",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "tls.key",
            "-out", "tls.csr", "-subj", f"/O=edgetrain/OU=agent/CN={job}")
    with open(os.path.join(folder, "agent.ext"), "w") as f:
        f.write(f"basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                f"extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:{job}.job.edgetrain.dev\n")
    openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1",
            "-extfile", "agent.ext", "-out", "tls.crt")
    return {name: os.path.join(folder, name) for name in ("ca.crt", "tls.crt", "tls.key")}


@requires_built(AGENT)
class TeamTest(SiteTestCase):
    profile = EDGE_SITE

    def test_a_hand_written_team_trains_digits_to_the_end(self):
        t0 = time.monotonic()
        files = make_credentials(tempfile.mkdtemp(prefix="team-tls-", dir=self.dir), "digits-team")
        self.kubectl.run("create", "secret", "generic", "digits-team-tls",
                         *[f"--from-file={key}={path}" for key, path in files.items()])
        self.addCleanup(self.kubectl.run, "delete", "secret", "digits-team-tls", "--ignore-not-found")
        self.kubectl.run("apply", "-f", MANIFEST)
        coordinator = self.wait_pod("digits-team-coordinator",
                                    lambda p: (p or {}).get("status", {}).get("podIP"))
        ip = coordinator["status"]["podIP"]
        self.assertEqual(coordinator["spec"]["nodeName"], "gateway")
        # /progress through the pod IP, from the host, while the team trains.
        seen = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                progress = get_json(ip, 8080, "/progress")
            except OSError:
                progress = None  # not listening yet, or already gone
            if progress:
                seen.append(progress)
                if progress["state"] in ("training", "succeeded") and progress["iteration"] > 0:
                    break
            time.sleep(0.05)
        self.assertTrue(seen, "the coordinator's /progress never answered on its pod IP")
        def logs():
            said = {n: self.kubectl.run("logs", n, ok=False).stdout[-1500:] for n in
                    ("digits-team-coordinator", "digits-team-worker-0", "digits-team-worker-1")}
            return "\n".join(f"--- {n}\n{t}" for n, t in said.items())
        if seen[-1]["state"] not in ("training", "succeeded"):
            self.fail(f"the team never trained: {seen[-1]}\n" + logs())
        self.assertEqual(len(seen[-1]["workers"]), 2)
        for name in ("digits-team-coordinator", "digits-team-worker-0", "digits-team-worker-1"):
            try:
                done = self.wait_pod(name, lambda p: phase(p) in ("Succeeded", "Failed"), timeout=120)
            except AssertionError as e:
                # A team that trained and never ended (once under the whole
                # suite's load): what its agents said is the only clue.
                self.fail(f"{str(e)[:800]}\n{logs()}")
            self.assertEqual(phase(done), "Succeeded", self.kubectl.run("logs", name).stdout[-2000:])
            self.assertEqual(container_state(done)["state"]["terminated"]["exitCode"], 0)
        result = [l for l in self.kubectl.run("logs", "digits-team-coordinator").stdout.splitlines()
                  if l.startswith("result ")]
        final = json.loads(result[-1][len("result "):])
        self.assertEqual(final["state"], "succeeded")
        self.assertEqual(final["stopReason"], "epochs")
        self.assertGreater(final["accuracy"], 0.8, "it learned (chance is 0.1)")
        self.assertEqual(final["modelPath"], "/models/digits-team/model.pt")
        worker = self.kubectl.run("logs", "digits-team-worker-1").stdout
        self.assertIn("coordinator coordinator.digits-team:7000", worker,
                      "the worker was given the coordinator's DNS name")
        print(f"\nteam: applied to succeeded in {time.monotonic() - t0:.1f} s, accuracy "
              f"{final['accuracy']:.3f}, /progress read {len(seen)} time(s) at {ip}:8080")


class LoopbackTeamTest(TeamTest):
    """The same team on 127.x pod addresses, as a site run without root has them: no
    cluster DNS, the workers find `coordinator.digits-team` in the /etc/hosts their
    kubelet keeps."""
    extra_args = ["--pod-network", "loopback"]


if __name__ == "__main__":
    unittest.main()
